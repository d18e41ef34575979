//! What a client hands the runtime — a [`Request`]: one input (a frame, a chunk of audio, an
//! utterance, a prompt) with its terms — and what it gets back, as [`Update`]s: the tokens
//! of an answer as they come, then the result ([`Answer`]), or the news that the input was
//! shed or failed.
//!
//! Every client speaks this one vocabulary: the scenario's streams inside the run loop,
//! the OpenAI-compatible endpoints, the library ([`crate::api`]) and the simulator's
//! figures are all counted in the same terms. Only the runtime turns a request into a job
//! ([`crate::jobs`]), books it ([`crate::book`]), traces it and accounts for it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use mmsched_backends::RgbFrame;
use mmsched_backends::ocr::OcrLine;
use mmsched_core::time::Nanos;
use mmsched_runtime::sched::WorkError;

use crate::stats::Kind;
use crate::truth::Truth;

/// Where a request comes from: the split the summary, the report and the metrics show.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Origin {
    /// A scenario's stream inside the run loop (camera, microphone, text requests).
    Streams,
    /// A client outside the loop: the HTTP endpoints or the library.
    Api,
}

impl Origin {
    /// Both, in report order.
    pub const ALL: [Origin; 2] = [Origin::Streams, Origin::Api];

    /// The name in `summary.json` (`origin.streams`, `origin.api`) and metric labels.
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::Streams => "streams",
            Origin::Api => "api",
        }
    }
}

/// How a text request is sampled: greedy by default (deterministic), or with a
/// temperature and a seed.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Sampling {
    /// `None` or 0: greedy decoding; otherwise the sampling temperature.
    pub temperature: Option<f64>,
    /// The sampler's seed (only used when sampling).
    pub seed: u64,
}

/// A text request: what to continue, how much, how to sample and where to stop.
#[derive(Debug, Clone, PartialEq)]
pub struct Prompt {
    /// The text to continue.
    pub text: String,
    /// Most tokens to generate (at least 1).
    pub max_tokens: u32,
    /// Greedy or sampled.
    pub sampling: Sampling,
    /// The answer ends before the first of these (never sent).
    pub stops: Vec<String>,
}

impl Prompt {
    /// Greedy continuation of `text` for at most `max_tokens` tokens, no stop sequence.
    pub fn greedy(text: impl Into<String>, max_tokens: u32) -> Self {
        Self {
            text: text.into(),
            max_tokens: max_tokens.max(1),
            sampling: Sampling::default(),
            stops: Vec::new(),
        }
    }
}

/// The input of one request.
#[derive(Debug, Clone)]
pub enum Input {
    /// A camera frame for OCR.
    Frame(RgbFrame),
    /// A chunk of 16 kHz audio for voice activity, with its number in its stream (the
    /// speech gate closes utterances from consecutive chunks).
    Chunk {
        /// The samples (512: 32 ms).
        samples: Vec<f32>,
        /// Its number in its stream.
        index: u64,
    },
    /// An utterance of 16 kHz audio to transcribe.
    Utterance(Vec<f32>),
    /// A text request.
    Prompt(Prompt),
    /// An input for a model of the user's own, by its class.
    Model {
        /// The model's class.
        kind: Kind,
        /// An image or tensors.
        input: mmsched_backends::onnx::OnnxInput,
    },
}

impl Input {
    /// The kind of job it becomes.
    pub fn kind(&self) -> Kind {
        match self {
            Input::Frame(_) => Kind::Vision,
            Input::Chunk { .. } => Kind::Vad,
            Input::Utterance(_) => Kind::Asr,
            Input::Prompt(_) => Kind::Llm,
            Input::Model { kind, .. } => *kind,
        }
    }
}

/// Set by a client that no longer wants its answer (an HTTP client that went away): the
/// job stops at its next step and frees its worker and its model.
#[derive(Debug, Clone, Default)]
pub struct Cancel(Arc<AtomicBool>);

impl Cancel {
    /// A flag not yet set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks the job to stop.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Whether the job was asked to stop.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// One request: an input with its terms.
#[derive(Debug, Clone)]
pub struct Request {
    /// What to run.
    pub input: Input,
    /// Streams or an outside client.
    pub origin: Origin,
    /// The stream's name, or the client's label (e.g. `http`) for results and traces.
    pub stream: String,
    /// When the input was captured (a prompt: when it arrived), device nanoseconds.
    pub capture_nanos: Nanos,
    /// When it became runnable: its deadline counts from here.
    pub release_nanos: Nanos,
    /// When its result is due.
    pub deadline_nanos: Nanos,
    /// Its importance in [0, 1]; `None` takes the policy's importance for its class, at
    /// every step (so a policy changed by hot reload applies at once).
    pub importance: Option<f64>,
    /// Set when the client no longer wants the answer.
    pub cancel: Cancel,
    /// A first step shed by admission waits and competes again until the deadline, as a
    /// stream's text request does (it keeps its place); off, a shed first step ends the
    /// request with [`Update::Shed`] at once (an HTTP client is told to retry).
    pub retry_when_shed: bool,
    /// The right answer, where the client knows it: the result is then scored
    /// ([`crate::truth`]) and counted `correct` or not.
    pub truth: Option<Truth>,
}

impl Request {
    /// A request from `origin`'s `stream`, released now at `release_nanos` and due at
    /// `deadline_nanos`, captured at release, with the class's importance, no retry.
    pub fn new(
        input: Input,
        origin: Origin,
        stream: impl Into<String>,
        release_nanos: Nanos,
        deadline_nanos: Nanos,
    ) -> Self {
        Self {
            input,
            origin,
            stream: stream.into(),
            capture_nanos: release_nanos,
            release_nanos,
            deadline_nanos,
            importance: None,
            cancel: Cancel::new(),
            retry_when_shed: false,
            truth: None,
        }
    }

