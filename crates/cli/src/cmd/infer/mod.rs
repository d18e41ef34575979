//! `mmsched infer …`: run one model alone on one input.

pub mod asr;
pub mod llm;

use std::process::ExitCode;

use anyhow::Result;
use clap::Subcommand;

/// Try each model alone on one input, with per-stage timing.
#[derive(Debug, Subcommand)]
pub enum InferCommand {
    /// Transcribe a WAV file with Whisper tiny.en (any sample rate: resampled to 16 kHz).
    Asr(asr::AsrArgs),
    /// Continue a text prompt with Gemma-3 270M, one token per decode step.
    Llm(llm::LlmArgs),
}

pub fn run(c: InferCommand) -> Result<ExitCode> {
    match c {
        InferCommand::Asr(a) => asr::run(a),
        InferCommand::Llm(a) => llm::run(a),
    }
}

/// Nanoseconds to milliseconds, for display.
pub(crate) fn ms(nanos: u64) -> f64 {
    nanos as f64 / 1e6
}

/// Peak resident set size of this process (`VmHWM` in `/proc/self/status`), in bytes;
/// `None` where that file does not exist (not Linux).
pub(crate) fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}
