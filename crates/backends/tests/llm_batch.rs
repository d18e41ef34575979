//! Gemma-3 270M on real weights: sequences decoded together by a `BatchDecoder` get,
//! token for token, what each gets alone in an `LlmSession` fed the same prompt in the same
//! chunks — also when they start and end at different times, when more sequences run
//! than one graph takes, for prompts past the length where llama.cpp's lone attention
//! changes its arithmetic, and for seeded sampling. The KV-cache budget and every misuse
//! are refused with an error naming the limit or the fix. Needs `mmsched models fetch`.

use std::sync::Arc;

use mmsched_backends::llm::{
    BatchDecoder, BatchError, BatchOptions, LlmEngine, LlmOptions, LlmSession, Sampling, SeqId,
};
use mmsched_core::time::MonotonicClock;
use mmsched_models::{Artifact, require};

/// Prompt tokens per prefill call, in both paths (the runtime's step size is 4).
const CHUNK: usize = 4;

const PROMPTS: [&str; 8] = [
    "The three primary colours of light are red, green and",
    "Once upon a time, in a small village by the sea,",
    "To make a cup of tea, first boil the water, then",
    "The capital of France is",
    "def fibonacci(n):\n    ",
    "List of prime numbers: 2, 3, 5, 7,",
    "The weather today is sunny with",
    "In 1969, the first humans to walk on the Moon were",
];

/// Tests in this file share one model-sized budget of memory and cores: one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn session_on(engine: LlmEngine) -> LlmSession {
    let path = require(Artifact::Gemma3).unwrap_or_else(|e| panic!("{e}"));
    let opts = LlmOptions {
        engine,
        threads: 2,
        ..LlmOptions::default()
    };
    LlmSession::load(&path, opts, Arc::new(MonotonicClock::new())).expect("Gemma-3 loads")
}

/// `n` tokens after `prompt` alone: the prompt in chunks of [`CHUNK`], then one `step` per
/// token (the path a request takes today).
fn alone(s: &mut LlmSession, prompt: &[u32], sampling: Sampling, n: usize) -> Vec<u32> {
    match sampling {
        Sampling::Greedy => s.set_sampling(None, 0),
        Sampling::Temperature { temperature, seed } => s.set_sampling(Some(temperature), seed),
    }
    s.start_tokens(prompt.to_vec()).expect("start");
    let first = loop {
        if let Some(t) = s.prefill_chunk(CHUNK).expect("prefill") {
            break t.id;
        }
    };
    let mut out = vec![first];
    while out.len() < n {
        out.push(s.step().expect("step").id);
    }
    out
}

/// Feeds `seq`'s whole prompt in chunks of [`CHUNK`] and returns the first token.
fn prefill(b: &mut BatchDecoder, seq: SeqId) -> u32 {
    loop {
        if let Some(t) = b.prefill(seq, CHUNK).expect("batch prefill") {
            return t.id;
        }
    }
}

/// One request in the batch: its tokens so far and how many it wants.
struct Request {
    seq: SeqId,
    tokens: Vec<u32>,
    want: usize,
}

/// Steps `live` together once; removes those that reached their count into `done`.
fn step_all(b: &mut BatchDecoder, live: &mut Vec<Request>, done: &mut Vec<Request>) {
    let seqs: Vec<SeqId> = live.iter().map(|r| r.seq).collect();
    let tokens = b.step(&seqs).expect("batch step");
    assert_eq!(tokens.len(), live.len());
    for (r, t) in live.iter_mut().zip(tokens) {
        r.tokens.push(t.id);
        assert!(t.nanos > 0);
    }
    let (finished, running): (Vec<Request>, Vec<Request>) =
        live.drain(..).partition(|r| r.tokens.len() >= r.want);
    for r in &finished {
        b.remove(r.seq).expect("remove");
    }
    *live = running;
    done.extend(finished);
}

