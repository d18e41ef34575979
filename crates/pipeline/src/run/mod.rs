//! The main loop of `mmsched run`: sources → ingest → router → scheduler → models, with
//! the health loop acting on what it measures. One thread runs this loop; models run on
//! the executor's worker threads.
//!
//! Each pass: new policy (hot reload) → everything the sources delivered by now → played
//! audio into VAD chunks → the next speech-recognition and text-generation steps → what
//! the workers finished → the health evaluation when due → samples for the report. Then it
//! sleeps until the next source event, health tick or finished step.
//!
//! Releases and deadlines: a frame is released when it arrives, a VAD chunk when its last
//! sample is played, an utterance when the speech gate closes it, a text request when it
//! arrives. Deadline = release + the stream's `sla_ms`; for speech recognition, plus the
//! utterance's own length, at least 2 s (a transcript is due within the time it took to
//! say it; Whisper reads fixed 30 s windows, so short utterances cost nearly as much); all
//! steps of a text request share the request's deadline.
//!
//! Files: `sources.rs` takes in what the sources delivered, `monitor.rs` does the timed
//! work (health evaluation and actions, report samples), `observer.rs` is how a run
//! reports as it goes; this file holds the loop, job completion and the set-up.

mod monitor;
mod observer;
mod results;
mod sources;

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::time::Duration;

use mmsched_core::Modality;
use mmsched_core::align::AlignConfig;
use mmsched_core::arbiter::ClassId;
use mmsched_core::scheduler::LogEntry;
use mmsched_core::time::{Clock, Nanos};
use mmsched_report::{HealthActionRecord, RunSeries};
use mmsched_runtime::ingest::StreamIngest;
use mmsched_runtime::router::image::ImageRouter;
use mmsched_runtime::sched::cost::CostModel;
use mmsched_runtime::sched::{
    ExecEvent, Executor, SchedulerKind, StepOutcome, Task, TaskInfo, Work,
};
use mmsched_runtime::source::Source;
use mmsched_runtime::source::delivery::{Arrival, Delivered};
use mmsched_trace::record::stage;

use crate::audio::AudioPath;
use crate::config::{RunConfig, RunError};
use crate::engines::Engines;
use crate::health::{HealthMonitor, Remedies};
use crate::inputs::{Device, Inputs};
use crate::jobs::{self, Output};
use crate::load::{LoadGenerator, LoadProfile};
use crate::nack::Nacks;
use crate::platform;
use crate::stats::{DropAction, Kind, RunStats};
use crate::summary::{self, Totals};
use crate::trace_out::{JobSpan, TraceOut};

pub use observer::{Observer, Progress, Quiet};

/// Sliding window of the health loop's P99 and throughput.
const HEALTH_WINDOW_NANOS: Nanos = 2_000_000_000;
/// Time between report samples (occupancy, rates).
const SAMPLE_NANOS: Nanos = 100_000_000;
/// Time between progress reports.
const PROGRESS_NANOS: Nanos = 1_000_000_000;
/// Lead time before the first sensor event (workers start, models warm).
const START_LEAD_NANOS: Nanos = 200_000_000;
/// Longest wait for jobs in flight after the inputs stop.
const DRAIN_NANOS: Nanos = 20_000_000_000;
/// Shortest time budget of a transcript: Whisper reads 30 s windows, so a short utterance
/// costs nearly what a long one does.
pub(crate) const ASR_MIN_BUDGET_NANOS: Nanos = 2_000_000_000;
/// How long a measured job cost is trusted for prediction.
const COST_MAX_AGE_NANOS: Nanos = 10_000_000_000;
/// How long a deferred text-generation step waits before it competes again.
const LLM_RETRY_NANOS: Nanos = 20_000_000;
/// Longest sleep of the loop: it also watches for Ctrl-C and policy updates.
const MAX_SLEEP: Duration = Duration::from_millis(5);

/// What a run produced.
#[derive(Debug)]
pub struct RunOutcome {
    /// The summary (`summary.json`).
    pub summary: mmsched_report::RunSummary,
    /// Time series for the report's plots.
    pub series: RunSeries,
    /// Every call on the mmsched scheduling core, if recording was asked for (replay it
    /// with `mmsched_sim::replay`).
    pub step_log: Vec<LogEntry>,
    /// The trace file written, if any.
    pub trace_file: Option<std::path::PathBuf>,
}

#[derive(Debug, Clone, Copy)]
struct JobRec {
    kind: Kind,
    /// When its input was captured (for results).
    capture: Nanos,
    release: Nanos,
    deadline: Nanos,
    /// VAD: the chunk number.
    chunk: u64,
}

