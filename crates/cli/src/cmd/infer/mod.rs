//! `mmsched infer …`: run one model alone on one input, to try it and see its timing.

use std::process::ExitCode;

use anyhow::Result;
use clap::Subcommand;

pub mod ocr;
pub mod vad;

/// The models `infer` can run.
#[derive(Debug, Subcommand)]
pub enum InferCommand {
    /// Read the text in an image (PP-OCRv4 detection + recognition).
    Ocr(ocr::OcrArgs),
    /// Find speech in a WAV file (Silero VAD on 32 ms chunks).
    Vad(vad::VadArgs),
}

/// Runs an `infer` subcommand.
pub fn run(cmd: InferCommand) -> Result<ExitCode> {
    match cmd {
        InferCommand::Ocr(a) => ocr::run(a),
        InferCommand::Vad(a) => vad::run(a),
    }
}
