//! `mmsched infer asr --wav P`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use mmsched_backends::asr::{AsrOptions, AsrSession, WhisperFiles, read_wav};
use mmsched_backends::run_timed;
use mmsched_core::time::{Clock, MonotonicClock};
use mmsched_models::ModelPaths;
use serde_json::json;

use super::{ms, peak_rss_bytes};
use crate::cmd::engine_arg::{AsrEngineArg, SpanArg};

#[derive(Debug, Args)]
pub struct AsrArgs {
    /// WAV file to transcribe (PCM or float; mono or several channels, averaged; 8 to 192
    /// kHz, resampled to 16 kHz; at most 10 minutes).
    #[arg(long, value_name = "FILE")]
    wav: PathBuf,
    /// Worker threads for the engine (0: one per core). candle's quantised matrix kernels
    /// follow `CANDLE_NUM_THREADS` instead (default: one per core).
    #[arg(long, value_name = "N", default_value_t = 0)]
    threads: usize,
    /// Whisper engine: `ggml` (q8_0 weights, decoder on ggml, the fastest), `q8` (the same weights
    /// on candle) or `f32` (float weights on candle's stock model).
    #[arg(long, value_enum, default_value = "ggml")]
    engine: AsrEngineArg,
    /// What the encoder runs over: `window` (the whole 30 s window, as Whisper and
    /// CTranslate2 do) or `audio` (the audio and 1 s of padding: faster, but transcripts may
    /// change).
    #[arg(long, value_enum, default_value = "window")]
    span: SpanArg,
    /// Print {"text","engine","span","timing_ms":{"pre","exec","post"},"audio_ms","load_ms",
    /// "memory_bytes","peak_rss_bytes"}
    /// as JSON (times in milliseconds).
    #[arg(long)]
    json: bool,
}

pub fn run(a: AsrArgs) -> Result<ExitCode> {
    let clip = read_wav(&a.wav)?;
    let files = WhisperFiles::from_cache(&ModelPaths::from_env())?;
    let clock = MonotonicClock::new();
    let options = AsrOptions {
        threads: a.threads,
        engine: a.engine.into(),
        span: a.span.into(),
    };
    let mut session = AsrSession::load(&files, &options).context("loading Whisper")?;
    let load_nanos = clock.now_nanos();
    let (text, t) = run_timed(&mut session, &clip, &clock)?;
    if a.json {
        let out = json!({
            "text": text,
            "engine": session.engine().label(),
            "span": session.span().as_str(),
            "timing_ms": {"pre": ms(t.pre_nanos), "exec": ms(t.exec_nanos), "post": ms(t.post_nanos)},
            "audio_ms": clip.duration_ms(),
            "load_ms": ms(load_nanos),
            "memory_bytes": mmsched_backends::Backend::memory_bytes(&session),
            "peak_rss_bytes": peak_rss_bytes(),
        });
        outln!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        outln!("{text}");
        eprintln!(
            "audio {} ms; pre (resample + log-mel) {:.1} ms, exec (encoder + decoder) {:.1} ms, post {:.1} ms",
            clip.duration_ms(),
            ms(t.pre_nanos),
            ms(t.exec_nanos),
            ms(t.post_nanos)
        );
    }
    Ok(ExitCode::SUCCESS)
}