#[derive(Debug)]
struct LlmRequest {
    arrival: Nanos,
    first_token_at: Option<Nanos>,
    last_token_at: Option<Nanos>,
    /// The answer so far (for results).
    answer: String,
    tokens: u32,
}

struct Classes {
    vision: ClassId,
    vad: ClassId,
    asr: ClassId,
    llm: ClassId,
}

/// The state of one run.
struct Run<'o> {
    config: RunConfig,
    clock: Device,
    start: Nanos,
    end: Nanos,
    engines: Engines,
    exec: Box<dyn Executor>,
    classes: Classes,
    inputs: Inputs,
    outputs_tx: Sender<Output>,
    outputs_rx: Receiver<Output>,
    outputs: HashMap<u64, Output>,
    jobs: HashMap<u64, JobRec>,
    next_tag: u64,
    cost: CostModel,
    router: ImageRouter,
    audio: Option<AudioPath>,
    ingest: Vec<(String, StreamIngest)>,
    /// Utterances waiting: release, deadline, start of speech, samples.
    asr_queue: VecDeque<(Nanos, Nanos, Nanos, Vec<f32>)>,
    asr_busy: bool,
    llm_queue: VecDeque<(Nanos, String, u32)>,
    llm: Option<LlmRequest>,
    llm_tokens: u64,
    llm_ttft: Vec<f64>,
    llm_tpot: Vec<f64>,
    llm_request_nanos: u64,
    last_transcript: Option<String>,
    last_ocr: Option<String>,
    stale_answers: u64,
    breaker_opened: u64,
    camera_scaled_nanos: u64,
    nacks: Nacks,
    health: HealthMonitor,
    stats: RunStats,
    series: RunSeries,
    actions: Vec<HealthActionRecord>,
    trace: TraceOut,
    overhead_nanos: u64,
    next_sample: Nanos,
    next_progress: Nanos,
    recent_done: VecDeque<(Nanos, Kind)>,
    observer: &'o mut dyn Observer,
    events: Vec<ExecEvent>,
    last_health: Nanos,
    pressure_pct: Vec<f64>,
    warm: std::collections::HashSet<(ClassId, usize)>,
    /// A shed step of the text request under way, waiting to compete again: its tag,
    /// record, work and when it retries.
    deferred: Option<(u64, JobRec, Box<dyn Work>, Nanos)>,
    /// The camera's standing reservation: predicted frame cost it was booked with, and
    /// whether at the halved rate.
    camera_booking: Option<(Nanos, bool)>,
    #[cfg(target_os = "linux")]
    power: Option<mmsched_runtime::platform::power::LinuxPower<Device>>,
    power_calls: u64,
    power_over_budget: u64,
    /// Jobs from outside the run (see [`crate::config::External`]): their inbox and book.
    external: Option<(
        Receiver<crate::service::Submission>,
        crate::service::ExternalJobs,
    )>,
}

