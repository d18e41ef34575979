//! `bench models --only llm`, batched decoding: aggregate decode tokens/s of 1, 2, 4 and 8
//! sequences decoded together by a [`BatchDecoder`] (one `llama_decode` per token step)
//! against one sequence decoded alone by the session, at 1 and 2 threads.
//!
//! Each repetition runs, at each thread count, the lone session and then each batch size,
//! the order of the sizes alternating between repetitions (so every figure sees the same
//! machine load); a batch of `n` holds `n` different prompts, each prefilled in one call,
//! then decodes `tokens − 1` steps of all of them. Aggregate tokens/s = `n` × steps ÷
//! their time; the speedup of a size is its aggregate ÷ the lone rate *of the same
//! repetition*, and the figure is the median (min–max) over repetitions. Every batched
//! sequence's greedy tokens are checked against the same prompt decoded alone
//! (`batch_tokens_match`): a batch that changed an answer measured different work.

use std::collections::BTreeMap;

use anyhow::{Context, Result};
use mmsched_backends::Backend;
use mmsched_backends::llm::{BatchDecoder, BatchOptions, EXACT_CHUNK, LlmSession, Sampling};
use mmsched_core::time::{Clock, MonotonicClock, Nanos};
use serde::Serialize;

/// Sequences decoded together, compared.
pub(super) const SIZES: [usize; 4] = [1, 2, 4, 8];
/// Thread counts compared.
const THREADS: [usize; 2] = [1, 2];

/// The prompts of a batch (the first `n` of them), each a different continuation.
const PROMPTS: [&str; 8] = [
    "The three primary colours of light are",
    "Once upon a time, in a small village by the sea,",
    "To make a cup of tea, first boil the water, then",
    "The capital of France is",
    "List of prime numbers: 2, 3, 5, 7,",
    "The weather today is sunny with",
    "In 1969, the first humans to walk on the Moon were",
    "A good way to learn a new language is",
];

/// A figure over repetitions.
#[derive(Debug, Clone, Copy, Serialize)]
pub(super) struct Spread {
    pub(super) median: f64,
    pub(super) min: f64,
    pub(super) max: f64,
}

impl Spread {
    fn of(mut v: Vec<f64>) -> Self {
        v.sort_by(f64::total_cmp);
        Self {
            median: v.get(v.len() / 2).copied().unwrap_or(0.0),
            min: v.first().copied().unwrap_or(0.0),
            max: v.last().copied().unwrap_or(0.0),
        }
    }
}

/// The figures at one thread count.
#[derive(Debug, Serialize)]
pub(super) struct AtThreads {
    /// Decode tokens/s of one sequence alone through the session.
    pub(super) alone_tok_s: Spread,
    /// Aggregate decode tokens/s by sequences decoded together.
    pub(super) tok_s: BTreeMap<usize, Spread>,
    /// Aggregate ÷ alone in the same repetition, by sequences decoded together.
    pub(super) speedup: BTreeMap<usize, Spread>,
}

/// Batched decoding's figures (llama.cpp only).
#[derive(Debug, Serialize)]
pub(super) struct LlmBatchResult {
    /// Repetitions.
    pub(super) repetitions: u32,
    /// Tokens per sequence (the first from the prefill).
    pub(super) tokens: usize,
    /// By thread count.
    pub(super) threads: BTreeMap<usize, AtThreads>,
    /// Whether every batched sequence's greedy tokens equalled its prompt's alone.
    pub(super) batch_tokens_match: bool,
}

/// `n` greedy tokens of `prompt` alone, and the time of its decode steps.
fn alone(
    s: &mut LlmSession,
    prompt: &[u32],
    n: usize,
    clock: &MonotonicClock,
) -> Result<(Vec<u32>, Nanos)> {
    s.set_sampling(None, 0);
    s.start_tokens(prompt.to_vec())?;
    // In the chunks the batch decoder feeds its sequences: a longer chunk runs other
    // kernels and may round a near tie the other way (crates/backends/README.md).
    let first = loop {
        if let Some(t) = s.prefill_chunk(EXACT_CHUNK)? {
            break t;
        }
    };
    let mut tokens = vec![first.id];
    let t0 = clock.now_nanos();
    while tokens.len() < n {
        tokens.push(s.step()?.id);
    }
    Ok((tokens, clock.now_nanos().saturating_sub(t0)))
}

/// The first `prompts.len()` prompts decoded together for `n` tokens each: their tokens and
/// the time of the decode steps.
fn together(
    b: &mut BatchDecoder,
    prompts: &[Vec<u32>],
    n: usize,
    clock: &MonotonicClock,
) -> Result<(Vec<Vec<u32>>, Nanos)> {
    let mut seqs = Vec::with_capacity(prompts.len());
    let mut tokens = Vec::with_capacity(prompts.len());
    for p in prompts {
        let seq = b.add(p.clone(), Sampling::Greedy)?;
        let first = b
            .prefill(seq, p.len())?
            .context("the prompt was not consumed in one call")?;
        seqs.push(seq);
        tokens.push(vec![first.id]);
    }
    let t0 = clock.now_nanos();
    for _ in 1..n {
        for (t, next) in tokens.iter_mut().zip(b.step(&seqs)?) {
            t.push(next.id);
        }
    }
    let nanos = clock.now_nanos().saturating_sub(t0);
    for seq in seqs {
        b.remove(seq)?;
    }
    Ok((tokens, nanos))
}

