//! The discrete-event simulator: a scenario's streams produce jobs in virtual time, the
//! **real** [`mmsched_core::scheduler::Scheduler`] decides (admit / shed / prune / start on
//! a lane in reserved slots), laid out by the runtime's own [`Layout`] (general lanes plus
//! the VAD-only audio lane, the camera's standing reservation), and the **real** health
//! controller ([`crate::health_loop`]) evaluates at the policy's rate and switches the
//! runtime's remedies. The simulator *models* execution: a started job finishes after a
//! cost drawn from the device latency profile. That modelled execution (and the sensors
//! and links) is the only thing simulated; every decision is the core's.
//!
//! Jobs per stream, as `mmsched run` makes them:
//! - camera: one `vision` job per frame; frames inside a `dark` or `blur` episode are
//!   skipped by the image gate with the episode's `fraction`; lost frames never arrive;
//! - audio: one `vad` job per 32 ms chunk of received audio (lost packets are concealed,
//!   the chunk still runs), and one `asr` job per utterance: the run's microphone plays a
//!   10 s recorded utterance and 4 s of silence in a loop, and the speech gate closes the
//!   utterance 0.8 s into the silence;
//! - text: one `llm` request whose tokens are released one after the other (the next when
//!   the previous finishes), each due when the tokens after it still fit before the
//!   request's deadline (`mmsched_core::steps`); counted once per request;
//! - imu: no model job (its samples only feed alignment).
//!
//! Deadline of a job: its release (arrival on the device after pipeline latency and
//! jitter) plus the stream's `sla_ms`; for `asr`, plus the utterance's length as well.
//!
//! Remedies (when the health loop acts): *camera scaled* drops every second frame;
//! *retransmit* re-requests audio packets lost on the link (not those lost in a Wi-Fi
//! outage), a copy arriving one round trip (twice the stream latency) later with the link's
//! loss probability; *breaker open* skips the heaviest branch's jobs (answered from cache,
//! marked stale, with *use cache*).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

use mmsched_core::Modality;
use mmsched_core::arbiter::{ClassId, Job, JobId};
use mmsched_core::health::{Branch, RecentLosses, camera_drops, heaviest_branch};
use mmsched_core::layout::{self, Layout};
use mmsched_core::policy::Policy;
use mmsched_core::scheduler::{Decision, SchedEvent, Scheduler};
use mmsched_core::steps::step_deadline;
use mmsched_core::time::{NANOS_PER_MILLI, Nanos};
use mmsched_scenario::{EpisodeKind, ModelKind, Scenario, StreamKind};
use rand::RngExt;
use serde::Serialize;

use crate::clock::VirtualClock;
use crate::health_loop::HealthLoop;
use crate::jitter::GammaJitter;
use crate::load::LoadProfile;
use crate::mic::{SpeechLoop, VAD_CHUNK_NANOS, transcript_budget_nanos};
use crate::profile::{ModelLatency, Profile, ProfileError};
use crate::rng::{SimRng, stream_rng};
use mmsched_core::Clock;

/// Conditions of one simulated run (the soak changes them window by window).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Conditions {
    /// Multiplies every drawn job cost (throttling, background load, low power, wear).
    pub cost_multiplier: f64,
    /// Extra loss on every networked stream during link outages, percent (not
    /// recoverable: a retransmission request sent into an outage is lost too).
    pub outage_loss_pct: f64,
    /// Extra random loss on every networked stream, percent (recoverable).
    pub random_loss_pct: f64,
    /// Battery fraction 0 … 1.
    pub battery_fraction: f64,
    /// Scenario time at the start of the run, seconds (which episodes are active).
    pub start_s: f64,
}

impl Default for Conditions {
    fn default() -> Self {
        Self {
            cost_multiplier: 1.0,
            outage_loss_pct: 0.0,
            random_loss_pct: 0.0,
            battery_fraction: 1.0,
            start_s: 0.0,
        }
    }
}

