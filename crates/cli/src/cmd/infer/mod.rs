//! `mmsched infer …`: run one model alone on one input, to try it and see its timing.

pub mod asr;
pub mod llm;
pub mod ocr;
pub mod vad;

use std::process::ExitCode;

use anyhow::Result;
use clap::Subcommand;

/// The models `infer` can run.
#[derive(Debug, Subcommand)]
pub enum InferCommand {
    /// Read the text in an image (PP-OCRv4 detection + recognition).
    Ocr(ocr::OcrArgs),
    /// Find speech in a WAV file (Silero VAD on 32 ms chunks).
    Vad(vad::VadArgs),
    /// Transcribe a WAV file with Whisper tiny.en (any sample rate: resampled to 16 kHz).
    Asr(asr::AsrArgs),
    /// Continue a text prompt with Gemma-3 270M, one token per decode step.
    Llm(llm::LlmArgs),
}

/// Runs an `infer` subcommand.
pub fn run(cmd: InferCommand) -> Result<ExitCode> {
    match cmd {
        InferCommand::Ocr(a) => ocr::run(a),
        InferCommand::Vad(a) => vad::run(a),
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
