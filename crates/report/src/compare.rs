//! The side-by-side table of `bench e2e`: one column per scheduler on the same inputs,
//! each cell the median over repeated runs with its range, and a verdict per row that
//! calls a lead smaller than the spread a tie.

use std::fmt;
use std::fmt::Write as _;

use serde_json::{Map, Value};

use crate::escape::printable;
use crate::num::{MISSING, fixed};
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

/// Which way a figure is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Better {
    Higher,
    Lower,
    /// A count to read, not to rank (e.g. frames the router skipped).
    Neither,
}

/// One row of the comparison: a label, how to read the figure from a summary, which way
/// is better, and how to print it.
struct Figure {
    label: String,
    get: Box<dyn Fn(&RunSummary) -> f64>,
    better: Better,
    decimals: usize,
}

fn figure(
    label: impl Into<String>,
    better: Better,
    decimals: usize,
    get: impl Fn(&RunSummary) -> f64 + 'static,
) -> Figure {
    Figure {
        label: label.into(),
        get: Box::new(get),
        better,
        decimals,
    }
}

/// The figures `bench e2e` compares, utility first.
fn figures(groups: &[(&str, &[RunSummary])]) -> Vec<Figure> {
    let mut rows = vec![
        figure("utility", Better::Higher, 3, |s| s.utility),
        figure("utility_correct", Better::Higher, 3, |s| s.utility_correct),
    ];
    let offered = |i: usize| {
        groups
            .iter()
            .flat_map(|(_, runs)| runs.iter())
            .any(|s| s.modalities()[i].1.offered > 0)
    };
    for (i, name) in ["vision", "vad", "asr", "llm"].into_iter().enumerate() {
        if !offered(i) {
            continue;
        }
        rows.push(figure(
            format!("{name} on time % of offered"),
            Better::Higher,
            1,
            move |s| {
                s.modalities()[i]
                    .1
                    .on_time_rate()
                    .map_or(f64::NAN, |r| 100.0 * r)
            },
        ));
        let scored = groups
            .iter()
            .flat_map(|(_, runs)| runs.iter())
            .any(|s| s.modalities()[i].1.scored > 0);
        if scored {
            rows.push(figure(
                format!("{name} right+on time % of offered"),
                Better::Higher,
                1,
                move |s| {
                    let m = s.modalities()[i].1;
                    if m.offered == 0 {
                        f64::NAN
                    } else {
                        100.0 * m.correct_on_time as f64 / m.offered as f64
                    }
                },
            ));
            rows.push(figure(
                format!("{name} accuracy % (scored results)"),
                Better::Higher,
                1,
                move |s| 100.0 * s.modalities()[i].1.accuracy,
            ));
        }
        rows.push(figure(
            format!("{name} on time /s"),
            Better::Higher,
            2,
            move |s| s.modalities()[i].1.on_time_per_s,
        ));
        rows.push(figure(
            format!("{name} late+shed+dropped+unfin."),
            Better::Lower,
            0,
            move |s| {
                let m = s.modalities()[i].1;
                (m.late + m.shed + m.dropped + m.unfinished + m.failed) as f64
            },
        ));
    }
    rows.extend([
        figure("LLM requests on time", Better::Higher, 0, |s| {
            s.llm.requests_on_time as f64
        }),
        figure("LLM tokens/s of run time", Better::Higher, 2, |s| {
            s.llm.tokens_per_wall_s
        }),
        figure("LLM TTFT P99 ms", Better::Lower, 0, |s| s.llm.ttft_ms_p99),
        figure("LLM TPOT P50 ms", Better::Lower, 1, |s| s.llm.tpot_ms_p50),
        figure("vision P50 ms (processed frames)", Better::Lower, 0, |s| {
            s.vision.p50_ms
        }),
        figure("vision P99 ms (processed frames)", Better::Lower, 0, |s| {
            s.vision.p99_ms
        }),
        figure("vision skipped (router)", Better::Neither, 0, |s| {
            s.vision.skipped as f64
        }),
        figure("VAD P99 ms", Better::Lower, 2, |s| s.vad.p99_ms),
        figure("vision+audio misses", Better::Lower, 0, |s| {
            s.deadline_misses_vision_audio() as f64
        }),
        figure("LDTI mean", Better::Lower, 3, |s| s.ldti.mean),
        figure("audio frame loss %", Better::Lower, 2, |s| {
            s.audio.frame_loss_pct
        }),
        figure("scheduler overhead % CPU", Better::Lower, 2, |s| {
            s.scheduler_overhead_pct
        }),
    ]);
    rows
}

