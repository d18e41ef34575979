//! The runtime as a library, at the level of inputs: a camera frame, a chunk of
//! microphone audio, an utterance, a prompt — each becomes a request with its stream's SLA
//! and importance, booked by the one runtime every client uses (the run loop and its book
//! of jobs), and its result (OCR lines, speech probability, transcript, streamed tokens)
//! comes back on a [`Ticket`] with its trace id, timings and on-time flag.
//!
//! ```no_run
//! use mmsched_pipeline::api::{Runtime, StreamTerms};
//! use mmsched_pipeline::request::Update;
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let scenario = mmsched_scenario::Scenario::load("ar-glasses")?;
//! let engines = mmsched_pipeline::engines::Engines::load(&scenario, 2, |_| {})?;
//! let mut rt = Runtime::start(Default::default(), engines)?;
//! rt.add_stream("dashcam", StreamTerms::new(500.0, 0.8))?;
//! let frame = mmsched_backends::RgbFrame::load(std::path::Path::new("sign.png"))?;
//! let ticket = rt.frame("dashcam", rt.now_nanos(), frame)?;
//! if let Update::Finished(answer) = ticket.wait() {
//!     println!("{} on time: {}", answer.reply.text(), answer.on_time);
//! }
//! let outcome = rt.finish()?; // the summary of everything the runtime ran
//! # Ok(()) }
//! ```
//!
//! The requests go through the same book, job factory and executors as `mmsched run`'s
//! streams and the HTTP endpoints' ([`crate::host::Host`], [`crate::client::Client`]).

use std::collections::HashMap;
use std::sync::Mutex;

use mmsched_backends::RgbFrame;
use mmsched_core::policy::Policy;
use mmsched_core::time::{Clock, Nanos};
use mmsched_runtime::sched::SchedulerKind;

use crate::client::{Client, Stopped, Ticket};
use crate::config::{RunConfig, RunError};
use crate::engines::Engines;
use crate::host::{FOREVER_NANOS, Host, serving_scenario};
use crate::request::{Input, Origin, Prompt, Request};
use crate::run::{Quiet, RunOutcome, RunParts, transcript_budget_nanos};
use crate::stats::Kind;

/// Cost of one step per kind to assume until measured, when the device profile has none.
const FALLBACK_PRIOR_NANOS: [Nanos; 4] = [100_000_000, 1_000_000, 1_000_000_000, 40_000_000];

/// The cost of one step of each kind (in [`Kind::ALL`] order) to assume until the runtime
/// has measured its own: the profile's P99, else a fallback of the order of this project's
/// models on a 2-core machine.
pub fn cost_priors(profile: &mmsched_world::profile::Profile) -> [Nanos; 4] {
    std::array::from_fn(|i| {
        profile
            .latency(Kind::ALL[i].as_str())
            .map_or(FALLBACK_PRIOR_NANOS[i], |l| (l.p99_ms * 1e6) as Nanos)
    })
}

