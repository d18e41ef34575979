//! The main loop of `mmsched run`: sources → ingest → router → scheduler → models, with
//! the health loop acting on what it measures. One thread runs this loop; models run on
//! the executor's lanes.
//!
//! The loop is the one runtime every client uses: a scenario's streams are polled here, and
//! outside clients (the OpenAI-compatible endpoints, the library, `serve --scenario`) hand
//! their requests to its inbox ([`crate::client::Client`]). Every request of every origin
//! is booked, scheduled, traced and counted by the one book of jobs ([`crate::book`]).
//!
//! Each pass: new policy (hot reload) → outside requests → everything the sources
//! delivered by now → played audio into VAD chunks → retries of shed steps → what the lanes
//! finished (each ended job back to its branch or client) → the health evaluation when due
//! → samples for the report. Then it waits on the executor until the next source event,
//! health tick or finished step — or, with nothing to do and no stream, on the inbox.
//!
//! Releases and deadlines: a frame is released when it arrives, a VAD chunk when its last
//! sample is played, an utterance when the speech gate closes it, a text request when it
//! arrives. Deadline = release + the stream's `sla_ms`; for speech recognition, plus the
//! utterance's own length, at least 2 s (a transcript is due within the time it took to
//! say it; Whisper reads fixed 30 s windows, so short utterances cost nearly as much); a
//! text request's steps are due as the book spreads them ([`crate::book`]).
//!
//! The loop is generic over the device clock and takes its executor and models from
//! outside ([`RunParts`]): [`run`] gives it the OS clock, worker threads and the loaded
//! engines; its tests give it a virtual clock, an executor on virtual lanes and fake
//! models, and run minutes of device time in milliseconds.
//!
//! Files, one job each: `setup.rs` builds a run and its summary; `ended.rs` what an ended
//! job does to its branch; one file per branch — `vision.rs` (camera → gate → OCR, the
//! camera's standing reservation), `speech.rs` (microphone → playout → VAD → Whisper),
//! `text.rs` (requests → the book); `inbox.rs` outside clients' requests; `monitor.rs` the
//! timed work (health evaluation and actions, report samples); `signals.rs` the
//! platform's signals (the neighbours' CPU share, mmsched's own run-queue wait); `results.rs` and
//! `observer.rs` how a run reports as it goes.

mod ended;
mod inbox;
mod monitor;
mod observer;
mod overhead;
mod results;
mod setup;
mod signals;
mod speech;
#[cfg(test)]
mod tests;
mod text;
mod vision;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use mmsched_core::scheduler::LogEntry;
use mmsched_core::time::{Clock, Nanos};
use mmsched_report::RunSeries;

use crate::config::RunError;
use mmsched_runtime::ingest::StreamIngest;
use mmsched_runtime::sched::{Executor, SchedulerKind};
use mmsched_runtime::source::Source;
use mmsched_runtime::source::delivery::{Arrival, Delivered};
use mmsched_trace::record::stage;

use crate::book::{Book, Ctx, Intake, Reply};
use crate::config::RunConfig;
use crate::health::Remedies;
use crate::inputs::Inputs;
use crate::models::Models;
use crate::request::{Origin, Request};
use crate::stats::{DropAction, Kind};

use monitor::Monitor;
use speech::SpeechBranch;
use vision::VisionBranch;

pub use observer::{Evaluation, Observer, Progress, Quiet, Tee};
pub use setup::{RunParts, run, run_with};

/// Sliding window of the health loop's P99 and throughput.
const HEALTH_WINDOW_NANOS: Nanos = 2_000_000_000;
/// Time between report samples (occupancy, rates).
const SAMPLE_NANOS: Nanos = 100_000_000;
/// Time between progress reports.
const PROGRESS_NANOS: Nanos = 1_000_000_000;
/// Lead time before the first sensor event (workers start, models warm).
pub(crate) const START_LEAD_NANOS: Nanos = 200_000_000;
/// Longest wait for jobs in flight after the inputs stop.
const DRAIN_NANOS: Nanos = 20_000_000_000;
/// Shortest time budget of a transcript (shared with the simulator).
pub(crate) use mmsched_world::mic::{ASR_MIN_BUDGET_NANOS, transcript_budget_nanos};
/// Longest wait of the loop: it also watches for Ctrl-C, policy updates and the inbox.
const MAX_SLEEP: Duration = Duration::from_millis(5);

