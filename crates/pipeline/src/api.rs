//! The runtime as a library, at the level of inputs: a camera frame, a chunk of
//! microphone audio, an utterance, a prompt — each becomes a job with its stream's SLA and
//! importance on one scheduler, and its result (OCR lines, speech probability, transcript,
//! streamed tokens) comes back on a [`Ticket`] with its trace id, timings and on-time flag.
//!
//! ```no_run
//! use mmsched_pipeline::api::{Runtime, StreamTerms, Update};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let scenario = mmsched_scenario::Scenario::load("ar-glasses")?;
//! let engines = mmsched_pipeline::engines::Engines::load(&scenario, 2, |_| {})?;
//! let mut rt = Runtime::start(Default::default(), Box::new(engines))?;
//! rt.add_stream("dashcam", StreamTerms::new(500.0, 0.8))?;
//! let frame = mmsched_backends::RgbFrame::load(std::path::Path::new("sign.png"))?;
//! let ticket = rt.frame("dashcam", rt.now_nanos(), frame)?;
//! if let Update::Finished(answer) = ticket.wait() {
//!     println!("{:?} on time: {}", answer.reply, answer.on_time);
//! }
//! # Ok(()) }
//! ```
//!
//! `mmsched run`'s loop, the service under `serve --models` and this API submit through
//! the same book of jobs ([`crate::service::ExternalJobs`]) to the same executors; the
//! models' work is the same ([`Models`]).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver};

use mmsched_backends::RgbFrame;
use mmsched_core::policy::Policy;
use mmsched_core::time::Nanos;
use mmsched_runtime::sched::{Executor, SchedulerKind};

use crate::inputs::Device;
use crate::jobs::Output;
use crate::models::Models;
use crate::run::transcript_budget_nanos;
use crate::service::{JobEvent, JobRequest, Service, ServiceError, Submitter};
use crate::stats::Kind;

/// Cost of one step per kind to assume until measured, when the device profile has none.
const FALLBACK_PRIOR_NANOS: [Nanos; 4] = [100_000_000, 1_000_000, 1_000_000_000, 40_000_000];

/// The cost of one step of each kind (in [`Kind::ALL`] order) to assume until the loop has
/// measured its own: the profile's P99, else a fallback of the order of this project's
/// models on a 2-core machine.
pub fn cost_priors(profile: &mmsched_sim::profile::Profile) -> [Nanos; 4] {
    std::array::from_fn(|i| {
        profile
            .latency(Kind::ALL[i].as_str())
            .map_or(FALLBACK_PRIOR_NANOS[i], |l| (l.p99_ms * 1e6) as Nanos)
    })
}

/// A stream's terms: its results are due `sla_ms` after release; `importance` in [0, 1]
/// weighs it against the others under overload.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StreamTerms {
    /// Deadline after release, milliseconds.
    pub sla_ms: f64,
    /// Importance in [0, 1].
    pub importance: f64,
}

impl StreamTerms {
    /// Results due `sla_ms` after release, with `importance` in [0, 1].
    pub fn new(sla_ms: f64, importance: f64) -> Self {
        Self { sla_ms, importance }
    }
}

/// How a runtime is set up.
#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    /// The scheduling policy.
    pub policy: Policy,
    /// The scheduler (mmsched's by default).
    pub scheduler: SchedulerKind,
    /// General workers (the standard layout adds the voice-activity worker).
    pub workers: usize,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        Self {
            policy: Policy::default(),
            scheduler: SchedulerKind::Mmsched,
            workers: 2,
        }
    }
}

