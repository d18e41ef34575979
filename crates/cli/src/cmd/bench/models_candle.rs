//! `bench models` for the candle models: Gemma-3 270M here, Whisper tiny.en in
//! [`super::models_asr`].
//!
//! **Gemma-3** generations prefill a fixed prompt, then decode greedily one token per
//! `LlmSession::step`, each call timed from outside the session. Every generation runs
//! together with a direct one: a clone of the session's model (shared weights, its own KV
//! cache), its `Gemma3::forward` and an argmax, on the same prompt tokens, on a pool of the
//! same size, with a stage timer over a clock that never moves. The two alternate call by
//! call (prefill, then each step, the first of the two alternating), because on a shared
//! machine the load changes faster than a generation lasts: alternating whole generations
//! measured the neighbours, not the layer. Both paths hop onto their pool once per call,
//! as one schedulable step must. The layer ratio is decode tokens/s through the session ÷
//! through the direct loop at their median step times (medians, as for every model: on a
//! busy machine a few steps stall for hundreds of milliseconds, and sums follow them); the
//! greedy tokens must be identical.

use std::sync::Arc;

use anyhow::{Context, Result};
use clap::Args;
use indicatif::ProgressBar;
use mmsched_backends::Backend;
use mmsched_backends::candle_core::{self, D, Device, Tensor};
use mmsched_backends::llm::model::{Gemma3, StageTimer};
use mmsched_backends::llm::{LlmOptions, LlmSession, StepStages};
use mmsched_backends::threads::EngineThreads;
use mmsched_core::time::{Clock, ManualClock, MonotonicClock, Nanos};
use mmsched_models::{Artifact, ModelPaths};
use serde::Serialize;

use super::models::{Bench, ModelResult, StageMs, hist, peak_rss_mib, stage};
use super::models_asr::{self, AsrBenchArgs};

/// The text Gemma-3 continues (a base model: text to continue, not a chat turn).
const PROMPT: &str = "The three primary colours of light are";
/// Default cap on Whisper runs: one run of the 10 s clip takes over a second.
const ASR_RUNS_MAX: u32 = 5;
/// Default cap on Gemma-3 generations.
const LLM_RUNS_MAX: u32 = 10;

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
    #[command(flatten)]
    pub(super) asr: AsrBenchArgs,
}

/// What to measure of the candle models (`None`: not selected).
#[derive(Debug, Clone)]
pub(super) struct CandlePlan {
    asr_runs: Option<u32>,
    llm_runs: Option<u32>,
    llm_tokens: usize,
    asr: AsrBenchArgs,
}

impl CandleArgs {
    /// Resolves the defaults against `--runs` and the selection.
    pub(super) fn plan(&self, runs: u32, asr: bool, llm: bool) -> CandlePlan {
        CandlePlan {
            asr_runs: asr.then(|| self.asr_runs.unwrap_or(runs.min(ASR_RUNS_MAX))),
            llm_runs: llm.then(|| self.llm_runs.unwrap_or(runs.min(LLM_RUNS_MAX))),
            llm_tokens: self.llm_tokens as usize,
            asr: self.asr.clone(),
        }
    }
}

impl CandlePlan {
    /// Progress-bar steps: one per timed run (warm-up runs do not advance it).
    pub(super) fn progress_len(&self) -> u64 {
        u64::from(self.asr_runs.unwrap_or(0)) + u64::from(self.llm_runs.unwrap_or(0))
    }
}

/// Per-step split of a decode step (from the session's `StepStages`), milliseconds.
#[derive(Debug, Serialize)]
pub(super) struct StepSplitMs {
    kv_cache: StageMs,
    attention: StageMs,
    rest: StageMs,
}

/// Gemma-3's result.
#[derive(Debug, Serialize)]
pub(super) struct LlmResult {
    model: String,
    engine: &'static str,
    prompt: &'static str,
    /// Prompt tokens, beginning-of-sequence included.
    prompt_tokens: usize,
    /// Tokens per generation (the first from the prefill).
    generated_tokens: usize,
    runs: u32,
    /// Time to first token through the session (prefill + sampling).
    ttft_ms: StageMs,
    /// Time per output token through the session (one `step`), over all steps of all runs.
    tpot_ms: StageMs,
    /// Decode tokens/s through the session at the median step time (1 ÷ TPOT P50): the
    /// steady rate, robust against steps stalled by other processes.
    tokens_per_s: f64,
    /// Decode steps ÷ their summed time over all runs (stalled steps included).
    mean_tokens_per_s: f64,
    direct_ttft_ms: StageMs,
    direct_tpot_ms: StageMs,
    direct_tokens_per_s: f64,
    direct_mean_tokens_per_s: f64,
    /// `tokens_per_s` ÷ `direct_tokens_per_s` (medians).
    layer_ratio: f64,
    /// Where a decode step's time goes, as the session's stage timer reports it.
    step_split_ms: StepSplitMs,
    /// Whether every generation's greedy tokens were identical between the two paths.
    pub(super) greedy_tokens_match: bool,
    /// The generated text (through the session).
    text: String,
    /// Peak resident memory of the process after this model ran, MiB.
    peak_rss_mib: f64,
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
        models_asr::bench(&b, &paths, &plan.asr, results)?;
    }
    let Some(runs) = plan.llm_runs else {
        return Ok(None);
    };
    let llm = bench_llm(&paths, runs, plan.llm_tokens, &clock, bar)
        .context("benchmarking Gemma-3 270M")?;
    Ok(Some(llm))
}

