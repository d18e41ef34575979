//! `mmsched bench …`: measured figures, printed as a table or (`--json`) for scripts.

pub mod core;

use std::process::ExitCode;

use anyhow::Result;
use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Scheduling core: arbitration decision latency, full re-evaluation, slot
    /// reservations per second, LDTI evaluation, and EDF against score dispatch.
    /// Build with --release for meaningful figures.
    Core(self::core::CoreArgs),
}

pub fn run(cmd: BenchCommand) -> Result<ExitCode> {
    match cmd {
        BenchCommand::Core(args) => self::core::run(args),
    }
}
