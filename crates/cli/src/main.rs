//! The `mmsched` command line: the only place that uses `anyhow`.
// Output goes through `outln!` (see `out.rs`): `println!` panics when the reader of a pipe
// goes away.
#![deny(clippy::print_stdout)]

#[macro_use]
mod out;
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
    /// The main job: a field scenario's camera, microphone, IMU and text requests into real
    /// models (OCR, VAD, Whisper, Gemma-3) under a scheduler, with the health loop acting;
    /// live progress, a summary table and a report directory.
    Run(cmd::run::RunArgs),
    /// Check, print or describe scheduling policy documents.
    #[command(subcommand)]
    Policy(cmd::policy::PolicyCommand),
    /// Compute the LDTI health index from measurements and print it with its level.
    Ldti(cmd::ldti::LdtiArgs),
    /// Fetch, verify and list the model files (into $MMSCHED_HOME, default ~/.cache/mmsched).
    #[command(subcommand)]
    Models(cmd::models::ModelsCommand),
    /// Run one model alone on one input (OCR on an image, VAD or ASR on a WAV file, LLM on a prompt), with per-stage timing.
    #[command(subcommand)]
    Infer(cmd::infer::InferCommand),
    /// Measure every available model on this device and write the latency profile
    /// (P50/P95/P99 per stage, per input size, per engine) the scheduler predicts cost from.
    Profile(cmd::profile::ProfileArgs),
    /// Serve the live policy API, status, metrics and trace viewer over HTTP (S12, S13).
    Serve(cmd::serve::ServeArgs),
    /// View, export, validate or generate mmtrace files (the mmTracer viewer).
    #[command(subcommand)]
    Trace(cmd::trace::TraceCommand),
    /// Measure performance figures (printed; `--json` for scripts; build with --release).
    #[command(subcommand)]
    Bench(cmd::bench::BenchCommand),
    /// Simulated runs: speech jitter, clock drift and long-run soaks in virtual time.
    #[command(subcommand)]
    Sim(cmd::sim::SimCommand),
    /// Create the per-class resource groups, hold them, and remove them (also on Ctrl-C).
    #[cfg(target_os = "linux")]
    #[command(hide = true)]
    CgroupSelftest(cmd::cgroup_selftest::CgroupSelftestArgs),
    /// ROM/RAM of the MCU kernel per section and component, and its context-switch cost,
    /// read from the linked demo firmware (build it with firmware/mcu-demo/run-qemu.sh).
    KernelSize(cmd::kernel_size::KernelSizeArgs),
}

fn main() -> std::process::ExitCode {
    out::quiet_on_closed_stderr();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(a) => cmd::run::run(a),
        Command::Policy(c) => cmd::policy::run(c),
        Command::Ldti(a) => cmd::ldti::run(a),
        Command::Models(c) => cmd::models::run(c),
        Command::Infer(c) => cmd::infer::run(c),
        Command::Profile(a) => cmd::profile::run(a),
        Command::Serve(a) => cmd::serve::run(a),
        Command::Trace(c) => cmd::trace::run(c),
        Command::Bench(c) => cmd::bench::run(c),
        Command::Sim(c) => cmd::sim::run(c),
        #[cfg(target_os = "linux")]
        Command::CgroupSelftest(a) => cmd::cgroup_selftest::run(a),
        Command::KernelSize(a) => cmd::kernel_size::run(a),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
