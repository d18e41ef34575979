//! `bench models` for Whisper tiny.en: per-stage figures against a direct engine loop, and
//! the real-time factor at one and two threads.
//!
//! **Per stage**: `run_timed` over `AsrSession` (pre = resample + log-mel, exec = encoder +
//! greedy decoder, post = detokenise) on the 10 s `beckett.wav` clip, alternating with a
//! direct call: the same network driven in a plain greedy loop (`start_window`, then
//! `next_logits` + argmax per token) on the same prepared mel windows, with the same logit
//! masks, on a thread pool of the same size. The direct call must produce the session's
//! tokens.
//!
//! **Threads** (`asr.rtf_1t`, `asr.rtf_2t`): candle's quantised matrix kernels run on a
//! process-wide pool sized once per process (`CANDLE_NUM_THREADS`), so each thread count is
//! measured in its own child process (`bench models --only asr --asr-threads N`, with
//! `CANDLE_NUM_THREADS=N` and `RAYON_NUM_THREADS=N`), one timed run per child, the two
//! counts alternating so that both see the same machine load. RTF = P50 of the session's
//! total time ÷ clip length.

use std::process::Command;

use anyhow::{Context, Result, bail};
use clap::Args;
use mmsched_backends::Backend;
use mmsched_backends::asr::{
    AsrEngine, AsrOptions, AsrSession, EncoderSpan, EngineParts, WhisperFiles,
};
use mmsched_backends::audio::read_wav;
use mmsched_backends::candle_core::{D, Tensor};
use mmsched_backends::threads::EngineThreads;
use mmsched_models::{Artifact, ModelPaths};
use serde::Serialize;
use serde_json::Value;

use super::models::{Bench, ModelResult};
use crate::cmd::engine_arg::{AsrEngineArg, SpanArg};

/// Longest transcript per 30 s window, as in the session.
const MAX_TOKENS_PER_WINDOW: usize = 224;
/// Thread counts of the RTF figures.
const RTF_THREADS: [usize; 2] = [1, 2];

/// Flags of `bench models` for Whisper.
#[derive(Debug, Clone, Args)]
pub struct AsrBenchArgs {
    /// Whisper engines to measure per stage (default: the one `run` uses, ggml).
    #[arg(long, value_enum, value_delimiter = ',', value_name = "LIST")]
    asr_engine: Vec<AsrEngineArg>,
    /// What Whisper's encoder runs over (`window`: the whole 30 s window, as `run` and
    /// CTranslate2 do; `audio`: the clip and 1 s of padding).
    #[arg(long, value_enum, default_value = "window")]
    asr_span: SpanArg,
    /// Measure Whisper in this process only, with N worker threads (set CANDLE_NUM_THREADS=N
    /// as well to bound candle's quantised kernels), instead of also measuring the RTF at 1
    /// and 2 threads in child processes. 0: one per core.
    #[arg(long, value_name = "N")]
    asr_threads: Option<usize>,
    /// Child processes per thread count for `asr.rtf_1t` / `asr.rtf_2t` (one timed run each,
    /// after one untimed).
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
    asr_rounds: u32,
}

impl AsrBenchArgs {
    fn engines(&self) -> Vec<AsrEngine> {
        if self.asr_engine.is_empty() {
            vec![AsrEngine::default()]
        } else {
            let mut v: Vec<AsrEngine> = self.asr_engine.iter().map(|&e| e.into()).collect();
            v.dedup();
            v
        }
    }
}

/// Measures every selected Whisper engine into `results`.
pub(super) fn bench(
    b: &Bench<'_>,
    paths: &ModelPaths,
    args: &AsrBenchArgs,
    results: &mut Vec<ModelResult>,
) -> Result<()> {
    for engine in args.engines() {
        let threads = args.asr_threads.unwrap_or(0);
        results.push(
            bench_engine(b, paths, engine, args.asr_span.into(), threads)
                .with_context(|| format!("benchmarking Whisper tiny.en ({engine})"))?,
        );
    }
    Ok(())
}

fn bench_engine(
    b: &Bench<'_>,
    paths: &ModelPaths,
    engine: AsrEngine,
    span: EncoderSpan,
    threads: usize,
) -> Result<ModelResult> {
    b.bar
        .set_message(format!("whisper-tiny.en [{}] loading", engine.label()));
    let clip = read_wav(&paths.require(Artifact::Beckett)?)?;
    let options = AsrOptions {
        threads,
        engine,
        span,
    };
    let mut asr = AsrSession::load(&WhisperFiles::from_cache(paths)?, &options)?;
    let pool = EngineThreads::new("asr-direct", asr.threads())?;
    let windows = asr.prepare(&clip)?.windows().to_vec();
    let direct = |s: &mut AsrSession| -> Result<Vec<Vec<u32>>> {
        let parts = s.engine_parts();
        pool.install(|| whisper_direct(parts, &windows))
    };
    let prepared = asr.prepare(&clip)?;
    let layer_tokens = asr.execute(prepared)?;
    let same = direct(&mut asr)? == layer_tokens;
    let label = format!("{:.1}s", clip.duration_ms() as f64 / 1e3);
    let mut r = b.measure(&mut asr, &clip, &label, engine.label(), |s| {
        std::hint::black_box(direct(s)?);
        Ok(())
    })?;
    r.outputs_match = Some(same);
    Ok(r)
}

