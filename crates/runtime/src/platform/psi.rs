//! CPU pressure stall information (PSI) as a saturation signal.
//!
//! `/proc/pressure/cpu` reads like
//!
//! ```text
//! some avg10=3.62 avg60=2.41 avg300=1.78 total=16643867
//! full avg10=0.00 avg60=0.00 avg300=0.00 total=0
//! ```
//!
//! `some` is the share of wall time in which at least one runnable task waited for a CPU,
//! averaged over 10 s, 60 s and 300 s (percent), `total` the accumulated stall in µs. Older
//! kernels print no `full` line for the CPU. The parser takes the averages as integer
//! hundredths of a percent (the kernel prints two decimals), so nothing here is a float;
//! it accepts fields in any order, ignores unknown ones, and rejects anything malformed
//! with an error that names the line and the field: a half-written file never panics.

use std::path::Path;

/// Where the kernel publishes CPU pressure.
pub const CPU_PRESSURE_PATH: &str = "/proc/pressure/cpu";

/// One PSI line (`some` or `full`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct PressureLine {
    /// Stall share over the last 10 s, in hundredths of a percent (0 ..= 10 000).
    pub avg10_centi_pct: u32,
    /// Over the last 60 s.
    pub avg60_centi_pct: u32,
    /// Over the last 300 s.
    pub avg300_centi_pct: u32,
    /// Total stall time since boot, in microseconds.
    pub total_micros: u64,
}

/// CPU pressure: the `some` line and, where the kernel prints it, the `full` line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct CpuPressure {
    /// At least one task stalled.
    pub some: PressureLine,
    /// All non-idle tasks stalled (absent on older kernels).
    pub full: Option<PressureLine>,
}

impl CpuPressure {
    /// The 10-second `some` average as a fraction in [0, 1]: the saturation signal.
    pub fn saturation(&self) -> f64 {
        f64::from(self.some.avg10_centi_pct.min(10_000)) / 10_000.0
    }
}

/// Why PSI text could not be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PsiError {
    /// The file could not be read (PSI disabled: boot with `psi=1`; or not Linux ≥ 4.20).
    #[error("cannot read {path}: {reason} (CPU pressure needs Linux 4.20+ with PSI enabled)")]
    Unreadable {
        /// The path.
        path: String,
        /// The OS error.
        reason: String,
    },
    /// A line is not `some|full key=value …`.
    #[error("line {line}: {reason}")]
    Malformed {
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// No `some` line.
    #[error("no `some` line in CPU pressure text")]
    MissingSome,
}

/// Parses the text of `/proc/pressure/cpu`.
pub fn parse(text: &str) -> Result<CpuPressure, PsiError> {
    let mut some = None;
    let mut full = None;
    for (i, raw) in text.lines().enumerate() {
        let line_no = i + 1;
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        let mut words = line.split_whitespace();
        let kind = words.next().unwrap_or_default();
        let slot = match kind {
            "some" => &mut some,
            "full" => &mut full,
            other => {
                return Err(PsiError::Malformed {
                    line: line_no,
                    reason: format!("expected `some` or `full`, found {other:?}"),
                });
            }
        };
        if slot.is_some() {
            return Err(PsiError::Malformed {
                line: line_no,
                reason: format!("second `{kind}` line"),
            });
        }
        *slot = Some(parse_fields(words, line_no)?);
    }
    Ok(CpuPressure {
        some: some.ok_or(PsiError::MissingSome)?,
        full,
    })
}

fn parse_fields<'a>(
    words: impl Iterator<Item = &'a str>,
    line: usize,
) -> Result<PressureLine, PsiError> {
    let bad = |reason: String| PsiError::Malformed { line, reason };
    let (mut a10, mut a60, mut a300, mut total) = (None, None, None, None);
    for word in words {
        let Some((key, value)) = word.split_once('=') else {
            return Err(bad(format!("expected key=value, found {word:?}")));
        };
        match key {
            "avg10" => {
                a10 = Some(
                    parse_centi(value)
                        .ok_or_else(|| bad(format!("avg10={value:?} is not a percentage")))?,
                )
            }
            "avg60" => {
                a60 = Some(
                    parse_centi(value)
                        .ok_or_else(|| bad(format!("avg60={value:?} is not a percentage")))?,
                )
            }
            "avg300" => {
                a300 = Some(
                    parse_centi(value)
                        .ok_or_else(|| bad(format!("avg300={value:?} is not a percentage")))?,
                )
            }
            "total" => {
                total = Some(value.parse::<u64>().map_err(|_| {
                    bad(format!(
                        "total={value:?} is not a whole number of microseconds"
                    ))
                })?)
            }
            // Newer kernels may add fields: ignore what we do not use.
            _ => {}
        }
    }
    let need = |v: Option<u32>, name: &str| v.ok_or_else(|| bad(format!("missing {name}")));
    Ok(PressureLine {
        avg10_centi_pct: need(a10, "avg10")?,
        avg60_centi_pct: need(a60, "avg60")?,
        avg300_centi_pct: need(a300, "avg300")?,
        total_micros: total.ok_or_else(|| bad("missing total".to_string()))?,
    })
}

/// Parses a percentage with up to two decimals ("3.62", "100.00", "7") into hundredths,
/// refusing values above 100 %.
fn parse_centi(value: &str) -> Option<u32> {
    let (int, frac) = match value.split_once('.') {
        Some((i, f)) => (i, f),
        None => (value, ""),
    };
    if int.is_empty() || int.len() > 3 || frac.len() > 2 {
        return None;
    }
    if !int.bytes().all(|b| b.is_ascii_digit()) || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let whole: u32 = int.parse().ok()?;
    let mut hundredths: u32 = if frac.is_empty() {
        0
    } else {
        frac.parse().ok()?
    };
    if frac.len() == 1 {
        hundredths *= 10;
    }
    let v = whole * 100 + hundredths;
    (v <= 10_000).then_some(v)
}