    /// The kind of job it becomes.
    pub fn kind(&self) -> Kind {
        self.input.kind()
    }
}

/// Why a text answer ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finish {
    /// A stop token or a stop sequence.
    Stop,
    /// The token budget (`max_tokens`).
    Length,
    /// Its client went away, or the run stopped.
    Cancelled,
}

impl Finish {
    /// OpenAI's `finish_reason`.
    pub fn as_str(self) -> &'static str {
        match self {
            Finish::Stop => "stop",
            Finish::Length => "length",
            Finish::Cancelled => "cancelled",
        }
    }
}

/// What a finished request produced.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// OCR: the lines read, top to bottom, with their boxes and scores.
    Lines(Vec<OcrLine>),
    /// Voice activity: the chunk's speech probability.
    Speech(f32),
    /// Speech recognition: the transcript.
    Transcript(String),
    /// Text generation: the whole answer.
    Text {
        /// The answer (stop sequences removed).
        text: String,
        /// Tokens generated.
        tokens: u32,
        /// Why it ended.
        finish: Finish,
    },
    /// A model of the user's own: its output tensors (and classes, for a classifier).
    Model(mmsched_backends::onnx::OnnxOutput),
}

impl Reply {
    /// The text of the reply: OCR lines joined by ` | `, the transcript, the answer (empty
    /// for a speech probability).
    pub fn text(&self) -> String {
        match self {
            Reply::Lines(l) => l
                .iter()
                .map(|l| l.text.as_str())
                .collect::<Vec<_>>()
                .join(" | "),
            Reply::Speech(_) => String::new(),
            Reply::Transcript(t) => t.clone(),
            Reply::Text { text, .. } => text.clone(),
            Reply::Model(out) => model_text(out),
        }
    }
}

/// A user model's result as text: the best class of each row for a classifier (`label
/// (score)`, rows joined by ` | `), each box for a detector (`label (score) at left,top,
/// right,bottom`); otherwise each output's name and shape.
fn model_text(out: &mmsched_backends::onnx::OnnxOutput) -> String {
    if let Some(found) = &out.detections {
        return found
            .iter()
            .map(|d| {
                let name = d.label.clone().unwrap_or_else(|| d.index.to_string());
                let [l, t, r, b] = d.bbox;
                format!("{name} ({:.3}) at {l:.0},{t:.0},{r:.0},{b:.0}", d.score)
            })
            .collect::<Vec<_>>()
            .join(" | ");
    }
    match &out.classes {
        Some(rows) => rows
            .iter()
            .filter_map(|row| row.first())
            .map(|c| {
                let name = c.label.clone().unwrap_or_else(|| c.index.to_string());
                format!("{name} ({:.3})", c.score)
            })
            .collect::<Vec<_>>()
            .join(" | "),
        None => out
            .tensors
            .iter()
            .map(|(name, t)| format!("{name} {:?}", t.shape))
            .collect::<Vec<_>>()
            .join(" | "),
    }
}

/// A finished request with its timings (device nanoseconds) and whether it met its
/// deadline.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// The job's trace id (its spans in the run's trace), 32 hex digits.
    pub trace_id: String,
    /// The stream (or client label) it came from.
    pub stream: String,
    /// What it produced.
    pub reply: Reply,
    /// When its input was captured.
    pub capture_nanos: Nanos,
    /// When it was released.
    pub release_nanos: Nanos,
    /// When its first step started.
    pub started_nanos: Nanos,
    /// When its last step ended.
    pub ended_nanos: Nanos,
    /// When it was due.
    pub deadline_nanos: Nanos,
    /// Whether it ended by its deadline.
    pub on_time: bool,
    /// The model's pre-processing, execution and post-processing time (OCR and speech
    /// recognition; none for voice activity and text, whose steps are timed in the trace).
    pub timing: Option<mmsched_backends::probe::StageTiming>,
}

/// Why a request was shed instead of run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShedReason {
    /// Admission: it could not finish by its deadline without making more important work
    /// late.
    Overload,
    /// Battery saver: its class is switched off below the policy's battery level.
    BatterySaver,
    /// The runtime stopped before it could run.
    Stopping,
}

/// What a request's client hears, in order: text as an answer grows, then exactly one of
/// the last three.
#[derive(Debug)]
pub enum Update {
    /// The next piece of a text answer (stop sequences never appear).
    Token(String),
    /// The request's result.
    Finished(Answer),
    /// The request did not run (or, for a text request past its deadline, stopped between
    /// two tokens): why.
    Shed(ShedReason),
    /// The model failed, or the input could not be run.
    Failed(WorkError),
}

impl Update {
    /// Whether this is the request's last update.
    pub fn is_last(&self) -> bool {
        !matches!(self, Update::Token(_))
    }
}

/// Where a request's updates go. Called on the runtime's loop thread: it must not block.
pub type UpdateSink = Box<dyn FnMut(Update) + Send>;
