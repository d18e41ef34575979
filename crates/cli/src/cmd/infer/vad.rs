//! `mmsched infer vad --wav P`: Silero VAD over a WAV file, 32 ms at a time.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::Args;
use mmsched_backends::audio::read_wav_16k;
use mmsched_backends::probe::StageTiming;
use mmsched_backends::run_timed;
use mmsched_backends::vad::{CHUNK_SAMPLES, SegmentParams, SileroVad, VadConfig, speech_segments};
use mmsched_core::policy::Policy;
use mmsched_core::time::MonotonicClock;
use serde_json::json;

use crate::cmd::engine_arg::{EngineFlags, ms};

/// Arguments of `infer vad`.
#[derive(Debug, Args)]
pub struct VadArgs {
    /// The WAV file (16 kHz mono expected; other rates from 8 to 192 kHz are resampled to
    /// 16 kHz, several channels are averaged; at most 2 hours).
    #[arg(long, value_name = "FILE")]
    wav: PathBuf,
    /// Speech probability at and above which a chunk counts as speech (0..1; default: the
    /// policy's `vad_speech_threshold`, 0.5).
    #[arg(long, value_name = "P")]
    threshold: Option<f32>,
    #[command(flatten)]
    engine: EngineFlags,
    /// Print {"speech_chunks","total_chunks","timing_ms":{"pre","exec","post"},…} as JSON.
    #[arg(long)]
    json: bool,
}

/// Runs `infer vad`.
pub fn run(a: VadArgs) -> Result<ExitCode> {
    let threshold = a
        .threshold
        .unwrap_or(Policy::default().routing().vad_speech_threshold as f32);
    if !(0.0..=1.0).contains(&threshold) {
        bail!("--threshold must be a probability between 0 and 1, got {threshold}");
    }
    let audio = read_wav_16k(&a.wav)?;
    if audio.samples.is_empty() {
        bail!("{} holds no audio samples", a.wav.display());
    }
    let mut vad = SileroVad::new(VadConfig {
        engine: a.engine.options(),
        ..VadConfig::default()
    })
    .context("loading Silero VAD")?;
    let clock = MonotonicClock::new();
    let total_chunks = audio.samples.len().div_ceil(CHUNK_SAMPLES);
    let bar = indicatif::ProgressBar::new(total_chunks as u64);
    let mut total = StageTiming::default();
    let mut probs = Vec::with_capacity(total_chunks);
    for chunk in audio.samples.chunks(CHUNK_SAMPLES) {
        let mut c = chunk.to_vec();
        c.resize(CHUNK_SAMPLES, 0.0);
        let (p, t) = run_timed(&mut vad, &c, &clock)?;
        total.pre_nanos += t.pre_nanos;
        total.exec_nanos += t.exec_nanos;
        total.post_nanos += t.post_nanos;
        probs.push(p);
        bar.inc(1);
    }
    bar.finish_and_clear();
    let speech_chunks = probs.iter().filter(|&&p| p >= threshold).count();
    let params = SegmentParams {
        threshold,
        ..SegmentParams::default()
    };
    let segments = speech_segments(&probs, &params);
    let n = total_chunks as u64;
    if a.json {
        let out = json!({
            "speech_chunks": speech_chunks,
            "total_chunks": total_chunks,
            "timing_ms": {"pre": ms(total.pre_nanos), "exec": ms(total.exec_nanos), "post": ms(total.post_nanos)},
            "per_chunk_ms": {"pre": ms(total.pre_nanos / n), "exec": ms(total.exec_nanos / n), "post": ms(total.post_nanos / n)},
            "segments": segments.iter().map(|s| json!({"start_ms": s.start_micros / 1000, "end_ms": s.end_micros / 1000})).collect::<Vec<_>>(),
            "threshold": threshold,
            "duration_ms": audio.duration_ms(),
            "source_rate_hz": audio.source_rate_hz,
            "engine": a.engine.options().kind.as_str(),
        });
        outln!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        if audio.source_rate_hz != audio.sample_rate_hz {
            outln!("resampled {} Hz → 16000 Hz", audio.source_rate_hz);
        }
        outln!(
            "{speech_chunks} of {total_chunks} chunks (32 ms) are speech at threshold {threshold}"
        );
        for s in &segments {
            outln!(
                "speech {:>8.2} s – {:>8.2} s",
                s.start_micros as f64 / 1e6,
                s.end_micros as f64 / 1e6
            );
        }
        outln!(
            "timing: pre {:.3} ms, exec {:.3} ms, post {:.3} ms in total; {:.4} ms per chunk  [{}]",
            ms(total.pre_nanos),
            ms(total.exec_nanos),
            ms(total.post_nanos),
            total.total_nanos() as f64 / 1e6 / n as f64,
            a.engine.options().kind,
        );
    }
    Ok(ExitCode::SUCCESS)
}