/// One generation's measurements.
#[derive(Debug, Default)]
struct Generation {
    ttft_nanos: Nanos,
    step_nanos: Vec<Nanos>,
    stages: Vec<StepStages>,
    tokens: Vec<u32>,
}

/// The session's model driven without the session: a clone (shared weights, its own KV
/// cache), its forward pass and an argmax, on a pool as large as the session's.
struct DirectLoop {
    model: Gemma3,
    pool: EngineThreads,
    chunk: usize,
    position: usize,
    last: u32,
}

impl DirectLoop {
    /// Runs `f` with the model on the pool and a stage timer whose clock never moves.
    fn run<R: Send>(
        &mut self,
        f: impl FnOnce(&mut Gemma3, &mut StageTimer<'_>) -> candle_core::Result<R> + Send,
    ) -> candle_core::Result<R> {
        let model = &mut self.model;
        self.pool.install(|| {
            let still = ManualClock::new(0);
            let mut timer = StageTimer::start(&still);
            f(model, &mut timer)
        })
    }

    /// Prefills `prompt` (in the session's chunk size) and returns the first token.
    fn prefill(&mut self, prompt: &[u32]) -> candle_core::Result<u32> {
        let chunk = self.chunk.max(1);
        let first = self.run(|model, timer| {
            model.clear_kv_cache();
            let mut position = 0;
            let mut logits = None;
            for ids in prompt.chunks(chunk) {
                let input = Tensor::new(ids, &Device::Cpu)?.unsqueeze(0)?;
                logits = Some(model.forward(&input, position, timer)?);
                position += ids.len();
            }
            let Some(logits) = logits else {
                candle_core::bail!("empty prompt");
            };
            logits.argmax(D::Minus1)?.to_scalar::<u32>()
        })?;
        self.position = prompt.len();
        self.last = first;
        Ok(first)
    }

    /// One decode step: feeds the last token and returns the argmax of the next.
    fn step(&mut self) -> candle_core::Result<u32> {
        let (last, position) = (self.last, self.position);
        let next = self.run(|model, timer| {
            let input = Tensor::new(&[last], &Device::Cpu)?.unsqueeze(0)?;
            model
                .forward(&input, position, timer)?
                .argmax(D::Minus1)?
                .to_scalar::<u32>()
        })?;
        self.position += 1;
        self.last = next;
        Ok(next)
    }
}

/// Runs one layer generation and one direct generation of `n` tokens each, interleaved
/// call by call (prefill, then step by step), which of the two goes first alternating, so
/// that both see the same machine load even on a shared, busy machine.
fn generation_pair(
    s: &mut LlmSession,
    d: &mut DirectLoop,
    prompt: &[u32],
    n: usize,
    clock: &MonotonicClock,
) -> Result<(Generation, Generation)> {
    let (mut layer, mut direct) = (Generation::default(), Generation::default());
    let chunk = s.options().prefill_chunk;
    let mut layer_prefill = |g: &mut Generation| -> Result<()> {
        let t = clock.now_nanos();
        s.start_tokens(prompt.to_vec())?;
        let first = loop {
            if let Some(t) = s.prefill_chunk(chunk)? {
                break t;
            }
        };
        g.ttft_nanos = clock.now_nanos() - t;
        g.tokens.push(first.id);
        Ok(())
    };
    layer_prefill(&mut layer)?;
    let t = clock.now_nanos();
    direct.tokens.push(d.prefill(prompt)?);
    direct.ttft_nanos = clock.now_nanos() - t;
    let layer_step = |s: &mut LlmSession, g: &mut Generation| -> Result<()> {
        let t = clock.now_nanos();
        let token = s.step()?;
        g.step_nanos.push(clock.now_nanos() - t);
        g.stages.push(token.stages);
        g.tokens.push(token.id);
        Ok(())
    };
    let direct_step = |d: &mut DirectLoop, g: &mut Generation| -> Result<()> {
        let t = clock.now_nanos();
        let id = d.step()?;
        g.step_nanos.push(clock.now_nanos() - t);
        g.tokens.push(id);
        Ok(())
    };
    for i in 1..n {
        if i % 2 == 0 {
            direct_step(d, &mut direct)?;
            layer_step(s, &mut layer)?;
        } else {
            layer_step(s, &mut layer)?;
            direct_step(d, &mut direct)?;
        }
    }
    Ok((layer, direct))
}

/// Histograms of the per-run and per-step figures of one path.
struct PathStats {
    ttft: hdrhistogram::Histogram<u64>,
    tpot: hdrhistogram::Histogram<u64>,
    steps: u64,
    step_nanos: Nanos,
}

impl PathStats {
    fn new() -> Self {
        Self {
            ttft: hist(),
            tpot: hist(),
            steps: 0,
            step_nanos: 0,
        }
    }

