//! A field run's text request on the real Gemma-3 weights: its prompt goes in steps of
//! [`RUN_PREFILL_CHUNK_TOKENS`] tokens and then one token a step, so no step of the text
//! branch runs much longer than a decoding step; without token preemption the whole
//! request is one step. Needs `mmsched models fetch` first.

use std::sync::mpsc::channel;
use std::sync::{Arc, Mutex};

use mmsched_backends::llm::{LlmOptions, LlmSession};
use mmsched_core::time::MonotonicClock;
use mmsched_models::{Artifact, require};
use mmsched_pipeline::jobs::{self, Output, RUN_PREFILL_CHUNK_TOKENS};
use mmsched_runtime::sched::StepOutcome;

const PROMPT: &str = "Read the gauge on the left panel and report the pressure value in bar";
const MAX_TOKENS: u32 = 3;

/// Tokens each step produced, in order, until the request finished.
fn steps(preemptible: bool) -> (usize, Vec<u32>) {
    let path = require(Artifact::Gemma3).unwrap_or_else(|e| panic!("{e}"));
    let mut session = LlmSession::load(
        &path,
        LlmOptions {
            threads: 1,
            ..LlmOptions::default()
        },
        Arc::new(MonotonicClock::new()),
    )
    .expect("Gemma-3 loads");
    let prompt_tokens = session.start(PROMPT).expect("the prompt tokenises");
    let (tx, rx) = channel();
    let shared = Arc::new(Mutex::new(session));
    let mut work = jobs::llm(shared, PROMPT.into(), MAX_TOKENS, preemptible, 7, tx);
    let mut produced = Vec::new();
    for _ in 0..=prompt_tokens + MAX_TOKENS as usize {
        let outcome = work.step().expect("the step runs");
        match rx.try_recv().expect("every step reports its output") {
            Output::Llm { tag, tokens, .. } => {
                assert_eq!(tag, 7);
                produced.push(tokens);
            }
            other => panic!("not a text-generation output: {other:?}"),
        }
        if matches!(outcome, StepOutcome::Finished) {
            return (prompt_tokens, produced);
        }
    }
    panic!("the request did not finish: {produced:?}");
}

#[test]
fn the_prompt_goes_in_short_steps_then_one_token_a_step() {
    let (prompt_tokens, produced) = steps(true);
    assert!(
        prompt_tokens > 2 * RUN_PREFILL_CHUNK_TOKENS,
        "the prompt spans several steps ({prompt_tokens} tokens)"
    );
    let prefill_steps = prompt_tokens.div_ceil(RUN_PREFILL_CHUNK_TOKENS);
    // The prompt's steps produce nothing until the last, which yields the first token;
    // every later step yields one token.
    let mut expected = vec![0; prefill_steps - 1];
    expected.extend(std::iter::repeat_n(1, MAX_TOKENS as usize));
    assert_eq!(produced, expected);
}

#[test]
fn without_token_preemption_the_request_is_one_step() {
    let (_, produced) = steps(false);
    assert_eq!(produced, vec![MAX_TOKENS]);
}