/// Median, minimum and maximum of the finite values of a figure over repeated runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    /// The median (the mean of the middle two for an even count).
    pub median: f64,
    /// The smallest value.
    pub min: f64,
    /// The largest value.
    pub max: f64,
}

impl Spread {
    /// The spread of `values`; NaN figures when none is finite.
    pub fn of(values: impl IntoIterator<Item = f64>) -> Self {
        let mut v: Vec<f64> = values.into_iter().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return Self {
                median: f64::NAN,
                min: f64::NAN,
                max: f64::NAN,
            };
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        Self {
            median,
            min: v[0],
            max: v[n - 1],
        }
    }

    /// max − min.
    pub fn width(&self) -> f64 {
        self.max - self.min
    }

    fn cell(&self, decimals: usize) -> String {
        if !self.median.is_finite() {
            return MISSING.to_string();
        }
        if self.width() == 0.0 {
            fixed(self.median, decimals)
        } else {
            format!(
                "{} ({}–{})",
                fixed(self.median, decimals),
                fixed(self.min, decimals),
                fixed(self.max, decimals)
            )
        }
    }
}

/// Which column wins a row: the best median, or a tie when the lead over the runner-up is
/// not larger than the spread (max − min) of either of the two.
fn verdict(names: &[String], spreads: &[Spread], better: Better) -> String {
    let mut order: Vec<usize> = (0..spreads.len())
        .filter(|&i| spreads[i].median.is_finite())
        .collect();
    if order.len() < 2 || better == Better::Neither {
        return MISSING.to_string();
    }
    order.sort_by(|&a, &b| {
        let c = spreads[a].median.total_cmp(&spreads[b].median);
        if better == Better::Higher {
            c.reverse()
        } else {
            c
        }
    });
    let best = &spreads[order[0]];
    let within = |s: &Spread| {
        (best.median - s.median).abs() <= best.width().max(s.width()) || best.median == s.median
    };
    let tied: Vec<&str> = order
        .iter()
        .filter(|&&i| within(&spreads[i]))
        .map(|&i| names[i].as_str())
        .collect();
    if tied.len() > 1 {
        format!("tie {}", tied.join("="))
    } else {
        names[order[0]].clone()
    }
}

/// The `bench e2e` table over repeated runs: one column per scheduler (the groups in
/// order, the first being the reference), one row per figure (utility first, then every
/// modality's on-time share and on-time results per second, what was not in time, the
/// LLM's user-facing figures, latencies, LDTI, audio loss and overhead). Each cell is the
/// median over the group's runs with the min–max range when they differ; the last column
/// names the scheduler with the best median, or `tie a=b` when the lead is not larger
/// than the spread.
pub fn render_repeated(groups: &[(&str, &[RunSummary])]) -> String {
    let Some((_, first_runs)) = groups.first() else {
        return "no runs to compare\n".to_string();
    };
    let Some(reference) = first_runs.first() else {
        return "no runs to compare\n".to_string();
    };
    let names: Vec<String> = groups.iter().map(|(name, _)| printable(name)).collect();
    let rows = figures(groups);
    let cells: Vec<(String, Vec<String>, String)> = rows
        .iter()
        .map(|f| {
            let spreads: Vec<Spread> = groups
                .iter()
                .map(|(_, runs)| Spread::of(runs.iter().map(|s| (f.get)(s))))
                .collect();
            (
                f.label.clone(),
                spreads.iter().map(|s| s.cell(f.decimals)).collect(),
                verdict(&names, &spreads, f.better),
            )
        })
        .collect();
    let mut widths: Vec<usize> = names.iter().map(|n| n.chars().count()).collect();
    for (_, row, _) in &cells {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let widths: Vec<usize> = widths.iter().map(|w| w + 2).collect();
    let label_width = cells
        .iter()
        .map(|(l, _, _)| l.chars().count())
        .max()
        .unwrap_or(0)
        .max(24)
        + 1;
    let repeats: Vec<usize> = groups.iter().map(|(_, runs)| runs.len()).collect();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "scenario {} · {} s · seed {} · {} run(s) per column: median (min–max)",
        printable(&reference.scenario),
        fixed(reference.duration, 1),
        reference.seed,
        repeats
            .iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join("/")
    );
    // The comparison is only fair on identical inputs: say so when they differ.
    let differing: Vec<String> = groups
        .iter()
        .filter(|(_, runs)| {
            runs.iter()
                .any(|s| s.scenario != reference.scenario || s.seed != reference.seed)
        })
        .map(|(name, _)| printable(name))
        .collect();
    if !differing.is_empty() {
        let _ = writeln!(
            out,
            "note: {} ran another scenario or seed than {}",
            differing.join(", "),
            names[0]
        );
    }
    let mut line = |label: &str, row: &[String], last: &str| {
        let _ = write!(out, "{label:<label_width$}");
        for (cell, width) in row.iter().zip(&widths) {
            let _ = write!(out, "{cell:>width$}");
        }
        let _ = writeln!(out, "  {last}");
    };
    line("", &names, "best");
    for (label, row, best) in &cells {
        line(label, row, best);
    }
    out
}

