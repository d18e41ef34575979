//! `mmsched bench e2e`: the same scenario, seed, duration, inputs and worker layout under
//! all four schedulers and a static-priority queue degraded all the time (every job at
//! its model's cheapest rung), repeated in interleaved order, side by side with the
//! spread — what mmsched buys over the usual ways; with `--ablate`, what each of its
//! mechanisms is worth; with `--bound`, how close each comes to what any scheduler could
//! make of the same jobs; with `--neighbour`, beside another program, the same for every
//! column, whose own progress is reported beside each column.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, ValueEnum};
use mmsched_pipeline::book::RungMode;
use mmsched_pipeline::{Mechanisms, RunConfig};
use mmsched_report::{RunSummary, render_repeated, repeated_json, write_report};
use mmsched_runtime::sched::SchedulerKind;

use super::e2e_bound;
use super::neighbour::{Neighbour, NeighbourKind, NeighbourProgress};
use crate::cmd::run::{ScenarioArgs, ensure_models, interrupted, prepare, run_one};

/// Platform integration for every scheduler alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PlatformArg {
    /// Pinned workers, resource groups, a real-time audio worker, for every scheduler
    /// (what the OS refuses is noted in each summary's `platform`).
    On,
    /// Plain threads at normal priority for every scheduler.
    Off,
}

/// Arguments of `bench e2e`.
#[derive(Debug, Args)]
pub struct E2eArgs {
    #[command(flatten)]
    scenario: ScenarioArgs,
    /// Where each run's report goes (DIR/<column>/run-<i>/).
    #[arg(long, value_name = "DIR", default_value = "mmsched-report/e2e")]
    report: PathBuf,
    /// Runs per scheduler, interleaved (ABCD, BCDA, CDAB, …) so slow drifts of the machine
    /// fall on every scheduler alike; the table shows the median and min–max.
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=50))]
    repeat: u32,
    /// Also run mmsched with one mechanism off at a time (admission/shedding, standing
    /// reservations, health actions, token preemption, routing, the raised CPU weight of
    /// a step at risk, thread grants to a lone step, rungs, choosing by expected value,
    /// exploration, lines decided after detection, shadow comparisons, the steps running
    /// counted in admission, the inputs still to come counted in a rung's value): what each
    /// is worth here.
    #[arg(long)]
    ablate: bool,
    /// Run only these columns, by the names the table prints (comma-separated, e.g.
    /// `mmsched,static-priority-cheapest,mmsched-no-expected-value`): a quicker comparison
    /// of a few. An ablation column may be named without `--ablate`.
    #[arg(long, value_name = "NAMES", value_delimiter = ',')]
    columns: Vec<String>,
    /// Platform integration, the same for every scheduler (overrides --no-platform).
    #[arg(long, value_enum, value_name = "on|off")]
    platform: Option<PlatformArg>,
    /// Also compute, for every round, an upper bound on `utility_correct` from the jobs the
    /// runs recorded (clairvoyant, preemptive, fractional: see docs/runtime.md), and print
    /// each column's share of it.
    #[arg(long)]
    bound: bool,
    /// Print an object keyed by column name (scheduler, or mmsched-no-<mechanism>) whose
    /// values have the shape of summary.json holding the medians, plus `runs`, every
    /// run's summary (progress goes to stderr).
    #[arg(long)]
    json: bool,
    /// Another program on the same cores beside every column's run, started before the
    /// run and stopped after it, the same for every column: `none`; `niced`, two busy
    /// loops at nice 19; `busy`, one busy loop at nice 0; `build`, a real compilation
    /// (`cc -O2` on a generated C file) at nice 19, repeated for the whole run. Its own
    /// progress (loop iterations per second, compilations per minute, its CPU share) is
    /// reported beside each column.
    #[arg(
        long,
        value_enum,
        value_name = "none|niced|busy|build",
        default_value = "none"
    )]
    neighbour: NeighbourKind,
}

