//! Text generation a token at a time, in a session of its own.

use std::sync::mpsc::Sender;

use mmsched_backends::llm::StepStages;
use mmsched_core::time::{Clock, MonotonicClock};
use mmsched_runtime::sched::{StepOutcome, Work, WorkError};

use super::{Output, work_error};
use crate::engines::{LlmLease, LlmPool};
use crate::request::{Cancel, Finish, Prompt};
use crate::stop::StopFilter;

/// Prompt tokens fed per prefill step while other work shares the device. A step cannot
/// be preempted, so its length bounds how long a due frame waits behind the text branch,
/// and the cost predicted for the class's next step (a high percentile of its recent
/// steps, nearly all decoding steps) must hold for prefill steps too, or a step booked
/// into the gap before a stream's reserved slot overruns it. One forward pass costs about
/// a decoding step plus ~5 ms a token at one thread, so 4 tokens keep a prefill step within
/// one to two decoding steps (44–82 ms against 21–60 ms in a traced `inspection` run); a
/// whole 20-token prompt in one step took 3–4 decoding steps and made a frame miss its
/// deadline on `inspection`. The price is the prompt's time to first token (233 ms instead
/// of 151 ms for a 20-token prompt).
pub const SHARED_PREFILL_CHUNK_TOKENS: usize = 4;

/// Prompt tokens fed per prefill step when the step has the device to itself — the
/// scheduler granted it more than one thread, which it does only while nothing else is
/// queued or booked — and when a request runs whole in one step (a scheduler without token
/// preemption): a 64-token chunk is one step, not sixteen (a 200-token prompt took 1.6 s at
/// one thread in one graph, 3.5 s in 4-token steps). The engine feeds it in calls of at
/// most 7 tokens all the same, so that the answer does not depend on the chunk: one
/// 64-token graph took 202 ms for a 68-token prompt on two threads, calls of 7 take 383 ms
/// (`mmsched_backends::llm::session::prompt_take`).
pub const ALONE_PREFILL_CHUNK_TOKENS: usize = 64;

/// One text request, generated step by step in a session of its own (leased from the pool
/// at its first step, so no other request shares or clears its KV cache): the first steps
/// feed the prompt in chunks, every later step decodes one token. Each step yields, so the
/// scheduler decides again at every token boundary — unless `preemptible` is off, when the
/// first step runs the whole request (what a scheduler without token preemption does).
/// Each step runs on the threads the scheduler granted it ([`Work::grant_threads`]).
/// Generation ends at a stop token or sequence, at the token budget, or when `cancel` is
/// set (the client went away: the worker and the session are freed at the next step).
pub fn llm(
    pool: LlmPool,
    prompt: Prompt,
    preemptible: bool,
    cancel: Cancel,
    tag: u64,
    out: Sender<Output>,
) -> Box<dyn Work> {
    Box::new(LlmWork {
        pool,
        session: None,
        filter: StopFilter::new(prompt.stops.clone()),
        prompt,
        preemptible,
        cancel,
        tag,
        out,
        prompt_done: false,
        produced: 0,
        granted: 1,
        rows: 1,
    })
}

/// The state of one text request between its steps.
struct LlmWork {
    pool: LlmPool,
    /// The session, from the first step on.
    session: Option<LlmLease>,
    prompt: Prompt,
    filter: StopFilter,
    /// Off: the first step runs the whole request.
    preemptible: bool,
    cancel: Cancel,
    tag: u64,
    out: Sender<Output>,
    prompt_done: bool,
    produced: u32,
    /// Intra-op threads granted for the next step.
    granted: usize,
    /// Most requests the next decoding step may serve (in a shared batch).
    rows: usize,
}

/// The step label of a token another request's step decoded (no model call).
pub const DECODE_AHEAD: &str = "decode-ahead";
/// The step label of a decoding step serving `rows` requests together: none for one (the
/// label of every text step of a session of its own).
pub fn decode_label(rows: usize) -> Option<&'static str> {
    match rows {
        0 => Some(DECODE_AHEAD),
        1 => None,
        n => Some(DECODE_ROWS[n.min(DECODE_ROWS.len() + 1) - 2]),
    }
}

/// Step labels of a decoding step serving 2 to 8 requests together (more count as 8).
const DECODE_ROWS: [&str; 7] = [
    "decode-2", "decode-3", "decode-4", "decode-5", "decode-6", "decode-7", "decode-8",
];

/// What one forward pass left: the token's text and whether generation ended.
struct Advance {
    text: String,
    token: bool,
    finish: Option<Finish>,
    stages: StepStages,
    /// The kind of step it was (see [`decode_label`]; `None`: a prefill chunk or a
    /// request's own decoding call).
    step: Option<&'static str>,
}