impl Run<'_> {
    /// Whether the run is mmsched's with the mechanism `on` says is on.
    fn mmsched_has(&self, on: impl Fn(&crate::config::Mechanisms) -> bool) -> bool {
        self.config.scheduler == SchedulerKind::Mmsched && on(&self.config.mechanisms)
    }

    /// The remedies in force: the health loop's with mmsched; none with a baseline, which
    /// measures the LDTI but has nothing that acts on it (nor with the actions ablated).
    fn remedies(&self) -> Remedies {
        if self.mmsched_has(|m| m.health_actions) {
            self.health.remedies()
        } else {
            Remedies::default()
        }
    }

    fn t_s(&self, at: Nanos) -> f64 {
        at.saturating_sub(self.start) as f64 / 1e9
    }

    fn class(&self, kind: Kind) -> ClassId {
        match kind {
            Kind::Vision => self.classes.vision,
            Kind::Vad => self.classes.vad,
            Kind::Asr => self.classes.asr,
            Kind::Llm => self.classes.llm,
        }
    }

    fn modality(kind: Kind) -> Modality {
        match kind {
            Kind::Vision => Modality::Image,
            Kind::Vad | Kind::Asr => Modality::Audio,
            Kind::Llm => Modality::Text,
        }
    }

    fn importance(&self, kind: Kind) -> f64 {
        self.inputs.stream(kind).map_or(0.5, |s| s.importance)
    }

    /// The SLA of jobs of `kind`: their deadline after release.
    fn sla_nanos(&self, kind: Kind) -> Nanos {
        self.inputs
            .stream(kind)
            .map_or(0, |s| (s.sla_ms * 1e6) as Nanos)
    }

    /// Submits a new job (or the next step of one, `tag` reused).
    fn submit(&mut self, now: Nanos, tag: u64, rec: JobRec, work: Box<dyn Work>) {
        let info = TaskInfo {
            class: self.class(rec.kind),
            modality: Self::modality(rec.kind),
            deadline_nanos: rec.deadline,
            predicted_cost_nanos: self.cost.predict(self.class(rec.kind), now),
            importance: self.importance(rec.kind),
            tag,
        };
        self.jobs.insert(tag, rec);
        let t0 = ThreadCpu::now();
        self.exec.submit(now, Task { info, work });
        self.overhead_nanos += t0.elapsed_nanos();
    }

    fn new_tag(&mut self) -> u64 {
        self.next_tag += 1;
        self.next_tag
    }

    /// Places an arrived event on the device timeline (and checks the placement against
    /// the event's true capture time).
    fn place<P>(&mut self, stream: &str, a: &Arrival<P>) -> Nanos {
        let Some((_, ingest)) = self.ingest.iter_mut().find(|(n, _)| n == stream) else {
            return a.arrival_nanos;
        };
        // Alignment is the runtime's own work: it counts as scheduler overhead.
        let t0 = ThreadCpu::now();
        let placed = ingest.place(a.event.stamp_nanos, a.arrival_nanos);
        // A live source's capture time is an estimate, not ground truth to check against.
        if a.event.received_nanos.is_none() {
            ingest.record_truth(placed, a.event.capture_device_nanos);
        }
        self.overhead_nanos += t0.elapsed_nanos();
        placed.device_nanos
    }

    fn heaviest_branch(&self) -> Kind {
        let mean = |k: Kind| {
            let l = &self.stats.kind(k).latencies_ms;
            if l.is_empty() {
                0.0
            } else {
                l.iter().sum::<f64>() / l.len() as f64
            }
        };
        use mmsched_core::health::{Branch, heaviest_branch};
        match heaviest_branch(
            mean(Kind::Vision),
            mean(Kind::Asr),
            self.engines.asr.is_some(),
        ) {
            Branch::Speech => Kind::Asr,
            Branch::Vision => Kind::Vision,
        }
    }

    /// An input of `kind` a health action kept from its model.
    fn drop_input(&mut self, kind: Kind, at: Nanos, by: DropAction) {
        self.stats.dropped(kind, by);
        self.observer.skip(kind.as_str());
        self.trace.instant(
            stage::DROP,
            kind.as_str(),
            at,
            Some(Self::modality(kind)),
            by.as_str(),
        );
    }

    fn skip(&mut self, kind: Kind, at: Nanos, reason: &str) {
        self.stats.skipped(kind);
        self.observer.skip(kind.as_str());
        self.trace.instant(
            stage::SKIP,
            kind.as_str(),
            at,
            Some(Self::modality(kind)),
            reason,
        );
    }

    fn start_asr_and_llm(&mut self, now: Nanos) {
        if !self.asr_busy
            && let Some((release, deadline, capture, samples)) = self.asr_queue.pop_front()
        {
            if self.remedies().breaker_open && self.heaviest_branch() == Kind::Asr {
                self.answer_from_cache(Kind::Asr, now);
            } else if let Some(asr) = self.engines.asr.clone() {
                let tag = self.new_tag();
                self.stats.job(Kind::Asr);
                let work = jobs::asr(asr, samples, tag, self.outputs_tx.clone());
                self.asr_busy = true;
                self.submit(
                    now,
                    tag,
                    JobRec {
                        kind: Kind::Asr,
                        capture,
                        release,
                        deadline,
                        chunk: 0,
                    },
                    work,
                );
            }
        }
        if self.llm.is_none()
            && let Some((arrival, prompt, max_tokens)) = self.llm_queue.pop_front()
            && let Some(llm) = self.engines.llm.clone()
        {
            let sla = self.sla_nanos(Kind::Llm);
            let tag = self.new_tag();
            self.stats.job(Kind::Llm);
            let preemptible = self.mmsched_has(|m| m.token_preemption)
                || self.config.scheduler != SchedulerKind::Mmsched;
            let work = jobs::llm(
                llm,
                prompt,
                max_tokens,
                preemptible,
                tag,
                self.outputs_tx.clone(),
            );
            self.llm = Some(LlmRequest {
                arrival,
                first_token_at: None,
                last_token_at: None,
                answer: String::new(),
                tokens: 0,
            });
            self.submit(
                now,
                tag,
                JobRec {
                    kind: Kind::Llm,
                    capture: arrival,
                    release: arrival,
                    deadline: arrival + sla,
                    chunk: 0,
                },
                work,
            );
        }
    }

    fn on_utterances(
        &mut self,
        now: Nanos,
        utterances: Vec<mmsched_runtime::router::speech::Utterance>,
    ) {
        let sla = self.sla_nanos(Kind::Asr);
        if self.engines.asr.is_none() {
            return;
        }
        for u in utterances {
            self.stats.offered(Kind::Asr);
            let length = u
                .end_nanos
                .saturating_sub(u.start_nanos)
                .max(ASR_MIN_BUDGET_NANOS);
            self.asr_queue
                .push_back((now, now + sla + length, u.start_nanos, u.samples));
        }
    }

    fn handle_events(&mut self, now: Nanos, accepting: bool) {
        let t0 = ThreadCpu::now();
        self.exec.poll(now, &mut self.events);
        self.overhead_nanos += t0.elapsed_nanos();
        self.outputs
            .extend(self.outputs_rx.try_iter().map(|o| (tag_of(&o), o)));
        for ev in std::mem::take(&mut self.events) {
            let ev = match &mut self.external {
                Some((_, ext)) => match ext.on_event(&mut *self.exec, now, ev) {
                    Some(ev) => ev,
                    None => continue,
                },
                None => ev,
            };
            match ev {
                ExecEvent::Done {
                    info,
                    worker,
                    outcome,
                    work,
                    started_nanos,
                    ended_nanos,
                    job,
                } => {
                    let Some(rec) = self.jobs.remove(&info.tag) else {
                        continue;
                    };
                    let output = self.outputs.remove(&info.tag);
                    // A model's first job on a worker thread pays for that thread's
                    // first touch of the model's memory: not a cost to predict from.
                    if !self.warm.insert((info.class, worker)) {
                        self.cost.record(
                            info.class,
                            ended_nanos.saturating_sub(started_nanos),
                            ended_nanos,
                        );
                    }
                    let track = format!("worker-{worker}");
                    let stage_name = match (&rec.kind, &output) {
                        (Kind::Llm, Some(Output::Llm { token: None, .. })) => stage::PREFILL,
                        (Kind::Llm, _) => stage::DECODE,
                        _ => stage::EXEC,
                    };
                    let trace_id = self.trace.job(JobSpan {
                        job: job.0,
                        modality: info.modality,
                        model: rec.kind.as_str(),
                        track: &track,
                        release_nanos: rec.release.min(started_nanos),
                        start_nanos: started_nanos,
                        end_nanos: ended_nanos,
                        deadline_nanos: rec.deadline,
                        stage: stage_name,
                    });
                    match outcome {
                        Ok(StepOutcome::Yield) if rec.kind == Kind::Llm => {
                            self.on_llm_step(started_nanos, ended_nanos, output.as_ref());
                            if accepting {
                                // The next token competes again with the same deadline.
                                self.submit(now, info.tag, rec, work);
                            } else {
                                // The run is over: the request stays unfinished.
                                self.stats.unfinished(Kind::Llm, 1);
                                self.close_request();
                            }
                        }
                        Ok(_) => {
                            self.on_finished(now, rec, started_nanos, ended_nanos, output, trace_id)
                        }
                        Err(_) => {
                            self.stats.failed(rec.kind, now);
                            self.release_branch(rec, now);
                        }
                    }
                }
                ExecEvent::Shed {
                    info,
                    work: Some(work),
                    ..
                } if rec_is_deferrable(self.jobs.get(&info.tag), now, accepting) => {
                    // A step of a text request: shedding it would drop the whole request and
                    // the tokens it already has. It waits instead and competes again every
                    // retry while its deadline allows; past it, it counts as shed.
                    if let Some(rec) = self.jobs.remove(&info.tag) {
                        self.deferred = Some((info.tag, rec, work, now + LLM_RETRY_NANOS));
                    }
                }
                ExecEvent::Shed { info, .. } | ExecEvent::Pruned { info, .. } => {
                    let Some(rec) = self.jobs.remove(&info.tag) else {
                        continue;
                    };
                    self.outputs.remove(&info.tag);
                    self.stats.shed(rec.kind, now);
                    self.observer.shed(rec.kind.as_str());
                    self.trace.instant(
                        stage::SHED,
                        rec.kind.as_str(),
                        now,
                        Some(info.modality),
                        "overload",
                    );
                    self.release_branch(rec, now);
                }
            }
        }
    }

    /// A job that will not finish frees its branch (the next utterance or request).
    fn release_branch(&mut self, rec: JobRec, now: Nanos) {
        match rec.kind {
            Kind::Asr => self.asr_busy = false,
            Kind::Llm => self.close_request(),
            Kind::Vad => {
                if let Some(a) = &mut self.audio {
                    let u = a.on_vad(rec.chunk, 0.0);
                    self.report_segments(&rec, now, None, &u);
                    self.on_utterances(now, u);
                }
            }
            Kind::Vision => {}
        }
    }

    /// A text-generation step that ran from `started` to `ended` produced `output`.
    fn on_llm_step(&mut self, started: Nanos, ended: Nanos, output: Option<&Output>) {
        let (
            Some(r),
            Some(Output::Llm {
                token,
                tokens,
                first_token_after_nanos,
                ..
            }),
        ) = (&mut self.llm, output)
        else {
            return;
        };
        if *tokens > 0 {
            self.llm_tokens += u64::from(*tokens);
            r.tokens += tokens;
            r.last_token_at = Some(ended);
            r.first_token_at
                .get_or_insert(started + first_token_after_nanos);
            if let Some(t) = token {
                r.answer.push_str(t);
            }
        }
    }

    /// Ends the request in flight (finished, shed, failed or cut by the end of the run):
    /// its time to first token, its time per output token as the user saw it (first to
    /// last token over the tokens after the first, preemption included), and the time from
    /// its arrival to its last token for `tokens_per_s`.
    fn close_request(&mut self) {
        let Some(r) = self.llm.take() else { return };
        if let Some(first) = r.first_token_at {
            self.llm_ttft
                .push(first.saturating_sub(r.arrival) as f64 / 1e6);
        }
        if let (Some(first), Some(last)) = (r.first_token_at, r.last_token_at)
            && r.tokens > 1
        {
            let per_token = last.saturating_sub(first) as f64 / f64::from(r.tokens - 1);
            self.llm_tpot.push(per_token / 1e6);
        }
        if let Some(last) = r.last_token_at {
            self.llm_request_nanos += last.saturating_sub(r.arrival);
        }
    }

    /// Submits the deferred text-generation step again when its retry is due, or counts
    /// it shed once its deadline has passed.
    fn retry_deferred(&mut self, now: Nanos) {
        let Some((tag, rec, work, at)) = self.deferred.take() else {
            return;
        };
        if now >= rec.deadline {
            self.stats.shed(rec.kind, now);
            self.observer.shed(rec.kind.as_str());
            self.release_branch(rec, now);
        } else if now >= at {
            self.submit(now, tag, rec, work);
        } else {
            self.deferred = Some((tag, rec, work, at));
        }
    }

    /// After the drain: every input still waiting or running is unfinished.
    fn count_unfinished(&mut self) {
        if let Some((_, rec, _, _)) = self.deferred.take() {
            self.stats.unfinished(rec.kind, 1);
        }
        let running: Vec<Kind> = self.jobs.values().map(|r| r.kind).collect();
        for kind in running {
            self.stats.unfinished(kind, 1);
        }
        self.stats
            .unfinished(Kind::Asr, self.asr_queue.len() as u64);
        self.stats
            .unfinished(Kind::Llm, self.llm_queue.len() as u64);
    }

    fn on_finished(
        &mut self,
        now: Nanos,
        rec: JobRec,
        started: Nanos,
        end: Nanos,
        output: Option<Output>,
        trace_id: mmsched_trace::ids::TraceId,
    ) {
        if rec.kind == Kind::Llm {
            self.on_llm_step(started, end, output.as_ref());
        }
        self.report_result(&rec, end, output.as_ref(), trace_id);
        match rec.kind {
            Kind::Llm => self.close_request(),
            Kind::Asr => {
                self.asr_busy = false;
                if let Some(Output::Asr { text, .. }) = output
                    && !text.is_empty()
                {
                    self.last_transcript = Some(text);
                }
            }
            Kind::Vad => {
                let prob = match output {
                    Some(Output::Vad { prob, .. }) => prob,
                    _ => 0.0,
                };
                if let Some(a) = &mut self.audio {
                    let u = a.on_vad(rec.chunk, prob);
                    self.report_segments(&rec, end, Some(trace_id), &u);
                    self.on_utterances(now, u);
                }
            }
            Kind::Vision => {
                if let Some(Output::Vision { text, .. }) = output
                    && !text.is_empty()
                {
                    self.last_ocr = Some(text);
                }
            }
        }
        let missed = self
            .stats
            .completed(rec.kind, rec.release, rec.deadline, end);
        let latency_ms = end.saturating_sub(rec.release) as f64 / 1e6;
        self.series.record_latency(rec.kind.as_str(), latency_ms);
        if missed {
            self.series
                .record_miss(self.t_s(end), rec.kind.as_str(), latency_ms);
        }
        self.observer.job(rec.kind.as_str(), latency_ms, missed);
        self.recent_done.push_back((end, rec.kind));
    }

    fn rates(&self) -> [f64; 4] {
        Kind::ALL.map(|k| self.recent_done.iter().filter(|(_, d)| *d == k).count() as f64)
    }

    fn apply_policy_updates(&mut self, now: Nanos) {
        let latest = self
            .config
            .policy_updates
            .as_ref()
            .and_then(|rx| rx.try_iter().last());
        if let Some(p) = latest {
            if let Some(m) = self.exec.mmsched() {
                m.set_policy(&p);
            }
            self.router.set_policy(&p);
            self.health.set_policy(&p);
            if let Some(a) = &mut self.audio {
                a.set_policy(&p);
            }
            self.trace
                .instant(stage::POLICY_CHANGE, "health", now, None, p.name());
            self.observer
                .status(&format!("policy {} applied", p.name()));
            self.config.policy = p;
        }
    }

    /// Submits the jobs waiting in the external inbox (tags from the run's own counter),
    /// and the deferred steps of external jobs whose retry is due.
    fn take_external(&mut self, now: Nanos) {
        let Some((inbox, _)) = &self.external else {
            return;
        };
        let waiting: Vec<_> = inbox.try_iter().collect();
        for s in waiting {
            let tag = self.new_tag();
            if let Some((_, ext)) = &mut self.external {
                ext.submit(&mut *self.exec, now, tag, s);
            }
        }
        if let Some((_, ext)) = &mut self.external {
            ext.retry_deferred(&mut *self.exec, now);
        }
    }

    fn main_loop(&mut self) {
        loop {
            let now = self.clock.now_nanos();
            if now >= self.end || self.config.stop.load(Ordering::Relaxed) {
                break;
            }
            self.apply_policy_updates(now);
            self.take_external(now);
            self.poll_camera(now);
            self.poll_mic(now);
            self.poll_imu_and_text(now);
            self.start_asr_and_llm(now);
            self.retry_deferred(now);
            self.handle_events(now, true);
            self.start_asr_and_llm(now);
            let t0 = ThreadCpu::now();
            self.health_tick(now);
            self.overhead_nanos += t0.elapsed_nanos();
            self.sample(now);
            let next = [
                self.inputs.next_due_nanos(),
                self.audio.as_ref().and_then(AudioPath::next_play_nanos),
                Some(self.health.next_due()),
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
    }

    fn drain(&mut self) {
        let start = self.clock.now_nanos();
        while self.exec.in_flight() > 0 {
            let now = self.clock.now_nanos();
            // An interrupted run waits half as long for its jobs in flight.
            let budget = if self.config.stop.load(Ordering::Relaxed) {
                DRAIN_NANOS / 2
            } else {
                DRAIN_NANOS
            };
            if now >= start + budget {
                break;
            }
            self.handle_events(now, false);
            self.exec.wait(MAX_SLEEP);
        }
    }
}

/// Whether a shed job with this record may wait and compete again: a step of a text
/// request (its request keeps its place) before its deadline, while the run takes work.
fn rec_is_deferrable(rec: Option<&JobRec>, now: Nanos, accepting: bool) -> bool {
    rec.is_some_and(|r| r.kind == Kind::Llm && now < r.deadline) && accepting
}

/// CPU time of the calling thread, for the scheduler's overhead: wall time would also
/// count the moments the main loop waits for a core while the workers compute.
struct ThreadCpu(Option<cpu_time::ThreadTime>);

impl ThreadCpu {
    fn now() -> Self {
        Self(cpu_time::ThreadTime::try_now().ok())
    }

    fn elapsed_nanos(&self) -> u64 {
        self.0
            .as_ref()
            .and_then(|t| t.try_elapsed().ok())
            .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
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

fn tag_of(o: &Output) -> u64 {
    match o {
        Output::Vision { tag, .. }
        | Output::Vad { tag, .. }
        | Output::Asr { tag, .. }
        | Output::Llm { tag, .. }
        | Output::Failed { tag, .. } => *tag,
    }
}

/// Runs `config` to the end, telling `observer` as it goes.
pub fn run(mut config: RunConfig, observer: &mut dyn Observer) -> Result<RunOutcome, RunError> {
    if !config.mechanisms.routing {
        // The router's gates off: every frame goes to the model.
        let mut spec = config.policy.to_spec();
        spec.routing.enabled = Some(false);
        config.policy = mmsched_core::policy::Policy::try_from(spec)
            .map_err(|e| RunError::Scheduler(e.to_string()))?;
    }
    let scenario = config.scenario.clone();
    let workers = scenario.device().workers.unwrap_or(2).max(1) as usize;
    let engines = match config.engines.take() {
        Some(shared) => shared,
        None => {
            let mut engines = Engines::load(&scenario, workers, |m| {
                observer.status(&format!("loading {m}"))
            })?;
            observer.status("warming up the models");
            engines.warm_up()?;
            engines
        }
    };
    let external = config.external.take();
    let mut platform_notes = Vec::new();
    #[cfg(target_os = "linux")]
    let cgroup_set = if config.platform {
        platform::resource_groups(&mut platform_notes, observer)
    } else {
        None
    };
    let clock = external.as_ref().map_or_else(Device::new, |e| e.clock);
    let mut exec = platform::executor(
        config.scheduler,
        &config.policy,
        workers,
        clock,
        config.platform,
        config.record_steps,
        !config.mechanisms.admission,
        #[cfg(target_os = "linux")]
        cgroup_set.as_ref().map(|s| s.handle()),
    )?;
    platform_notes.extend(exec.notes());
    #[cfg(target_os = "linux")]
    if let Some(load) = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_string))
    {
        // Other work on the machine disturbs every figure: say how busy it was.
        platform_notes.push(format!("machine load average (1 min) at the start: {load}"));
    }
    let classes = Classes {
        vision: exec.class(Kind::Vision.as_str()),
        vad: exec.class(Kind::Vad.as_str()),
        asr: exec.class(Kind::Asr.as_str()),
        llm: exec.class(Kind::Llm.as_str()),
    };
    let battery = scenario.battery().charge_pct_at(0.0) / 100.0;
    if let Some(m) = exec.mmsched() {
        m.set_battery(battery);
    }
    let start = clock.now_nanos() + START_LEAD_NANOS;
    let inputs = Inputs::build(&scenario, &clock, start, config.seed)?;
    platform_notes.extend(inputs.notes.iter().cloned());
    for n in &platform_notes {
        observer.status(n);
    }
    let sla_ms = Kind::ALL.map(|k| inputs.stream(k).map_or(f64::NAN, |s| s.sla_ms));
    let mut cost = CostModel::new(64, 3, COST_MAX_AGE_NANOS);
    // Cost priors from the device profile (measured, or the labelled reference) until
    // the run has measured its own costs.
    let profile = config.resolve_profile()?;
    platform_notes.push(format!("cost priors from {}", profile.source));
    for (kind, class) in [
        (Kind::Vision, classes.vision),
        (Kind::Vad, classes.vad),
        (Kind::Asr, classes.asr),
        (Kind::Llm, classes.llm),
    ] {
        if let Ok(l) = profile.latency(kind.as_str()) {
            cost.set_prior(class, (l.p99_ms * 1e6) as Nanos);
        }
    }
    let mut ingest = Vec::new();
    for s in scenario.streams() {
        ingest.push((
            s.name.clone(),
            StreamIngest::new(
                (s.latency_ms.max(0.0) * 1e6) as Nanos,
                AlignConfig::default(),
            ),
        ));
    }
    let audio = inputs.mic.as_ref().map(|(_, s)| {
        AudioPath::new(
            &config.policy,
            s.packet_ms.unwrap_or(20.0).round().clamp(10.0, 60.0) as u32,
        )
    });
    let mut metadata = std::collections::BTreeMap::new();
    metadata.insert("program".into(), serde_json::json!("mmsched run"));
    metadata.insert("scenario".into(), serde_json::json!(scenario.name()));
    metadata.insert(
        "scheduler".into(),
        serde_json::json!(config.scheduler.as_str()),
    );
    // The wall-clock time of the device clock's zero, so exported spans carry real dates.
    let start_unix_nanos = crate::trace_out::unix_nanos_now().saturating_sub(clock.now_nanos());
    let trace = TraceOut::create(
        config.trace_path.as_deref(),
        config.seed,
        start_unix_nanos,
        metadata,
    )?;
    let (outputs_tx, outputs_rx) = channel();
    let load = LoadGenerator::start(LoadProfile::of(&scenario, config.duration_nanos), clock);
    let router = ImageRouter::new(&config.policy);
    let health = HealthMonitor::new(&config.policy);
    let duration = config.duration_nanos;
    #[cfg(target_os = "linux")]
    let power = (config.platform && config.scheduler == SchedulerKind::Mmsched).then(|| {
        use mmsched_runtime::platform::power::{CPU_SYSFS_ROOT, LinuxPower};
        let (p, status) = LinuxPower::new(clock, std::path::Path::new(CPU_SYSFS_ROOT));
        platform_notes.push(format!("power: {status}"));
        p
    });
    let mut r = Run {
        end: start + duration,
        start,
        clock,
        engines,
        exec,
        classes,
        inputs,
        outputs_tx,
        outputs_rx,
        outputs: HashMap::new(),
        jobs: HashMap::new(),
        next_tag: 0,
        cost,
        router,
        audio,
        ingest,
        asr_queue: VecDeque::new(),
        asr_busy: false,
        llm_queue: VecDeque::new(),
        llm: None,
        llm_tokens: 0,
        llm_ttft: Vec::new(),
        llm_tpot: Vec::new(),
        llm_request_nanos: 0,
        last_transcript: None,
        last_ocr: None,
        stale_answers: 0,
        breaker_opened: 0,
        camera_scaled_nanos: 0,
        nacks: Nacks::default(),
        health,
        stats: RunStats::new(HEALTH_WINDOW_NANOS, sla_ms),
        series: RunSeries::default(),
        actions: Vec::new(),
        trace,
        overhead_nanos: 0,
        next_sample: start,
        next_progress: start + PROGRESS_NANOS,
        recent_done: VecDeque::new(),
        observer,
        events: Vec::new(),
        last_health: start,
        pressure_pct: Vec::new(),
        warm: Default::default(),
        camera_booking: None,
        deferred: None,
        #[cfg(target_os = "linux")]
        power,
        power_calls: 0,
        power_over_budget: 0,
        external: external.map(|e| (e.inbox, crate::service::ExternalJobs::default())),
        config,
    };
    r.rebook_camera(start, false);
    r.main_loop();
    let inputs_end = r.clock.now_nanos();
    if let Some(spent) = load.finish() {
        platform_notes.push(format!(
            "background load: {:.0} ms CPU demanded, {:.0} ms burnt",
            spent.demanded_nanos as f64 / 1e6,
            spent.burnt_nanos as f64 / 1e6
        ));
    }
    // Speech still open at the end is not transcribed: the inputs have stopped.
    if let Some(a) = &mut r.audio {
        a.flush();
    }
    r.drain();
    if let Some((_, ext)) = &mut r.external {
        ext.close("the run ended before this request finished");
    }
    r.close_request();
    r.count_unfinished();
    if r.power_calls > 0 {
        // Leave the cores as they were found.
        let now = r.clock.now_nanos();
        r.power_hint(now, 100);
    }
    let elapsed = inputs_end.saturating_sub(r.start);
    if r.exec.worker_side_decisions() {
        platform_notes.push(format!(
            "scheduler: {:.1} ms CPU submitting, collecting, gating, aligning and evaluating health, plus {:.1} ms wall on the workers choosing jobs",
            r.overhead_nanos as f64 / 1e6,
            r.exec.decision_nanos() as f64 / 1e6,
        ));
        r.overhead_nanos += r.exec.decision_nanos();
    } else {
        platform_notes.push(format!(
            "scheduler: {:.1} ms CPU submitting, deciding, collecting, gating, aligning and evaluating health, of which {:.1} ms wall in decisions",
            r.overhead_nanos as f64 / 1e6,
            r.exec.decision_nanos() as f64 / 1e6,
        ));
    }
    if r.power_calls > 0 {
        platform_notes.push(format!(
            "power: {} frequency request(s), {} over the S11 budget",
            r.power_calls, r.power_over_budget
        ));
    }
    if !r.pressure_pct.is_empty() {
        let p = &r.pressure_pct;
        platform_notes.push(format!(
            "CPU pressure (PSI some avg10): mean {:.1} %, max {:.1} %",
            p.iter().sum::<f64>() / p.len() as f64,
            p.iter().copied().fold(0.0, f64::max)
        ));
    }
    let step_log = r
        .exec
        .mmsched()
        .map(|m| m.take_step_log())
        .unwrap_or_default();
    let totals = Totals {
        elapsed_nanos: elapsed,
        importance: Kind::ALL.map(|k| r.importance(k)),
        llm_tokens: r.llm_tokens,
        llm_request_nanos: r.llm_request_nanos,
        llm_ttft_ms: std::mem::take(&mut r.llm_ttft),
        llm_tpot_ms: std::mem::take(&mut r.llm_tpot),
        overhead_nanos: r.overhead_nanos,
        stale_answers: r.stale_answers,
        breaker_opened: r.breaker_opened,
        camera_scaled_nanos: r.camera_scaled_nanos,
        retransmit_requests: r.nacks.requests(),
        recovered: r.nacks.recovered_count(),
        platform: platform_notes,
    };
    let summary = summary::build(
        &r.config,
        &r.stats,
        &r.health,
        &r.router,
        r.audio.as_ref(),
        &r.ingest,
        std::mem::take(&mut r.actions),
        &totals,
    );
    let mut series = std::mem::take(&mut r.series);
    series.thin_ldti(20_000);
    let Run { trace, exec, .. } = r;
    drop(exec);
    #[cfg(target_os = "linux")]
    if let Some(set) = cgroup_set {
        set.cleanup();
    }
    let trace_file = trace.finish()?;
    Ok(RunOutcome {
        summary,
        series,
        step_log,
        trace_file,
    })
}