#[test]
fn four_greedy_prompts_together_match_each_alone_as_they_join_and_finish_at_different_times() {
    let _serial = serial();
    let mut s = session_on(LlmEngine::Llama);
    let prompts: Vec<Vec<u32>> = PROMPTS[..4]
        .iter()
        .map(|p| s.tokenizer().encode(p))
        .collect();
    // Prompt 1 finishes early; prompt 3 joins while the others are mid-answer.
    let wants = [24, 6, 20, 16];
    let expected: Vec<Vec<u32>> = prompts
        .iter()
        .zip(wants)
        .map(|(p, n)| alone(&mut s, p, Sampling::Greedy, n))
        .collect();

    let mut b = BatchDecoder::new(&s, BatchOptions::default()).expect("batch decoder");
    let (mut live, mut done) = (Vec::new(), Vec::new());
    for i in 0..3 {
        let seq = b.add(prompts[i].clone(), Sampling::Greedy).expect("add");
        live.push(Request {
            seq,
            tokens: vec![prefill(&mut b, seq)],
            want: wants[i],
        });
    }
    let ids: Vec<SeqId> = live.iter().map(|r| r.seq).collect();
    for _ in 0..8 {
        step_all(&mut b, &mut live, &mut done);
    }
    // The second request is done (its slot was refilled by moving the third's cache).
    assert_eq!(done.len(), 1, "the short request finished");
    assert_eq!(b.len(), 2);
    let late = b
        .add(prompts[3].clone(), Sampling::Greedy)
        .expect("add late");
    live.push(Request {
        seq: late,
        tokens: vec![prefill(&mut b, late)],
        want: wants[3],
    });
    while !live.is_empty() {
        step_all(&mut b, &mut live, &mut done);
    }
    assert!(b.is_empty());
    let all = [ids[0], ids[1], ids[2], late];
    for (i, (seq, want)) in all.iter().zip(&expected).enumerate() {
        let got = &done
            .iter()
            .find(|r| r.seq == *seq)
            .expect("finished")
            .tokens;
        assert_eq!(
            got,
            want,
            "prompt {i} ({:?}): batched {:?} alone {:?}",
            PROMPTS[i],
            s.tokenizer().decode(got),
            s.tokenizer().decode(want)
        );
    }
}

#[test]
fn eight_sequences_and_a_long_prompt_match_each_alone() {
    let _serial = serial();
    let mut s = session_on(LlmEngine::Llama);
    // The first prompt is past 256 tokens: alone, llama.cpp's flash attention would then
    // split its cache across threads, which rows of several sequences never do.
    let background = "A note on the weather, the harbour and the boats. ".repeat(28);
    let texts: Vec<String> = PROMPTS
        .iter()
        .enumerate()
        .map(|(i, p)| {
            if i == 0 {
                format!("{background}{p}")
            } else {
                (*p).to_string()
            }
        })
        .collect();
    let prompts: Vec<Vec<u32>> = texts.iter().map(|p| s.tokenizer().encode(p)).collect();
    assert!(prompts[0].len() > 300, "{} tokens", prompts[0].len());
    const N: usize = 10;
    let expected: Vec<Vec<u32>> = prompts
        .iter()
        .map(|p| alone(&mut s, p, Sampling::Greedy, N))
        .collect();

    let options = BatchOptions {
        max_seqs: 8,
        seq_tokens: 512,
        threads: 0,
    };
    let mut b = BatchDecoder::new(&s, options).expect("batch decoder");
    let mut live: Vec<Request> = prompts
        .iter()
        .map(|p| {
            let seq = b.add(p.clone(), Sampling::Greedy).expect("add");
            Request {
                seq,
                tokens: vec![prefill(&mut b, seq)],
                want: N,
            }
        })
        .collect();
    let mut done = Vec::new();
    while !live.is_empty() {
        step_all(&mut b, &mut live, &mut done);
    }
    for (i, r) in done.iter().enumerate() {
        assert_eq!(r.tokens, expected[i], "prompt {i} differs from alone");
    }
}

