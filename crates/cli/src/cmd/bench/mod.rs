//! `mmsched bench …`: measured figures, printed as a table or (`--json`) for scripts.

pub mod core;
pub mod policy;

use std::process::ExitCode;

use anyhow::Result;
use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Scheduling core: arbitration decision latency, full re-evaluation, slot
    /// reservations per second, LDTI evaluation, and EDF against score dispatch.
    /// Build with --release for meaningful figures.
    Core(self::core::CoreArgs),
    /// Policy hot reload: PUT → long-polling client's on_update latency, and the cost of an
    /// unchanged poll (GET → 304) against a server on 127.0.0.1.
    Policy(policy::PolicyBenchArgs),
}

pub fn run(cmd: BenchCommand) -> Result<ExitCode> {
    match cmd {
        BenchCommand::Core(args) => self::core::run(args),
        BenchCommand::Policy(a) => policy::run(a),
    }
}
