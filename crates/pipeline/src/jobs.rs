//! One job's work per model, as a worker runs it: the [`Work`] the scheduler dispatches,
//! and the [`Output`] it sends back to the main loop when its step ends.
//!
//! Results travel on their own channel, tagged with the main loop's job number: a step
//! sends its output before it returns, so by the time the scheduler reports the step done
//! the output is waiting.

use std::sync::mpsc::Sender;

use mmsched_backends::audio::AudioClip;
use mmsched_backends::llm::StepStages;
use mmsched_backends::probe::{StageTiming, run_timed};
use mmsched_backends::{Backend, BackendError, RgbFrame};
use mmsched_core::time::{Clock, MonotonicClock, Nanos};
use mmsched_runtime::sched::{StepOutcome, Work, WorkError};

use crate::engines::{Shared, lock};

/// Prompt tokens fed per prefill chunk of a request served over the API, where prompts can
/// be long, and of a field request without token preemption (one step for the whole
/// request): a 64-token chunk keeps the prefill at full speed (a 200-token prompt takes
/// 1.6 s at one thread; 3.5 s in 4-token chunks). An API request still yields to due work
/// between chunks.
pub const PREFILL_CHUNK_TOKENS: usize = 64;

/// Prompt tokens fed per prefill step of a field run's request. A step cannot be
/// preempted, so its length bounds how long a due frame waits behind the text branch, and
/// the cost predicted for the class's next step (a high percentile of its recent steps,
/// nearly all decoding steps) must hold for prefill steps too, or a step booked into the
/// gap before a stream's reserved slot overruns it. One forward pass costs about a decoding
/// step plus ~5 ms a token at one thread, so 4 tokens keep a prefill step within one to two
/// decoding steps (44–82 ms against 21–60 ms in a traced `inspection` run); a whole
/// 20-token prompt in one step took 3–4 decoding steps and made a frame miss its deadline
/// on `inspection`. The price is the prompt's time to first token
/// (233 ms instead of 151 ms for a 20-token prompt), well inside a field prompt's SLA.
/// The same for every scheduler, so the comparison stays on equal footing.
pub const RUN_PREFILL_CHUNK_TOKENS: usize = 4;

/// What a finished step produced.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    /// OCR lines of one frame.
    Vision {
        /// The main loop's job number.
        tag: u64,
        /// Text read, lines joined by ` | `.
        text: String,
        /// The lines read, top to bottom.
        lines: Vec<String>,
        /// Stage timing.
        timing: StageTiming,
    },
    /// Speech probability of one 32 ms chunk.
    Vad {
        /// The main loop's job number.
        tag: u64,
        /// Probability in [0, 1].
        prob: f32,
        /// Stage timing.
        timing: StageTiming,
    },
    /// Transcript of one utterance.
    Asr {
        /// The main loop's job number.
        tag: u64,
        /// The text.
        text: String,
        /// Stage timing.
        timing: StageTiming,
    },
    /// One LLM step: a prefill chunk (maybe with the first token) or one decoded token;
    /// or, without token preemption, the whole request.
    Llm {
        /// The main loop's job number.
        tag: u64,
        /// The text of the tokens the step produced, if it produced any.
        token: Option<String>,
        /// Tokens the step produced.
        tokens: u32,
        /// When the step's first token was ready, after the step started.
        first_token_after_nanos: Nanos,
        /// Whether generation is over (stop token or token budget).
        done: bool,
        /// Stage timing inside the model (KV cache, attention, rest).
        stages: StepStages,
        /// Wall time of the step.
        nanos: Nanos,
    },
    /// The step failed.
    Failed {
        /// The main loop's job number.
        tag: u64,
        /// Why.
        error: String,
    },
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

fn fail(out: &Sender<Output>, tag: u64, e: WorkError) -> Result<StepOutcome, WorkError> {
    let _ = out.send(Output::Failed {
        tag,
        error: e.chain(),
    });
    Err(e)
}

/// A job whose model is not loaded: its step fails, naming the model.
pub fn missing(model: &'static str, tag: u64, out: Sender<Output>) -> Box<dyn Work> {
    Box::new(move || fail(&out, tag, WorkError::NoModel { model }))
}

