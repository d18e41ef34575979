//! Text requests on the real Gemma-3 weights. A request's prompt goes in steps of
//! [`SHARED_PREFILL_CHUNK_TOKENS`] tokens and then one token a step, so no step of a text
//! job runs much longer than a decoding step; without token preemption the whole request
//! is one step. Concurrent requests each run in a session of their own: four greedy
//! requests submitted at once through the library get the answer the model gives the
//! prompt alone (checked against the model called directly, without the runtime). Needs
//! `mmsched models fetch` first.

use std::sync::Arc;
use std::sync::mpsc::channel;

use mmsched_backends::llm::{LlmOptions, LlmSession};
use mmsched_core::time::MonotonicClock;
use mmsched_models::{Artifact, require};
use mmsched_pipeline::api::{Runtime, StreamTerms};
use mmsched_pipeline::engines::{Engines, LlmPool};
use mmsched_pipeline::jobs::{self, Output, SHARED_PREFILL_CHUNK_TOKENS};
use mmsched_pipeline::request::{Cancel, Prompt, Reply, Update};
use mmsched_runtime::sched::StepOutcome;

const PROMPT: &str = "Read the gauge on the left panel and report the pressure value in bar";
const MAX_TOKENS: u32 = 3;

fn session() -> LlmSession {
    let path = require(Artifact::Gemma3).unwrap_or_else(|e| panic!("{e}"));
    LlmSession::load(
        &path,
        LlmOptions {
            threads: 1,
            // The runtime's batch feeds a prompt at most 7 tokens a call (the kernels of a
            // decoding step); a lone session fed the same way is the reference.
            prefill_chunk: SHARED_PREFILL_CHUNK_TOKENS,
            ..LlmOptions::default()
        },
        Arc::new(MonotonicClock::new()),
    )
    .expect("Gemma-3 loads")
}

/// Tokens each step produced, in order, until the request finished.
fn steps(preemptible: bool) -> (usize, Vec<u32>) {
    let mut s = session();
    let prompt_tokens = s.start(PROMPT).expect("the prompt tokenises");
    let pool = LlmPool::new(s, 0).expect("a pool");
    let (tx, rx) = channel();
    let prompt = Prompt::greedy(PROMPT, MAX_TOKENS);
    let mut work = jobs::llm(pool, prompt, preemptible, Cancel::new(), 7, tx);
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
        prompt_tokens > 2 * SHARED_PREFILL_CHUNK_TOKENS,
        "the prompt spans several steps ({prompt_tokens} tokens)"
    );
    let prefill_steps = prompt_tokens.div_ceil(SHARED_PREFILL_CHUNK_TOKENS);
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

/// A scenario whose one stream uses only the text model (to load just Gemma-3).
fn text_only() -> mmsched_scenario::Scenario {
    mmsched_scenario::Scenario::from_toml(
        r#"
name = "text-only"
[[models]]
name = "llm"
kind = "llm"
file = "models/gemma3-270m/gemma-3-270m-q4_k_m.gguf"
[[streams]]
name = "prompts"
kind = "text"
models = ["llm"]
requests_per_min = 1
sla_ms = 30000
importance = 0.5
"#,
        "text-only.toml",
    )
    .expect("scenario")
}

#[test]
fn four_greedy_requests_at_once_each_get_the_answer_alone() {
    const QUESTION: &str = "The three primary colours are";
    const TOKENS: u32 = 12;
    // The reference: the model called directly, one request, no runtime.
    let mut alone = session();
    let expected = alone
        .generate(QUESTION, TOKENS as usize)
        .expect("generates")
        .text;
    let engines = Engines::load_with(&text_only(), 1, 4, |_| {}).expect("loads");
    let mut rt = Runtime::start(Default::default(), engines).expect("runtime");
    rt.add_stream("chat", StreamTerms::new(120_000.0, 0.5))
        .expect("stream");
    let rt = Arc::new(rt);
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let rt = Arc::clone(&rt);
            std::thread::spawn(move || {
                match rt
                    .prompt("chat", QUESTION, TOKENS)
                    .expect("submitted")
                    .wait()
                {
                    Update::Finished(a) => match a.reply {
                        Reply::Text { text, .. } => text,
                        other => panic!("{other:?}"),
                    },
                    other => panic!("{other:?}"),
                }
            })
        })
        .collect();
    let answers: Vec<String> = threads
        .into_iter()
        .map(|t| t.join().expect("a thread"))
        .collect();
    for a in &answers {
        assert_eq!(
            a, &expected,
            "every answer is the one the prompt gets alone"
        );
    }
    let rt = Arc::into_inner(rt).expect("the threads are done");
    let outcome = rt.finish().expect("finished");
    let api = outcome.summary.llm.modality.origin["api"];
    assert_eq!((api.offered, api.on_time + api.late), (4, 4));
}

#[test]
fn four_different_prompts_at_once_are_decoded_together_and_each_gets_its_answer_alone() {
    const PROMPTS: [&str; 4] = [
        "The three primary colours are",
        "Once upon a time, in a small village by the sea,",
        "To make a cup of tea, first boil the water, then",
        "List of prime numbers: 2, 3, 5, 7,",
    ];
    const TOKENS: u32 = 16;
    // The reference: the model called directly, each prompt alone, no runtime.
    let mut alone = session();
    let expected: Vec<String> = PROMPTS
        .iter()
        .map(|p| alone.generate(p, TOKENS as usize).expect("generates").text)
        .collect();
    let mut engines = Engines::load_with(&text_only(), 2, 4, |_| {}).expect("loads");
    let pool = engines
        .llm
        .as_ref()
        .expect("the text model")
        .to_batched()
        .expect("a batch decoder");
    assert!(pool.is_batched(), "llama.cpp requests share one batch");
    engines.llm = Some(pool.clone());
    let before = pool.batch_counts().expect("batched");
    let mut rt = Runtime::start(Default::default(), engines).expect("runtime");
    rt.add_stream("chat", StreamTerms::new(120_000.0, 0.5))
        .expect("stream");
    let rt = Arc::new(rt);
    let threads: Vec<_> = PROMPTS
        .iter()
        .map(|p| {
            let rt = Arc::clone(&rt);
            std::thread::spawn(move || {
                match rt.prompt("chat", p, TOKENS).expect("submitted").wait() {
                    Update::Finished(a) => match a.reply {
                        Reply::Text { text, .. } => text,
                        other => panic!("{other:?}"),
                    },
                    other => panic!("{other:?}"),
                }
            })
        })
        .collect();
    let answers: Vec<String> = threads
        .into_iter()
        .map(|t| t.join().expect("a thread"))
        .collect();
    assert_eq!(
        answers, expected,
        "each answer is the one its prompt gets alone"
    );
    let counts = pool.batch_counts().expect("batched");
    let (calls, rows) = (counts.calls - before.calls, counts.rows - before.rows);
    assert!(
        rows > calls && counts.taken_ahead > before.taken_ahead,
        "some decoding calls served several requests: {rows} tokens in {calls} calls"
    );
    let rt = Arc::into_inner(rt).expect("the threads are done");
    rt.finish().expect("finished");
}
