//! Gemma-3 270M on real weights: the step-wise, chunked, KV-cached path gives the same
//! greedy tokens as recomputing the whole sequence for every token, and runs are
//! deterministic. Needs `mmsched models fetch` first.

use std::sync::Arc;

use mmsched_backends::llm::{LlmJob, LlmOptions, LlmSession};
use mmsched_backends::{Backend, run_timed};
use mmsched_core::time::MonotonicClock;
use mmsched_models::{Artifact, require};

const PROMPT: &str = "The three primary colours of light are red, green and";
const N: usize = 12;

/// Tests in this file share one model-sized budget of memory and cores: run them one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn session() -> LlmSession {
    let path = require(Artifact::Gemma3).unwrap_or_else(|e| panic!("{e}"));
    let opts = LlmOptions {
        threads: 2,
        ..LlmOptions::default()
    };
    LlmSession::load(&path, opts, Arc::new(MonotonicClock::new())).expect("Gemma-3 loads")
}

#[test]
fn step_wise_chunked_generation_equals_uncached_one_shot_and_is_deterministic() {
    let _serial = serial();
    let mut s = session();

    // One call: prefill in one chunk, then decode.
    let one_shot = s.generate(PROMPT, N).expect("generate");
    assert!(!one_shot.text.trim().is_empty(), "generated text is empty");
    assert!(one_shot.ttft_nanos > 0);

    // Step by step: prefill in chunks of 3 tokens, then one token per step.
    let n_prompt = s.start(PROMPT).expect("start");
    assert!(n_prompt > 6, "prompt spans several chunks");
    let mut chunks = 0;
    let first = loop {
        chunks += 1;
        if let Some(t) = s.prefill_chunk(3).expect("prefill chunk") {
            break t;
        }
    };
    assert_eq!(chunks, n_prompt.div_ceil(3));
    let mut stepped = vec![first.id];
    while stepped.len() < one_shot.tokens.len() {
        let t = s.step().expect("step");
        assert!(
            t.stages.kv_cache_nanos > 0 && t.stages.attention_nanos > 0 && t.stages.rest_nanos > 0
        );
        stepped.push(t.id);
    }
    assert_eq!(
        stepped, one_shot.tokens,
        "step-wise tokens differ from one-shot"
    );

    // Reference: no KV cache, the whole sequence recomputed for every token.
    let reference = s
        .greedy_uncached(PROMPT, one_shot.tokens.len())
        .expect("uncached");
    assert_eq!(
        reference, one_shot.tokens,
        "cached decoding differs from uncached"
    );

    // Deterministic across runs, in the same session and in a fresh one.
    assert_eq!(
        s.generate(PROMPT, N).expect("again").tokens,
        one_shot.tokens
    );
    let mut fresh = session();
    assert_eq!(
        fresh.generate(PROMPT, N).expect("fresh").tokens,
        one_shot.tokens
    );
    eprintln!("{PROMPT}{}", one_shot.text);
}

#[test]
fn backend_probe_times_stages_and_bad_inputs_are_refused() {
    let _serial = serial();
    let mut s = session();
    let clock = MonotonicClock::new();
    let job = LlmJob {
        prompt: "Once upon a time".into(),
        max_tokens: 4,
    };
    let (g, t) = run_timed(&mut s, &job, &clock).expect("job");
    assert_eq!(g.tokens.len(), 4);
    assert!(!g.text.is_empty());
    assert!(t.exec_nanos > 0 && g.tpot_nanos > 0);
    assert_eq!(g.step_stages.len(), 3);
    assert!(s.memory_bytes() > 200_000_000);

    let empty = LlmJob {
        prompt: "  ".into(),
        max_tokens: 4,
    };
    assert!(
        s.prepare(&empty)
            .expect_err("empty prompt")
            .to_string()
            .contains("empty")
    );
    let zero = LlmJob {
        prompt: "Hi".into(),
        max_tokens: 0,
    };
    assert!(
        s.prepare(&zero)
            .expect_err("0 tokens")
            .to_string()
            .contains("0")
    );
    assert!(s.step().is_ok(), "stepping continues the last sequence");
    let mut fresh = session();
    assert!(fresh.step().is_err(), "no prompt yet");
}

#[test]
fn seeded_sampling_is_reproducible() {
    let _serial = serial();
    let path = require(Artifact::Gemma3).unwrap_or_else(|e| panic!("{e}"));
    let opts = LlmOptions {
        threads: 2,
        temperature: Some(0.8),
        seed: 42,
        ..LlmOptions::default()
    };
    let mut a =
        LlmSession::load(&path, opts.clone(), Arc::new(MonotonicClock::new())).expect("load");
    let x = a.generate(PROMPT, 8).expect("a").tokens;
    let y = a.generate(PROMPT, 8).expect("a again").tokens;
    assert_eq!(x, y, "same seed, same tokens");
}