#[test]
fn seeded_sampling_in_a_batch_matches_the_same_seed_alone() {
    let _serial = serial();
    let mut s = session_on(LlmEngine::Llama);
    let samplings = [
        Sampling::new(Some(0.8), 7),
        Sampling::new(Some(1.2), 8),
        Sampling::new(None, 9),
    ];
    assert_eq!(samplings[2], Sampling::Greedy);
    let prompts: Vec<Vec<u32>> = PROMPTS[..3]
        .iter()
        .map(|p| s.tokenizer().encode(p))
        .collect();
    const N: usize = 12;
    let expected: Vec<Vec<u32>> = prompts
        .iter()
        .zip(samplings)
        .map(|(p, m)| alone(&mut s, p, m, N))
        .collect();
    let mut b = BatchDecoder::new(&s, BatchOptions::default()).expect("batch decoder");
    let mut live: Vec<Request> = prompts
        .iter()
        .zip(samplings)
        .map(|(p, m)| {
            let seq = b.add(p.clone(), m).expect("add");
            Request {
                seq,
                tokens: vec![prefill(&mut b, seq)],
                want: N,
            }
        })
        .collect();
    let mut done = Vec::new();
    while !live.is_empty() {
        step_all(&mut b, &mut live, &mut done);
    }
    for (i, r) in done.iter().enumerate() {
        assert_eq!(r.tokens, expected[i], "sequence {i} differs from alone");
    }
    assert_ne!(done[0].tokens, expected[2], "sampling changed the tokens");
}

#[test]
fn the_kv_budget_is_a_named_limit_and_a_refused_step_changes_nothing() {
    let _serial = serial();
    let s = session_on(LlmEngine::Llama);
    let options = BatchOptions {
        max_seqs: 2,
        seq_tokens: 200,
        threads: 1,
    };
    let mut b = BatchDecoder::new(&s, options).expect("batch decoder");
    // llama.cpp sizes each sequence's cache in multiples of 256 cells.
    assert_eq!(b.seq_tokens(), 256);
    assert_eq!(b.max_seqs(), 2);
    assert_eq!(b.threads(), 1);

    let long = s.tokenizer().encode(&"word ".repeat(300));
    match b.add(long.clone(), Sampling::Greedy) {
        Err(e @ BatchError::PromptTooLong { limit: 256, .. }) => {
            assert!(e.to_string().contains("256"), "{e}");
            assert!(e.is_input());
        }
        other => panic!("expected PromptTooLong, got {other:?}"),
    }

    // A prompt of 250 tokens leaves room for 6 more: the sixth step fills the cache and
    // the seventh is refused, with the other sequence of that step left untouched.
    let full = b.add(long[..250].to_vec(), Sampling::Greedy).expect("add");
    let other = b
        .add(s.tokenizer().encode(PROMPTS[3]), Sampling::Greedy)
        .expect("add");
    prefill(&mut b, full);
    prefill(&mut b, other);
    assert_eq!(b.remaining(full).expect("remaining"), 6);
    for _ in 0..6 {
        b.step(&[other, full]).expect("step within the budget");
    }
    assert_eq!(b.remaining(full).expect("remaining"), 0);
    let before = b.position(other).expect("position");
    match b.step(&[other, full]) {
        Err(e @ BatchError::SequenceFull { limit: 256, .. }) => {
            assert!(e.to_string().contains("256 tokens"), "{e}");
            assert!(e.to_string().contains(&full.to_string()), "{e}");
        }
        other => panic!("expected SequenceFull, got {other:?}"),
    }
    assert_eq!(b.position(other).expect("position"), before);
    b.step(&[other]).expect("the other sequence goes on");
}

