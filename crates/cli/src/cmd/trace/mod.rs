//! `mmsched trace`: view, export, validate and generate mmtrace files.

mod demo;
mod export;
mod validate;
mod view;

use std::fs::File;
use std::io::BufReader;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Subcommand;
use mmsched_trace::Trace;

/// Subcommands of `mmsched trace`.
#[derive(Debug, Subcommand)]
pub enum TraceCommand {
    /// Serve the mmTracer web viewer on a trace file (the file is served at /api/v1/trace).
    View(view::ViewArgs),
    /// Convert a trace to Perfetto/Chrome JSON or OTLP/JSON.
    Export(export::ExportArgs),
    /// Check every line of a trace against the mmtrace format; report bad lines by number.
    Validate(validate::ValidateArgs),
    /// Write a synthetic DEMO trace (camera, speech, LLM, IMU, health counters) to try the
    /// viewer and exporters without a device.
    Demo(demo::DemoArgs),
}

/// Runs one `mmsched trace` subcommand.
pub fn run(cmd: TraceCommand) -> Result<ExitCode> {
    match cmd {
        TraceCommand::View(a) => view::run(a),
        TraceCommand::Export(a) => export::run(a),
        TraceCommand::Validate(a) => validate::run(a),
        TraceCommand::Demo(a) => demo::run(a),
    }
}

/// Opens a trace file for reading, naming the file in the error.
fn open(path: &Path) -> Result<BufReader<File>> {
    let f =
        File::open(path).with_context(|| format!("cannot open trace file {}", path.display()))?;
    Ok(BufReader::with_capacity(1 << 16, f))
}

/// Reads a whole trace, naming the file and the bad line in the error.
fn read(path: &Path) -> Result<Trace> {
    Trace::read(open(path)?).with_context(|| {
        format!(
            "{} is not a valid mmtrace file (run `mmsched trace validate {}` to list every problem)",
            path.display(),
            path.display()
        )
    })
}