impl LlmWork {
    /// Prompt tokens for the next prefill step: few while the device is shared, many when
    /// the step has it alone or the request runs in one step.
    fn chunk(&self) -> usize {
        if !self.preemptible || self.granted > 1 {
            ALONE_PREFILL_CHUNK_TOKENS
        } else {
            SHARED_PREFILL_CHUNK_TOKENS
        }
    }

    /// Leases a place and starts the sequence (first step only).
    fn start(&mut self) -> Result<(), WorkError> {
        if self.session.is_some() {
            return Ok(());
        }
        let lease = self
            .pool
            .lease(&self.prompt.text, self.prompt.sampling, &self.cancel)
            .map_err(|e| work_error("text generation", e))?
            .ok_or(WorkError::Engine {
                model: "text generation",
                source: "every text-generation place is in use (the book admits at most one request per place)".into(),
            })?;
        self.session = Some(lease);
        Ok(())
    }

    /// One forward pass: a prefill chunk or a decoding step (or a token another request's
    /// step decoded for this one).
    fn advance(&mut self) -> Result<Advance, WorkError> {
        let chunk = self.chunk();
        let Some(lease) = &mut self.session else {
            return Err(WorkError::Cancelled {
                why: "the request has no session",
            });
        };
        let mut step = None;
        let token = if self.prompt_done {
            lease.decode(self.granted, self.rows).map(|d| {
                let mut t = d.token;
                if d.rows == 0 {
                    // Decoded by another request's step: this step ran no model.
                    t.stages = StepStages::default();
                }
                step = decode_label(d.rows);
                Some(t)
            })
        } else {
            lease.prefill(chunk, self.granted)
        }
        .map_err(|e| work_error("text generation", e))?;
        let Some(t) = token else {
            return Ok(Advance {
                text: String::new(),
                token: false,
                finish: None,
                stages: StepStages::default(),
                step,
            });
        };
        self.prompt_done = true;
        let (text, finish) = if t.stop {
            (self.filter.flush(), Some(Finish::Stop))
        } else {
            self.produced += 1;
            let (mut text, stopped) = self.filter.push(&t.text);
            let finish = if stopped {
                Some(Finish::Stop)
            } else if self.produced >= self.prompt.max_tokens {
                text.push_str(&self.filter.flush());
                Some(Finish::Length)
            } else {
                None
            };
            (text, finish)
        };
        if finish.is_none() {
            lease.want_next();
        }
        Ok(Advance {
            text,
            token: true,
            finish,
            stages: t.stages,
            step,
        })
    }
}

impl Work for LlmWork {
    fn grant_threads(&mut self, threads: usize) {
        self.granted = threads.max(1);
    }

    /// In a shared batch: `decode-ahead` when another request's step has decoded this
    /// one's token (the step takes it without the model), `decode-N` for a decoding step
    /// of N requests together; otherwise (a prefill, a session of its own, one request)
    /// no label, as every text step had before batching.
    fn next_step(&self) -> Option<&'static str> {
        if !self.prompt_done || !self.preemptible {
            return None;
        }
        let lease = self.session.as_ref()?;
        if lease.decoded_ahead() {
            return Some(DECODE_AHEAD);
        }
        decode_label(lease.decoding().min(self.rows))
    }

    /// With a shared batch decoder, every text request's calls run one at a time.
    fn one_call_at_a_time(&self) -> bool {
        self.pool.is_batched()
    }

    fn batchable(&self) -> usize {
        match (&self.session, self.prompt_done && self.preemptible) {
            (Some(lease), true) if !lease.decoded_ahead() => lease.decoding(),
            _ => 1,
        }
    }

    fn limit_batch(&mut self, rows: usize) {
        self.rows = rows.max(1);
    }

    fn step(&mut self) -> Result<StepOutcome, WorkError> {
        let clock = MonotonicClock::new();
        let t0 = clock.now_nanos();
        let mut tokens = 0u32;
        let mut first_token_after_nanos = 0;
        let mut text = String::new();
        let mut stages = StepStages::default();
        let mut step = None;
        let finish = if self.cancel.is_cancelled() {
            // The client has gone: stop spending the device on it.
            Some(Finish::Cancelled)
        } else {
            self.start()?;
            loop {
                let a = self.advance()?;
                if a.token {
                    if tokens == 0 {
                        first_token_after_nanos = clock.now_nanos().saturating_sub(t0);
                    }
                    tokens += 1;
                    stages = a.stages;
                }
                text.push_str(&a.text);
                if self.preemptible {
                    step = a.step;
                }
                if a.finish.is_some() || self.preemptible || self.cancel.is_cancelled() {
                    break a.finish;
                }
            }
        };
        let _ = self.out.send(Output::Llm {
            tag: self.tag,
            text,
            tokens,
            first_token_after_nanos,
            finish,
            stages,
            step,
            nanos: clock.now_nanos().saturating_sub(t0),
        });
        Ok(if finish.is_some() {
            StepOutcome::Finished
        } else {
            StepOutcome::Yield
        })
    }
}