/// What a run produced.
#[derive(Debug)]
pub struct RunOutcome {
    /// The summary (`summary.json`).
    pub summary: mmsched_report::RunSummary,
    /// Time series for the report's plots.
    pub series: RunSeries,
    /// Every call on the mmsched scheduling core, if recording was asked for (replay it
    /// with [`crate::replay`]).
    pub step_log: Vec<LogEntry>,
    /// Every job that ended, in the order they ended (what `bench e2e --bound` reads):
    /// only with [`RunConfig::job_records`], empty otherwise.
    pub jobs: Vec<crate::book::JobRecord>,
    /// The trace file written, if any, or why it could not be written. A trace that fails
    /// (a full disk) does not stop the run or lose its figures: the error comes with them,
    /// for the caller to report after them.
    pub trace_file: Result<Option<std::path::PathBuf>, RunError>,
}

/// The state of one run on device clock `C`.
struct Run<'o, C: Clock> {
    config: RunConfig,
    clock: C,
    /// When the inputs start, and when they stop.
    start: Nanos,
    end: Nanos,
    models: Arc<dyn Models>,
    exec: Box<dyn Executor>,
    inputs: Inputs<C>,
    /// Every request of every origin: booked, traced and counted.
    book: Book,
    /// Clock alignment per stream, by stream name.
    ingest: Vec<(String, StreamIngest)>,
    vision: VisionBranch,
    speech: SpeechBranch,
    /// The health loop, the report's samples and the platform's signals.
    monitor: Monitor<C>,
    /// CPU the loop spent on scheduling work (submitting, deciding, gating, aligning,
    /// evaluating health).
    overhead_nanos: u64,
    /// Which of the loop's spans are timed for the overhead.
    meter: overhead::OverheadMeter,
    observer: &'o mut dyn Observer,
    /// Requests from outside clients (see [`crate::config::External`]).
    inbox: Option<std::sync::mpsc::Receiver<crate::client::Inbound>>,
    /// What setting up the run said about the platform (the summary's notes).
    notes: Vec<String>,
}

impl<C: Clock + Clone + Send + 'static> Run<'_, C> {
    /// Whether the run is mmsched's with the mechanism `on` says is on.
    fn mmsched_has(&self, on: impl Fn(&crate::config::Mechanisms) -> bool) -> bool {
        self.config.scheduler == SchedulerKind::Mmsched && on(&self.config.mechanisms)
    }

    /// The remedies in force: the health loop's with mmsched; none with a baseline, which
    /// measures the LDTI but has nothing that acts on it (nor with the actions ablated).
    fn remedies(&self) -> Remedies {
        if self.mmsched_has(|m| m.health_actions) {
            self.monitor.health.remedies()
        } else {
            Remedies::default()
        }
    }

    /// The importance of `kind`'s jobs for the summary's utility: the stream's, else the
    /// policy's for the class (outside clients' requests).
    fn importance(&self, kind: Kind) -> f64 {
        self.inputs.stream(kind).map_or_else(
            || self.config.policy.importance(kind.as_str()),
            |s| s.importance,
        )
    }

    fn t_s(&self, at: Nanos) -> f64 {
        at.saturating_sub(self.start) as f64 / 1e9
    }

    /// The SLA of a stream's jobs of `kind`: their deadline after release.
    fn sla_nanos(&self, kind: Kind) -> Nanos {
        self.inputs
            .stream(kind)
            .map_or(0, |s| (s.sla_ms * 1e6) as Nanos)
    }

    /// A request of the scenario's `kind` stream, released at `release`, due `extra`
    /// after the stream's SLA, with the stream's importance; its result comes back to the
    /// loop.
    fn stream_request(
        &self,
        input: crate::request::Input,
        capture: Nanos,
        release: Nanos,
        deadline: Nanos,
    ) -> Request {
        let kind = input.kind();
        let stream = self.inputs.stream(kind);
        let mut r = Request::new(
            input,
            Origin::Streams,
            stream.map(|s| s.name.clone()).unwrap_or_default(),
            release,
            deadline,
        );
        r.capture_nanos = capture;
        r.importance = Some(stream.map_or(0.5, |s| s.importance));
        r
    }

