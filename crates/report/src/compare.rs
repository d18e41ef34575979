//! The side-by-side table of `bench e2e`: one column per scheduler on the same inputs.

use std::fmt;
use std::fmt::Write as _;

use serde_json::{Map, Value};

use crate::escape::printable;
use crate::num::{MISSING, fixed, ms};
use crate::summary::RunSummary;

/// How many times more deadline misses a baseline had than the reference scheduler.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum MissRatio {
    /// The reference had misses: baseline misses / reference misses.
    Exact(f64),
    /// The reference had none, so the true ratio is unbounded: the baseline's misses over
    /// one miss, a lower bound (shown with `≥`).
    AtLeast(f64),
    /// Neither had a miss.
    BothZero,
}

impl MissRatio {
    /// The ratio of `baseline` misses to `reference` misses.
    pub fn of(baseline: u64, reference: u64) -> Self {
        match (baseline, reference) {
            (0, 0) => Self::BothZero,
            (b, 0) => Self::AtLeast(b as f64),
            (b, r) => Self::Exact(b as f64 / r as f64),
        }
    }

    /// A ratio the baseline is known to reach (for acceptance checks such as "≥ 5×"), or
    /// `None` when neither had a miss.
    pub fn lower_bound(&self) -> Option<f64> {
        match *self {
            Self::Exact(r) | Self::AtLeast(r) => Some(r),
            Self::BothZero => None,
        }
    }
}

impl fmt::Display for MissRatio {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Exact(r) => write!(f, "{r:.1}×"),
            Self::AtLeast(r) => write!(f, "≥{r:.1}×"),
            Self::BothZero => f.write_str("both 0"),
        }
    }
}

/// Relative change of `value` against `reference` in percent, or `None` when the
/// reference is zero or either is not finite.
pub fn change_pct(value: f64, reference: f64) -> Option<f64> {
    let pct = (value - reference) / reference * 100.0;
    (reference != 0.0 && pct.is_finite()).then_some(pct)
}

/// The `bench e2e` table: one column per `(scheduler name, summary)`, the first being the
/// reference (mmsched). Rows: deadline misses per modality, vision + audio misses, the ratio
/// of each column's vision + audio misses to the reference's ([`MissRatio`]), vision P99,
/// LLM tokens/s and its change against the reference, mean LDTI, audio frame loss and
/// scheduler overhead.
pub fn render_comparison(runs: &[(&str, &RunSummary)]) -> String {
    let Some((reference_name, reference)) = runs.first() else {
        return "no runs to compare\n".to_string();
    };
    let names: Vec<String> = runs.iter().map(|(name, _)| printable(name)).collect();
    let widths: Vec<usize> = names
        .iter()
        .map(|n| n.chars().count().max(10) + 2)
        .collect();
    let reference_name = printable(reference_name);
    let label_width = 30;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "scenario {} · {} s · seed {}",
        printable(&reference.scenario),
        fixed(reference.duration, 1),
        reference.seed
    );
    // The comparison is only fair on identical inputs: say so when they differ.
    let differing: Vec<String> = runs
        .iter()
        .filter(|(_, s)| s.scenario != reference.scenario || s.seed != reference.seed)
        .map(|(name, _)| printable(name))
        .collect();
    if !differing.is_empty() {
        let _ = writeln!(
            out,
            "note: {} ran another scenario or seed than {reference_name}",
            differing.join(", ")
        );
    }
    let mut row = |label: &str, cells: Vec<String>| {
        let _ = write!(out, "{label:<label_width$}");
        for (cell, width) in cells.iter().zip(&widths) {
            let _ = write!(out, "{cell:>width$}");
        }
        out.push('\n');
    };
    row("", names.clone());
    let column = |f: &dyn Fn(&RunSummary) -> String| -> Vec<String> {
        runs.iter().map(|(_, s)| f(s)).collect()
    };
    row(
        "vision misses",
        column(&|s| s.vision.deadline_misses.to_string()),
    );
    row("VAD misses", column(&|s| s.vad.deadline_misses.to_string()));
    row("ASR misses", column(&|s| s.asr.deadline_misses.to_string()));
    row(
        "LLM misses",
        column(&|s| s.llm.modality.deadline_misses.to_string()),
    );
    row(
        "vision+audio misses",
        column(&|s| s.deadline_misses_vision_audio().to_string()),
    );
    let reference_misses = reference.deadline_misses_vision_audio();
    row(
        &format!("  × {reference_name}'s misses"),
        runs.iter()
            .enumerate()
            .map(|(i, (_, s))| {
                if i == 0 {
                    MISSING.to_string()
                } else {
                    MissRatio::of(s.deadline_misses_vision_audio(), reference_misses).to_string()
                }
            })
            .collect(),
    );
    row("vision P99 ms", column(&|s| ms(s.vision.p99_ms)));
    row("LLM tokens/s", column(&|s| fixed(s.llm.tokens_per_s, 1)));
    row(
        &format!("  change vs {reference_name}"),
        runs.iter()
            .enumerate()
            .map(
                |(i, (_, s))| match change_pct(s.llm.tokens_per_s, reference.llm.tokens_per_s) {
                    Some(pct) if i > 0 => format!("{pct:+.1} %"),
                    _ => MISSING.to_string(),
                },
            )
            .collect(),
    );
    row("LDTI mean", column(&|s| fixed(s.ldti.mean, 3)));
    row(
        "audio frame loss %",
        column(&|s| fixed(s.audio.frame_loss_pct, 2)),
    );
    row(
        "scheduler overhead % CPU",
        column(&|s| fixed(s.scheduler_overhead_pct, 2)),
    );
    out
}

