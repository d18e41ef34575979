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
    /// Fetch, verify and list the model files.
    #[command(subcommand)]
    Models(cmd::models::ModelsCommand),
    /// Run one model alone on one input, with per-stage timing.
    #[command(subcommand)]
    Infer(cmd::infer::InferCommand),
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Policy(c) => cmd::policy::run(c),
        Command::Ldti(a) => cmd::ldti::run(a),
        Command::Models(c) => cmd::models::run(c),
        Command::Infer(c) => cmd::infer::run(c),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