    /// Books a stream's request (already offered).
    fn submit(&mut self, now: Nanos, req: Request, reply: Reply) {
        let t0 = self.meter.start();
        let mut cx = Ctx {
            exec: &mut *self.exec,
            models: &*self.models,
            observer: &mut *self.observer,
        };
        self.book.submit(&mut cx, now, req, reply);
        self.overhead_nanos += t0.elapsed_nanos();
    }

    /// Places an arrived event on the device timeline (and checks the placement against
    /// the event's true capture time).
    fn place<P>(&mut self, stream: &str, a: &Arrival<P>) -> Nanos {
        let Some((_, ingest)) = self.ingest.iter_mut().find(|(n, _)| n == stream) else {
            return a.arrival_nanos;
        };
        // Alignment is the runtime's own work: it counts as scheduler overhead.
        let t0 = self.meter.start();
        let placed = ingest.place(a.event.stamp_nanos, a.arrival_nanos);
        // A live source's capture time is an estimate, not ground truth to check against.
        if a.event.received_nanos.is_none() {
            ingest.record_truth(placed, a.event.capture_device_nanos);
        }
        self.overhead_nanos += t0.elapsed_nanos();
        placed.device_nanos
    }

    /// The branch the circuit breaker cuts: the one with the higher mean latency.
    fn heaviest_branch(&self) -> Kind {
        let mean = |k: Kind| self.book.stats.kind(k).latencies_ms.mean().unwrap_or(0.0);
        use mmsched_core::health::{Branch, heaviest_branch};
        match heaviest_branch(
            mean(Kind::Vision),
            mean(Kind::Asr),
            self.models.has(Kind::Asr),
        ) {
            Branch::Speech => Kind::Asr,
            Branch::Vision => Kind::Vision,
        }
    }

    /// An input of `kind` a health action kept from its model.
    fn drop_input(&mut self, kind: Kind, at: Nanos, by: DropAction, answered: bool) {
        self.book.stats.dropped(kind, by);
        self.observer.skip(kind.as_str());
        self.observer.kept_from_model(kind.as_str(), by, answered);
        self.book.trace.instant(
            stage::DROP,
            kind.as_str(),
            at,
            Some(kind.modality()),
            by.as_str(),
        );
    }

    /// An input of `kind` the router found nothing worth running for.
    fn skip(&mut self, kind: Kind, at: Nanos, reason: &str) {
        self.book.stats.skipped(kind);
        self.observer.skip(kind.as_str());
        self.book.trace.instant(
            stage::SKIP,
            kind.as_str(),
            at,
            Some(kind.modality()),
            reason,
        );
    }

    /// An input of `kind` the circuit breaker keeps from its model: answered from the
    /// result cache, marked stale, where the policy allows and there is an answer.
    fn answer_from_cache(&mut self, kind: Kind, now: Nanos) {
        let cached = match kind {
            Kind::Vision => self.vision.last_ocr.is_some(),
            _ => self.speech.last_transcript.is_some(),
        };
        let answered = self.remedies().use_cache && cached;
        if answered {
            self.monitor.stale_answers += 1;
            self.report_stale(kind, now);
        }
        self.drop_input(kind, now, DropAction::CircuitBreaker, answered);
    }

    fn poll_imu(&mut self) {
        let (name, arrivals) = arrived(&mut self.inputs.imu);
        for a in arrivals {
            self.place(&name, &a);
        }
    }

