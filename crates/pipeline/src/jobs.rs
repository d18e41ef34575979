//! The one job factory: the [`Work`] a worker runs for each kind of request — OCR on a
//! frame, voice activity on a chunk, Whisper on an utterance, text generation token by
//! token — and the [`Output`] each step sends back when it ends. Every client's request
//! (a stream's, an HTTP client's, the library's) becomes its job here, so a fix to a
//! model's work reaches them all.
//!
//! Results travel on their own channel, tagged with the book's job number: a step sends its
//! output before it returns, so by the time the scheduler reports the step done the output
//! is waiting. A failure is the step's `Err`, a typed [`WorkError`].

use std::sync::mpsc::Sender;

use mmsched_backends::audio::AudioClip;
use mmsched_backends::llm::StepStages;
use mmsched_backends::ocr::{OcrLine, OcrPipeline};
use mmsched_backends::probe::{StageTiming, run_timed};
use mmsched_backends::{Backend, BackendError, RgbFrame};
use mmsched_core::time::{Clock, MonotonicClock, Nanos};
use mmsched_runtime::sched::{StepOutcome, Work, WorkError};

use crate::engines::{LlmLease, LlmPool, Shared, lock};
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
/// preemption): a 64-token chunk keeps the prefill at full speed (a 200-token prompt takes
/// 1.6 s at one thread; 3.5 s in 4-token chunks).
pub const ALONE_PREFILL_CHUNK_TOKENS: usize = 64;

/// What a finished step produced.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    /// OCR lines of one frame.
    Vision {
        /// The book's job number.
        tag: u64,
        /// The lines read, top to bottom, with boxes and scores.
        lines: Vec<OcrLine>,
        /// Stage timing.
        timing: StageTiming,
    },
    /// Speech probability of one 32 ms chunk.
    Vad {
        /// The book's job number.
        tag: u64,
        /// Probability in [0, 1].
        prob: f32,
        /// Stage timing.
        timing: StageTiming,
    },
    /// Transcript of one utterance.
    Asr {
        /// The book's job number.
        tag: u64,
        /// The text.
        text: String,
        /// Stage timing.
        timing: StageTiming,
    },
    /// One text step: a prefill chunk (maybe with the first token) or one decoded token;
    /// without token preemption, the whole request.
    Llm {
        /// The book's job number.
        tag: u64,
        /// The text the step adds to the answer (stop sequences held back and removed).
        text: String,
        /// Tokens the step produced.
        tokens: u32,
        /// When the step's first token was ready, after the step started.
        first_token_after_nanos: Nanos,
        /// Why generation ended, when it did.
        finish: Option<Finish>,
        /// Stage timing inside the model (KV cache, attention, rest).
        stages: StepStages,
        /// Wall time of the step.
        nanos: Nanos,
    },
}

impl Output {
    /// The job number it belongs to.
    pub fn tag(&self) -> u64 {
        match self {
            Output::Vision { tag, .. }
            | Output::Vad { tag, .. }
            | Output::Asr { tag, .. }
            | Output::Llm { tag, .. } => *tag,
        }
    }
}

/// A model's failure as the scheduler reports it: the input's fault or the engine's.
pub fn work_error(model: &'static str, e: BackendError) -> WorkError {
    if e.is_input() {
        WorkError::Input {
            model,
            source: Box::new(e),
        }
    } else {
        WorkError::Engine {
            model,
            source: Box::new(e),
        }
    }
}

/// A job whose model is not loaded: its step fails, naming the model.
pub fn missing(model: &'static str) -> Box<dyn Work> {
    Box::new(move || Err(WorkError::NoModel { model }))
}

/// OCR on one frame, on whichever of the pipelines is free.
pub fn vision(
    pool: Vec<Shared<OcrPipeline>>,
    frame: RgbFrame,
    tag: u64,
    out: Sender<Output>,
) -> Box<dyn Work> {
    Box::new(move || {
        let clock = MonotonicClock::new();
        // Take a free pipeline; if all are busy (never while the book keeps vision jobs
        // to the pool's size), wait for the first.
        let guard = pool
            .iter()
            .find_map(|p| p.try_lock().ok())
            .or_else(|| pool.first().map(|p| lock(p)));
        let Some(mut ocr) = guard else {
            return Err(WorkError::NoModel { model: "OCR" });
        };
        let (lines, timing) =
            run_timed(&mut *ocr, &frame, &clock).map_err(|e| work_error("OCR", e))?;
        let _ = out.send(Output::Vision { tag, lines, timing });
        Ok(StepOutcome::Finished)
    })
}