    fn record(&mut self, g: &Generation) {
        self.ttft.saturating_record(g.ttft_nanos.max(1));
        for &n in &g.step_nanos {
            self.tpot.saturating_record(n.max(1));
            self.steps += 1;
            self.step_nanos += n;
        }
    }

    /// Tokens/s at the median step time.
    fn tokens_per_s(&self) -> f64 {
        1e9 / self.tpot.value_at_quantile(0.5).max(1) as f64
    }

    /// Tokens/s over the summed step time.
    fn mean_tokens_per_s(&self) -> f64 {
        self.steps as f64 * 1e9 / self.step_nanos.max(1) as f64
    }
}

fn bench_llm(
    paths: &ModelPaths,
    runs: u32,
    n: usize,
    clock: &MonotonicClock,
    bar: &ProgressBar,
) -> Result<LlmResult> {
    bar.set_message("gemma3-270m [candle] loading");
    let session_clock: Arc<dyn Clock + Send + Sync> = Arc::new(*clock);
    let mut s = LlmSession::load(
        &paths.require(Artifact::Gemma3)?,
        LlmOptions::default(),
        session_clock,
    )?;
    let mut direct = DirectLoop {
        model: s.model().clone(),
        pool: EngineThreads::new("llm-direct", s.threads())?,
        chunk: s.options().prefill_chunk,
        position: 0,
        last: 0,
    };
    let prompt = s.tokenizer().encode(PROMPT);
    bar.set_message(format!("gemma3-270m [candle, {n} tokens]"));
    let (l, d) = generation_pair(&mut s, &mut direct, &prompt, n, clock)?;
    let mut same = l.tokens == d.tokens;
    let (mut layer, mut plain) = (PathStats::new(), PathStats::new());
    let (mut kv, mut attention, mut rest) = (hist(), hist(), hist());
    let mut tokens = Vec::new();
    for _ in 0..runs {
        let (g, d) = generation_pair(&mut s, &mut direct, &prompt, n, clock)?;
        layer.record(&g);
        plain.record(&d);
        for st in &g.stages {
            kv.saturating_record(st.kv_cache_nanos.max(1));
            attention.saturating_record(st.attention_nanos.max(1));
            rest.saturating_record(st.rest_nanos.max(1));
        }
        same &= g.tokens == d.tokens;
        tokens = g.tokens;
        bar.inc(1);
    }
    let tokens_per_s = layer.tokens_per_s();
    let direct_tokens_per_s = plain.tokens_per_s();
    Ok(LlmResult {
        model: s.name().to_string(),
        engine: "candle",
        prompt: PROMPT,
        prompt_tokens: prompt.len(),
        generated_tokens: n,
        runs,
        ttft_ms: stage(&layer.ttft),
        tpot_ms: stage(&layer.tpot),
        tokens_per_s,
        mean_tokens_per_s: layer.mean_tokens_per_s(),
        direct_ttft_ms: stage(&plain.ttft),
        direct_tpot_ms: stage(&plain.tpot),
        direct_tokens_per_s,
        direct_mean_tokens_per_s: plain.mean_tokens_per_s(),
        layer_ratio: tokens_per_s / direct_tokens_per_s.max(f64::MIN_POSITIVE),
        step_split_ms: StepSplitMs {
            kv_cache: stage(&kv),
            attention: stage(&attention),
            rest: stage(&rest),
        },
        greedy_tokens_match: same,
        text: s.tokenizer().decode(&tokens),
        peak_rss_mib: peak_rss_mib(),
    })
}

/// Prints Gemma-3's figures under the table.
pub(super) fn print_llm(l: &LlmResult) {
    println!(
        "{} [{}], {}-token prompt + {} tokens, {} generations:",
        l.model, l.engine, l.prompt_tokens, l.generated_tokens, l.runs
    );
    println!(
        "  TTFT p50/p99 {:.3}/{:.3} ms (direct {:.3}/{:.3}); TPOT p50/p99 {:.3}/{:.3} ms (direct {:.3}/{:.3})",
        l.ttft_ms.p50,
        l.ttft_ms.p99,
        l.direct_ttft_ms.p50,
        l.direct_ttft_ms.p99,
        l.tpot_ms.p50,
        l.tpot_ms.p99,
        l.direct_tpot_ms.p50,
        l.direct_tpot_ms.p99
    );
    println!(
        "  {:.1} tokens/s at the median step (direct {:.1}), {:.1} on average (direct {:.1}): ratio {:.3} (goal ≥ 0.97); greedy tokens identical: {}",
        l.tokens_per_s,
        l.direct_tokens_per_s,
        l.mean_tokens_per_s,
        l.direct_mean_tokens_per_s,
        l.layer_ratio,
        if l.greedy_tokens_match { "yes" } else { "NO" }
    );
    let sp = &l.step_split_ms;
    println!(
        "  decode step p50: KV cache {:.3} ms, attention {:.3} ms, rest {:.3} ms; peak RSS {:.0} MiB",
        sp.kv_cache.p50, sp.attention.p50, sp.rest.p50, l.peak_rss_mib
    );
    println!("  text: {:?}", l.text);
}
