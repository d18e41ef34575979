//! `bench models` for Whisper tiny.en (candle) and, through [`super::models_llm`], Gemma-3 270M.
//!
//! **Whisper** is measured like the ONNX models: `run_timed` over `AsrSession` (pre =
//! resample + log-mel, exec = encoder + greedy decoder, post = detokenise) on the 10 s
//! `beckett.wav` clip, alternating with a direct call: candle's encoder and decoder driven
//! in a plain greedy loop on the same prepared mel windows, with the same logit masks, on a
//! thread pool of the same size. The direct call must produce the session's tokens.
//!
//! **Gemma-3** (on llama.cpp or candle) is measured in [`super::models_llm`].

use anyhow::{Context, Result};
use clap::Args;
use indicatif::ProgressBar;
use mmsched_backends::Backend;
use mmsched_backends::asr::{AsrOptions, AsrSession, EngineParts, WhisperFiles};
use mmsched_backends::audio::read_wav;
use mmsched_backends::candle_core::{self, D, IndexOp, Tensor};
use mmsched_backends::llm::LlmEngine;
use mmsched_backends::threads::EngineThreads;
use mmsched_core::time::MonotonicClock;
use mmsched_models::{Artifact, ModelPaths};

use super::models::{Bench, ModelResult};
use super::models_llm::{self, LlmResult};

/// Default cap on Whisper runs: one run of the 10 s clip takes over a second.
const ASR_RUNS_MAX: u32 = 5;
/// Default cap on Gemma-3 generations.
const LLM_RUNS_MAX: u32 = 10;
/// Longest transcript per 30 s window, as in the session.
const MAX_TOKENS_PER_WINDOW: usize = 224;

/// Flags of `bench models` for Whisper and Gemma-3.
#[derive(Debug, Args)]
pub struct CandleArgs {
    /// Timed Whisper runs on the 10 s clip, each followed by one direct run, after one
    /// untimed pair (default: --runs, at most 5).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=10_000))]
    asr_runs: Option<u32>,
    /// Timed Gemma-3 generations, each followed by one direct generation, after one
    /// untimed pair (default: --runs, at most 10).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=10_000))]
    llm_runs: Option<u32>,
    /// Tokens per Gemma-3 generation: the first comes from the prefill, each further one
    /// from one decode step.
    #[arg(long, value_name = "N", default_value_t = 32, value_parser = clap::value_parser!(u32).range(2..=1024))]
    llm_tokens: u32,
    /// The engine that runs Gemma-3: `llama` (llama.cpp, the default where compiled in)
    /// or `candle`.
    #[arg(long, value_name = "ENGINE", value_parser = parse_llm_engine)]
    llm_engine: Option<LlmEngine>,
}

fn parse_llm_engine(s: &str) -> Result<LlmEngine, String> {
    s.parse()
        .map_err(|e: mmsched_backends::BackendError| e.to_string())
}

/// What to measure of the candle models (`None`: not selected).
#[derive(Debug, Clone, Copy)]
pub(super) struct CandlePlan {
    asr_runs: Option<u32>,
    llm_runs: Option<u32>,
    llm_tokens: usize,
    llm_engine: LlmEngine,
}

impl CandleArgs {
    /// Resolves the defaults against `--runs` and the selection.
    pub(super) fn plan(&self, runs: u32, asr: bool, llm: bool) -> CandlePlan {
        CandlePlan {
            asr_runs: asr.then(|| self.asr_runs.unwrap_or(runs.min(ASR_RUNS_MAX))),
            llm_runs: llm.then(|| self.llm_runs.unwrap_or(runs.min(LLM_RUNS_MAX))),
            llm_tokens: self.llm_tokens as usize,
            llm_engine: self.llm_engine.unwrap_or_default(),
        }
    }
}

impl CandlePlan {
    /// Progress-bar steps: one per timed run (warm-up runs do not advance it).
    pub(super) fn progress_len(&self) -> u64 {
        u64::from(self.asr_runs.unwrap_or(0)) + u64::from(self.llm_runs.unwrap_or(0))
    }
}

/// Measures what `plan` selects: Whisper into `results`, Gemma-3 returned.
pub(super) fn run(
    plan: &CandlePlan,
    bar: &ProgressBar,
    results: &mut Vec<ModelResult>,
) -> Result<Option<LlmResult>> {
    let paths = ModelPaths::from_env();
    let clock = MonotonicClock::new();
    if let Some(runs) = plan.asr_runs {
        let b = Bench {
            runs,
            warmup: 1,
            clock,
            bar,
        };
        results.push(bench_asr(&b, &paths).context("benchmarking Whisper tiny.en")?);
    }
    let Some(runs) = plan.llm_runs else {
        return Ok(None);
    };
    let llm = models_llm::bench_llm(&paths, plan.llm_engine, runs, plan.llm_tokens, &clock, bar)
        .context("benchmarking Gemma-3 270M")?;
    Ok(Some(llm))
}

fn bench_asr(b: &Bench<'_>, paths: &ModelPaths) -> Result<ModelResult> {
    b.bar.set_message("whisper-tiny.en [candle] loading");
    let clip = read_wav(&paths.require(Artifact::Beckett)?)?;
    let mut asr = AsrSession::load(
        &WhisperFiles::from_cache(paths)?,
        &AsrOptions { threads: 0 },
    )?;
    let pool = EngineThreads::new("asr-direct", asr.threads())?;
    let windows = asr.prepare(&clip)?.windows().to_vec();
    let direct = |s: &mut AsrSession| -> Result<Vec<Vec<u32>>> {
        let parts = s.engine_parts();
        Ok(pool.install(|| whisper_direct(parts, &windows))?)
    };
    let prepared = asr.prepare(&clip)?;
    let layer_tokens = asr.execute(prepared)?;
    let same = direct(&mut asr)? == layer_tokens;
    let label = format!("{:.1}s", clip.duration_ms() as f64 / 1e3);
    let mut r = b.measure(&mut asr, &clip, &label, "candle", |s| {
        std::hint::black_box(direct(s)?);
        Ok(())
    })?;
    r.outputs_match = Some(same);
    Ok(r)
}

/// Candle's Whisper driven directly: encoder, then a greedy loop over the decoder with the
/// session's logit masks, no timestamps.
fn whisper_direct(p: EngineParts<'_>, windows: &[Tensor]) -> candle_core::Result<Vec<Vec<u32>>> {
    let special = p.model.special;
    let max_positions = p.model.config.max_target_positions;
    let whisper = &mut p.model.model;
    let mut out = Vec::with_capacity(windows.len());
    for mel in windows {
        let features = whisper.encoder.forward(mel, true)?;
        let mut tokens = vec![special.sot, special.no_timestamps];
        for i in 0..MAX_TOKENS_PER_WINDOW {
            let input = Tensor::new(tokens.as_slice(), mel.device())?.unsqueeze(0)?;
            let ys = whisper.decoder.forward(&input, &features, i == 0)?;
            let last = ys.dim(1)? - 1;
            let logits = whisper
                .decoder
                .final_linear(&ys.i((..1, last..))?)?
                .i(0)?
                .i(0)?;
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
