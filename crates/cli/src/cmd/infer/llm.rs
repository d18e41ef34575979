//! `mmsched infer llm --prompt T --max-tokens N`.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use clap::Args;
use mmsched_backends::llm::{LlmEngine, LlmJob, LlmOptions, LlmSession};
use mmsched_backends::run_timed;
use mmsched_core::time::{Clock, MonotonicClock};
use mmsched_models::{Artifact, ModelPaths};
use serde_json::json;

use super::{ms, peak_rss_bytes};

#[derive(Debug, Args)]
pub struct LlmArgs {
    /// Text to continue (Gemma-3 270M here is a base model: give it text to continue).
    #[arg(long, value_name = "TEXT")]
    prompt: String,
    /// Maximum number of tokens to generate (at least 1, less than the model's context of
    /// 4096 tokens).
    #[arg(long, value_name = "N", default_value_t = 32)]
    max_tokens: usize,
    /// Prompt tokens per prefill chunk.
    #[arg(long, value_name = "TOKENS", default_value_t = 64)]
    prefill_chunk: usize,
    /// Sampling temperature; 0 is greedy (deterministic).
    #[arg(long, value_name = "T", default_value_t = 0.0)]
    temperature: f64,
    /// Seed of the sampler (used when --temperature > 0).
    #[arg(long, value_name = "SEED", default_value_t = 0)]
    seed: u64,
    /// Worker threads for the engine (0: one per core).
    #[arg(long, value_name = "N", default_value_t = 0)]
    threads: usize,
    /// The engine: `llama` (llama.cpp, the default where compiled in) or `candle`.
    #[arg(long, value_name = "ENGINE", value_parser = parse_engine)]
    engine: Option<LlmEngine>,
    /// Print {"engine","threads","text","tokens","token_ids","top_two":[{"runner_up","margin"}],"ttft_ms","tpot_ms","timing_ms":{"pre","exec","post"},
    /// "steps":[{"kv_cache_ms","attention_ms","rest_ms"}],"memory_bytes","peak_rss_bytes","load_ms"} as JSON
    /// (times in milliseconds).
    #[arg(long)]
    json: bool,
}

fn parse_engine(s: &str) -> Result<LlmEngine, String> {
    s.parse()
        .map_err(|e: mmsched_backends::BackendError| e.to_string())
}

pub fn run(a: LlmArgs) -> Result<ExitCode> {
    if a.prompt.trim().is_empty() {
        bail!("--prompt is empty: give some text for the model to continue");
    }
    if a.max_tokens == 0 {
        bail!("--max-tokens must be at least 1");
    }
    if a.prefill_chunk == 0 {
        bail!("--prefill-chunk must be at least 1 token");
    }
    if !(a.temperature.is_finite() && a.temperature >= 0.0) {
        bail!(
            "--temperature must be 0 (greedy) or a positive number, got {}",
            a.temperature
        );
    }
    let context = LlmOptions::default().max_seq_len;
    if a.max_tokens >= context {
        bail!(
            "--max-tokens {} does not fit the model's context of {context} tokens (prompt included); give at most {}",
            a.max_tokens,
            context - 1
        );
    }
    let path = ModelPaths::from_env().verified(Artifact::Gemma3)?;
    let clock = Arc::new(MonotonicClock::new());
    let options = LlmOptions {
        engine: a.engine.unwrap_or_default(),
        threads: a.threads,
        temperature: (a.temperature > 0.0).then_some(a.temperature),
        seed: a.seed,
        prefill_chunk: a.prefill_chunk,
        top_two: true,
        ..LlmOptions::default()
    };
    let mut session = LlmSession::load(&path, options, clock.clone()).context("loading Gemma-3")?;
    let load_nanos = clock.now_nanos();
    let job = LlmJob {
        prompt: a.prompt.clone(),
        max_tokens: a.max_tokens,
    };
    let (g, t) = run_timed(&mut session, &job, &*clock)?;
    let tokens_per_s = if g.tpot_nanos > 0 {
        1e9 / g.tpot_nanos as f64
    } else {
        0.0
    };
    if a.json {
        let steps: Vec<_> = g
            .step_stages
            .iter()
            .map(|s| {
                json!({"kv_cache_ms": ms(s.kv_cache_nanos), "attention_ms": ms(s.attention_nanos), "rest_ms": ms(s.rest_nanos)})
            })
            .collect();
        let out = json!({
            "engine": session.engine(),
            "threads": session.threads(),
            "text": g.text,
            "tokens": g.tokens.len(),
            "token_ids": g.tokens,
            "top_two": g.top_two,
            "prompt_tokens": g.prompt_tokens,
            "load_ms": ms(load_nanos),
            "ttft_ms": ms(g.ttft_nanos),
            "tpot_ms": ms(g.tpot_nanos),
            "tokens_per_s": tokens_per_s,
            "timing_ms": {"pre": ms(t.pre_nanos), "exec": ms(t.exec_nanos), "post": ms(t.post_nanos)},
            "steps": steps,
            "memory_bytes": mmsched_backends::Backend::memory_bytes(&session),
            "peak_rss_bytes": peak_rss_bytes(),
        });
        outln!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        outln!("{}{}", a.prompt, g.text);
        let n = g.step_stages.len().max(1) as u64;
        let sum = g.step_stages.iter().fold((0, 0, 0), |acc, s| {
            (
                acc.0 + s.kv_cache_nanos,
                acc.1 + s.attention_nanos,
                acc.2 + s.rest_nanos,
            )
        });
        eprintln!(
            "{} prompt tokens, {} generated; TTFT {:.1} ms, TPOT {:.2} ms ({:.1} tokens/s); \
             per step: KV cache {:.2} ms, attention {:.2} ms, rest {:.2} ms",
            g.prompt_tokens,
            g.tokens.len(),
            ms(g.ttft_nanos),
            ms(g.tpot_nanos),
            tokens_per_s,
            ms(sum.0 / n),
            ms(sum.1 / n),
            ms(sum.2 / n)
        );
    }
    Ok(ExitCode::SUCCESS)
}