/// The `bench e2e --json` document: an object keyed by scheduler name whose values have the
/// shape of `summary.json`.
pub fn comparison_json(runs: &[(&str, &RunSummary)]) -> Result<Value, serde_json::Error> {
    let mut object = Map::new();
    for (name, summary) in runs {
        object.insert((*name).to_string(), serde_json::to_value(summary)?);
    }
    Ok(Value::Object(object))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata::sample;

    fn run(vision: u64, vad: u64, asr: u64, tokens_per_s: f64) -> RunSummary {
        let mut s = sample();
        s.vision.deadline_misses = vision;
        s.vad.deadline_misses = vad;
        s.asr.deadline_misses = asr;
        s.llm.tokens_per_s = tokens_per_s;
        s
    }

    fn cells<'a>(table: &'a str, label: &str) -> Vec<&'a str> {
        let line = table
            .lines()
            .find(|l| l.starts_with(label))
            .unwrap_or_else(|| panic!("no row {label:?} in\n{table}"));
        line[label.len()..].split_whitespace().collect()
    }

    #[test]
    fn ratios_and_token_changes_are_computed_from_the_inputs() {
        let mmsched = run(2, 0, 2, 20.0);
        let threads = run(15, 3, 2, 19.0);
        let fifo = run(40, 0, 0, 22.5);
        let table = render_comparison(&[
            ("mmsched", &mmsched),
            ("os-threads", &threads),
            ("fifo", &fifo),
        ]);
        assert_eq!(cells(&table, "vision+audio misses"), ["4", "20", "40"]);
        assert_eq!(
            cells(&table, "  × mmsched's misses"),
            ["—", "5.0×", "10.0×"]
        );
        assert_eq!(
            cells(&table, "  change vs mmsched"),
            ["—", "-5.0", "%", "+12.5", "%"]
        );
        assert_eq!(cells(&table, "LLM tokens/s"), ["20.0", "19.0", "22.5"]);
    }

    #[test]
    fn zero_reference_misses_give_an_honest_lower_bound() {
        let mmsched = run(0, 0, 0, 20.0);
        let threads = run(7, 0, 0, 20.0);
        let same = run(0, 0, 0, 0.0);
        let table = render_comparison(&[
            ("mmsched", &mmsched),
            ("os-threads", &threads),
            ("fifo", &same),
        ]);
        assert_eq!(
            cells(&table, "  × mmsched's misses"),
            ["—", "≥7.0×", "both", "0"]
        );
        assert!(!table.contains('∞'));
        assert_eq!(MissRatio::of(7, 0).lower_bound(), Some(7.0));
        assert_eq!(MissRatio::of(0, 0).lower_bound(), None);
        assert_eq!(MissRatio::of(3, 4), MissRatio::Exact(0.75));
    }

    #[test]
    fn a_zero_reference_rate_has_no_percentage() {
        assert_eq!(change_pct(5.0, 0.0), None);
        assert_eq!(change_pct(f64::NAN, 1.0), None);
        assert_eq!(change_pct(9.0, 10.0), Some(-10.0));
    }

    #[test]
    fn json_is_keyed_by_scheduler_with_the_summary_shape() {
        let a = sample();
        let value = comparison_json(&[("mmsched", &a), ("fifo", &a)]).expect("serialisable");
        assert_eq!(value["fifo"]["vision"]["jobs"], 600);
        assert_eq!(value["mmsched"]["scheduler"], "mmsched");
    }

    #[test]
    fn columns_stay_aligned_and_differing_inputs_are_flagged() {
        let mut long = sample();
        long.scenario = "a/very/long/path/to/a/scenario/file/of/the/user.toml".into();
        let mut other_seed = long.clone();
        other_seed.seed += 1;
        let table = render_comparison(&[("mmsched", &long), ("static-priority", &other_seed)]);
        let lines: Vec<&str> = table.lines().collect();
        assert!(lines[0].contains("user.toml") && lines[0].contains("seed 42"));
        assert_eq!(
            lines[1],
            "note: static-priority ran another scenario or seed than mmsched"
        );
        let width = lines[2].chars().count();
        assert!(
            lines[2..].iter().all(|l| l.chars().count() == width),
            "{table}"
        );
    }

    #[test]
    fn no_runs_render_a_message() {
        assert_eq!(render_comparison(&[]), "no runs to compare\n");
    }
}
