//! `bench models` for the candle-era models: Whisper tiny.en in [`super::models_asr`],
//! Gemma-3 270M (on llama.cpp or candle) in [`super::models_llm`]; this file holds their
//! flags and runs what is selected.

use anyhow::{Context, Result};
use clap::Args;
use indicatif::ProgressBar;
use mmsched_backends::llm::LlmEngine;
use mmsched_core::time::MonotonicClock;
use mmsched_models::ModelPaths;

use super::models::{Bench, ModelResult};
use super::models_asr::{self, AsrBenchArgs};
use super::models_llm::{self, LlmResult};

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
    /// The engine that runs Gemma-3: `llama` (llama.cpp, the default where compiled in)
    /// or `candle`.
    #[arg(long, value_name = "ENGINE", value_parser = parse_llm_engine)]
    llm_engine: Option<LlmEngine>,
    #[command(flatten)]
    pub(super) asr: AsrBenchArgs,
}

fn parse_llm_engine(s: &str) -> Result<LlmEngine, String> {
    s.parse()
        .map_err(|e: mmsched_backends::BackendError| e.to_string())
}

/// What to measure of the candle models (`None`: not selected).
#[derive(Debug, Clone)]
pub(super) struct CandlePlan {
    asr_runs: Option<u32>,
    llm_runs: Option<u32>,
    llm_tokens: usize,
    llm_engine: LlmEngine,
    asr: AsrBenchArgs,
}

impl CandleArgs {
    /// Resolves the defaults against `--runs` and the selection.
    pub(super) fn plan(&self, runs: u32, asr: bool, llm: bool) -> CandlePlan {
        CandlePlan {
            asr_runs: asr.then(|| self.asr_runs.unwrap_or(runs.min(ASR_RUNS_MAX))),
            llm_runs: llm.then(|| self.llm_runs.unwrap_or(runs.min(LLM_RUNS_MAX))),
            llm_tokens: self.llm_tokens as usize,
            llm_engine: self.llm_engine.unwrap_or_default(),
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
    let llm = models_llm::bench_llm(&paths, plan.llm_engine, runs, plan.llm_tokens, &clock, bar)
        .context("benchmarking Gemma-3 270M")?;
    Ok(Some(llm))
}