    fn apply_policy_updates(&mut self, now: Nanos) {
        let latest = self
            .config
            .policy_updates
            .as_ref()
            .and_then(|rx| rx.try_iter().last());
        if let Some(update) = latest {
            let p = update.policy;
            if let Some(m) = self.exec.mmsched() {
                m.set_policy(&p);
            }
            self.book.set_policy(&p);
            self.vision.router.set_policy(&p);
            self.monitor.health.set_policy(&p);
            if let Some(a) = &mut self.speech.audio {
                a.set_policy(&p);
            }
            let what = match &update.etag {
                Some(etag) => format!("{} {etag}", p.name()),
                None => p.name().to_string(),
            };
            self.book
                .trace
                .instant(stage::POLICY_CHANGE, "health", now, None, &what);
            self.observer.status(&format!("policy {what} applied"));
            self.observer.policy_applied(update.etag.as_deref());
            self.config.policy = p;
        }
    }

    /// What the lanes finished: each ended job goes back to its branch (streams) and into
    /// the loop's samples (all).
    fn handle_events(&mut self, now: Nanos, intake: Intake) {
        let t0 = self.meter.start();
        let mut cx = Ctx {
            exec: &mut *self.exec,
            models: &*self.models,
            observer: &mut *self.observer,
        };
        let mut ended = self.book.handle_events(&mut cx, now, intake);
        if intake == Intake::Open {
            self.book.retry_deferred(&mut cx, now, &mut ended);
        }
        self.overhead_nanos += t0.elapsed_nanos();
        for e in ended {
            self.on_ended(now, e);
        }
    }

    fn main_loop(&mut self) {
        loop {
            let now = self.clock.now_nanos();
            if now >= self.end || self.config.stop.load(Ordering::Relaxed) {
                break;
            }
            self.book.stats.tick(now);
            self.apply_policy_updates(now);
            self.take_inbox(now);
            self.poll_camera(now);
            self.poll_mic(now);
            self.poll_imu();
            self.poll_text(now);
            self.handle_events(now, Intake::Open);
            let t0 = self.meter.start();
            self.health_tick(now);
            self.overhead_nanos += t0.elapsed_nanos();
            self.sample(now);
            self.report_if_due(now);
            self.wait(now);
        }
    }

    /// Waits until the next source event, health tick or finished step. With outside
    /// clients, no stream and nothing booked, it waits on the inbox instead: on a virtual
    /// clock the device's time then stands still until a client asks for something.
    fn wait(&mut self, now: Nanos) {
        let next_input = self.inputs.next_due_nanos();
        let idle = next_input.is_none() && self.book.pending() == 0 && self.exec.in_flight() == 0;
        if idle && let Some(inbox) = &self.inbox {
            match inbox.recv_timeout(MAX_SLEEP) {
                Ok(m) => {
                    let now = self.clock.now_nanos();
                    self.accept(now, m);
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => self.inbox = None,
            }
            return;
        }
        let next = [
            next_input,
            self.speech.next_play_nanos(),
            Some(self.monitor.health.next_due()),
            Some(self.end),
        ]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(now);
        let now = self.clock.now_nanos();
        if next > now {
            let wait = Duration::from_nanos(next - now).min(MAX_SLEEP);
            self.exec.wait(wait);
        }
    }

    /// After the inputs stop: collects the jobs in flight until none is left or the
    /// drain's budget is spent.
    fn drain(&mut self) {
        let start = self.clock.now_nanos();
        while self.exec.in_flight() > 0 {
            let now = self.clock.now_nanos();
            // An interrupted run waits half as long for its jobs in flight, and an answer
            // under way stops at its next token.
            let (intake, budget) = if self.config.stop.load(Ordering::Relaxed) {
                (Intake::Interrupted, DRAIN_NANOS / 2)
            } else {
                (Intake::Draining, DRAIN_NANOS)
            };
            if now >= start + budget {
                break;
            }
            self.handle_events(now, intake);
            self.exec.wait(MAX_SLEEP);
        }
    }
}

/// Everything a delivered source has brought by now, with the stream's name.
fn arrived<S: Source, C: Clock>(
    input: &mut Option<(Delivered<S, C>, mmsched_scenario::Stream)>,
) -> (String, Vec<Arrival<S::Payload>>) {
    let Some((d, stream)) = input else {
        return (String::new(), Vec::new());
    };
    let mut out = Vec::new();
    while let Some(a) = d.poll() {
        out.push(a);
    }
    (stream.name.clone(), out)
}
