//! The one job factory: the [`Work`] a worker runs for each kind of request — OCR on a
//! frame, voice activity on a chunk, Whisper on an utterance, text generation token by
//! token — and the [`Output`] each step sends back when it ends. Every client's request
//! (a stream's, an HTTP client's, the library's) becomes its job here, so a fix to a
//! model's work reaches them all.
//!
//! Results travel on their own channel, tagged with the book's job number: a step sends its
//! output before it returns, so by the time the scheduler reports the step done the output
//! is waiting. A failure is the step's `Err`, a typed [`WorkError`].

//! Files: `mod.rs` the outputs, failures and the VAD's one-step job; `step.rs` the one job
//! of every [`mmsched_backends::StepModel`] (the VAD's, and those below but text's);
//! `vision.rs` OCR on it (detection, then recognition a batch of lines at a time);
//! `model.rs` a model of the user's own on it; `speech.rs` Whisper in
//! steps (log-mel, the encoder a block at a time, the decoder a token at a time); `text.rs`
//! text generation a token at a time in a session of its own.

mod model;
mod speech;
mod step;
mod text;
mod vision;

use std::sync::mpsc::Sender;

use mmsched_backends::BackendError;
use mmsched_backends::llm::StepStages;
use mmsched_backends::ocr::OcrLine;
use mmsched_backends::probe::StageTiming;
use mmsched_core::time::Nanos;
use mmsched_runtime::sched::{Work, WorkError};

use crate::engines::Shared;
use crate::request::Finish;

pub use model::model;
pub use speech::{ASR_LAYERS_PER_STEP, asr};
pub use step::{Deliver, StepJob};
pub use text::{
    ALONE_PREFILL_CHUNK_TOKENS, DECODE_AHEAD, SHARED_PREFILL_CHUNK_TOKENS, decode_label, llm,
};
pub use vision::{OCR_LINES_PER_STEP, vision};

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
    /// The result of a model of the user's own.
    Model {
        /// The book's job number.
        tag: u64,
        /// Its output tensors (and classes, for a classifier).
        output: mmsched_backends::onnx::OnnxOutput,
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
        /// The kind of step it turned out to be, the key its cost is learned under
        /// ([`decode_label`]: `decode-N` for a call serving N requests, `decode-ahead` for a
        /// token another request's call decoded; `None` for a prefill chunk, a call of its
        /// own, or a whole request in one step).
        step: Option<&'static str>,
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
            | Output::Model { tag, .. }
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

/// Silero VAD on one 512-sample chunk: one step, as one dispatch whose cost is the job's.
pub fn vad(
    model: Shared<mmsched_backends::vad::SileroVad>,
    chunk: Vec<f32>,
    tag: u64,
    out: Sender<Output>,
) -> Box<dyn Work> {
    Box::new(StepJob::new(
        vec![model],
        "VAD",
        chunk,
        true,
        Box::new(move |prob, timing| Output::Vad { tag, prob, timing }),
        out,
    ))
}