/// OCR on one frame, on whichever of the pipelines is free.
pub fn vision(
    pool: Vec<Shared<mmsched_backends::ocr::OcrPipeline>>,
    frame: RgbFrame,
    tag: u64,
    out: Sender<Output>,
) -> Box<dyn Work> {
    Box::new(move || {
        let clock = MonotonicClock::new();
        // Take a free pipeline; if both are busy (never under mmsched, which runs at most
        // one frame per worker), wait for the first.
        let guard = pool
            .iter()
            .find_map(|p| p.try_lock().ok())
            .or_else(|| pool.first().map(|p| lock(p)));
        let Some(mut ocr) = guard else {
            return fail(&out, tag, WorkError::NoModel { model: "OCR" });
        };
        match run_timed(&mut *ocr, &frame, &clock) {
            Ok((lines, timing)) => {
                let lines: Vec<String> = lines.into_iter().map(|l| l.text).collect();
                let text = lines.join(" | ");
                let _ = out.send(Output::Vision {
                    tag,
                    text,
                    lines,
                    timing,
                });
                Ok(StepOutcome::Finished)
            }
            Err(e) => fail(&out, tag, work_error("OCR", e)),
        }
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
        match run_timed(&mut *lock(&model), &chunk, &clock) {
            Ok((prob, timing)) => {
                let _ = out.send(Output::Vad { tag, prob, timing });
                Ok(StepOutcome::Finished)
            }
            Err(e) => fail(&out, tag, work_error("VAD", e)),
        }
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
        let (out, tag) = (&self.out, self.tag);
        let clock = MonotonicClock::new();
        let mut session = lock(&self.model);
        // An engine with a fixed thread count ignores the grant.
        let _ = session.grant_threads(self.granted);
        match run_timed(&mut *session, &self.clip, &clock) {
            Ok((text, timing)) => {
                let _ = out.send(Output::Asr {
                    tag,
                    text: text.trim().to_string(),
                    timing,
                });
                Ok(StepOutcome::Finished)
            }
            Err(e) => fail(out, tag, work_error("speech recognition", e)),
        }
    }
}

/// One text request, generated step by step: the first steps feed the prompt in chunks
/// of [`RUN_PREFILL_CHUNK_TOKENS`], every later step decodes one token. Each step yields, so
/// the scheduler decides again at every token boundary — unless `preemptible` is off,
/// when the first step runs the whole request, its prompt in chunks of
/// [`PREFILL_CHUNK_TOKENS`] (what a scheduler without token preemption does). Each step
/// runs on the threads the scheduler granted it ([`Work::grant_threads`]).
///
/// The pipeline runs one request at a time on the one LLM session, so the session's KV
/// cache belongs to this request from its first step to its last.
pub fn llm(
    model: Shared<mmsched_backends::llm::LlmSession>,
    prompt: String,
    max_tokens: u32,
    preemptible: bool,
    tag: u64,
    out: Sender<Output>,
) -> Box<dyn Work> {
    Box::new(LlmWork {
        model,
        prompt,
        max_tokens,
        preemptible,
        tag,
        out,
        started: false,
        prompt_done: false,
        produced: 0,
        granted: 1,
    })
}

/// The state of one text request between its steps.
struct LlmWork {
    model: Shared<mmsched_backends::llm::LlmSession>,
    prompt: String,
    max_tokens: u32,
    /// Off: the first step runs the whole request.
    preemptible: bool,
    tag: u64,
    out: Sender<Output>,
    started: bool,
    prompt_done: bool,
    produced: u32,
    /// Intra-op threads granted for the next step.
    granted: usize,
}

impl Work for LlmWork {
    fn grant_threads(&mut self, threads: usize) {
        self.granted = threads.max(1);
    }

    fn step(&mut self) -> Result<StepOutcome, WorkError> {
        let (out, tag) = (&self.out, self.tag);
        let clock = MonotonicClock::new();
        let t0 = clock.now_nanos();
        let mut tokens = 0u32;
        let mut first_token_after_nanos = 0;
        // The text of this step's tokens (several when the request is not preemptible).
        let mut text: Option<String> = None;
        let mut stages = StepStages::default();
        let done = loop {
            let mut session = lock(&self.model);
            // An engine with a fixed thread count ignores the grant.
            let _ = session.grant_threads(self.granted);
            if !self.started {
                if let Err(e) = session.start(&self.prompt) {
                    return fail(out, tag, work_error("text generation", e));
                }
                self.started = true;
            }
            let token = if self.prompt_done {
                session.step().map(Some)
            } else {
                // Short prompt steps only matter where steps yield: without token
                // preemption the prompt runs in one step anyway, at full speed.
                let chunk = if self.preemptible {
                    RUN_PREFILL_CHUNK_TOKENS
                } else {
                    PREFILL_CHUNK_TOKENS
                };
                session.prefill_chunk(chunk)
            };
            drop(session);
            let token = match token {
                Ok(t) => t,
                Err(e) => return fail(out, tag, work_error("text generation", e)),
            };
            let stop = match token {
                Some(t) => {
                    self.prompt_done = true;
                    self.produced += 1;
                    if tokens == 0 {
                        first_token_after_nanos = clock.now_nanos().saturating_sub(t0);
                    }
                    tokens += 1;
                    text.get_or_insert_with(String::new).push_str(&t.text);
                    stages = t.stages;
                    t.stop
                }
                None => false,
            };
            let done = stop || self.produced >= self.max_tokens;
            if done || self.preemptible {
                break done;
            }
        };
        let nanos = clock.now_nanos().saturating_sub(t0);
        let _ = out.send(Output::Llm {
            tag,
            token: text,
            tokens,
            first_token_after_nanos,
            done,
            stages,
            nanos,
        });
        Ok(if done {
            StepOutcome::Finished
        } else {
            StepOutcome::Yield
        })
    }
}