/// One column of the comparison: a scheduler, and for mmsched the mechanisms it has.
#[derive(Debug, Clone, Copy)]
struct Column {
    name: &'static str,
    kind: SchedulerKind,
    mechanisms: Mechanisms,
    /// The rungs its jobs run at, when not the scheduler's own choice.
    rungs: Option<RungMode>,
}

/// The comparison's columns: the four schedulers, static-priority with every job at its
/// cheapest rung, then with `ablate` mmsched with one mechanism off each.
fn columns(ablate: bool) -> Vec<Column> {
    let mut c: Vec<Column> = SchedulerKind::ALL
        .into_iter()
        .map(|kind| Column {
            name: kind.as_str(),
            kind,
            mechanisms: Mechanisms::default(),
            rungs: None,
        })
        .collect();
    c.push(Column {
        name: "static-priority-cheapest",
        kind: SchedulerKind::StaticPriority,
        mechanisms: Mechanisms::default(),
        rungs: Some(RungMode::Cheapest),
    });
    if ablate {
        c.extend(Mechanisms::ablations().map(|(name, mechanisms)| Column {
            name: match name {
                "no-admission" => "mmsched-no-admission",
                "no-reservations" => "mmsched-no-reservations",
                "no-health-actions" => "mmsched-no-health-actions",
                "no-token-preemption" => "mmsched-no-token-preemption",
                "no-routing" => "mmsched-no-routing",
                "no-risk-boost" => "mmsched-no-risk-boost",
                "no-thread-grants" => "mmsched-no-thread-grants",
                "no-rungs" => "mmsched-no-rungs",
                "no-own-overload" => "mmsched-no-own-overload",
                "no-expected-value" => "mmsched-no-expected-value",
                "no-exploration" => "mmsched-no-exploration",
                "no-lines-after-detection" => "mmsched-no-lines-after-detection",
                "no-shadows" => "mmsched-no-shadows",
                "no-running-steps" => "mmsched-no-running-steps",
                "no-inputs-to-come" => "mmsched-no-inputs-to-come",
                "no-step-deadlines" => "mmsched-no-step-deadlines",
                other => other,
            },
            kind: SchedulerKind::Mmsched,
            mechanisms,
            rungs: None,
        }));
    }
    c
}

/// The columns of `bench e2e`: every one (with the ablations if `ablate`), or only those
/// `named`, in the table's order.
fn select_columns(ablate: bool, named: &[String]) -> Result<Vec<Column>> {
    if named.is_empty() {
        return Ok(columns(ablate));
    }
    let all = columns(true);
    if let Some(unknown) = named
        .iter()
        .find(|n| !all.iter().any(|c| c.name == n.as_str()))
    {
        let names: Vec<&str> = all.iter().map(|c| c.name).collect();
        anyhow::bail!(
            "bench e2e --columns: there is no column `{unknown}`; name some of: {}",
            names.join(", ")
        );
    }
    Ok(all
        .into_iter()
        .filter(|c| named.iter().any(|n| n == c.name))
        .collect())
}

/// Whether `column` is mmsched with a mechanism off (the table of ablations).
fn is_ablation(column: &Column) -> bool {
    column.name.starts_with("mmsched-no-")
}

/// The order of round `round` over `n` columns: rotated by one each round (ABCD, BCDA, …).
fn round_order(n: usize, round: usize) -> Vec<usize> {
    (0..n).map(|i| (i + round) % n).collect()
}

