//! `mmsched bench`: speed goals measured as benchmarks, never as timed tests.

mod trace;

use std::process::ExitCode;

use anyhow::Result;
use clap::Subcommand;

/// Subcommands of `mmsched bench`.
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Trace recorder: worker-side ns/event (P50/P99) and drops at a sustained event rate.
    Trace(trace::TraceBenchArgs),
}

/// Runs one benchmark.
pub fn run(cmd: BenchCommand) -> Result<ExitCode> {
    match cmd {
        BenchCommand::Trace(a) => trace::run(a),
    }
}
