//! `bench models` for Gemma-3 270M, on the default LLM engine (llama.cpp where compiled
//! in) or the one `--llm-engine` names.
//!
//! **Layer ratio.** Generations prefill a fixed prompt, then decode greedily one token per
//! `LlmSession::step`, each call timed from outside the session. Every generation runs
//! together with a direct one: the engine driven without the session (candle: a clone of
//! the session's model, shared weights and its own KV cache, its `Gemma3::forward` on a
//! pool of the same size; llama.cpp: a second context on the same weights with the same
//! thread count), and an argmax, on the same prompt tokens. The two alternate call by call
//! (prefill, then each step, the first of the two alternating), because on a shared machine
//! the load changes faster than a generation lasts. The layer ratio is decode tokens/s
//! through the session ÷ through the direct loop at their median step times; the greedy
//! tokens must be identical.
//!
//! **Threads.** On an engine that takes thread grants (llama.cpp), the session is then
//! granted 1 and 2 threads in turn (the order alternating run by run) and measured the way
//! `scripts/bench-mainstream.sh` measures llama-cpp-python: prefill tokens/s = prompt
//! tokens ÷ the time of prefilling [`PREFILL_PROMPT`] in one call (its first token
//! included); decode tokens/s = 1 ÷ the median time of one step. candle cannot change its
//! thread count between calls (its quantised matmuls run on one process-wide pool sized at
//! first use), so those figures are absent for it.

use std::sync::Arc;

use anyhow::{Context, Result, bail};
use indicatif::ProgressBar;
use mmsched_backends::Backend;
use mmsched_backends::candle_core::{self, D, Device, Tensor};
#[cfg(feature = "llama")]
use mmsched_backends::llm::argmax;
#[cfg(feature = "llama")]
use mmsched_backends::llm::llama::LlamaGemma;
use mmsched_backends::llm::model::{Gemma3, StageTimer};
use mmsched_backends::llm::{LlmEngine, LlmOptions, LlmSession, StepStages};
use mmsched_backends::threads::EngineThreads;
use mmsched_core::time::{Clock, ManualClock, MonotonicClock, Nanos};
use mmsched_models::{Artifact, ModelPaths};
use serde::Serialize;

use super::models::{StageMs, hist, peak_rss_mib, stage};
use super::models_llm_batch::{self, LlmBatchResult};

/// The text Gemma-3 continues (a base model: text to continue, not a chat turn).
const PROMPT: &str = "The three primary colours of light are";
/// The prompt whose prefill is timed (about 45 tokens; the same text as the mainstream
/// comparison script uses).
pub(super) const PREFILL_PROMPT: &str = "The scheduler shares one small device between a camera that reads text, a microphone that listens for speech and a language model that answers questions, so every model must finish before its deadline while the others wait for the";
/// Thread counts of the thread sweep.
const SWEEP_THREADS: [usize; 2] = [1, 2];

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
    /// The engine that ran it (`llama` or `candle`).
    engine: &'static str,
    /// Threads of the layer/direct comparison.
    threads: usize,
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
    /// Where a decode step's time goes, as the session's stage timer reports it (llama.cpp
    /// reports its whole call as `rest`).
    step_split_ms: StepSplitMs,
    /// Whether every generation's greedy tokens were identical between the two paths.
    pub(super) greedy_tokens_match: bool,
    /// The generated text (through the session).
    text: String,
    /// Prompt tokens of [`PREFILL_PROMPT`].
    prefill_prompt_tokens: usize,
    /// Decode tokens/s granted 1 thread (1 ÷ median step time); `None` on an engine that
    /// cannot change its thread count.
    decode_tok_s_1t: Option<f64>,
    /// Decode tokens/s granted 2 threads.
    decode_tok_s_2t: Option<f64>,
    /// Prefill tokens/s granted 1 thread (median over runs).
    prefill_tok_s_1t: Option<f64>,
    /// Prefill tokens/s granted 2 threads.
    prefill_tok_s_2t: Option<f64>,
    /// Step times of the thread sweep, per thread count.
    sweep_step_ms_1t: Option<StageMs>,
    sweep_step_ms_2t: Option<StageMs>,
    /// Whether the greedy tokens were the same at 1 and 2 threads in every sweep run.
    sweep_tokens_match: Option<bool>,
    /// Aggregate decode tokens/s of 1, 2, 4 and 8 sequences decoded together at 1 thread
    /// (medians; `None` on an engine that cannot batch).
    batch_tok_s_1: Option<f64>,
    batch_tok_s_2: Option<f64>,
    batch_tok_s_4: Option<f64>,
    batch_tok_s_8: Option<f64>,
    /// Four sequences together ÷ one alone, 1 thread (median of the repetitions' ratios).
    batch4_speedup: Option<f64>,
    /// The same at 2 threads.
    batch4_speedup_2t: Option<f64>,
    /// Every figure of batched decoding, with its spread.
    pub(super) batch: Option<LlmBatchResult>,
    /// Peak resident memory of the process after this model ran, MiB.
    peak_rss_mib: f64,
}