/// The `bench e2e` table of single runs ([`render_repeated`] with one run per column).
pub fn render_comparison(runs: &[(&str, &RunSummary)]) -> String {
    let owned: Vec<(&str, Vec<RunSummary>)> = runs
        .iter()
        .map(|(name, s)| (*name, vec![(*s).clone()]))
        .collect();
    let groups: Vec<(&str, &[RunSummary])> =
        owned.iter().map(|(n, v)| (*n, v.as_slice())).collect();
    render_repeated(&groups)
}

/// The median of every number over `runs`, with the shape of `summary.json`: numbers are
/// the median over the runs (integers rounded), text and lists are the first run's.
/// `None` without runs.
pub fn median_summary(runs: &[RunSummary]) -> Result<Option<Value>, serde_json::Error> {
    let values = runs
        .iter()
        .map(serde_json::to_value)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(values.first().map(|first| median_value(first, &values)))
}

fn median_value(first: &Value, all: &[Value]) -> Value {
    match first {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let same: Vec<Value> = all
                        .iter()
                        .map(|x| x.get(k).cloned().unwrap_or(Value::Null))
                        .collect();
                    (k.clone(), median_value(v, &same))
                })
                .collect(),
        ),
        Value::Number(n) => {
            let m = Spread::of(all.iter().filter_map(Value::as_f64)).median;
            if n.is_u64() {
                Value::from(m.round().max(0.0) as u64)
            } else if n.is_i64() {
                Value::from(m.round() as i64)
            } else {
                serde_json::Number::from_f64(m).map_or(Value::Null, Value::Number)
            }
        }
        Value::Null => {
            // A figure undefined in the first run may be defined in others.
            let m = Spread::of(all.iter().filter_map(Value::as_f64)).median;
            serde_json::Number::from_f64(m).map_or(Value::Null, Value::Number)
        }
        other => other.clone(),
    }
}

