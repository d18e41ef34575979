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

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::time::Duration;

use mmsched_backends::RgbFrame;
use mmsched_backends::gate;
use mmsched_core::Modality;
use mmsched_core::align::AlignConfig;
use mmsched_core::arbiter::ClassId;
use mmsched_core::ldti::Level;
use mmsched_core::scheduler::LogEntry;
use mmsched_core::time::{Clock, Nanos};
use mmsched_report::{HealthActionRecord, RunSeries};
use mmsched_runtime::ingest::StreamIngest;
use mmsched_runtime::router::SkipReason;
use mmsched_runtime::router::image::{ImageMeasures, ImageRouter};
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
use crate::health::{HealthInputs, HealthMonitor, Remedies};
use crate::inputs::{Device, Inputs};
use crate::jobs::{self, Output};
use crate::load::{LoadGenerator, LoadProfile};
use crate::nack::Nacks;
use crate::platform;
use crate::stats::{Kind, RunStats};
use crate::summary::{self, Totals};
use crate::trace_out::{JobSpan, TraceOut};

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
const ASR_MIN_BUDGET_NANOS: Nanos = 2_000_000_000;
/// How long a measured job cost is trusted for prediction.
const COST_MAX_AGE_NANOS: Nanos = 10_000_000_000;
/// Longest sleep of the loop: it also watches for Ctrl-C and policy updates.
const MAX_SLEEP: Duration = Duration::from_millis(5);

/// What the loop reports as it goes.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// Seconds since the inputs started.
    pub t_s: f64,
    /// Seconds the inputs run for.
    pub duration_s: f64,
    /// Per kind (vision, vad, asr, llm): completed, deadline misses, skipped, shed.
    pub counts: [(u64, u64, u64, u64); 4],
    /// Per kind: completions per second over the last second.
    pub rates_hz: [f64; 4],
    /// Current LDTI and level.
    pub ldti: f64,
    /// Its level.
    pub level: Level,
}

/// Who watches a run: the command line's progress display, the metrics endpoint.
pub trait Observer {
    /// A status line (loading models, platform notes).
    fn status(&mut self, _line: &str) {}
    /// Once a second.
    fn progress(&mut self, _p: &Progress) {}
    /// A job finished (`kind` as in the summary: vision, vad, asr, llm).
    fn job(&mut self, _kind: &str, _latency_ms: f64, _missed: bool) {}
    /// An input was skipped by the router or the health loop.
    fn skip(&mut self, _kind: &str) {}
    /// A job was shed by admission.
    fn shed(&mut self, _kind: &str) {}
    /// A health evaluation.
    fn ldti(&mut self, _value: f64, _level: Level) {}
    /// The resource groups exist: clean them up if the process is interrupted.
    #[cfg(target_os = "linux")]
    fn cgroups(&mut self, _handle: mmsched_runtime::platform::cgroup::CgroupHandle) {}
}

/// An observer that ignores everything.
#[derive(Debug, Default)]
pub struct Quiet;
impl Observer for Quiet {}

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
    decode_nanos: Vec<u64>,
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
    asr_queue: VecDeque<(Nanos, Nanos, Vec<f32>)>,
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
    /// The camera's standing reservation: predicted frame cost it was booked with, and
    /// whether at the halved rate.
    camera_booking: Option<(Nanos, bool)>,
    #[cfg(target_os = "linux")]
    power: Option<mmsched_runtime::platform::power::LinuxPower<Device>>,
    power_calls: u64,
    power_over_budget: u64,
}