/// Per job class outcome; the first keys are those of `mmsched run`'s `summary.json`,
/// with the same meaning: `offered = on_time + late + shed + skipped + dropped +
/// unfinished + failed`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ClassReport {
    /// Inputs that arrived (frames, chunks, utterances, requests; lost frames never arrive).
    pub offered: u64,
    /// Finished by their deadline.
    pub on_time: u64,
    /// Finished after it.
    pub late: u64,
    /// Kept from the model by a health action: the halved camera rate (`decimated`) or an
    /// open breaker (`broken`).
    pub dropped: u64,
    /// Still queued or running when the run (and its drain) ended.
    pub unfinished: u64,
    /// Failed: always 0 in a simulation (models do not fail here).
    pub failed: u64,
    /// On-time results per simulated second.
    pub on_time_per_s: f64,
    /// Jobs submitted to the scheduler (frames, chunks, utterances, requests).
    pub jobs: u64,
    /// Jobs finished.
    pub completed: u64,
    /// Finished after their deadline.
    pub deadline_misses: u64,
    /// Skipped by the router before submission (the image gate: nothing worth running).
    pub skipped: u64,
    /// Shed by admission (and pruned by the battery saver).
    pub shed: u64,
    /// P50 latency (release → finish), ms.
    pub p50_ms: f64,
    /// P99 latency, ms.
    pub p99_ms: f64,
    /// Mean latency, ms.
    pub mean_ms: f64,
    /// The stream's SLA, ms.
    pub sla_ms: f64,
    /// Of `shed`: pruned by the battery saver.
    pub pruned: u64,
    /// Inputs lost on the way (for audio: packets, concealed; the chunk still runs).
    pub lost: u64,
    /// Lost packets recovered by retransmission.
    pub recovered: u64,
    /// Of `dropped`: by an open breaker.
    pub broken: u64,
    /// Answers given from the cache, marked stale.
    pub stale: u64,
    /// Frames dropped by the camera-rate remedy (never submitted).
    pub decimated: u64,
    /// Nominal cost of one job on an idle device (profile median), ms.
    pub nominal_ms: f64,
}

impl ClassReport {
    /// Completed in time, over submitted jobs, percent (100 without jobs).
    pub fn on_time_pct(&self) -> f64 {
        if self.jobs == 0 {
            100.0
        } else {
            100.0 * (self.completed - self.deadline_misses) as f64 / self.jobs as f64
        }
    }
}

/// Outcome of one simulated run.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct DesReport {
    /// Always true: this is a simulation.
    pub simulated: bool,
    /// Simulated time, seconds.
    pub seconds: f64,
    /// Per class (`vision`, `vad`, `asr`, `llm`).
    pub classes: BTreeMap<String, ClassReport>,
    /// Decision steps taken by the core.
    pub steps: u64,
    /// Every latency (release → finish) per class, ms, in completion order.
    #[serde(skip)]
    pub latencies_ms: BTreeMap<String, Vec<f64>>,
}

impl DesReport {
    /// Completed in time over submitted jobs, over all classes (1 when nothing was submitted).
    pub fn on_time_ratio(&self) -> f64 {
        let (j, ok) = self.classes.values().fold((0u64, 0u64), |(j, ok), r| {
            (j + r.jobs, ok + r.completed - r.deadline_misses)
        });
        if j == 0 { 1.0 } else { ok as f64 / j as f64 }
    }

    /// Inputs or jobs that produced no result (lost frames, concealed audio packets, shed
    /// or pruned jobs, breaker skips without a cached answer), and all inputs offered.
    pub fn drops(&self) -> (u64, u64) {
        self.classes.values().fold((0, 0), |(d, o), r| {
            let dropped = r.lost - r.recovered + r.shed + (r.broken - r.stale);
            let offered = r.offered + r.lost;
            (d + dropped, o + offered)
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    /// A stream's next sample (index into the stream list).
    Tick(usize),
    /// A job became runnable (index into `pending`).
    Release(u64),
    /// A worker finished a job.
    Finish(u32, u64),
    /// The health loop evaluates.
    Health,
}

#[derive(Debug, Clone, Copy)]
struct Meta {
    class: usize,
    deadline_nanos: Nanos,
    importance: f64,
    modality: Modality,
    /// Tokens still to generate after this one (llm chains).
    tokens_left: u32,
    /// Release of the request (llm chains: latency is counted per request).
    request_nanos: Nanos,
    /// A later step of an llm chain ([`Job::committed`], as the runtime marks them).
    committed: bool,
}

#[derive(Debug, Clone, Copy)]
struct Gate {
    start_s: f64,
    end_s: f64,
    fraction: f64,
}

struct Lane {
    kind: StreamKind,
    period_nanos: Nanos,
    sla_nanos: Nanos,
    latency_nanos: Nanos,
    importance: f64,
    loss: f64,
    jitter: Option<GammaJitter>,
    classes: Vec<usize>,
    tokens: u32,
    ticks: u64,
    /// Image-gate episodes (dark, blur) of this stream.
    gates: Vec<Gate>,
}

/// Everything a run needs besides its conditions.
pub struct Simulator<'a> {
    scenario: &'a Scenario,
    classes: Vec<(String, ModelLatency)>,
    policy: Policy,
    /// The scenario's background load, sharing the cores with the workers.
    load: LoadProfile,
    /// The microphone's talk spurts.
    speech: SpeechLoop,
}

impl std::fmt::Debug for Simulator<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Simulator")
            .field("scenario", &self.scenario.name())
            .field("classes", &self.classes)
            .finish()
    }
}

