//! `mmsched trace demo`: a synthetic trace, clearly labelled as such.

use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::Args;
use mmsched_trace::demo::{DemoConfig, generate};
use serde_json::json;

/// Arguments of `mmsched trace demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Where to write the trace (mmtrace NDJSON).
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// Minimum number of records; the simulated duration grows with it (~1 600 records per
    /// simulated second).
    #[arg(long, value_name = "N", default_value_t = 20_000)]
    events: usize,
    /// Seed of the generator: the same seed writes the same file.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print a JSON summary {"out", "records", "duration_ms", "jobs"} instead of text.
    #[arg(long)]
    json: bool,
}

/// Runs `mmsched trace demo`.
pub fn run(a: DemoArgs) -> Result<ExitCode> {
    if a.events == 0 || a.events > 20_000_000 {
        bail!("--events must be between 1 and 20000000, got {}", a.events);
    }
    let trace = generate(DemoConfig {
        seed: a.seed,
        min_records: a.events,
    });
    let f = File::create(&a.out).with_context(|| format!("cannot create {}", a.out.display()))?;
    trace
        .write(BufWriter::new(f))
        .with_context(|| format!("cannot write {}", a.out.display()))?;
    let duration_ms = trace.records.iter().map(|r| r.end_ns()).max().unwrap_or(0) / 1_000_000;
    let jobs = trace
        .records
        .iter()
        .filter_map(|r| r.job)
        .collect::<std::collections::HashSet<_>>()
        .len();
    if a.json {
        outln!(
            "{}",
            json!({"out": a.out, "records": trace.records.len(), "duration_ms": duration_ms, "jobs": jobs, "demo": true})
        );
    } else {
        outln!(
            "wrote DEMO trace {}: {} records, {} jobs, {:.1} s of synthetic device time (seed {})",
            a.out.display(),
            trace.records.len(),
            jobs,
            duration_ms as f64 / 1000.0,
            a.seed
        );
        outln!("view it with: mmsched trace view {}", a.out.display());
    }
    Ok(ExitCode::SUCCESS)
}
