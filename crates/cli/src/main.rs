//! The `mmsched` command line: the only place that uses `anyhow`.

mod cmd;
mod policy_file;

use clap::{Parser, Subcommand};

/// mmsched — one scheduler for vision, speech and text models sharing an edge device.
#[derive(Debug, Parser)]
#[command(name = "mmsched", version, about, long_about = None, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Check, print or describe scheduling policy documents.
    #[command(subcommand)]
    Policy(cmd::policy::PolicyCommand),
    /// Compute the LDTI health index from measurements and print it with its level.
    Ldti(cmd::ldti::LdtiArgs),
    /// View, export, validate or generate mmtrace files (the mmTracer viewer).
    #[command(subcommand)]
    Trace(cmd::trace::TraceCommand),
    /// Benchmarks of the speed goals.
    #[command(subcommand)]
    Bench(cmd::bench::BenchCommand),
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Policy(c) => cmd::policy::run(c),
        Command::Ldti(a) => cmd::ldti::run(a),
        Command::Trace(c) => cmd::trace::run(c),
        Command::Bench(c) => cmd::bench::run(c),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