impl<'a> Simulator<'a> {
    /// A simulator for `scenario`, with job costs from `profile` (models with a `cost_ms`
    /// in the scenario use that as their median instead).
    pub fn new(
        scenario: &'a Scenario,
        profile: &Profile,
        policy: Policy,
    ) -> Result<Self, ProfileError> {
        let mut classes = Vec::new();
        for kind in [
            ModelKind::Vision,
            ModelKind::Vad,
            ModelKind::Asr,
            ModelKind::Llm,
        ] {
            if !scenario.models().iter().any(|m| m.kind == kind) {
                continue;
            }
            let override_ms = scenario
                .models()
                .iter()
                .find(|m| m.kind == kind && m.cost_ms.is_some())
                .and_then(|m| m.cost_ms);
            let lat = match override_ms {
                Some(ms) => ModelLatency::from_median_ms(ms),
                None => profile.latency(kind.as_str())?,
            };
            classes.push((kind.as_str().to_string(), lat));
        }
        Ok(Self {
            scenario,
            classes,
            policy,
            // Spikes without an end last as long as any run.
            load: LoadProfile::of(scenario, Nanos::MAX),
            speech: SpeechLoop::default(),
        })
    }

    /// The microphone's talk spurts (the generated ones by default; give the recording's
    /// when the run's microphone plays a recording).
    pub fn with_speech(mut self, speech: SpeechLoop) -> Self {
        self.speech = speech;
        self
    }

    /// The job classes and their latencies, in class order.
    pub fn classes(&self) -> &[(String, ModelLatency)] {
        &self.classes
    }

    fn class_of(&self, kind: ModelKind) -> Option<usize> {
        self.classes.iter().position(|(n, _)| n == kind.as_str())
    }

    fn lanes(&self, cond: &Conditions) -> Vec<Lane> {
        let s = self.scenario;
        s.streams()
            .iter()
            .map(|st| {
                let kinds: Vec<ModelKind> = st
                    .models
                    .iter()
                    .filter_map(|m| s.model(m).map(|m| m.kind))
                    .collect();
                let rate = st.events_per_sec();
                let period_nanos = if rate > 0.0 {
                    (1e9 / rate) as Nanos
                } else {
                    Nanos::MAX
                };
                let jitter = st
                    .jitter
                    .as_ref()
                    .and_then(|j| match (j.scale_ms, j.p99_ms) {
                        (Some(scale), _) => GammaJitter::new(j.shape, scale).ok(),
                        (None, Some(p99)) => GammaJitter::with_p99(j.shape, p99).ok(),
                        _ => None,
                    });
                let mut loss_pct = st.loss_pct;
                let mut gates = Vec::new();
                for e in s
                    .episodes()
                    .iter()
                    .filter(|e| e.stream.as_deref().is_none_or(|n| n == st.name))
                {
                    match e.kind {
                        EpisodeKind::PacketLoss if e.stream.is_some() => {
                            loss_pct += e.loss_pct.unwrap_or(0.0);
                        }
                        EpisodeKind::Dark | EpisodeKind::Blur if e.stream.is_some() => {
                            gates.push(Gate {
                                start_s: e.start_s,
                                end_s: e.end_s.unwrap_or(f64::INFINITY),
                                fraction: e.fraction.unwrap_or(1.0),
                            })
                        }
                        _ => {}
                    }
                }
                let networked = st.kind != StreamKind::Imu && st.kind != StreamKind::Text;
                if networked {
                    loss_pct += cond.random_loss_pct + cond.outage_loss_pct;
                }
                Lane {
                    kind: st.kind,
                    period_nanos: period_nanos.max(1),
                    sla_nanos: (st.sla_ms * 1e6) as Nanos,
                    latency_nanos: (st.latency_ms * 1e6) as Nanos,
                    importance: st.importance,
                    loss: (loss_pct / 100.0).clamp(0.0, 1.0),
                    jitter: if st.kind == StreamKind::Imu {
                        None
                    } else {
                        jitter
                    },
                    classes: kinds.iter().filter_map(|k| self.class_of(*k)).collect(),
                    tokens: st.tokens_per_request.unwrap_or(32),
                    ticks: 0,
                    gates,
                }
            })
            .collect()
    }