/// Why an input could not be submitted.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// The stream was never added.
    #[error("no stream named {0:?}: add it first with Runtime::add_stream")]
    UnknownStream(String),
    /// A stream's terms are out of range.
    #[error("stream {name:?}: {reason}")]
    BadTerms {
        /// The stream.
        name: String,
        /// What is wrong and the range.
        reason: String,
    },
    /// The input's model is not loaded.
    #[error("no {0} model is loaded: load a model set that has one")]
    NoModel(&'static str),
    /// The scheduler's loop has stopped.
    #[error(transparent)]
    Stopped(#[from] ServiceError),
    /// The device profile (for cost priors) could not be read.
    #[error("the device profile could not be read")]
    Profile(#[source] mmsched_sim::profile::ProfileError),
    /// The executor or its loop could not start.
    #[error("the scheduler could not start")]
    Start(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// What a finished input produced.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// OCR: the lines read, top to bottom.
    Lines(Vec<String>),
    /// Voice activity: the chunk's speech probability.
    Speech(f32),
    /// Speech recognition: the transcript.
    Transcript(String),
    /// Text generation: the whole answer and its token count.
    Text {
        /// The answer.
        text: String,
        /// Tokens generated.
        tokens: u32,
    },
}

/// A finished input with its timings (device nanoseconds) and whether it met its deadline.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// The job's trace id in this runtime.
    pub trace_id: u64,
    /// The stream it came from.
    pub stream: String,
    /// What it produced.
    pub reply: Reply,
    /// When its input was captured (as the caller said).
    pub capture_nanos: Nanos,
    /// When it was submitted.
    pub release_nanos: Nanos,
    /// When its first step started.
    pub started_nanos: Nanos,
    /// When its last step ended.
    pub ended_nanos: Nanos,
    /// When it was due.
    pub deadline_nanos: Nanos,
    /// Whether it ended by its deadline.
    pub on_time: bool,
}

/// What a [`Ticket`] reports, in order: tokens of a text answer as they come, then one of
/// the last three.
#[derive(Debug, Clone, PartialEq)]
pub enum Update {
    /// The next piece of a text answer.
    Token(String),
    /// The input's result.
    Finished(Answer),
    /// The scheduler shed the input (overload): it did not run.
    Shed,
    /// The model failed; the message says why.
    Failed(String),
}

/// One submitted input: its updates, as they come.
pub struct Ticket {
    trace_id: u64,
    stream: String,
    kind: Kind,
    capture_nanos: Nanos,
    release_nanos: Nanos,
    deadline_nanos: Nanos,
    events: Receiver<JobEvent>,
    outputs: Receiver<Output>,
    started_nanos: Option<Nanos>,
    text: String,
    tokens: u32,
    ended: bool,
}

impl std::fmt::Debug for Ticket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ticket")
            .field("trace_id", &self.trace_id)
            .field("stream", &self.stream)
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}

impl Ticket {
    /// The job's trace id.
    pub fn trace_id(&self) -> u64 {
        self.trace_id
    }

    /// The next update, blocking until it comes; `None` after the last one.
    pub fn next_update(&mut self) -> Option<Update> {
        if self.ended {
            return None;
        }
        loop {
            let Ok(event) = self.events.recv() else {
                self.ended = true;
                return Some(Update::Failed("the scheduler stopped".into()));
            };
            // A step's output is sent before the step returns, so it is here by now.
            let output = self.outputs.try_recv().ok();
            match event {
                JobEvent::Step { started_nanos, .. } => {
                    self.started_nanos.get_or_insert(started_nanos);
                    if let Some(t) = self.take_token(output) {
                        return Some(Update::Token(t));
                    }
                }
                JobEvent::Done {
                    started_nanos,
                    ended_nanos,
                    on_time,
                } => {
                    self.ended = true;
                    let started = *self.started_nanos.get_or_insert(started_nanos);
                    let reply = match output {
                        Some(Output::Failed { error, .. }) => return Some(Update::Failed(error)),
                        Some(Output::Vision { lines, .. }) => Reply::Lines(lines),
                        Some(Output::Vad { prob, .. }) => Reply::Speech(prob),
                        Some(Output::Asr { text, .. }) => Reply::Transcript(text),
                        llm => {
                            let _ = self.take_token(llm);
                            Reply::Text {
                                text: std::mem::take(&mut self.text),
                                tokens: self.tokens,
                            }
                        }
                    };
                    return Some(Update::Finished(Answer {
                        trace_id: self.trace_id,
                        stream: self.stream.clone(),
                        reply,
                        capture_nanos: self.capture_nanos,
                        release_nanos: self.release_nanos,
                        started_nanos: started,
                        ended_nanos,
                        deadline_nanos: self.deadline_nanos,
                        on_time,
                    }));
                }
                JobEvent::Shed => {
                    self.ended = true;
                    return Some(Update::Shed);
                }
                JobEvent::Failed(why) => {
                    self.ended = true;
                    let why = match output {
                        Some(Output::Failed { error, .. }) => error,
                        _ => why,
                    };
                    return Some(Update::Failed(why));
                }
            }
        }
    }

    /// Blocks until the input's end: its result, shed or failure (tokens are gathered
    /// into the answer).
    pub fn wait(mut self) -> Update {
        let mut last = Update::Failed("no update".into());
        while let Some(u) = self.next_update() {
            last = u;
        }
        last
    }

    /// A text step's token, added to the answer so far.
    fn take_token(&mut self, output: Option<Output>) -> Option<String> {
        let Some(Output::Llm { token, tokens, .. }) = output else {
            return None;
        };
        self.tokens += tokens;
        let t = token.filter(|t| !t.is_empty())?;
        self.text.push_str(&t);
        Some(t)
    }
}

/// Models and one scheduler behind calls per input. See the [module docs](self).
pub struct Runtime {
    jobs: Submitter,
    /// The scheduler's own loop (none when the jobs go to another loop, e.g. a run's).
    _service: Option<Service>,
    models: Box<dyn Models + Sync>,
    streams: HashMap<String, StreamTerms>,
    priors: [Nanos; 4],
    next_trace: AtomicU64,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("streams", &self.streams)
            .finish_non_exhaustive()
    }
}