/// Reads and parses CPU pressure from `path` (normally [`CPU_PRESSURE_PATH`]).
pub fn read(path: &Path) -> Result<CpuPressure, PsiError> {
    let text = std::fs::read_to_string(path).map_err(|e| PsiError::Unreadable {
        path: path.display().to_string(),
        reason: e.to_string(),
    })?;
    parse(&text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const REAL: &str = "some avg10=3.62 avg60=2.41 avg300=1.78 total=16643867\n\
                        full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n";

    #[test]
    fn parses_the_kernel_format() {
        let p = parse(REAL).expect("real text parses");
        assert_eq!(
            p.some,
            PressureLine {
                avg10_centi_pct: 362,
                avg60_centi_pct: 241,
                avg300_centi_pct: 178,
                total_micros: 16_643_867
            }
        );
        assert_eq!(p.full, Some(PressureLine::default()));
        assert!((p.saturation() - 0.0362).abs() < 1e-12);
    }

    #[test]
    fn accepts_old_kernels_without_full_and_any_field_order() {
        let p = parse("some total=5 avg300=100.00 avg60=0.5 avg10=7 extra=1").expect("parses");
        assert_eq!(p.some.avg10_centi_pct, 700);
        assert_eq!(p.some.avg60_centi_pct, 50);
        assert_eq!(p.some.avg300_centi_pct, 10_000);
        assert_eq!(p.full, None);
        assert_eq!(p.saturation(), 0.07);
    }

    #[test]
    fn rejects_malformed_text_with_the_line() {
        let cases = [
            ("", PsiError::MissingSome),
            (
                "full avg10=0 avg60=0 avg300=0 total=0",
                PsiError::MissingSome,
            ),
        ];
        for (text, want) in cases {
            assert_eq!(parse(text), Err(want), "{text:?}");
        }
        for (text, line) in [
            ("some avg10=1 avg60=1 avg300=1", 1),
            ("some avg10=x avg60=1 avg300=1 total=1", 1),
            ("some avg10=100.01 avg60=1 avg300=1 total=1", 1),
            ("some avg10=-1 avg60=1 avg300=1 total=1", 1),
            ("some avg10=1.234 avg60=1 avg300=1 total=1", 1),
            (
                "some avg10=1 avg60=1 avg300=1 total=1\nsome avg10=1 avg60=1 avg300=1 total=1",
                2,
            ),
            ("some avg10=1 avg60=1 avg300=1 total=1\npartial avg10", 2),
            ("some avg10 avg60=1 avg300=1 total=1", 1),
            (
                "some avg10=1 avg60=1 avg300=1 total=99999999999999999999999",
                1,
            ),
        ] {
            match parse(text) {
                Err(PsiError::Malformed { line: l, .. }) => assert_eq!(l, line, "{text:?}"),
                other => panic!("{text:?} gave {other:?}"),
            }
        }
    }

    /// Needs a kernel with pressure stall information (Linux ≥ 4.20, `CONFIG_PSI`, not
    /// disabled with `psi=0`); many VMs and containers have no `/proc/pressure`. Run with
    /// `cargo test -p mmsched-runtime -- --ignored reads_this_machines_pressure` there.
    #[test]
    #[ignore = "needs /proc/pressure/cpu (kernel PSI), which this kind of machine may lack"]
    fn reads_this_machines_pressure() {
        let p = read(Path::new(CPU_PRESSURE_PATH))
            .unwrap_or_else(|e| panic!("the kernel's own pressure file: {e}"));
        assert!(p.saturation() <= 1.0);
    }

    #[test]
    fn a_missing_pressure_file_is_unreadable_and_names_the_path() {
        let e = read(Path::new("/nonexistent/pressure/cpu"));
        match e {
            Err(e @ PsiError::Unreadable { .. }) => {
                assert!(e.to_string().contains("/nonexistent/pressure/cpu"), "{e}")
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn reading_a_file_parses_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let f = dir.path().join("cpu");
        std::fs::write(
            &f,
            "some avg10=1.50 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
        )
        .expect("write");
        let p = read(&f).expect("parses");
        assert!(p.saturation() > 0.0 && p.saturation() <= 1.0, "{p:?}");
    }

    proptest! {
        #[test]
        fn never_panics_on_arbitrary_text(text in ".{0,200}") {
            let _ = parse(&text);
        }

        #[test]
        fn never_panics_on_near_miss_text(
            lines in proptest::collection::vec(
                ("(some|full|somе|)", proptest::collection::vec(
                    "(avg10|avg60|avg300|total|x)=[0-9.\\-]{0,8}", 0..6)),
                0..4)
        ) {
            let text: String = lines
                .iter()
                .map(|(k, f)| format!("{k} {}\n", f.join(" ")))
                .collect();
            let _ = parse(&text);
        }

        #[test]
        fn round_trips_every_valid_value(a in 0u32..=10_000, b in 0u32..=10_000, t in any::<u64>()) {
            let text = format!(
                "some avg10={}.{:02} avg60={}.{:02} avg300=0.00 total={t}\n",
                a / 100, a % 100, b / 100, b % 100
            );
            let p = parse(&text).expect("valid text parses");
            prop_assert_eq!(p.some.avg10_centi_pct, a);
            prop_assert_eq!(p.some.avg60_centi_pct, b);
            prop_assert_eq!(p.some.total_micros, t);
        }
    }
}