/// The median and P95 of one step of each kind (in [`Kind::ALL`] order) to assume until
/// the runtime has measured its own: the profile's, else the fallback (its spread unknown).
pub fn cost_prior_percentiles(
    profile: &mmsched_world::profile::Profile,
) -> [mmsched_runtime::sched::cost::Prior; 4] {
    use mmsched_runtime::sched::cost::Prior;
    std::array::from_fn(|i| {
        profile
            .latency(Kind::ALL[i].as_str())
            .map_or(Prior::point(FALLBACK_PRIOR_NANOS[i]), |l| {
                Prior::new((l.p50_ms * 1e6) as Nanos, (l.p95_ms * 1e6) as Nanos)
            })
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

impl RuntimeConfig {
    /// The run this runtime is: no streams, until stopped, no platform integration (no
    /// pinning, real-time priority or resource groups: a library shares its process).
    fn run_config(&self) -> Result<RunConfig, RunError> {
        let mut c = RunConfig::new(
            serving_scenario(self.workers)?,
            self.policy.clone(),
            self.scheduler,
        );
        c.duration_nanos = FOREVER_NANOS;
        c.platform = false;
        Ok(c)
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
        reason: &'static str,
    },
    /// The input's model is not loaded.
    #[error("no {0} model is loaded: load a model set that has one")]
    NoModel(&'static str),
    /// No model of your own has this name.
    #[error(
        "no model of your own is called {0:?}: load it with Engines::load_user_model before the runtime starts"
    )]
    UnknownModel(String),
    /// The runtime has stopped.
    #[error(transparent)]
    Stopped(#[from] Stopped),
    /// The runtime could not start, or stopped with an error.
    #[error("the runtime failed")]
    Run(#[from] RunError),
}

/// Models and one scheduler behind calls per input. See the [module docs](self).
pub struct Runtime {
    host: Host,
    client: Client,
    streams: HashMap<String, StreamTerms>,
    /// The next chunk number per stream (the speech gate reads chunks in order).
    chunks: Mutex<HashMap<String, u64>>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("streams", &self.streams)
            .finish_non_exhaustive()
    }
}

impl Runtime {
    /// Starts the scheduler of `config` on the standard worker layout (no pinning) with
    /// the loaded `engines`, on the OS clock, with cost priors from the device profile.
    pub fn start(config: RuntimeConfig, engines: Engines) -> Result<Self, ApiError> {
        let host = Host::start(config.run_config()?, engines, Box::new(Quiet))?;
        Ok(Self::on_host(host))
    }

    /// A runtime on `parts` (e.g. an executor on virtual lanes, a virtual clock and fake
    /// models, for tests).
    pub fn on_parts<C: Clock + Clone + Send + Sync + 'static>(
        config: RuntimeConfig,
        parts: RunParts<C>,
    ) -> Result<Self, ApiError> {
        let host = Host::with_parts(config.run_config()?, parts, Box::new(Quiet))?;
        Ok(Self::on_host(host))
    }

    fn on_host(host: Host) -> Self {
        Self {
            client: host.client(),
            host,
            streams: HashMap::new(),
            chunks: Mutex::new(HashMap::new()),
        }
    }

    /// A client of the same runtime (to submit requests with terms of your own).
    pub fn client(&self) -> Client {
        self.client.clone()
    }

    /// Adds (or changes) a stream and its terms.
    pub fn add_stream(&mut self, name: &str, terms: StreamTerms) -> Result<(), ApiError> {
        let bad = |reason| ApiError::BadTerms {
            name: name.into(),
            reason,
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
        self.client.now_nanos()
    }

    /// OCR on a camera frame captured at `capture_nanos`.
    pub fn frame(
        &self,
        stream: &str,
        capture_nanos: Nanos,
        frame: RgbFrame,
    ) -> Result<Ticket, ApiError> {
        self.submit(stream, Input::Frame(frame), capture_nanos, 0)
    }

    /// Voice activity in a 512-sample chunk (32 ms at 16 kHz) captured at `capture_nanos`.
    /// A stream's chunks are numbered in the order they are submitted.
    pub fn speech_chunk(
        &self,
        stream: &str,
        capture_nanos: Nanos,
        chunk: Vec<f32>,
    ) -> Result<Ticket, ApiError> {
        let index = {
            let mut chunks = self.chunks.lock().unwrap_or_else(|p| p.into_inner());
            let n = chunks.entry(stream.to_string()).or_insert(0);
            *n += 1;
            *n - 1
        };
        let input = Input::Chunk {
            samples: chunk,
            index,
        };
        self.submit(stream, input, capture_nanos, 0)
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
        self.submit(stream, Input::Utterance(samples), capture_nanos, budget)
    }

    /// A job of the model of your own called `model` (loaded with
    /// [`Engines::load_user_model`] before the runtime started) on `input`, an image or its
    /// tensors, captured at `capture_nanos`; the answer's reply is
    /// [`crate::request::Reply::Model`].
    pub fn model(
        &self,
        stream: &str,
        model: &str,
        capture_nanos: Nanos,
        input: mmsched_backends::onnx::OnnxInput,
    ) -> Result<Ticket, ApiError> {
        let kind = Kind::parse(model)
            .filter(|k| k.is_user_model())
            .ok_or_else(|| ApiError::UnknownModel(model.into()))?;
        self.submit(stream, Input::Model { kind, input }, capture_nanos, 0)
    }

    /// A greedy answer of at most `max_tokens` to `prompt`, one token per step (so due
    /// frames and audio run between two tokens); the tokens come as
    /// [`crate::request::Update::Token`].
    pub fn prompt(&self, stream: &str, prompt: &str, max_tokens: u32) -> Result<Ticket, ApiError> {
        self.answer(stream, Prompt::greedy(prompt, max_tokens))
    }

    /// An answer to `prompt` (sampling, stop sequences and budget as it says).
    pub fn answer(&self, stream: &str, prompt: Prompt) -> Result<Ticket, ApiError> {
        let now = self.now_nanos();
        self.submit(stream, Input::Prompt(prompt), now, 0)
    }

    fn submit(
        &self,
        stream: &str,
        input: Input,
        capture_nanos: Nanos,
        extra_budget_nanos: Nanos,
    ) -> Result<Ticket, ApiError> {
        let terms = *self
            .streams
            .get(stream)
            .ok_or_else(|| ApiError::UnknownStream(stream.into()))?;
        let kind = input.kind();
        if !self.client.has(kind) {
            return Err(ApiError::NoModel(kind.model_name()));
        }
        let release = self.now_nanos();
        let deadline = release + (terms.sla_ms * 1e6) as Nanos + extra_budget_nanos;
        let mut req = Request::new(input, Origin::Api, stream, release, deadline);
        req.capture_nanos = capture_nanos;
        req.importance = Some(terms.importance);
        Ok(self.client.submit(req)?)
    }

    /// Stops the runtime after the requests in flight (a text answer stops at its next
    /// token) and returns what it ran: the summary (per class, split by origin), the
    /// report's series.
    pub fn finish(self) -> Result<RunOutcome, ApiError> {
        Ok(self.host.finish()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::fake::{QUICK, TOKEN, TRANSCRIPT, virtual_mmsched};
    use crate::request::{Reply, ShedReason, Update};
    use mmsched_runtime::sched::virtual_time::VirtualClock;

    fn runtime_with(sessions: usize) -> Runtime {
        let clock = VirtualClock::new(crate::inputs::DEVICE_EPOCH_NANOS);
        let (exec, models) = virtual_mmsched(&Policy::default(), 2, false, &clock, QUICK);
        let parts = RunParts {
            clock,
            exec,
            models: std::sync::Arc::new(models.with_llm_sessions(sessions)),
            notes: Vec::new(),
            signals: None,
        };
        let mut rt = Runtime::on_parts(RuntimeConfig::default(), parts).expect("runtime");
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

    fn runtime() -> Runtime {
        runtime_with(1)
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
        assert_eq!(a.reply.text(), "STOP");
        assert_eq!(a.stream, "cam");
        assert!(a.on_time);
        // A step of 40 ms of virtual time.
        assert_eq!(a.ended_nanos - a.started_nanos, 40_000_000);
        assert_eq!(a.deadline_nanos, a.release_nanos + 200_000_000);
        assert!(a.capture_nanos <= a.release_nanos && a.release_nanos <= a.started_nanos);
        assert_eq!(a.trace_id.len(), 32, "{}", a.trace_id);
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
        assert_eq!(tokens, 5, "every token streams as it comes");
        let Update::Finished(a) = last else {
            panic!("{last:?}")
        };
        let Reply::Text { text, tokens, .. } = a.reply else {
            panic!("{:?}", a.reply)
        };
        assert_eq!(text, TOKEN.repeat(5));
        assert_eq!(tokens, 5);
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
        assert_eq!(a.reply, Reply::Transcript(TRANSCRIPT.into()));
        // Due in 1 ms, a frame that costs tens of ms cannot be on time: shed, not run late.
        rt.add_stream("rushed", StreamTerms::new(1.0, 0.5))
            .expect("stream");
        let now = rt.now_nanos();
        let u = rt
            .frame("rushed", now, blank_frame())
            .expect("submitted")
            .wait();
        assert!(matches!(u, Update::Shed(ShedReason::Overload)), "{u:?}");
    }

    #[test]
    fn concurrent_prompts_each_get_their_own_answer_and_the_summary_counts_them() {
        let rt = runtime_with(4);
        let tickets: Vec<Ticket> = (0..4)
            .map(|i| {
                rt.prompt("chat", &format!("prompt {i}"), 3 + i)
                    .expect("submitted")
            })
            .collect();
        let answers: Vec<u32> = tickets
            .into_iter()
            .map(|t| match t.wait() {
                Update::Finished(a) => match a.reply {
                    Reply::Text { tokens, .. } => tokens,
                    other => panic!("{other:?}"),
                },
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(answers, vec![3, 4, 5, 6]);
        let outcome = rt.finish().expect("finished");
        let llm = &outcome.summary.llm.modality;
        assert_eq!(llm.offered, 4);
        assert_eq!(llm.on_time, 4);
        assert_eq!(llm.origin["api"].offered, 4);
        assert_eq!(llm.origin["api"].accounted(), 4);
        assert!(!llm.origin.contains_key("streams"));
        assert_eq!(outcome.summary.llm.tokens, 18);
    }

    #[test]
    fn a_dropped_ticket_cancels_its_answer_and_frees_its_session() {
        let rt = runtime_with(1);
        let mut long = rt
            .prompt("chat", "a long answer", 10_000)
            .expect("submitted");
        assert!(matches!(long.next_update(), Some(Update::Token(_))));
        drop(long);
        // With one session, the next request runs only once the first has let it go.
        let next = rt.prompt("chat", "next", 2).expect("submitted").wait();
        assert!(matches!(next, Update::Finished(_)), "{next:?}");
        let outcome = rt.finish().expect("finished");
        let api = outcome.summary.llm.modality.origin["api"];
        assert_eq!((api.offered, api.on_time, api.unfinished), (2, 1, 1));
    }

    #[test]
    fn bad_calls_say_what_to_fix() {
        let mut rt = runtime();
        let e = rt.frame("nope", 0, blank_frame()).expect_err("unknown");
        assert!(e.to_string().contains("add it first"), "{e}");
        let e = rt
            .add_stream("x", StreamTerms::new(0.0, 0.5))
            .expect_err("sla");
        assert!(e.to_string().contains("sla_ms"), "{e}");
        let e = rt
            .add_stream("x", StreamTerms::new(10.0, 2.0))
            .expect_err("importance");
        assert!(e.to_string().contains("importance"), "{e}");
        let e = rt
            .model(
                "cam",
                "no-such-model",
                0,
                mmsched_backends::onnx::OnnxInput::Image(blank_frame()),
            )
            .expect_err("unknown model");
        assert!(e.to_string().contains("load_user_model"), "{e}");
    }
}
