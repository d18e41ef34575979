//! `mmsched bench e2e`: the same scenario, seed and duration under all four schedulers,
//! one after the other, side by side — what mmsched buys over the usual ways.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use mmsched_report::{RunSummary, comparison_json, render_comparison, write_report};
use mmsched_runtime::sched::SchedulerKind;

use crate::cmd::run::{ScenarioArgs, ensure_models, interrupted, prepare, run_one};

/// Arguments of `bench e2e`.
#[derive(Debug, Args)]
pub struct E2eArgs {
    #[command(flatten)]
    scenario: ScenarioArgs,
    /// Where each scheduler's report goes (DIR/<scheduler>/).
    #[arg(long, value_name = "DIR", default_value = "mmsched-report/e2e")]
    report: PathBuf,
    /// Print an object keyed by scheduler name whose values have the shape of
    /// summary.json (progress goes to stderr).
    #[arg(long)]
    json: bool,
}

/// Runs `bench e2e`.
pub fn run(a: E2eArgs) -> Result<ExitCode> {
    ensure_models(a.json)?;
    let p = prepare(&a.scenario)?;
    let mut results: Vec<(&'static str, RunSummary)> = Vec::new();
    for kind in SchedulerKind::ALL {
        if interrupted() {
            break;
        }
        let dir = a.report.join(kind.as_str());
        eprintln!("bench e2e: {} under {kind}", p.scenario.name());
        let outcome = run_one(&p, &a.scenario, kind, &dir, None, None)?;
        write_report(&dir, &outcome.summary, &outcome.series)?;
        results.push((kind.as_str(), outcome.summary));
    }
    let runs: Vec<(&str, &RunSummary)> = results.iter().map(|(n, s)| (*n, s)).collect();
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&comparison_json(&runs)?)?
        );
    } else {
        println!("{}", render_comparison(&runs));
        println!("reports: {}/<scheduler>/report.html", a.report.display());
    }
    Ok(if interrupted() {
        ExitCode::from(130)
    } else {
        ExitCode::SUCCESS
    })
}
