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
    /// Run one model alone on one input (OCR on an image, VAD on a WAV file).
    #[command(subcommand)]
    Infer(cmd::infer::InferCommand),
    /// Measure every available model on this device and write the latency profile
    /// (P50/P95/P99 per stage, per input size, per engine) the scheduler predicts cost from.
    Profile(cmd::profile::ProfileArgs),
    /// Performance benchmarks.
    #[command(subcommand)]
    Bench(cmd::bench::BenchCommand),
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Policy(c) => cmd::policy::run(c),
        Command::Ldti(a) => cmd::ldti::run(a),
        Command::Infer(c) => cmd::infer::run(c),
        Command::Profile(a) => cmd::profile::run(a),
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