impl Runtime {
    /// Starts the scheduler of `config` on the standard worker layout (no pinning) with a
    /// loop thread of its own, on the OS clock, with cost priors from the device profile.
    pub fn start(config: RuntimeConfig, models: Box<dyn Models + Sync>) -> Result<Self, ApiError> {
        let clock = Device::new();
        let exec = crate::platform::plain_executor(
            config.scheduler,
            &config.policy,
            config.workers.max(1),
            clock,
        )
        .map_err(|e| ApiError::Start(Box::new(e)))?;
        Self::on_executor(exec, clock, models)
    }

    /// A runtime whose loop drives `exec` on `clock` (e.g. an executor on virtual lanes
    /// and a virtual clock, for tests).
    pub fn on_executor<C>(
        exec: Box<dyn Executor>,
        clock: C,
        models: Box<dyn Models + Sync>,
    ) -> Result<Self, ApiError>
    where
        C: mmsched_core::time::Clock + Clone + Send + Sync + 'static,
    {
        let service = Service::start(exec, clock).map_err(|e| ApiError::Start(Box::new(e)))?;
        let mut rt = Self::on_loop(service.submitter(), models)?;
        rt._service = Some(service);
        Ok(rt)
    }

    /// A runtime whose jobs go to another loop through `jobs` (e.g. `mmsched run`'s, see
    /// [`crate::config::External`]), with cost priors from the device profile (measured, or
    /// the shipped reference).
    pub fn on_loop(jobs: Submitter, models: Box<dyn Models + Sync>) -> Result<Self, ApiError> {
        let profile = mmsched_sim::profile::Profile::resolve(
            None,
            Some(&mmsched_backends::paths::mmsched_home()),
        )
        .map_err(ApiError::Profile)?;
        Ok(Self {
            jobs,
            _service: None,
            models,
            streams: HashMap::new(),
            priors: cost_priors(&profile),
            next_trace: AtomicU64::new(1),
        })
    }

    /// Adds (or changes) a stream and its terms.
    pub fn add_stream(&mut self, name: &str, terms: StreamTerms) -> Result<(), ApiError> {
        let bad = |reason: &str| ApiError::BadTerms {
            name: name.into(),
            reason: reason.into(),
        };
        if !(terms.sla_ms.is_finite() && terms.sla_ms > 0.0 && terms.sla_ms <= 3_600_000.0) {
            return Err(bad(
                "sla_ms must be more than 0 and at most 3600000 (an hour)",
            ));
        }
        if !(0.0..=1.0).contains(&terms.importance) {
            return Err(bad("importance must be from 0 to 1"));
        }
        self.streams.insert(name.into(), terms);
        Ok(())
    }