/// Runs `bench e2e`.
pub fn run(a: E2eArgs) -> Result<ExitCode> {
    ensure_models(a.json)?;
    let p = prepare(&a.scenario)?;
    let mut scenario_args = a.scenario.clone();
    if let Some(platform) = a.platform {
        scenario_args.no_platform = platform == PlatformArg::Off;
    }
    let columns = select_columns(a.ablate, &a.columns)?;
    let mut results: Vec<Vec<RunSummary>> = vec![Vec::new(); columns.len()];
    // Per column, what the neighbour did beside each of its runs.
    let mut beside: Vec<Vec<NeighbourProgress>> = vec![Vec::new(); columns.len()];
    // Per round, the bound of each column's jobs (with --bound).
    let mut bounds: Vec<Vec<f64>> = Vec::new();
    let profile = if a.bound {
        let mut c = RunConfig::new(p.scenario.clone(), p.policy.clone(), SchedulerKind::Mmsched);
        c.profile.clone_from(&a.scenario.profile);
        Some(c.resolve_profile()?)
    } else {
        None
    };
    let general_lanes = p.scenario.device().workers.unwrap_or(2).max(1);
    'rounds: for round in 0..a.repeat as usize {
        bounds.push(Vec::new());
        for i in round_order(columns.len(), round) {
            if interrupted() {
                break 'rounds;
            }
            let column = columns[i];
            let dir = a
                .report
                .join(column.name)
                .join(format!("run-{}", round + 1));
            eprintln!(
                "bench e2e: {} under {} (round {} of {})",
                p.scenario.name(),
                column.name,
                round + 1,
                a.repeat
            );
            let (mechanisms, rungs) = (column.mechanisms, column.rungs);
            let adjust = move |c: &mut RunConfig| {
                // The same prompts for everyone: the transcript-dependent ones would
                // differ with the scheduler.
                c.fixed_prompts = true;
                // The bound reads every job's record.
                c.job_records = true;
                c.mechanisms = mechanisms;
                c.rung_mode = rungs;
            };
            let neighbour = Neighbour::start(a.neighbour, &a.report)?;
            let outcome = run_one(&p, &scenario_args, column.kind, &dir, None, None, &adjust);
            // Stopped before anything else, whatever the run's outcome.
            if let Some(progress) = neighbour.map(Neighbour::stop) {
                beside[i].push(progress);
            }
            let outcome = outcome?;
            write_report(&dir, &outcome.summary, &outcome.series)?;
            if let (Some(profile), Some(round_bounds)) = (&profile, bounds.last_mut()) {
                round_bounds.push(e2e_bound::run_bound(
                    &outcome.jobs,
                    &outcome.summary,
                    profile,
                    general_lanes,
                ));
            }
            results[i].push(outcome.summary);
        }
    }
    let groups: Vec<(&str, &[RunSummary])> = columns
        .iter()
        .zip(&results)
        .map(|(c, r)| (c.name, r.as_slice()))
        .collect();
    // A round's bound: the largest over its columns (see `e2e_bound`).
    let round_bounds: Vec<f64> = bounds
        .iter()
        .filter(|b| !b.is_empty())
        .map(|b| b.iter().copied().fold(f64::NAN, f64::max))
        .collect();
    if a.json {
        let mut doc = repeated_json(&groups)?;
        if a.bound {
            doc["bound"] = bound_json(&round_bounds, &columns, &results);
        }
        for (c, runs) in columns.iter().zip(&beside) {
            doc[c.name]["neighbour"] = neighbour_json(a.neighbour, runs);
        }
        outln!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        let platform = if scenario_args.no_platform {
            "off"
        } else {
            "on"
        };
        outln!(
            "Every scheduler: the same inputs in the same order, fixed prompts, the same \
             workers (general + a voice-activity worker), platform integration {platform} \
             for all, background load burnt by CPU time. Cells: median (min–max) over the \
             runs; `tie` where a lead is not larger than the spread."
        );
        let (ablations, main): (Vec<_>, Vec<_>) = columns
            .iter()
            .zip(&groups)
            .partition(|(c, _)| is_ablation(c));
        if !main.is_empty() {
            let main: Vec<_> = main.into_iter().map(|(_, g)| *g).collect();
            outln!("{}", render_repeated(&main));
        }
        if !ablations.is_empty() {
            outln!("Ablations: mmsched with one mechanism off.");
            let mut table: Vec<_> = groups
                .iter()
                .filter(|g| g.0 == "mmsched")
                .copied()
                .collect();
            table.extend(ablations.into_iter().map(|(_, g)| *g));
            outln!("{}", render_repeated(&table));
        }
        if a.bound {
            print_bound(&round_bounds, &columns, &results);
        }
        print_neighbour(a.neighbour, &columns, &beside);
        outln!(
            "reports: {}/<column>/run-<i>/report.html",
            a.report.display()
        );
    }
    Ok(if interrupted() {
        ExitCode::from(130)
    } else {
        ExitCode::SUCCESS
    })
}