/// One generation's measurements.
#[derive(Debug, Default)]
struct Generation {
    ttft_nanos: Nanos,
    step_nanos: Vec<Nanos>,
    stages: Vec<StepStages>,
    tokens: Vec<u32>,
}

/// candle's model driven without the session: a clone (shared weights, its own KV cache),
/// its forward pass and an argmax, on a pool as large as the session's.
struct CandleDirect {
    model: Gemma3,
    pool: EngineThreads,
    chunk: usize,
    position: usize,
    last: u32,
}

impl CandleDirect {
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

/// llama.cpp driven without the session: a second context on the same weights.
#[cfg(feature = "llama")]
struct LlamaDirect {
    model: LlamaGemma,
    chunk: usize,
    last: u32,
}

#[cfg(feature = "llama")]
impl LlamaDirect {
    fn prefill(&mut self, prompt: &[u32]) -> Result<u32> {
        self.model.clear();
        let mut first = None;
        for ids in prompt.chunks(self.chunk.max(1)) {
            first = Some(argmax(self.model.forward(ids)?));
        }
        let Some(first) = first else {
            bail!("empty prompt")
        };
        self.last = first;
        Ok(first)
    }

    fn step(&mut self) -> Result<u32> {
        let next = argmax(self.model.forward(&[self.last])?);
        self.last = next;
        Ok(next)
    }
}

/// The direct path of either engine.
enum Direct {
    Candle(Box<CandleDirect>),
    #[cfg(feature = "llama")]
    Llama(LlamaDirect),
}

impl Direct {
    fn for_session(s: &LlmSession) -> Result<Self> {
        let chunk = s.options().prefill_chunk;
        if let Some(model) = s.model() {
            return Ok(Direct::Candle(Box::new(CandleDirect {
                model: model.clone(),
                pool: EngineThreads::new("llm-direct", s.threads())?,
                chunk,
                position: 0,
                last: 0,
            })));
        }
        #[cfg(feature = "llama")]
        if let Some(model) = s.llama_model() {
            return Ok(Direct::Llama(LlamaDirect {
                model: model.fork()?,
                chunk,
                last: 0,
            }));
        }
        bail!("no direct path for the {} engine", s.engine())
    }

    fn prefill(&mut self, prompt: &[u32]) -> Result<u32> {
        match self {
            Direct::Candle(d) => Ok(d.prefill(prompt)?),
            #[cfg(feature = "llama")]
            Direct::Llama(d) => d.prefill(prompt),
        }
    }