    /// The device time deadlines are on.
    pub fn now_nanos(&self) -> Nanos {
        self.jobs.now_nanos()
    }

    /// OCR on a camera frame captured at `capture_nanos`.
    pub fn frame(
        &self,
        stream: &str,
        capture_nanos: Nanos,
        frame: RgbFrame,
    ) -> Result<Ticket, ApiError> {
        self.submit(stream, Kind::Vision, capture_nanos, 0, |m, tag, tx| {
            m.vision(frame, tag, tx)
        })
    }

    /// Voice activity in a 512-sample chunk (32 ms at 16 kHz) captured at `capture_nanos`.
    pub fn speech_chunk(
        &self,
        stream: &str,
        capture_nanos: Nanos,
        chunk: Vec<f32>,
    ) -> Result<Ticket, ApiError> {
        self.submit(stream, Kind::Vad, capture_nanos, 0, |m, tag, tx| {
            m.vad(chunk, tag, tx)
        })
    }

    /// The transcript of an utterance (16 kHz mono samples) whose speech began at
    /// `capture_nanos`. It is due the stream's SLA plus the utterance's length (at least
    /// 2 s) after submission, as in `mmsched run`.
    pub fn audio(
        &self,
        stream: &str,
        capture_nanos: Nanos,
        samples: Vec<f32>,
    ) -> Result<Ticket, ApiError> {
        let length = samples.len() as u64 * 1_000_000_000 / 16_000;
        let budget = transcript_budget_nanos(length);
        self.submit(stream, Kind::Asr, capture_nanos, budget, |m, tag, tx| {
            m.asr(samples, tag, tx)
        })
    }

    /// An answer of at most `max_tokens` to `prompt`, one token per step (so due frames and
    /// audio run between two tokens); the tokens come as [`Update::Token`].
    pub fn prompt(&self, stream: &str, prompt: &str, max_tokens: u32) -> Result<Ticket, ApiError> {
        let now = self.now_nanos();
        let prompt = prompt.to_string();
        self.submit(stream, Kind::Llm, now, 0, |m, tag, tx| {
            m.llm(prompt, max_tokens.max(1), true, tag, tx)
        })
    }