/// The neighbour's progress beside each column: median (min–max) over its runs.
fn print_neighbour(kind: NeighbourKind, columns: &[Column], beside: &[Vec<NeighbourProgress>]) {
    if kind == NeighbourKind::None {
        return;
    }
    outln!("Neighbour beside every run: {}.", kind.describe());
    for (c, runs) in columns.iter().zip(beside) {
        let cell = |f: fn(&NeighbourProgress) -> Option<f64>, scale: f64, digits: usize| {
            let v: Vec<f64> = runs.iter().filter_map(f).map(|x| x * scale).collect();
            let (m, lo, hi) = spread(&v);
            format!("{m:.digits$} ({lo:.digits$}–{hi:.digits$})")
        };
        let progress = if kind == NeighbourKind::Build {
            format!(
                "{} compilations/min",
                cell(|p| p.compilations_per_min, 1.0, 1)
            )
        } else {
            format!("{} M iterations/s", cell(|p| p.iterations_per_s, 1e-6, 2))
        };
        outln!(
            "  {:<28} {progress}, {} % of the CPU",
            c.name,
            cell(|p| p.cpu_share, 100.0, 0)
        );
    }
}

/// A column's `neighbour` entry of `--json`: its kind, each run's progress and the medians.
fn neighbour_json(kind: NeighbourKind, runs: &[NeighbourProgress]) -> serde_json::Value {
    let median = |f: fn(&NeighbourProgress) -> Option<f64>| {
        let v: Vec<f64> = runs.iter().filter_map(f).collect();
        let m = spread(&v).0;
        m.is_finite().then_some(m)
    };
    serde_json::json!({
        "kind": kind,
        "what": kind.describe(),
        "iterations_per_s": median(|p| p.iterations_per_s),
        "compilations_per_min": median(|p| p.compilations_per_min),
        "cpu_share": median(|p| p.cpu_share),
        "runs": runs,
    })
}

/// Median and range of `v` (NaN-free), as `median (min–max)`.
fn spread(v: &[f64]) -> (f64, f64, f64) {
    let mut v: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    match (v.first(), v.last()) {
        (Some(&lo), Some(&hi)) => (v[v.len() / 2], lo, hi),
        _ => (f64::NAN, f64::NAN, f64::NAN),
    }
}

/// Each column's `utility_correct` over its round's bound, round by round.
fn shares_of_bound(bounds: &[f64], runs: &[RunSummary]) -> Vec<f64> {
    runs.iter()
        .zip(bounds)
        .map(|(s, b)| s.utility_correct / b)
        .collect()
}

fn print_bound(bounds: &[f64], columns: &[Column], results: &[Vec<RunSummary>]) {
    let (m, lo, hi) = spread(bounds);
    outln!("Upper bound on utility_correct: {m:.3} ({lo:.3}–{hi:.3})");
    outln!("({})", e2e_bound::ASSUMPTIONS);
    for (c, runs) in columns.iter().zip(results) {
        let (m, lo, hi) = spread(&shares_of_bound(bounds, runs));
        outln!(
            "  {:<28} {:>5.1} % of the bound ({:.1}–{:.1})",
            c.name,
            100.0 * m,
            100.0 * lo,
            100.0 * hi
        );
    }
}