    /// Runs `duration_nanos` of simulated time. With `health`, the health loop evaluates
    /// at its rate and, when it acts, its remedies apply. With `trace`, every event and
    /// decision is appended as one line (the golden-trace format).
    pub fn run(
        &self,
        seed: u64,
        duration_nanos: Nanos,
        cond: &Conditions,
        mut health: Option<&mut HealthLoop>,
        mut trace: Option<&mut Vec<String>>,
    ) -> DesReport {
        let clock = VirtualClock::new(0);
        let mut rng: SimRng = stream_rng(seed, 0xDE5);
        let cores = self.scenario.device().workers.unwrap_or(2);
        let layout = Layout::new(cores);
        // Which compute lanes are running a job (the audio lane's tiny jobs aside).
        let mut computing = vec![false; layout.lanes() as usize];
        let audio_lane = layout.audio_lane() as usize;
        let Ok(mut sched) = Scheduler::new(&self.policy, layout.lanes(), 0) else {
            return DesReport::default();
        };
        if layout.apply(&mut sched).is_err() {
            return DesReport::default();
        }
        let class_ids: Vec<ClassId> = self.classes.iter().map(|(n, _)| sched.class(n)).collect();
        let mut lanes = self.lanes(cond);
        let mut queue: BinaryHeap<Reverse<(Nanos, u64, Ev)>> = BinaryHeap::new();
        let mut seq = 0u64;
        let mut push = |q: &mut BinaryHeap<Reverse<(Nanos, u64, Ev)>>, at: Nanos, ev: Ev| {
            seq += 1;
            q.push(Reverse((at, seq, ev)));
        };
        for (i, lane) in lanes.iter().enumerate() {
            if lane.period_nanos < Nanos::MAX {
                // Streams start at a random phase so they do not all tick together.
                let phase = rng.random_range(0..lane.period_nanos.min(1_000_000_000));
                push(&mut queue, phase, Ev::Tick(i));
                if lane.kind == StreamKind::Camera
                    && let Some(&c) = lane.classes.first()
                {
                    // The camera's standing reservation, booked as the runtime books it:
                    // each frame's slot as long as its predicted cost, the frame due its
                    // SLA after it arrives.
                    let _ = layout::book_stream(
                        &mut sched,
                        class_ids[c],
                        Modality::Image,
                        phase + lane.latency_nanos,
                        lane.period_nanos,
                        self.predicted_nanos(c, cond),
                        Some(lane.sla_nanos),
                    );
                }
            }
        }
        if let Some(h) = health.as_deref_mut() {
            h.reset_windows(self.classes.len());
            push(&mut queue, 0, Ev::Health);
        }
        let mut metas: BTreeMap<u64, Meta> = BTreeMap::new();
        let mut latencies: Vec<Vec<f64>> = vec![Vec::new(); self.classes.len()];
        // Per class: which of its last jobs that ended were shed or late (the camera's
        // remedy acts only while its branch is behind, as in the runtime).
        let mut losses = vec![RecentLosses::default(); self.classes.len()];
        let mut report = DesReport {
            simulated: true,
            seconds: duration_nanos as f64 / 1e9,
            classes: self
                .classes
                .iter()
                .map(|(n, l)| {
                    (
                        n.clone(),
                        ClassReport {
                            nominal_ms: l.p50_ms,
                            ..ClassReport::default()
                        },
                    )
                })
                .collect(),
            steps: 0,
            latencies_ms: BTreeMap::new(),
        };
        let sla_of = |kind: StreamKind| {
            self.scenario
                .streams()
                .iter()
                .find(|s| s.kind == kind)
                .map_or(f64::NAN, |s| s.sla_ms)
        };
        for (n, r) in report.classes.iter_mut() {
            r.sla_ms = match n.as_str() {
                "vision" => sla_of(StreamKind::Camera),
                "vad" | "asr" => sla_of(StreamKind::Audio),
                _ => sla_of(StreamKind::Text),
            };
        }
        let name = |c: usize| self.classes[c].0.as_str();
        let mut next_job = 0u64;
        let mut events: Vec<SchedEvent> = Vec::new();
        let mut decisions: Vec<Decision> = Vec::new();
        let mut battery_sent = false;
        // After `duration_nanos` no new input arrives, but work already released is run to
        // the end (bounded), so a run does not count in-flight jobs as lost.
        let drain_until = duration_nanos.saturating_add(60_000_000_000);
        while let Some(Reverse((at, _, ev))) = queue.peek().copied() {
            if at >= drain_until {
                break;
            }
            if at >= duration_nanos && matches!(ev, Ev::Tick(_) | Ev::Health) {
                queue.pop();
                continue;
            }
            clock.advance_to(at);
            let now = clock.now_nanos();
            events.clear();
            if !battery_sent {
                events.push(SchedEvent::Battery(cond.battery_fraction));
                battery_sent = true;
            }
            // Every event due now goes into one step.
            while let Some(Reverse((t, _, ev))) = queue.peek().copied() {
                if t != now {
                    break;
                }
                queue.pop();
                let remedies = health
                    .as_deref()
                    .map(HealthLoop::remedies)
                    .unwrap_or_default();
                let broken = remedies.breaker_open.then(|| {
                    let mean = |k: &str| {
                        self.classes
                            .iter()
                            .position(|(n, _)| n == k)
                            .map_or(0.0, |c| crate::stats::mean(&latencies[c]))
                    };
                    match heaviest_branch(
                        mean("vision"),
                        mean("asr"),
                        self.class_of(ModelKind::Asr).is_some(),
                    ) {
                        Branch::Vision => "vision",
                        Branch::Speech => "asr",
                    }
                });
                match ev {
                    Ev::Health => {
                        if let Some(h) = health.as_deref_mut() {
                            let before = h.changes.len();
                            h.evaluate(now);
                            push(&mut queue, now + h.period_nanos(), Ev::Health);
                            if let Some(t) = trace.as_deref_mut() {
                                for c in &h.changes[before..] {
                                    t.push(format!(
                                        "{:>10} health {} ({})",
                                        now / 1000,
                                        c.action,
                                        c.level.as_str()
                                    ));
                                }
                            }
                        }
                    }
                    Ev::Tick(i) => {
                        let lane = &mut lanes[i];
                        push(&mut queue, now + lane.period_nanos, Ev::Tick(i));
                        lane.ticks += 1;
                        let lost = lane.loss > 0.0 && rng.random::<f64>() < lane.loss;
                        let jitter = lane.jitter.map_or(0, |j| j.sample_nanos(&mut rng));
                        let mut release = now + lane.latency_nanos + jitter;
                        let t_s = cond.start_s + now as f64 / 1e9;
                        let mut jobs: Vec<(usize, Nanos, u32)> = Vec::new();
                        match lane.kind {
                            StreamKind::Camera => {
                                let Some(&c) = lane.classes.first() else {
                                    continue;
                                };
                                let r = report.classes.get_mut(name(c)).expect("class");
                                if lost {
                                    r.lost += 1;
                                    continue;
                                }
                                let nth = lane.ticks - 1;
                                if camera_drops(&remedies, nth, || losses[c].behind()) {
                                    r.decimated += 1;
                                    continue;
                                }
                                let gated = lane.gates.iter().any(|g| {
                                    (g.start_s..g.end_s).contains(&t_s)
                                        && rng.random::<f64>() < g.fraction
                                });
                                if gated {
                                    r.skipped += 1;
                                    continue;
                                }
                                if broken == Some("vision") {
                                    r.broken += 1;
                                    r.stale += u64::from(remedies.use_cache);
                                    continue;
                                }
                                jobs.push((c, lane.sla_nanos, 0));
                            }
                            StreamKind::Audio => {
                                let packet = lane.period_nanos;
                                if lost {
                                    let recovered = remedies.retransmit
                                        && rng.random::<f64>() * (lane.loss * 100.0)
                                            < lane_recoverable_pct(cond, lane.loss)
                                        && rng.random::<f64>() >= lane.loss;
                                    for &c in &lane.classes {
                                        if name(c) == "vad" {
                                            let r = report.classes.get_mut("vad").expect("vad");
                                            r.lost += 1;
                                            r.recovered += u64::from(recovered);
                                        }
                                    }
                                    if recovered {
                                        release += 2 * lane.latency_nanos;
                                    }
                                }
                                let audio = lane.ticks * packet;
                                let chunks_before = (audio - packet) / VAD_CHUNK_NANOS;
                                let chunks_now = audio / VAD_CHUNK_NANOS;
                                for &c in &lane.classes {
                                    match name(c) {
                                        "asr" => {
                                            for length in
                                                self.speech.closed_between(audio - packet, audio)
                                            {
                                                if broken == Some("asr") {
                                                    let r =
                                                        report.classes.get_mut("asr").expect("asr");
                                                    r.broken += 1;
                                                    r.stale += u64::from(remedies.use_cache);
                                                } else {
                                                    // Due within the time it took to say it.
                                                    let budget = transcript_budget_nanos(length);
                                                    jobs.push((c, budget + lane.sla_nanos, 0));
                                                }
                                            }
                                        }
                                        _ => {
                                            for _ in chunks_before..chunks_now {
                                                jobs.push((c, lane.sla_nanos, 0));
                                            }
                                        }
                                    }
                                }
                            }
                            StreamKind::Text => {
                                for &c in &lane.classes {
                                    jobs.push((c, lane.sla_nanos, lane.tokens.saturating_sub(1)));
                                }
                            }
                            StreamKind::Imu => {}
                        }
                        for (c, window, tokens_left) in jobs {
                            report.classes.get_mut(name(c)).expect("class").jobs += 1;
                            next_job += 1;
                            metas.insert(
                                next_job,
                                Meta {
                                    class: c,
                                    deadline_nanos: release + window,
                                    importance: lane.importance,
                                    modality: modality_of(lane.kind),
                                    tokens_left,
                                    request_nanos: release,
                                    committed: false,
                                },
                            );
                            push(&mut queue, release, Ev::Release(next_job));
                        }
                    }
                    Ev::Release(id) => {
                        if let Some(m) = metas.get(&id) {
                            let predicted = self.predicted_nanos(m.class, cond);
                            let job = Job {
                                id: JobId(id),
                                class: class_ids[m.class],
                                modality: m.modality,
                                // A token is due when the tokens after it still fit, as the
                                // runtime paces its text requests.
                                deadline_nanos: step_deadline(
                                    now,
                                    m.deadline_nanos,
                                    m.tokens_left,
                                    predicted,
                                ),
                                predicted_cost_nanos: predicted,
                                importance: m.importance,
                                committed: m.committed,
                            };
                            if let Some(t) = trace.as_deref_mut() {
                                t.push(format!(
                                    "{:>10} arrive job={id} class={} deadline_us={}",
                                    now / 1000,
                                    name(m.class),
                                    m.deadline_nanos / 1000
                                ));
                            }
                            events.push(SchedEvent::Arrive(job));
                        }
                    }
                    Ev::Finish(worker, id) => {
                        if let Some(c) = computing.get_mut(worker as usize) {
                            *c = false;
                        }
                        events.push(SchedEvent::Finish {
                            worker,
                            job: JobId(id),
                        });
                        if let Some(m) = metas.remove(&id) {
                            if let Some(t) = trace.as_deref_mut() {
                                t.push(format!(
                                    "{:>10} finish job={id} worker={worker} late={}",
                                    now / 1000,
                                    now > m.deadline_nanos
                                ));
                            }
                            if m.tokens_left > 0 {
                                next_job += 1;
                                metas.insert(
                                    next_job,
                                    Meta {
                                        tokens_left: m.tokens_left - 1,
                                        committed: true,
                                        ..m
                                    },
                                );
                                push(&mut queue, now, Ev::Release(next_job));
                                continue;
                            }
                            let r = report
                                .classes
                                .get_mut(name(m.class))
                                .expect("every class has a report");
                            r.completed += 1;
                            let late = now > m.deadline_nanos;
                            losses[m.class].record(late);
                            r.deadline_misses += u64::from(late);
                            let latency = now - m.request_nanos;
                            latencies[m.class].push(latency as f64 / NANOS_PER_MILLI as f64);
                            if let Some(h) = health.as_deref_mut() {
                                h.completed(
                                    m.class,
                                    now,
                                    latency,
                                    m.deadline_nanos - m.request_nanos,
                                );
                            }
                        }
                    }
                }
            }
            if events.is_empty() {
                continue;
            }
            decisions.clear();
            sched.step(now, &events, &mut decisions);
            report.steps += 1;
            for d in &decisions {
                match *d {
                    Decision::Start {
                        worker,
                        job,
                        start_slot,
                        len_slots,
                    } => {
                        let Some(m) = metas.get(&job.0) else { continue };
                        let latency = &self.classes[m.class].1;
                        let work =
                            (latency.sample_nanos(&mut rng) as f64 * cond.cost_multiplier) as Nanos;
                        let cost = if worker as usize == audio_lane {
                            work
                        } else {
                            if let Some(c) = computing.get_mut(worker as usize) {
                                *c = true;
                            }
                            let busy = computing
                                .iter()
                                .enumerate()
                                .filter(|&(w, &b)| b && w != audio_lane)
                                .count() as u32;
                            // Beside another computing job: the measured interference.
                            let work = if busy > 1 {
                                (work as f64 * latency.corun_factor) as Nanos
                            } else {
                                work
                            };
                            let at = (cond.start_s * 1e9) as Nanos + now;
                            self.load.stretch(at, work, cores, busy)
                        };
                        push(&mut queue, now + cost.max(1), Ev::Finish(worker, job.0));
                        if let Some(t) = trace.as_deref_mut() {
                            t.push(format!(
                                "{:>10} start  job={} worker={worker} slots={start_slot}+{len_slots}",
                                now / 1000,
                                job.0
                            ));
                        }
                    }
                    Decision::Shed { job } | Decision::Prune { job } => {
                        let pruned = matches!(d, Decision::Prune { .. });
                        if let Some(m) = metas.remove(&job.0) {
                            let r = report
                                .classes
                                .get_mut(name(m.class))
                                .expect("every class has a report");
                            // A dropped token ends its request.
                            r.shed += 1;
                            losses[m.class].record(true);
                            r.pruned += u64::from(pruned);
                            if let Some(h) = health.as_deref_mut() {
                                h.dropped(m.class, now);
                            }
                            if let Some(t) = trace.as_deref_mut() {
                                t.push(format!(
                                    "{:>10} {} job={}",
                                    now / 1000,
                                    if pruned { "prune " } else { "shed  " },
                                    job.0
                                ));
                            }
                        }
                    }
                    Decision::Admit { job, score } => {
                        if let Some(t) = trace.as_deref_mut() {
                            t.push(format!(
                                "{:>10} admit  job={} score={score:.4}",
                                now / 1000,
                                job.0
                            ));
                        }
                    }
                }
            }
        }
        let seconds = report.seconds;
        for r in report.classes.values_mut() {
            r.on_time = r.completed - r.deadline_misses;
            r.late = r.deadline_misses;
            r.dropped = r.decimated + r.broken;
            r.unfinished = r.jobs.saturating_sub(r.completed + r.shed);
            r.offered = r.jobs + r.skipped + r.dropped;
            r.on_time_per_s = if seconds > 0.0 {
                r.on_time as f64 / seconds
            } else {
                0.0
            };
        }
        for (c, lat) in latencies.into_iter().enumerate() {
            let mut scratch = lat.clone();
            if let Some(r) = report.classes.get_mut(name(c)) {
                r.p50_ms = crate::stats::quantile(&mut scratch, 0.5);
                r.p99_ms = crate::stats::quantile(&mut scratch, 0.99);
                r.mean_ms = crate::stats::mean(&lat);
            }
            report.latencies_ms.insert(name(c).to_string(), lat);
        }
        report
    }