/// The `bench e2e --json` document of repeated runs: an object keyed by column name whose
/// values have the shape of `summary.json` holding the medians ([`median_summary`]), plus
/// `runs`, every run's own summary in the order they ran.
pub fn repeated_json(groups: &[(&str, &[RunSummary])]) -> Result<Value, serde_json::Error> {
    let mut object = Map::new();
    for (name, runs) in groups {
        let mut value = median_summary(runs)?.unwrap_or_else(|| Value::Object(Map::new()));
        if let Value::Object(map) = &mut value {
            map.insert("runs".into(), serde_json::to_value(runs)?);
        }
        object.insert((*name).to_string(), value);
    }
    Ok(Value::Object(object))
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

    fn run(utility: f64, vision_on_time: u64, tokens_per_wall_s: f64) -> RunSummary {
        let mut s = sample();
        s.utility = utility;
        s.vision.on_time = vision_on_time;
        s.llm.tokens_per_wall_s = tokens_per_wall_s;
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
    fn utility_is_the_first_row_and_single_runs_name_a_winner() {
        let mmsched = run(0.95, 600, 2.0);
        let fifo = run(0.80, 450, 2.5);
        let table = render_comparison(&[("mmsched", &mmsched), ("fifo", &fifo)]);
        let lines: Vec<&str> = table.lines().collect();
        assert!(lines[2].starts_with("utility"), "{table}");
        assert_eq!(cells(&table, "utility"), ["0.950", "0.800", "mmsched"]);
        // 600 and 450 of 609 offered frames.
        assert_eq!(
            cells(&table, "vision on time % of offered"),
            ["98.5", "73.9", "mmsched"]
        );
        assert_eq!(
            cells(&table, "LLM tokens/s of run time"),
            ["2.00", "2.50", "fifo"]
        );
    }

    #[test]
    fn a_lead_inside_the_spread_is_a_tie() {
        let a = [
            run(0.90, 600, 2.0),
            run(0.94, 600, 2.0),
            run(0.92, 600, 2.0),
        ];
        let b = [
            run(0.91, 600, 2.0),
            run(0.91, 600, 2.0),
            run(0.91, 600, 2.0),
        ];
        let c = [
            run(0.50, 600, 2.0),
            run(0.52, 600, 2.0),
            run(0.51, 600, 2.0),
        ];
        let table = render_repeated(&[("mmsched", &a), ("fifo", &b), ("os-threads", &c)]);
        // Median 0.92 (0.90–0.94) against 0.91: the lead 0.01 is inside the spread 0.04.
        assert_eq!(
            cells(&table, "utility"),
            [
                "0.920",
                "(0.900–0.940)",
                "0.910",
                "0.510",
                "(0.500–0.520)",
                "tie",
                "mmsched=fifo"
            ]
        );
        assert!(
            table
                .lines()
                .next()
                .is_some_and(|l| l.contains("3/3/3 run(s)"))
        );
        let s = Spread::of([3.0, f64::NAN, 1.0, 2.0, 10.0]);
        assert_eq!((s.median, s.min, s.max), (2.5, 1.0, 10.0));
        assert!(Spread::of([f64::NAN]).median.is_nan());
    }

    #[test]
    fn a_lead_beyond_the_spread_names_the_winner() {
        let a = [run(0.95, 600, 2.0), run(0.96, 600, 2.0)];
        let b = [run(0.90, 600, 2.0), run(0.91, 600, 2.0)];
        let table = render_repeated(&[("mmsched", &a), ("fifo", &b)]);
        assert_eq!(cells(&table, "utility").last(), Some(&"mmsched"));
    }

    #[test]
    fn repeated_json_holds_medians_in_the_summary_shape_and_every_run() {
        let runs = [run(0.9, 500, 1.0), run(0.7, 300, 3.0), run(0.8, 400, 2.0)];
        let value = repeated_json(&[("mmsched", &runs)]).expect("serialisable");
        let m = &value["mmsched"];
        assert_eq!(m["utility"], 0.8);
        assert_eq!(m["vision"]["on_time"], 400);
        assert_eq!(m["llm"]["tokens_per_wall_s"], 2.0);
        assert_eq!(m["scheduler"], "mmsched");
        assert_eq!(m["runs"].as_array().map(Vec::len), Some(3));
        assert_eq!(m["runs"][1]["vision"]["on_time"], 300);
        // The medians read back as a summary.
        let back: RunSummary = serde_json::from_value(m.clone()).expect("summary shape");
        assert_eq!(back.vision.offered, 609);
    }

    #[test]
    fn ratios_and_changes_are_computed_from_the_inputs() {
        assert_eq!(MissRatio::of(7, 0).lower_bound(), Some(7.0));
        assert_eq!(MissRatio::of(0, 0).lower_bound(), None);
        assert_eq!(MissRatio::of(3, 4), MissRatio::Exact(0.75));
        assert_eq!(MissRatio::of(7, 0).to_string(), "≥7.0×");
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
        // Every figure column ends at the same place: the verdict starts after it.
        let label_and_cells = |l: &str| l.rfind("  ").map(|i| l[..i].trim_end().chars().count());
        let width = label_and_cells(lines[2]);
        assert!(
            lines[3..].iter().all(|l| label_and_cells(l) == width),
            "{table}"
        );
    }

    #[test]
    fn no_runs_render_a_message() {
        assert_eq!(render_comparison(&[]), "no runs to compare\n");
    }
}
