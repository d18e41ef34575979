//! `mmsched bench …`: performance measurements (figures, not pass/fail tests).

pub mod policy;

use std::process::ExitCode;

use anyhow::Result;
use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Policy hot reload: PUT → long-polling client's on_update latency, and the cost of an
    /// unchanged poll (GET → 304) against a server on 127.0.0.1.
    Policy(policy::PolicyBenchArgs),
}

pub fn run(cmd: BenchCommand) -> Result<ExitCode> {
    match cmd {
        BenchCommand::Policy(a) => policy::run(a),
    }
}