/// The session's network driven directly: per window `start_window`, then a greedy loop of
/// `next_logits` with the session's logit masks, no timestamps.
fn whisper_direct(p: EngineParts<'_>, windows: &[Tensor]) -> Result<Vec<Vec<u32>>> {
    let special = p.model.special;
    let max_positions = p.model.config.max_target_positions;
    let net = &mut p.model.net;
    let mut out = Vec::with_capacity(windows.len());
    for mel in windows {
        let features = net.start_window(mel)?;
        let mut tokens = vec![special.sot, special.no_timestamps];
        for i in 0..MAX_TOKENS_PER_WINDOW {
            let logits = net.next_logits(&tokens, &features)?;
            let mask = if i == 0 { p.suppress_first } else { p.suppress };
            let next = (logits + mask)?.argmax(D::Minus1)?.to_scalar::<u32>()?;
            if next == special.eot || tokens.len() >= max_positions {
                break;
            }
            tokens.push(next);
        }
        out.push(tokens.split_off(2));
    }
    Ok(out)
}

/// Whisper's real-time factor at 1 and 2 threads.
#[derive(Debug, Serialize)]
pub(super) struct RtfScan {
    engine: &'static str,
    /// What the encoder ran over (`audio` or `window`).
    span: &'static str,
    clip_s: f64,
    /// Session total (pre + exec + post) P50 ÷ clip length, one thread.
    rtf_1t: f64,
    /// The same with two threads.
    rtf_2t: f64,
    /// Every child's timed total, seconds, in run order.
    seconds_1t: Vec<f64>,
    seconds_2t: Vec<f64>,
    /// Children per thread count.
    rounds: u32,
}

/// Whether `args` asks for the RTF scan (not in a child, which has `--asr-threads`).
pub(super) fn wants_scan(args: &AsrBenchArgs) -> bool {
    args.asr_threads.is_none()
}

/// Runs the child processes of the RTF scan for the default engine.
pub(super) fn scan(args: &AsrBenchArgs, bar: &indicatif::ProgressBar) -> Result<RtfScan> {
    let engine = AsrEngine::default();
    let exe = std::env::current_exe().context("locating the mmsched binary")?;
    let clip = read_wav(&ModelPaths::from_env().require(Artifact::Beckett)?)?;
    let clip_s = clip.duration_ms() as f64 / 1e3;
    let mut seconds: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    for round in 0..args.asr_rounds {
        // Alternate which count goes first, as the layer/direct pairs do.
        let order: Vec<usize> = if round % 2 == 0 {
            vec![0, 1]
        } else {
            vec![1, 0]
        };
        for i in order {
            let t = RTF_THREADS[i];
            bar.set_message(format!(
                "whisper-tiny.en [{}] {t} thread(s), round {}/{}",
                engine.label(),
                round + 1,
                args.asr_rounds
            ));
            seconds[i].push(child_total_seconds(&exe, engine, args.asr_span, t)?);
        }
    }
    let rtf = |s: &[f64]| {
        let mut v = s.to_vec();
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(0.0) / clip_s
    };
    let [s1, s2] = seconds;
    Ok(RtfScan {
        engine: engine.label(),
        span: EncoderSpan::from(args.asr_span).as_str(),
        clip_s,
        rtf_1t: rtf(&s1),
        rtf_2t: rtf(&s2),
        seconds_1t: s1,
        seconds_2t: s2,
        rounds: args.asr_rounds,
    })
}

/// One child `bench models --only asr` at `threads`: its session total P50, seconds.
fn child_total_seconds(
    exe: &std::path::Path,
    engine: AsrEngine,
    span: SpanArg,
    threads: usize,
) -> Result<f64> {
    let span = EncoderSpan::from(span).as_str();
    let t = threads.to_string();
    let out = Command::new(exe)
        .args([
            "bench",
            "models",
            "--only",
            "asr",
            "--asr-runs",
            "1",
            "--json",
        ])
        .args(["--asr-threads", &t, "--asr-engine", engine.as_str()])
        .args(["--asr-span", span])
        .env("CANDLE_NUM_THREADS", &t)
        .env("RAYON_NUM_THREADS", &t)
        .output()
        .context("starting a child `mmsched bench models`")?;
    if !out.status.success() {
        bail!(
            "the child `bench models --only asr --asr-threads {t}` failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let v: Value =
        serde_json::from_slice(&out.stdout).context("reading the child `bench models` JSON")?;
    let ms = v["models"][0]["total_ms"]["p50"]
        .as_f64()
        .context("the child `bench models` JSON has no models[0].total_ms.p50")?;
    if v["models"][0]["outputs_match"] != Value::Bool(true) {
        bail!("the child at {t} thread(s): the direct loop's tokens differ from the session's");
    }
    Ok(ms / 1e3)
}

/// Prints the RTF scan under the table.
pub(super) fn print_rtf(r: &RtfScan) {
    let list = |v: &[f64]| {
        v.iter()
            .map(|s| format!("{s:.3}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    outln!(
        "whisper-tiny.en [{}, encoder span: {}] on the {:.1} s clip, {} child process(es) per thread count: RTF {:.3} at 1 thread (s: {}), {:.3} at 2 threads (s: {})",
        r.engine,
        r.span,
        r.clip_s,
        r.rounds,
        r.rtf_1t,
        list(&r.seconds_1t),
        r.rtf_2t,
        list(&r.seconds_2t)
    );
}