    fn step(&mut self) -> Result<u32> {
        match self {
            Direct::Candle(d) => Ok(d.step()?),
            #[cfg(feature = "llama")]
            Direct::Llama(d) => d.step(),
        }
    }
}

/// Prefills `prompt` through the session and returns the first token.
fn session_prefill(s: &mut LlmSession, prompt: &[u32]) -> Result<u32> {
    let chunk = s.options().prefill_chunk;
    s.start_tokens(prompt.to_vec())?;
    loop {
        if let Some(t) = s.prefill_chunk(chunk)? {
            return Ok(t.id);
        }
    }
}

/// Runs one layer generation and one direct generation of `n` tokens each, interleaved
/// call by call (prefill, then step by step), which of the two goes first alternating, so
/// that both see the same machine load even on a shared, busy machine.
fn generation_pair(
    s: &mut LlmSession,
    d: &mut Direct,
    prompt: &[u32],
    n: usize,
    clock: &MonotonicClock,
) -> Result<(Generation, Generation)> {
    let (mut layer, mut direct) = (Generation::default(), Generation::default());
    let t = clock.now_nanos();
    layer.tokens.push(session_prefill(s, prompt)?);
    layer.ttft_nanos = clock.now_nanos() - t;
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
    let direct_step = |d: &mut Direct, g: &mut Generation| -> Result<()> {
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

/// The thread sweep's figures at one thread count.
struct SweepStats {
    /// Prefill tokens/s of each run.
    prefill: hdrhistogram::Histogram<u64>,
    steps: hdrhistogram::Histogram<u64>,
    tokens: Vec<Vec<u32>>,
}

/// Prefill of `long` and a greedy generation of `n` tokens after `prompt`, granted
/// `threads` threads, recorded into `st`.
fn sweep_run(
    s: &mut LlmSession,
    threads: usize,
    long: &[u32],
    prompt: &[u32],
    n: usize,
    clock: &MonotonicClock,
    st: &mut SweepStats,
) -> Result<()> {
    if s.grant_threads(threads) != Some(threads) {
        bail!(
            "the {} engine did not take a grant of {threads} threads",
            s.engine()
        );
    }
    s.start_tokens(long.to_vec())?;
    let t = clock.now_nanos();
    let _first = s.prefill_chunk(long.len())?;
    let nanos = (clock.now_nanos() - t).max(1);
    // Tokens/s × 1000, so the histogram keeps three digits of a figure like 213.4.
    st.prefill
        .saturating_record((long.len() as f64 * 1e12 / nanos as f64) as u64);
    let mut tokens = vec![session_prefill(s, prompt)?];
    for _ in 1..n {
        let t = clock.now_nanos();
        tokens.push(s.step()?.id);
        st.steps.saturating_record((clock.now_nanos() - t).max(1));
    }
    st.tokens.push(tokens);
    Ok(())
}

/// The thread sweep: one untimed round, then `runs` rounds of prefill and decoding on
/// each of [`SWEEP_THREADS`], the order alternating between rounds.
fn thread_sweep(
    s: &mut LlmSession,
    runs: u32,
    long: &[u32],
    prompt: &[u32],
    n: usize,
    clock: &MonotonicClock,
) -> Result<Vec<SweepStats>> {
    let mut st: Vec<SweepStats> = SWEEP_THREADS
        .iter()
        .map(|_| SweepStats {
            prefill: hist(),
            steps: hist(),
            tokens: Vec::new(),
        })
        .collect();
    // One untimed round, then `runs` rounds, the order alternating.
    let mut scratch = SweepStats {
        prefill: hist(),
        steps: hist(),
        tokens: Vec::new(),
    };
    for &t in &SWEEP_THREADS {
        sweep_run(s, t, long, prompt, n, clock, &mut scratch)?;
    }
    for r in 0..runs as usize {
        for k in 0..SWEEP_THREADS.len() {
            let i = if r % 2 == 0 {
                k
            } else {
                SWEEP_THREADS.len() - 1 - k
            };
            sweep_run(s, SWEEP_THREADS[i], long, prompt, n, clock, &mut st[i])?;
        }
    }
    Ok(st)
}

/// Measures Gemma-3 on `engine`: `runs` layer/direct generation pairs of `n` tokens,
/// then `runs` rounds of the thread sweep where the engine takes grants.
pub(super) fn bench_llm(
    paths: &ModelPaths,
    engine: LlmEngine,
    runs: u32,
    n: usize,
    clock: &MonotonicClock,
    bar: &ProgressBar,
) -> Result<LlmResult> {
    bar.set_message(format!("gemma3-270m [{engine}] loading"));
    let session_clock: Arc<dyn Clock + Send + Sync> = Arc::new(*clock);
    let mut s = LlmSession::load(
        &paths.require(Artifact::Gemma3)?,
        LlmOptions {
            engine,
            ..LlmOptions::default()
        },
        session_clock,
    )?;
    let mut direct = Direct::for_session(&s)?;
    let prompt = s.tokenizer().encode(PROMPT);
    bar.set_message(format!("gemma3-270m [{engine}, {n} tokens]"));
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
    let threads = s.threads();
    drop(direct);

    let long = s.tokenizer().encode(PREFILL_PROMPT);
    let sweep = if s.grant_threads(threads).is_some() {
        bar.set_message(format!("gemma3-270m [{engine}, 1 and 2 threads]"));
        let st = thread_sweep(&mut s, runs, &long, &prompt, n, clock)?;
        s.grant_threads(threads);
        Some(st)
    } else {
        None
    };
    let decode = |i: usize| {
        sweep
            .as_ref()
            .map(|st| 1e9 / st[i].steps.value_at_quantile(0.5).max(1) as f64)
    };
    let prefill = |i: usize| {
        sweep
            .as_ref()
            .map(|st| st[i].prefill.value_at_quantile(0.5) as f64 / 1e3)
    };
    let step_ms = |i: usize| sweep.as_ref().map(|st| stage(&st[i].steps));
    bar.set_message(format!("gemma3-270m [{engine}] batched decoding"));
    let batch = models_llm_batch::measure(&mut s, runs.clamp(3, 5), n, clock)
        .context("measuring batched decoding")?;
    let at =
        |threads: usize, size: usize, f: fn(&models_llm_batch::AtThreads, usize) -> Option<f64>| {
            batch
                .as_ref()
                .and_then(|b| b.threads.get(&threads))
                .and_then(|a| f(a, size))
        };
    let tok_s = |a: &models_llm_batch::AtThreads, size: usize| a.tok_s.get(&size).map(|s| s.median);
    let speedup =
        |a: &models_llm_batch::AtThreads, size: usize| a.speedup.get(&size).map(|s| s.median);
    let tokens_per_s = layer.tokens_per_s();
    let direct_tokens_per_s = plain.tokens_per_s();
    Ok(LlmResult {
        model: s.name().to_string(),
        engine: s.engine().as_str(),
        threads,
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
        prefill_prompt_tokens: long.len(),
        decode_tok_s_1t: decode(0),
        decode_tok_s_2t: decode(1),
        prefill_tok_s_1t: prefill(0),
        prefill_tok_s_2t: prefill(1),
        sweep_step_ms_1t: step_ms(0),
        sweep_step_ms_2t: step_ms(1),
        sweep_tokens_match: sweep.as_ref().map(|st| st[0].tokens == st[1].tokens),
        batch_tok_s_1: at(1, 1, tok_s),
        batch_tok_s_2: at(1, 2, tok_s),
        batch_tok_s_4: at(1, 4, tok_s),
        batch_tok_s_8: at(1, 8, tok_s),
        batch4_speedup: at(1, 4, speedup),
        batch4_speedup_2t: at(2, 4, speedup),
        batch,
        peak_rss_mib: peak_rss_mib(),
    })
}

/// Prints Gemma-3's figures under the table.
pub(super) fn print_llm(l: &LlmResult) {
    outln!(
        "{} [{}, {} threads], {}-token prompt + {} tokens, {} generations:",
        l.model,
        l.engine,
        l.threads,
        l.prompt_tokens,
        l.generated_tokens,
        l.runs
    );
    outln!(
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
    outln!(
        "  {:.1} tokens/s at the median step (direct {:.1}), {:.1} on average (direct {:.1}): ratio {:.3} (goal ≥ 0.97); greedy tokens identical: {}",
        l.tokens_per_s,
        l.direct_tokens_per_s,
        l.mean_tokens_per_s,
        l.direct_mean_tokens_per_s,
        l.layer_ratio,
        if l.greedy_tokens_match { "yes" } else { "NO" }
    );
    let sp = &l.step_split_ms;
    outln!(
        "  decode step p50: KV cache {:.3} ms, attention {:.3} ms, rest {:.3} ms; peak RSS {:.0} MiB",
        sp.kv_cache.p50,
        sp.attention.p50,
        sp.rest.p50,
        l.peak_rss_mib
    );
    match (
        l.decode_tok_s_1t,
        l.decode_tok_s_2t,
        l.prefill_tok_s_1t,
        l.prefill_tok_s_2t,
    ) {
        (Some(d1), Some(d2), Some(p1), Some(p2)) => outln!(
            "  granted 1 / 2 threads: decode {d1:.1} / {d2:.1} tokens/s, prefill ({}-token prompt) {p1:.1} / {p2:.1} tokens/s",
            l.prefill_prompt_tokens
        ),
        _ => outln!(
            "  (the {} engine cannot change its thread count between calls: no 1 / 2-thread figures)",
            l.engine
        ),
    }
    if let Some(b) = &l.batch {
        models_llm_batch::print(b);
    }
    outln!("  text: {:?}", l.text);
}