impl Run<'_> {
    /// The remedies in force: the health loop's with mmsched; none with a baseline, which
    /// measures the LDTI but has nothing that acts on it.
    fn remedies(&self) -> Remedies {
        if self.config.scheduler == SchedulerKind::Mmsched {
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
        let placed = ingest.place(a.event.stamp_nanos, a.arrival_nanos);
        ingest.record_truth(placed, a.event.capture_device_nanos);
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
        if mean(Kind::Asr) >= mean(Kind::Vision) && self.engines.asr.is_some() {
            Kind::Asr
        } else {
            Kind::Vision
        }
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

    fn poll_camera(&mut self, now: Nanos) {
        let sla = self.sla_nanos(Kind::Vision);
        let (name, arrivals) = arrived(&mut self.inputs.camera);
        for a in arrivals {
            let capture = self.place(&name, &a);
            if self.remedies().camera_scaled && a.event.seq % 2 == 1 {
                // Degraded: half the frame rate (the frequency scaling this device can do).
                continue;
            }
            let f = a.event.payload;
            let Ok(frame) = RgbFrame::new(f.width, f.height, f.rgb) else {
                continue;
            };
            let t0 = self.clock.now_nanos();
            let m = gate::measure(&frame);
            let gate_nanos = self.clock.now_nanos().saturating_sub(t0);
            let route = self.router.route(
                capture,
                ImageMeasures {
                    mean_luma: m.mean_luma,
                    laplacian_var: m.laplacian_var,
                },
                gate_nanos,
            );
            if let Some(reason) = route.skipped {
                let why = match reason {
                    SkipReason::Dark { .. } => "dark",
                    SkipReason::Blurred { .. } => "blurred",
                    SkipReason::Silence { .. } => "silence",
                };
                self.skip(Kind::Vision, now, why);
                continue;
            }
            if self.remedies().breaker_open && self.heaviest_branch() == Kind::Vision {
                self.answer_from_cache(Kind::Vision, now);
                continue;
            }
            let tag = self.new_tag();
            let work = jobs::vision(
                self.engines.ocr.clone(),
                frame,
                tag,
                self.outputs_tx.clone(),
            );
            self.stats.job(Kind::Vision);
            let release = a.arrival_nanos.min(now);
            self.submit(
                now,
                tag,
                JobRec {
                    kind: Kind::Vision,
                    release,
                    deadline: release + sla,
                    chunk: 0,
                },
                work,
            );
        }
    }

    fn answer_from_cache(&mut self, kind: Kind, now: Nanos) {
        let cached = match kind {
            Kind::Vision => self.last_ocr.is_some(),
            _ => self.last_transcript.is_some(),
        };
        if self.remedies().use_cache && cached {
            self.stale_answers += 1;
        }
        self.skip(kind, now, "circuit breaker open");
    }

    fn poll_mic(&mut self, now: Nanos) {
        let sla = self.sla_nanos(Kind::Vad);
        let (name, arrivals) = arrived(&mut self.inputs.mic);
        for a in arrivals {
            self.place(&name, &a);
            let seq = a.event.seq;
            let Some(audio) = &mut self.audio else {
                continue;
            };
            let late_before = audio.counts().late_packets;
            let copy = self.nacks.arrived(seq, a.arrival_nanos);
            let gap = audio.on_packet(seq, a.arrival_nanos, a.event.payload.samples, copy);
            if copy && audio.counts().late_packets == late_before {
                self.nacks.recovered();
            }
            if self.remedies().retransmit
                && let Some((mic, _)) = &mut self.inputs.mic
            {
                for missing in gap {
                    let sent = mic.retransmit(missing);
                    self.nacks.request(missing, now, sent);
                }
            }
        }
        // While requests are on, hold frames long enough for a copy to come back.
        let retransmit = self.remedies().retransmit;
        if let Some(audio) = &mut self.audio {
            let floor = if retransmit {
                self.nacks.playout_floor_nanos(audio.frame_nanos())
            } else {
                0
            };
            audio.set_delay_floor_nanos(floor);
        }
        let chunks = match &mut self.audio {
            Some(audio) => audio.poll(now),
            None => Vec::new(),
        };
        for c in chunks {
            let Some(vad) = self.engines.vad.clone() else {
                continue;
            };
            let tag = self.new_tag();
            self.stats.job(Kind::Vad);
            let work = jobs::vad(vad, c.samples, tag, self.outputs_tx.clone());
            self.submit(
                now,
                tag,
                JobRec {
                    kind: Kind::Vad,
                    release: c.ready_nanos,
                    deadline: c.ready_nanos + sla,
                    chunk: c.index,
                },
                work,
            );
        }
    }

    fn poll_imu_and_text(&mut self, now: Nanos) {
        let (name, arrivals) = arrived(&mut self.inputs.imu);
        for a in arrivals {
            self.place(&name, &a);
        }
        let (name, arrivals) = arrived(&mut self.inputs.text);
        for a in arrivals {
            self.place(&name, &a);
            // Every other request asks about what was just heard, when there is a transcript.
            let prompt = match &self.last_transcript {
                Some(t) if a.event.seq % 2 == 0 => {
                    format!("In one sentence, what is this about: {t}")
                }
                _ => a.event.payload.prompt,
            };
            self.llm_queue.push_back((
                a.arrival_nanos.min(now),
                prompt,
                a.event.payload.max_tokens,
            ));
        }
    }

    fn start_asr_and_llm(&mut self, now: Nanos) {
        if !self.asr_busy
            && let Some((release, deadline, samples)) = self.asr_queue.pop_front()
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
            let work = jobs::llm(llm, prompt, max_tokens, tag, self.outputs_tx.clone());
            self.llm = Some(LlmRequest {
                arrival,
                first_token_at: None,
                last_token_at: None,
                decode_nanos: Vec::new(),
            });
            self.submit(
                now,
                tag,
                JobRec {
                    kind: Kind::Llm,
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
        for u in utterances {
            let length = u
                .end_nanos
                .saturating_sub(u.start_nanos)
                .max(ASR_MIN_BUDGET_NANOS);
            self.asr_queue
                .push_back((now, now + sla + length, u.samples));
        }
    }

    fn handle_events(&mut self, now: Nanos, accepting: bool) {
        let t0 = ThreadCpu::now();
        self.exec.poll(now, &mut self.events);
        self.overhead_nanos += t0.elapsed_nanos();
        self.outputs
            .extend(self.outputs_rx.try_iter().map(|o| (tag_of(&o), o)));
        for ev in std::mem::take(&mut self.events) {
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
                    self.trace.job(JobSpan {
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
                            self.on_llm_step(ended_nanos, output.as_ref());
                            if accepting {
                                // The next token competes again with the same deadline.
                                self.submit(now, info.tag, rec, work);
                            } else {
                                // The run is over: the request stays unfinished.
                                self.close_request();
                            }
                        }
                        Ok(_) => self.on_finished(now, rec, ended_nanos, output),
                        Err(_) => {
                            self.stats.failed(rec.kind, now);
                            self.release_branch(rec, now);
                        }
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
                    self.on_utterances(now, u);
                }
            }
            Kind::Vision => {}
        }
    }

    fn on_llm_step(&mut self, at: Nanos, output: Option<&Output>) {
        let (Some(r), Some(Output::Llm { token, nanos, .. })) = (&mut self.llm, output) else {
            return;
        };
        if token.is_some() {
            self.llm_tokens += 1;
            r.last_token_at = Some(at);
            if r.first_token_at.is_none() {
                r.first_token_at = Some(at);
            } else {
                r.decode_nanos.push(*nanos);
            }
        }
    }

    /// Ends the request in flight (finished, shed, failed or cut by the end of the run):
    /// its tokens and the time from its arrival to its last token count for tokens/s.
    fn close_request(&mut self) {
        let Some(r) = self.llm.take() else { return };
        if let Some(first) = r.first_token_at {
            self.llm_ttft
                .push(first.saturating_sub(r.arrival) as f64 / 1e6);
        }
        let mut d = r.decode_nanos;
        if !d.is_empty() {
            d.sort_unstable();
            self.llm_tpot.push(d[d.len() / 2] as f64 / 1e6);
        }
        if let Some(last) = r.last_token_at {
            self.llm_request_nanos += last.saturating_sub(r.arrival);
        }
    }

    fn on_finished(&mut self, now: Nanos, rec: JobRec, end: Nanos, output: Option<Output>) {
        match rec.kind {
            Kind::Llm => {
                self.on_llm_step(end, output.as_ref());
                self.close_request();
            }
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

    fn health_tick(&mut self, now: Nanos) {
        if !self.health.due(now) {
            return;
        }
        self.stats.trim(now);
        let drift_ppm = self
            .ingest
            .iter()
            .filter_map(|(_, i)| i.estimate())
            .map(|e| e.drift_ppm.abs())
            .fold(0.0, f64::max);
        let was_scaled = self.remedies().camera_scaled;
        let was_open = self.remedies().breaker_open;
        let changes = self.health.evaluate(
            now,
            &HealthInputs {
                worst_p99_ratio: self.stats.worst_p99_ratio(),
                drift_ppm,
                served_fraction: self.stats.served_fraction(),
            },
        );
        if was_scaled {
            self.camera_scaled_nanos += now.saturating_sub(self.last_health);
        }
        self.last_health = now;
        let r = self.remedies();
        if r.breaker_open && !was_open {
            self.breaker_opened += 1;
        }
        if r.camera_scaled != was_scaled {
            self.rebook_camera(now, r.camera_scaled);
            // Under pressure the cores run at full speed; back to the scenario's power
            // mode once healthy.
            let percent = if r.camera_scaled || !self.config.scenario.battery().low_power {
                100
            } else {
                60
            };
            self.power_hint(now, percent);
        }
        let (value, level) = self.health.current();
        self.series
            .record_ldti(self.t_s(now), value, level.as_str());
        self.trace.counter(stage::LDTI, now, value);
        self.observer.ldti(value, level);
        let acting = self.config.scheduler == SchedulerKind::Mmsched;
        for c in changes.into_iter().filter(|_| acting) {
            self.trace
                .instant("health_action", "health", c.at_nanos, None, &c.what);
            self.actions.push(HealthActionRecord {
                t_s: self.t_s(c.at_nanos),
                level: c.level.as_str().to_string(),
                action: c.what,
            });
        }
    }

    /// Books the camera's standing reservation for its (possibly halved) frame rate.
    fn rebook_camera(&mut self, now: Nanos, halved: bool) {
        let Some((_, s)) = &self.inputs.camera else {
            return;
        };
        let fps = s.fps.unwrap_or(5.0).max(0.1);
        let period = (1e9 / fps) as Nanos * if halved { 2 } else { 1 };
        let latency = (s.latency_ms * 1e6) as Nanos;
        let class = self.classes.vision;
        let cost = self.cost.predict(class, now);
        // The next frame's arrival: frames are captured on the camera's cadence from the
        // start of the inputs, and arrive after the stream's latency.
        let k = now.saturating_sub(self.start) / period + 1;
        let first = self.start + k * period + latency;
        self.exec.cancel_stream(class);
        self.exec
            .reserve_stream(class, Modality::Image, first, period, cost);
        self.camera_booking = Some((cost, halved));
    }

    /// Keeps the camera's occurrences as long as a frame really takes: rebooked when the
    /// predicted cost moved by more than a tenth since the last booking.
    fn follow_camera_cost(&mut self, now: Nanos) {
        let Some((booked, halved)) = self.camera_booking else {
            return;
        };
        let cost = self.cost.predict(self.classes.vision, now);
        if cost.abs_diff(booked) * 10 > booked {
            self.rebook_camera(now, halved);
        }
    }

    fn sample(&mut self, now: Nanos) {
        if now < self.next_sample {
            return;
        }
        self.next_sample = now + SAMPLE_NANOS;
        let occupancy = self.exec.occupancy(now);
        let mean = if occupancy.is_empty() {
            0.0
        } else {
            occupancy.iter().sum::<f64>() / occupancy.len() as f64
        };
        self.trace.counter(stage::SLOT_OCCUPANCY, now, mean);
        self.series
            .slot_occupancy
            .push(mmsched_report::OccupancyPoint {
                t_s: self.t_s(now),
                per_worker_pct: occupancy.iter().map(|o| o * 100.0).collect(),
            });
        while self
            .recent_done
            .front()
            .is_some_and(|(t, _)| *t + 1_000_000_000 < now)
        {
            self.recent_done.pop_front();
        }
        let rates = self.rates();
        self.series.rates.push(mmsched_report::RatePoint {
            t_s: self.t_s(now),
            per_modality_hz: Kind::ALL
                .iter()
                .zip(rates)
                .map(|(k, r)| (k.as_str().to_string(), r))
                .collect(),
        });
        if now >= self.next_progress {
            self.next_progress = now + PROGRESS_NANOS;
            self.sample_pressure(now);
            self.follow_camera_cost(now);
            let counts = Kind::ALL.map(|k| {
                let s = self.stats.kind(k);
                (s.completed, s.deadline_misses, s.skipped, s.shed)
            });
            let (ldti, level) = self.health.current();
            let p = Progress {
                t_s: self.t_s(now).min(self.config.duration_nanos as f64 / 1e9),
                duration_s: self.config.duration_nanos as f64 / 1e9,
                counts,
                rates_hz: rates,
                ldti,
                level,
            };
            self.observer.progress(&p);
        }
    }

    /// Asks the platform for a CPU frequency (mmsched with platform integration only),
    /// timing the call against its S11 budget; every call goes into the trace.
    fn power_hint(&mut self, now: Nanos, percent: u8) {
        #[cfg(target_os = "linux")]
        if let Some(p) = &mut self.power {
            use mmsched_runtime::platform::power::{FrequencyLevel, PowerControl};
            let e = p.request_frequency(FrequencyLevel::percent(percent));
            self.power_calls += 1;
            if e.over_budget() {
                self.power_over_budget += 1;
            }
            let what = format!(
                "frequency {percent} %: {:?}, {} µs",
                e.effect,
                e.timing.elapsed_nanos / 1000
            );
            self.trace.instant("power", "health", now, None, &what);
        }
        #[cfg(not(target_os = "linux"))]
        let _ = (now, percent);
    }

    /// CPU pressure (PSI `some avg10`) as a saturation signal, once a second, into the
    /// trace; its mean and maximum go into the summary's platform notes.
    fn sample_pressure(&mut self, now: Nanos) {
        #[cfg(target_os = "linux")]
        {
            use mmsched_runtime::platform::psi;
            if let Ok(p) = psi::read(std::path::Path::new(psi::CPU_PRESSURE_PATH)) {
                let pct = 100.0 * p.saturation();
                self.trace.counter(stage::PSI_CPU, now, pct);
                self.pressure_pct.push(pct);
            }
        }
        #[cfg(not(target_os = "linux"))]
        let _ = now;
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
            self.exec.set_policy(&p);
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

    fn main_loop(&mut self) {
        loop {
            let now = self.clock.now_nanos();
            if now >= self.end || self.config.stop.load(Ordering::Relaxed) {
                break;
            }
            self.apply_policy_updates(now);
            self.poll_camera(now);
            self.poll_mic(now);
            self.poll_imu_and_text(now);
            self.start_asr_and_llm(now);
            self.handle_events(now, true);
            self.start_asr_and_llm(now);
            self.health_tick(now);
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
pub fn run(config: RunConfig, observer: &mut dyn Observer) -> Result<RunOutcome, RunError> {
    let scenario = config.scenario.clone();
    let workers = scenario.device().workers.unwrap_or(2).max(1) as usize;
    let mut engines = Engines::load(&scenario, workers, |m| {
        observer.status(&format!("loading {m}"))
    })?;
    observer.status("warming up the models");
    engines.warm_up()?;
    let mut platform_notes = Vec::new();
    #[cfg(target_os = "linux")]
    let cgroup_set = if config.platform && config.scheduler == SchedulerKind::Mmsched {
        platform::resource_groups(&mut platform_notes, observer)
    } else {
        None
    };
    let clock = Device::new();
    let mut exec = platform::executor(
        config.scheduler,
        &config.policy,
        workers,
        clock,
        config.platform,
        config.record_steps,
        #[cfg(target_os = "linux")]
        cgroup_set.as_ref().map(|s| s.handle()),
    )?;
    platform_notes.extend(exec.notes());
    let classes = Classes {
        vision: exec.class(Kind::Vision.as_str()),
        vad: exec.class(Kind::Vad.as_str()),
        asr: exec.class(Kind::Asr.as_str()),
        llm: exec.class(Kind::Llm.as_str()),
    };
    let battery = scenario.battery().charge_pct_at(0.0) / 100.0;
    exec.set_battery(battery);
    let start = clock.now_nanos() + START_LEAD_NANOS;
    let inputs = Inputs::build(&scenario, &clock, start, config.seed)?;
    platform_notes.extend(inputs.notes.iter().cloned());
    for n in &platform_notes {
        observer.status(n);
    }
    let sla_ms = Kind::ALL.map(|k| inputs.stream(k).map_or(f64::NAN, |s| s.sla_ms));
    let mut cost = CostModel::new(64, 3, COST_MAX_AGE_NANOS);
    let profile = mmsched_sim::profile::Profile::reference();
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
    let trace = TraceOut::create(config.trace_path.as_deref(), config.seed, metadata)?;
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
        #[cfg(target_os = "linux")]
        power,
        power_calls: 0,
        power_over_budget: 0,
        config,
    };
    r.rebook_camera(start, false);
    r.main_loop();
    let inputs_end = r.clock.now_nanos();
    drop(load);
    // Speech still open at the end is not transcribed: the inputs have stopped.
    if let Some(a) = &mut r.audio {
        a.flush();
    }
    r.drain();
    r.close_request();
    if r.power_calls > 0 {
        // Leave the cores as they were found.
        let now = r.clock.now_nanos();
        r.power_hint(now, 100);
    }
    let elapsed = inputs_end.saturating_sub(r.start);
    platform_notes.push(format!(
        "scheduler: {:.1} ms CPU submitting, deciding and collecting, of which {:.1} ms wall in decisions",
        r.overhead_nanos as f64 / 1e6,
        r.exec.decision_nanos() as f64 / 1e6,
    ));
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
    let step_log = r.exec.take_step_log();
    let totals = Totals {
        elapsed_nanos: elapsed,
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