    /// The cost the scheduler is told a job of class `c` will take: the P95 of its cost
    /// distribution under `cond`, which is what the runtime's cost model converges to.
    fn predicted_nanos(&self, c: usize, cond: &Conditions) -> Nanos {
        (self.classes[c].1.p95_nanos() as f64 * cond.cost_multiplier) as Nanos
    }
}

/// The part of a networked stream's loss probability `loss` that retransmission can
/// recover, in percent: all of it but the outage share.
fn lane_recoverable_pct(cond: &Conditions, loss: f64) -> f64 {
    (loss * 100.0 - cond.outage_loss_pct).max(0.0)
}

fn modality_of(kind: StreamKind) -> Modality {
    match kind {
        StreamKind::Camera => Modality::Image,
        StreamKind::Audio => Modality::Audio,
        StreamKind::Imu => Modality::Imu,
        StreamKind::Text => Modality::Text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sim_for(name: &str) -> (Scenario, Profile) {
        (Scenario::load(name).expect("shipped"), Profile::reference())
    }

    #[test]
    fn runs_the_default_scenario_deterministically() {
        let (sc, p) = sim_for("ar-glasses");
        let sim = Simulator::new(&sc, &p, Policy::default()).expect("profile covers it");
        let a = sim.run(7, 20_000_000_000, &Conditions::default(), None, None);
        let b = sim.run(7, 20_000_000_000, &Conditions::default(), None, None);
        assert_eq!(a, b);
        assert!(a.simulated);
        let v = &a.classes["vision"];
        assert!(v.completed > 50, "{a:?}");
        assert!(v.p99_ms >= v.p50_ms && v.p50_ms > 50.0, "{v:?}");
        assert!(a.on_time_ratio() > 0.8, "{a:?}");
        // 32 ms chunks: about 31 VAD jobs a second.
        let vad = a.classes["vad"].jobs as f64 / 20.0;
        assert!((vad - 31.25).abs() < 1.0, "{vad}");
    }

    #[test]
    fn heavier_costs_raise_latency() {
        let (sc, p) = sim_for("car");
        let sim = Simulator::new(&sc, &p, Policy::default()).expect("profile covers it");
        let light = sim.run(3, 30_000_000_000, &Conditions::default(), None, None);
        let heavy = sim.run(
            3,
            30_000_000_000,
            &Conditions {
                cost_multiplier: 1.6,
                ..Conditions::default()
            },
            None,
            None,
        );
        assert!(heavy.classes["vision"].p99_ms > light.classes["vision"].p99_ms);
    }

    #[test]
    fn an_overloaded_device_triggers_the_remedies_and_they_act() {
        let (sc, p) = sim_for("ar-glasses");
        let policy = Policy::default();
        let sim = Simulator::new(&sc, &p, policy.clone()).expect("profile covers it");
        let cond = Conditions {
            cost_multiplier: 4.0,
            ..Conditions::default()
        };
        let mut watching = HealthLoop::new(policy.ldti(), false);
        let mut acting = HealthLoop::new(policy.ldti(), true);
        let off = sim.run(5, 20_000_000_000, &cond, Some(&mut watching), None);
        let on = sim.run(5, 20_000_000_000, &cond, Some(&mut acting), None);
        assert!(watching.ldti_max >= 0.25, "{}", watching.ldti_max);
        assert!(
            watching.changes.is_empty(),
            "a watching loop records no actions"
        );
        assert!(!acting.changes.is_empty());
        assert_eq!(off.classes["vision"].decimated, 0);
        assert!(on.classes["vision"].decimated > 0, "{on:?}");
        // Every input is accounted for, as in a real run's summary.
        for report in [&off, &on] {
            for (k, r) in &report.classes {
                assert_eq!(
                    r.offered,
                    r.on_time + r.late + r.shed + r.skipped + r.dropped + r.unfinished + r.failed,
                    "{k}: {r:?}"
                );
            }
        }
        assert_eq!(
            on.classes["vision"].dropped,
            on.classes["vision"].decimated + on.classes["vision"].broken
        );
    }
}