/// Measures batched decoding on `s`'s weights, `repetitions` times, `n` tokens a sequence;
/// `None` on an engine that cannot batch (candle).
pub(super) fn measure(
    s: &mut LlmSession,
    repetitions: u32,
    n: usize,
    clock: &MonotonicClock,
) -> Result<Option<LlmBatchResult>> {
    if !BatchDecoder::supports(s.engine()) {
        return Ok(None);
    }
    let n = n.max(2);
    let prompts: Vec<Vec<u32>> = PROMPTS.iter().map(|p| s.tokenizer().encode(p)).collect();
    let max = SIZES[SIZES.len() - 1];
    let options = BatchOptions {
        max_seqs: max,
        seq_tokens: prompts.iter().map(Vec::len).max().unwrap_or(0) + n + 1,
        threads: 1,
    };
    let mut b = BatchDecoder::new(s, options)?;
    let restore = s.threads();
    // The reference: each prompt alone (also the untimed warm-up of the session).
    let mut expected = Vec::with_capacity(prompts.len());
    for p in &prompts {
        expected.push(alone(s, p, n, clock)?.0);
    }
    let steps = (n - 1) as f64;
    let mut same = true;
    let mut raw: BTreeMap<usize, (Vec<f64>, Vec<Vec<f64>>)> = THREADS
        .iter()
        .map(|&t| (t, (Vec::new(), vec![Vec::new(); SIZES.len()])))
        .collect();
    // One untimed round, then the timed ones.
    for rep in 0..=repetitions {
        for &t in &THREADS {
            s.grant_threads(t);
            b.grant_threads(t);
            let (_, lone) = alone(s, &prompts[0], n, clock)?;
            let mut rates = vec![0.0; SIZES.len()];
            for k in 0..SIZES.len() {
                let i = if rep % 2 == 0 { k } else { SIZES.len() - 1 - k };
                let size = SIZES[i];
                let (tokens, nanos) = together(&mut b, &prompts[..size], n, clock)?;
                same &= tokens.iter().zip(&expected).all(|(got, want)| got == want);
                rates[i] = size as f64 * steps / (nanos.max(1) as f64 / 1e9);
            }
            if rep > 0 {
                let (alone_rates, by_size) = raw.entry(t).or_default();
                alone_rates.push(steps / (lone.max(1) as f64 / 1e9));
                for (v, r) in by_size.iter_mut().zip(rates) {
                    v.push(r);
                }
            }
        }
    }
    s.grant_threads(restore);
    let threads = raw
        .into_iter()
        .map(|(t, (alone_rates, by_size))| {
            let speedup = SIZES
                .iter()
                .zip(&by_size)
                .map(|(&size, rates)| {
                    let ratios = rates
                        .iter()
                        .zip(&alone_rates)
                        .map(|(r, a)| r / a.max(f64::MIN_POSITIVE));
                    (size, Spread::of(ratios.collect()))
                })
                .collect();
            let tok_s = SIZES
                .iter()
                .zip(by_size)
                .map(|(&size, rates)| (size, Spread::of(rates)))
                .collect();
            (
                t,
                AtThreads {
                    alone_tok_s: Spread::of(alone_rates),
                    tok_s,
                    speedup,
                },
            )
        })
        .collect();
    Ok(Some(LlmBatchResult {
        repetitions,
        tokens: n,
        threads,
        batch_tokens_match: same,
    }))
}

/// Prints the figures under Gemma-3's.
pub(super) fn print(r: &LlmBatchResult) {
    outln!(
        "  batched decoding ({} tokens a sequence, median (min-max) of {}): aggregate tokens/s for {} sequences together; speedup over one alone",
        r.tokens,
        r.repetitions,
        SIZES.map(|n| n.to_string()).join(" / ")
    );
    for (t, a) in &r.threads {
        let rates: Vec<String> = a
            .tok_s
            .values()
            .map(|s| format!("{:.1}", s.median))
            .collect();
        let speedups: Vec<String> = a
            .speedup
            .values()
            .map(|s| format!("{:.2} ({:.2}-{:.2})", s.median, s.min, s.max))
            .collect();
        outln!(
            "    {t} thread(s): alone {:.1} tokens/s; together {}; speedup {}",
            a.alone_tok_s.median,
            rates.join(" / "),
            speedups.join(" / ")
        );
    }
    outln!(
        "    batched tokens identical to each prompt alone: {}",
        if r.batch_tokens_match { "yes" } else { "NO" }
    );
}
