//! `mmsched bench e2e`: the same scenario, seed, duration, inputs and worker layout under
//! all four schedulers, repeated in interleaved order, side by side with the spread —
//! what mmsched buys over the usual ways; with `--ablate`, what each of its mechanisms is
//! worth.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, ValueEnum};
use mmsched_pipeline::{Mechanisms, RunConfig};
use mmsched_report::{RunSummary, render_repeated, repeated_json, write_report};
use mmsched_runtime::sched::SchedulerKind;

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
    /// a step at risk, thread grants to a lone step): what each is worth here.
    #[arg(long)]
    ablate: bool,
    /// Platform integration, the same for every scheduler (overrides --no-platform).
    #[arg(long, value_enum, value_name = "on|off")]
    platform: Option<PlatformArg>,
    /// Print an object keyed by column name (scheduler, or mmsched-no-<mechanism>) whose
    /// values have the shape of summary.json holding the medians, plus `runs`, every
    /// run's summary (progress goes to stderr).
    #[arg(long)]
    json: bool,
}

/// One column of the comparison: a scheduler, and for mmsched the mechanisms it has.
#[derive(Debug, Clone, Copy)]
struct Column {
    name: &'static str,
    kind: SchedulerKind,
    mechanisms: Mechanisms,
}

fn columns(ablate: bool) -> Vec<Column> {
    let mut c: Vec<Column> = SchedulerKind::ALL
        .into_iter()
        .map(|kind| Column {
            name: kind.as_str(),
            kind,
            mechanisms: Mechanisms::default(),
        })
        .collect();
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
                other => other,
            },
            kind: SchedulerKind::Mmsched,
            mechanisms,
        }));
    }
    c
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
    let columns = columns(a.ablate);
    let mut results: Vec<Vec<RunSummary>> = vec![Vec::new(); columns.len()];
    'rounds: for round in 0..a.repeat as usize {
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
            let mechanisms = column.mechanisms;
            let adjust = move |c: &mut RunConfig| {
                // The same prompts for everyone: the transcript-dependent ones would
                // differ with the scheduler.
                c.fixed_prompts = true;
                c.mechanisms = mechanisms;
            };
            let outcome = run_one(&p, &scenario_args, column.kind, &dir, None, None, &adjust)?;
            write_report(&dir, &outcome.summary, &outcome.series)?;
            results[i].push(outcome.summary);
        }
    }
    let groups: Vec<(&str, &[RunSummary])> = columns
        .iter()
        .zip(&results)
        .map(|(c, r)| (c.name, r.as_slice()))
        .collect();
    if a.json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&repeated_json(&groups)?)?
        );
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
        outln!(
            "{}",
            render_repeated(&groups[..SchedulerKind::ALL.len().min(groups.len())])
        );
        if groups.len() > SchedulerKind::ALL.len() {
            outln!("Ablations: mmsched with one mechanism off.");
            let mut ablation = vec![groups[0]];
            ablation.extend_from_slice(&groups[SchedulerKind::ALL.len()..]);
            outln!("{}", render_repeated(&ablation));
        }
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
        assert_eq!(columns(false).len(), 4);
        let c = columns(true);
        assert_eq!(c.len(), 11);
        assert!(
            c[4..]
                .iter()
                .all(|c| c.kind == SchedulerKind::Mmsched && c.mechanisms != Mechanisms::default())
        );
        assert_eq!(c[4].name, "mmsched-no-admission");
        assert!(!c[4].mechanisms.admission && c[4].mechanisms.routing);
        assert!(!c[8].mechanisms.routing);
        assert_eq!(c[9].name, "mmsched-no-risk-boost");
        assert!(!c[9].mechanisms.risk_boost && c[9].mechanisms.routing);
        assert_eq!(c[10].name, "mmsched-no-thread-grants");
        assert!(!c[10].mechanisms.thread_grants && c[10].mechanisms.risk_boost);
    }
}
