//! `mmsched bench …`: performance measurements (speed goals live here, not in tests).

use std::process::ExitCode;

use anyhow::Result;
use clap::Subcommand;

pub mod models;

/// The benchmarks.
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Per model: latency P50/P99 per stage, peak RSS, and the cost of mmsched's layer
    /// against calling the engine directly.
    Models(models::ModelsArgs),
}

/// Runs a `bench` subcommand.
pub fn run(cmd: BenchCommand) -> Result<ExitCode> {
    match cmd {
        BenchCommand::Models(a) => models::run(a),
    }
}