#[test]
fn misuse_is_refused_with_the_fix() {
    let _serial = serial();
    let s = session_on(LlmEngine::Llama);
    let options = BatchOptions {
        max_seqs: 2,
        ..BatchOptions::default()
    };
    let mut b = BatchDecoder::new(&s, options).expect("batch decoder");
    let a = b.add_text(PROMPTS[0], Sampling::Greedy).expect("add");
    let c = b.add_text(PROMPTS[1], Sampling::Greedy).expect("add");
    let e = b.add_text(PROMPTS[2], Sampling::Greedy).expect_err("full");
    assert!(matches!(e, BatchError::Full { max_seqs: 2 }), "{e}");
    assert!(e.to_string().contains("remove a finished one"), "{e}");

    let e = b.step(&[a]).expect_err("prompt not fed");
    assert!(matches!(e, BatchError::PromptPending { .. }), "{e}");
    prefill(&mut b, a);
    let e = b.prefill(a, CHUNK).expect_err("prompt all fed");
    assert!(matches!(e, BatchError::NothingToPrefill { .. }), "{e}");
    let e = b.step(&[a, a]).expect_err("twice");
    assert!(matches!(e, BatchError::Duplicate(_)), "{e}");

    b.remove(a).expect("remove");
    let e = b.step(&[a]).expect_err("removed");
    assert!(matches!(e, BatchError::UnknownSequence(_)), "{e}");
    assert!(b.remove(a).is_err());
    // The freed place takes a new sequence, under a new id.
    let d = b.add_text(PROMPTS[3], Sampling::Greedy).expect("add");
    assert_ne!(d, a);
    assert_eq!(b.sequences(), vec![c, d]);

    let e = b.add_text("   ", Sampling::Greedy).expect_err("empty");
    assert!(matches!(e, BatchError::InvalidInput(_)), "{e}");
    let e = b
        .add(vec![u32::MAX], Sampling::Greedy)
        .expect_err("vocabulary");
    assert!(e.to_string().contains("outside the vocabulary"), "{e}");
    let e = BatchDecoder::new(
        &s,
        BatchOptions {
            max_seqs: 0,
            ..BatchOptions::default()
        },
    )
    .expect_err("no sequences");
    assert!(e.to_string().contains("max_seqs"), "{e}");
}

#[test]
fn candle_cannot_batch_and_says_what_to_do_instead() {
    let _serial = serial();
    let s = session_on(LlmEngine::Candle);
    assert!(!BatchDecoder::supports(LlmEngine::Candle));
    assert!(BatchDecoder::supports(LlmEngine::Llama));
    let e = BatchDecoder::new(&s, BatchOptions::default()).expect_err("candle");
    assert!(
        matches!(
            e,
            BatchError::Unsupported {
                engine: LlmEngine::Candle
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("LlmSession::fork"), "{e}");
    assert!(!e.is_input());
    let backend = e.into_backend();
    assert!(backend.chain().contains("candle"), "{}", backend.chain());
}

#[test]
fn a_prompt_fed_in_large_chunks_gets_the_tokens_of_small_chunks() {
    let _serial = serial();
    let mut s = session_on(LlmEngine::Llama);
    // This prompt's greedy answer changes within 8 tokens when a lone session takes its 13
    // tokens in one call (another matrix product from 8 rows on) instead of chunks of 4.
    let prompt = s.tokenizer().encode(PROMPTS[2]);
    assert!(prompt.len() > 8, "{} tokens", prompt.len());
    const N: usize = 16;
    let expected = alone(&mut s, &prompt, Sampling::Greedy, N);
    let mut b = BatchDecoder::new(&s, BatchOptions::default()).expect("batch decoder");
    let seq = b.add(prompt.clone(), Sampling::Greedy).expect("add");
    let first = b
        .prefill(seq, 64)
        .expect("prefill")
        .expect("the whole prompt in one prefill");
    let mut got = vec![first.id];
    while got.len() < N {
        got.push(b.step(&[seq]).expect("step")[0].id);
    }
    assert_eq!(got, expected);
}