/// Silero VAD on one 512-sample chunk.
pub fn vad(
    model: Shared<mmsched_backends::vad::SileroVad>,
    chunk: Vec<f32>,
    tag: u64,
    out: Sender<Output>,
) -> Box<dyn Work> {
    Box::new(move || {
        let clock = MonotonicClock::new();
        let (prob, timing) =
            run_timed(&mut *lock(&model), &chunk, &clock).map_err(|e| work_error("VAD", e))?;
        let _ = out.send(Output::Vad { tag, prob, timing });
        Ok(StepOutcome::Finished)
    })
}

/// Whisper on one utterance, on the threads the scheduler granted its step
/// ([`Work::grant_threads`]; the ggml engine takes them, candle's keep their own pool).
pub fn asr(
    model: Shared<mmsched_backends::asr::AsrSession>,
    samples: Vec<f32>,
    tag: u64,
    out: Sender<Output>,
) -> Box<dyn Work> {
    Box::new(AsrWork {
        model,
        clip: AudioClip {
            samples,
            sample_rate_hz: 16_000,
        },
        tag,
        out,
        granted: 1,
    })
}

/// One utterance waiting for its step.
struct AsrWork {
    model: Shared<mmsched_backends::asr::AsrSession>,
    clip: AudioClip,
    tag: u64,
    out: Sender<Output>,
    /// Intra-op threads granted for the step.
    granted: usize,
}

impl Work for AsrWork {
    fn grant_threads(&mut self, threads: usize) {
        self.granted = threads.max(1);
    }

    fn step(&mut self) -> Result<StepOutcome, WorkError> {
        let clock = MonotonicClock::new();
        let mut session = lock(&self.model);
        // An engine with a fixed thread count ignores the grant.
        let _ = session.grant_threads(self.granted);
        let (text, timing) = run_timed(&mut *session, &self.clip, &clock)
            .map_err(|e| work_error("speech recognition", e))?;
        let _ = self.out.send(Output::Asr {
            tag: self.tag,
            text: text.trim().to_string(),
            timing,
        });
        Ok(StepOutcome::Finished)
    }
}

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
}

/// What one forward pass left: the token's text and whether generation ended.
struct Advance {
    text: String,
    token: bool,
    finish: Option<Finish>,
    stages: StepStages,
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

    /// Leases a session and starts the sequence (first step only).
    fn start(&mut self) -> Result<(), WorkError> {
        if self.session.is_some() {
            return Ok(());
        }
        let lease = self.pool.lease().ok_or(WorkError::Engine {
            model: "text generation",
            source: "every text-generation session is in use (the book admits at most one request per session)".into(),
        })?;
        let mut s = lease.lock();
        s.set_sampling(self.prompt.sampling.temperature, self.prompt.sampling.seed);
        s.start(&self.prompt.text)
            .map_err(|e| work_error("text generation", e))?;
        drop(s);
        self.session = Some(lease);
        Ok(())
    }

    /// One forward pass: a prefill chunk or a decoding step.
    fn advance(&mut self) -> Result<Advance, WorkError> {
        let chunk = self.chunk();
        let Some(lease) = &self.session else {
            return Err(WorkError::Cancelled {
                why: "the request has no session",
            });
        };
        let mut session = lease.lock();
        // An engine with a fixed thread count ignores the grant.
        let _ = session.grant_threads(self.granted);
        let token = if self.prompt_done {
            session.step().map(Some)
        } else {
            session.prefill_chunk(chunk)
        }
        .map_err(|e| work_error("text generation", e))?;
        drop(session);
        let Some(t) = token else {
            return Ok(Advance {
                text: String::new(),
                token: false,
                finish: None,
                stages: StepStages::default(),
            });
        };
        self.prompt_done = true;
        if t.stop {
            return Ok(Advance {
                text: self.filter.flush(),
                token: true,
                finish: Some(Finish::Stop),
                stages: t.stages,
            });
        }
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
        Ok(Advance {
            text,
            token: true,
            finish,
            stages: t.stages,
        })
    }
}

impl Work for LlmWork {
    fn grant_threads(&mut self, threads: usize) {
        self.granted = threads.max(1);
    }

    fn step(&mut self) -> Result<StepOutcome, WorkError> {
        let clock = MonotonicClock::new();
        let t0 = clock.now_nanos();
        let mut tokens = 0u32;
        let mut first_token_after_nanos = 0;
        let mut text = String::new();
        let mut stages = StepStages::default();
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
            nanos: clock.now_nanos().saturating_sub(t0),
        });
        Ok(if finish.is_some() {
            StepOutcome::Finished
        } else {
            StepOutcome::Yield
        })
    }
}