/// The `bound` entry of `--json`: the bound per round and its median, and each column's
/// share of it.
fn bound_json(
    bounds: &[f64],
    columns: &[Column],
    results: &[Vec<RunSummary>],
) -> serde_json::Value {
    let share: serde_json::Map<String, serde_json::Value> = columns
        .iter()
        .zip(results)
        .map(|(c, runs)| {
            let (m, lo, hi) = spread(&shares_of_bound(bounds, runs));
            (
                c.name.to_string(),
                serde_json::json!({ "median": m, "min": lo, "max": hi }),
            )
        })
        .collect();
    serde_json::json!({
        "utility_correct": spread(bounds).0,
        "rounds": bounds,
        "share": share,
        "assumptions": e2e_bound::ASSUMPTIONS,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_rotate_the_order() {
        assert_eq!(round_order(4, 0), [0, 1, 2, 3]);
        assert_eq!(round_order(4, 1), [1, 2, 3, 0]);
        assert_eq!(round_order(4, 5), [1, 2, 3, 0]);
    }

    #[test]
    fn ablations_follow_the_four_schedulers_with_one_mechanism_off_each() {
        assert_eq!(columns(false).len(), 5);
        let c = columns(false);
        assert_eq!(c[4].name, "static-priority-cheapest");
        assert_eq!(c[4].rungs, Some(RungMode::Cheapest));
        let c = columns(true);
        assert_eq!(c.len(), 5 + Mechanisms::ablations().len());
        assert!(c.iter().any(|c| c.name == "mmsched-no-own-overload"));
        assert!(
            c[5..]
                .iter()
                .all(|c| c.kind == SchedulerKind::Mmsched && c.mechanisms != Mechanisms::default())
        );
        assert_eq!(c[5].name, "mmsched-no-admission");
        assert!(!c[5].mechanisms.admission && c[5].mechanisms.routing);
        assert!(!c[9].mechanisms.routing);
        assert_eq!(c[10].name, "mmsched-no-risk-boost");
        assert!(!c[10].mechanisms.risk_boost && c[10].mechanisms.routing);
        assert_eq!(c[11].name, "mmsched-no-thread-grants");
        assert!(!c[11].mechanisms.thread_grants && c[11].mechanisms.risk_boost);
        assert!(c.iter().any(|c| c.name == "mmsched-no-rungs"));
        assert!(
            c.iter().all(|c| !c.name.starts_with("no-")),
            "every ablation is named"
        );
    }

    #[test]
    fn columns_may_be_named_and_an_unknown_name_lists_the_known_ones() {
        let named = |n: &[&str]| {
            let n: Vec<String> = n.iter().map(|s| s.to_string()).collect();
            select_columns(false, &n)
        };
        let picked = named(&["mmsched-no-shadows", "mmsched"]).expect("known names");
        let names: Vec<&str> = picked.iter().map(|c| c.name).collect();
        assert_eq!(
            names,
            ["mmsched", "mmsched-no-shadows"],
            "in the table's order"
        );
        assert!(is_ablation(&picked[1]) && !is_ablation(&picked[0]));
        let e = named(&["mmsched", "lifo"])
            .expect_err("no column lifo")
            .to_string();
        assert!(
            e.contains("`lifo`") && e.contains("static-priority-cheapest"),
            "{e}"
        );
        assert_eq!(named(&[]).expect("all").len(), columns(false).len());
    }

    #[test]
    fn a_share_of_the_bound_is_per_round_and_the_spread_ignores_gaps() {
        let run = |u: f64| RunSummary {
            utility_correct: u,
            ..RunSummary::default()
        };
        let shares = shares_of_bound(&[0.5, 0.8], &[run(0.25), run(0.8)]);
        assert_eq!(shares, [0.5, 1.0]);
        assert_eq!(spread(&[0.3, f64::NAN, 0.1, 0.2]), (0.2, 0.1, 0.3));
        assert!(spread(&[]).0.is_nan());
    }
}
