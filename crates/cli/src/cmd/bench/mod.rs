//! `mmsched bench …`: speed goals measured as benchmarks, never as timed tests; printed as a
//! table or (`--json`) for scripts.

pub mod core;
pub mod e2e;
mod e2e_bound;
pub mod models;
mod models_asr;
mod models_candle;
mod models_llm;
mod models_llm_batch;
mod models_ocr_batch;
mod models_summary;
mod neighbour;
pub mod policy;
pub mod serve;
mod serve_beside;
mod serve_peer;
mod trace;

use std::process::ExitCode;

use anyhow::Result;
use clap::Subcommand;

/// Subcommands of `mmsched bench`.
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Scheduling core: arbitration decision latency, full re-evaluation, slot
    /// reservations per second, LDTI evaluation, and EDF against score dispatch.
    /// Build with --release for meaningful figures.
    Core(self::core::CoreArgs),
    /// Per model: latency P50/P99 per stage, peak RSS, and the cost of mmsched's layer
    /// against calling the engine directly; Whisper's real-time factor at 1 and 2 threads;
    /// for Gemma-3 also time to first token, time per output token, tokens/s and the
    /// KV-cache / attention / rest split of a decode step; PP-OCRv4 recognition one line
    /// per engine call against batches of 2, 4 and 8. `--json` adds the headline keys
    /// `ocr.det_ms_p50`, `ocr.rec_box_ms_p50`, `ocr.rec_line_ms_by_batch`,
    /// `ocr.rec_batch4_speedup`, `asr.rtf_1t`, `asr.rtf_2t`, `llm.batch_tok_s_{1,2,4,8}`
    /// (aggregate decode tokens/s of that many sequences decoded together, 1 thread),
    /// `llm.batch4_speedup` (1 thread) and `llm.batch4_speedup_2t`, `engines` and
    /// `layer_ratios`.
    Models(models::ModelsArgs),
    /// Policy hot reload: PUT → long-polling client's on_update latency, and the cost of an
    /// unchanged poll (GET → 304) against a server on 127.0.0.1.
    Policy(policy::PolicyBenchArgs),
    /// Concurrent text requests over HTTP (`serve --models --text-batch` in this process): greedy
    /// completions one after another against all at once, aggregate tokens/s, speedup and
    /// whether the answers at once equal the lone ones; `--compare-sessions` also runs a
    /// server with a session per request (no batching). `--peer` instead measures `serve
    /// --models` side by side with llama.cpp's own llama-server (built by
    /// scripts/build-llama-server.sh) for each of a list of --requests: tokens/s, TTFT and
    /// TPOT P50/P99. Build with --release.
    Serve(serve::ServeBenchArgs),
    /// Trace recorder: worker-side ns/event (P50/P99) and drops at a sustained event rate.
    Trace(trace::TraceBenchArgs),
    /// The main job under all four schedulers (mmsched, os-threads, fifo,
    /// static-priority) on the same scenario, seed and duration, side by side.
    E2e(e2e::E2eArgs),
}

/// Runs one benchmark.
pub fn run(cmd: BenchCommand) -> Result<ExitCode> {
    match cmd {
        BenchCommand::Core(args) => self::core::run(args),
        BenchCommand::Models(a) => models::run(a),
        BenchCommand::Policy(a) => policy::run(a),
        BenchCommand::Serve(a) => serve::run(a),
        BenchCommand::Trace(a) => trace::run(a),
        BenchCommand::E2e(a) => e2e::run(a),
    }
}