    fn submit(
        &self,
        stream: &str,
        kind: Kind,
        capture_nanos: Nanos,
        extra_budget_nanos: Nanos,
        work: impl FnOnce(
            &dyn Models,
            u64,
            mpsc::Sender<Output>,
        ) -> Box<dyn mmsched_runtime::sched::Work>,
    ) -> Result<Ticket, ApiError> {
        let terms = *self
            .streams
            .get(stream)
            .ok_or_else(|| ApiError::UnknownStream(stream.into()))?;
        if !self.models.has(kind) {
            return Err(ApiError::NoModel(match kind {
                Kind::Vision => "OCR",
                Kind::Vad => "voice activity",
                Kind::Asr => "speech recognition",
                Kind::Llm => "text generation",
            }));
        }
        let trace_id = self.next_trace.fetch_add(1, Ordering::Relaxed);
        let (tx, outputs) = mpsc::channel();
        let release = self.now_nanos();
        let deadline = release + (terms.sla_ms * 1e6) as Nanos + extra_budget_nanos;
        let events = self.jobs.submit(JobRequest {
            class: kind.as_str().into(),
            modality: kind.modality(),
            deadline_nanos: deadline,
            prior_cost_nanos: self.priors[kind.index()],
            importance: terms.importance,
            work: work(&*self.models, trace_id, tx),
        })?;
        Ok(Ticket {
            trace_id,
            stream: stream.into(),
            kind,
            capture_nanos,
            release_nanos: release,
            deadline_nanos: deadline,
            events,
            outputs,
            started_nanos: None,
            text: String::new(),
            tokens: 0,
            ended: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::fake::{QUICK, virtual_mmsched};
    use mmsched_runtime::sched::virtual_time::VirtualClock;

    fn runtime() -> Runtime {
        let clock = VirtualClock::new(crate::inputs::DEVICE_EPOCH_NANOS);
        let (exec, models) = virtual_mmsched(&Policy::default(), 2, false, &clock, QUICK);
        let mut rt = Runtime::on_executor(exec, clock, Box::new(models)).expect("runtime");
        for (name, sla_ms, importance) in [
            ("cam", 200.0, 0.8),
            ("mic", 60.0, 0.9),
            ("chat", 30_000.0, 0.3),
        ] {
            rt.add_stream(name, StreamTerms::new(sla_ms, importance))
                .expect("stream");
        }
        rt
    }

    fn blank_frame() -> RgbFrame {
        RgbFrame::new(8, 8, vec![0; 8 * 8 * 3]).expect("frame")
    }

    #[test]
    fn a_frame_comes_back_as_lines_with_its_timings_in_virtual_time() {
        let rt = runtime();
        let capture = rt.now_nanos();
        let Update::Finished(a) = rt
            .frame("cam", capture, blank_frame())
            .expect("submitted")
            .wait()
        else {
            panic!("not finished");
        };
        assert_eq!(a.reply, Reply::Lines(vec!["STOP".into()]));
        assert_eq!(a.stream, "cam");
        assert!(a.on_time);
        // A step of 40 ms of virtual time.
        assert_eq!(a.ended_nanos - a.started_nanos, 40_000_000);
        assert_eq!(a.deadline_nanos, a.release_nanos + 200_000_000);
        assert!(a.capture_nanos <= a.release_nanos && a.release_nanos <= a.started_nanos);
    }

    #[test]
    fn a_prompt_streams_its_tokens_then_the_whole_answer() {
        let rt = runtime();
        let mut t = rt
            .prompt("chat", "Name three colours.", 5)
            .expect("submitted");
        let mut tokens = 0;
        let last = loop {
            match t.next_update().expect("an update") {
                Update::Token(_) => tokens += 1,
                other => break other,
            }
        };
        assert_eq!(tokens, 4, "every step but the last streams its token");
        let Update::Finished(a) = last else {
            panic!("{last:?}")
        };
        assert_eq!(
            a.reply,
            Reply::Text {
                text: " word".repeat(5),
                tokens: 5
            }
        );
        assert!(t.next_update().is_none());
    }

    #[test]
    fn an_utterance_is_transcribed_and_a_hopeless_frame_is_shed() {
        let mut rt = runtime();
        let Update::Finished(a) = rt
            .audio("mic", 0, vec![0.1; 16_000])
            .expect("submitted")
            .wait()
        else {
            panic!("not finished");
        };
        assert_eq!(
            a.reply,
            Reply::Transcript("turn left at the next sign".into())
        );
        // Due in 1 ms, a frame that costs tens of ms cannot be on time: shed, not run late.
        rt.add_stream(
            "rushed",
            StreamTerms {
                sla_ms: 1.0,
                importance: 0.5,
            },
        )
        .expect("stream");
        let now = rt.now_nanos();
        assert_eq!(
            rt.frame("rushed", now, blank_frame())
                .expect("submitted")
                .wait(),
            Update::Shed
        );
    }

    #[test]
    fn bad_calls_say_what_to_fix() {
        let mut rt = runtime();
        let e = rt.frame("nope", 0, blank_frame()).expect_err("unknown");
        assert!(e.to_string().contains("add it first"), "{e}");
        let e = rt
            .add_stream(
                "x",
                StreamTerms {
                    sla_ms: 0.0,
                    importance: 0.5,
                },
            )
            .expect_err("sla");
        assert!(e.to_string().contains("sla_ms"), "{e}");
        let e = rt
            .add_stream(
                "x",
                StreamTerms {
                    sla_ms: 10.0,
                    importance: 2.0,
                },
            )
            .expect_err("importance");
        assert!(e.to_string().contains("importance"), "{e}");
    }
}
