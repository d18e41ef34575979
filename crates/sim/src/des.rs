//! The discrete-event simulator: a scenario's streams produce jobs in virtual time, the
//! **real** [`mmsched_core::scheduler::Scheduler`] decides (admit / shed / prune / start on
//! a worker in reserved slots), and the simulator *models* execution: a started job
//! finishes after a cost drawn from the device latency profile. That modelled execution is
//! the only thing simulated; every decision is the core's.
//!
//! Jobs per stream:
//! - camera: one `vision` job per frame (per vision model of the stream);
//! - audio: one `vad` job per packet, and one `asr` job per 2 s of audio;
//! - text: one `llm` job per generated token, released one after the other (the next token
//!   when the previous finishes) with the request's deadline;
//! - imu: no model job (its samples only feed alignment).
//!
//! Deadline of a job: its release (arrival on the device after pipeline latency and
//! jitter) plus the stream's `sla_ms`; for `asr`, plus the 2 s chunk length as well; the
//! tokens of one `llm` request share the request's deadline.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

use mmsched_core::Modality;
use mmsched_core::arbiter::{ClassId, Job, JobId};
use mmsched_core::policy::Policy;
use mmsched_core::scheduler::{Decision, SchedEvent, Scheduler};
use mmsched_core::time::{NANOS_PER_MILLI, Nanos};
use mmsched_scenario::{ModelKind, Scenario, StreamKind};
use rand::RngExt;
use serde::Serialize;

use crate::clock::VirtualClock;
use crate::jitter::GammaJitter;
use crate::profile::{ModelLatency, Profile, ProfileError};
use crate::rng::{SimRng, stream_rng};
use mmsched_core::Clock;

/// Audio per ASR job, in packets' worth of time.
const ASR_CHUNK_NANOS: Nanos = 2_000_000_000;

/// Conditions of one simulated run (the soak changes them window by window).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Conditions {
    /// Multiplies every drawn job cost (throttling, background load, wear).
    pub cost_multiplier: f64,
    /// Multiplies the camera frame rate (the "frequency scaling" health action).
    pub camera_rate_scale: f64,
    /// Extra packet loss on every networked stream, percent.
    pub extra_loss_pct: f64,
    /// Battery fraction 0 … 1.
    pub battery_fraction: f64,
}

impl Default for Conditions {
    fn default() -> Self {
        Self {
            cost_multiplier: 1.0,
            camera_rate_scale: 1.0,
            extra_loss_pct: 0.0,
            battery_fraction: 1.0,
        }
    }
}

/// Per job class outcome.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ClassReport {
    /// Jobs the streams offered (including lost inputs).
    pub offered: u64,
    /// Jobs finished.
    pub completed: u64,
    /// Finished after their deadline.
    pub deadline_misses: u64,
    /// Shed by admission.
    pub shed: u64,
    /// Pruned by battery saver.
    pub pruned: u64,
    /// Inputs lost on the way (packet loss).
    pub lost: u64,
    /// P50 latency (release → finish), ms.
    pub p50_ms: f64,
    /// P99 latency, ms.
    pub p99_ms: f64,
    /// Nominal cost of one job on an idle device (profile median), ms.
    pub nominal_ms: f64,
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
    /// Completed over offered jobs, over all classes (1 when nothing was offered).
    pub fn throughput_ratio(&self) -> f64 {
        let (o, c) = self
            .classes
            .values()
            .fold((0u64, 0u64), |(o, c), r| (o + r.offered, c + r.completed));
        if o == 0 { 1.0 } else { c as f64 / o as f64 }
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
}

#[derive(Debug, Clone, Copy)]
struct Meta {
    class: usize,
    release_nanos: Nanos,
    deadline_nanos: Nanos,
    importance: f64,
    modality: Modality,
    /// Tokens still to generate after this one (llm chains).
    tokens_left: u32,
    stream: usize,
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
    packets: u64,
}

/// Everything a run needs besides its conditions.
pub struct Simulator<'a> {
    scenario: &'a Scenario,
    classes: Vec<(String, ModelLatency)>,
    policy: Policy,
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
                Some(ms) => ModelLatency {
                    p50_ms: ms,
                    p99_ms: ms * 1.3,
                },
                None => profile.latency(kind.as_str())?,
            };
            classes.push((kind.as_str().to_string(), lat));
        }
        Ok(Self {
            scenario,
            classes,
            policy,
        })
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
                let mut rate = st.events_per_sec();
                if st.kind == StreamKind::Camera {
                    rate *= cond.camera_rate_scale;
                }
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
                Lane {
                    kind: st.kind,
                    period_nanos: period_nanos.max(1),
                    sla_nanos: (st.sla_ms * 1e6) as Nanos,
                    latency_nanos: (st.latency_ms * 1e6) as Nanos,
                    importance: st.importance,
                    loss: ((st.loss_pct + cond.extra_loss_pct) / 100.0).clamp(0.0, 1.0),
                    jitter: if st.kind == StreamKind::Imu {
                        None
                    } else {
                        jitter
                    },
                    classes: kinds.iter().filter_map(|k| self.class_of(*k)).collect(),
                    tokens: st.tokens_per_request.unwrap_or(32),
                    packets: 0,
                }
            })
            .collect()
    }

    /// Runs `duration_nanos` of simulated time. With `trace`, every event and decision is
    /// appended as one line (the golden-trace format).
    pub fn run(
        &self,
        seed: u64,
        duration_nanos: Nanos,
        cond: &Conditions,
        mut trace: Option<&mut Vec<String>>,
    ) -> DesReport {
        let clock = VirtualClock::new(0);
        let mut rng: SimRng = stream_rng(seed, 0xDE5);
        let workers = self.scenario.device().workers.unwrap_or(2);
        let mut sched = match Scheduler::new(&self.policy, workers, 0) {
            Ok(s) => s,
            Err(_) => return DesReport::default(),
        };
        let class_ids: Vec<ClassId> = self
            .classes
            .iter()
            .map(|(n, _)| sched.arbiter_mut().class(n))
            .collect();
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
            }
        }
        let mut metas: BTreeMap<u64, Meta> = BTreeMap::new();
        let mut latencies: Vec<Vec<f64>> = vec![Vec::new(); self.classes.len()];
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
        let name = |c: usize| self.classes[c].0.as_str();
        let mut next_job = 0u64;
        let mut events: Vec<SchedEvent> = Vec::new();
        let mut decisions: Vec<Decision> = Vec::new();
        let mut battery_sent = false;
        // After `duration_nanos` no new input arrives, but work already released is run to
        // the end (bounded), so a sample does not count in-flight jobs as lost.
        let drain_until = duration_nanos.saturating_add(60_000_000_000);
        while let Some(Reverse((at, _, ev))) = queue.peek().copied() {
            if at >= drain_until {
                break;
            }
            if at >= duration_nanos && matches!(ev, Ev::Tick(_)) {
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
                match ev {
                    Ev::Tick(i) => {
                        let lane = &mut lanes[i];
                        push(&mut queue, now + lane.period_nanos, Ev::Tick(i));
                        let mut jobs: Vec<(usize, Nanos, u32)> = Vec::new();
                        match lane.kind {
                            StreamKind::Camera => {
                                for &c in &lane.classes {
                                    jobs.push((c, lane.sla_nanos, 0));
                                }
                            }
                            StreamKind::Audio => {
                                lane.packets += 1;
                                let per_chunk = (ASR_CHUNK_NANOS / lane.period_nanos).max(1);
                                for &c in &lane.classes {
                                    if name(c) == "asr" {
                                        if lane.packets.is_multiple_of(per_chunk) {
                                            jobs.push((c, ASR_CHUNK_NANOS + lane.sla_nanos, 0));
                                        }
                                    } else {
                                        jobs.push((c, lane.sla_nanos, 0));
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
                        let lost = lane.loss > 0.0 && rng.random::<f64>() < lane.loss;
                        let jitter = lane.jitter.map_or(0, |j| j.sample_nanos(&mut rng));
                        let release = now + lane.latency_nanos + jitter;
                        for (c, window, tokens_left) in jobs {
                            if let Some(r) = report.classes.get_mut(name(c)) {
                                r.offered += u64::from(tokens_left) + 1;
                                if lost {
                                    r.lost += u64::from(tokens_left) + 1;
                                    continue;
                                }
                            }
                            next_job += 1;
                            metas.insert(
                                next_job,
                                Meta {
                                    class: c,
                                    release_nanos: release,
                                    deadline_nanos: release + window,
                                    importance: lane.importance,
                                    modality: modality_of(lane.kind),
                                    tokens_left,
                                    stream: i,
                                },
                            );
                            push(&mut queue, release, Ev::Release(next_job));
                        }
                    }
                    Ev::Release(id) => {
                        if let Some(m) = metas.get(&id) {
                            let lat = &self.classes[m.class].1;
                            let job = Job {
                                id: JobId(id),
                                class: class_ids[m.class],
                                modality: m.modality,
                                deadline_nanos: m.deadline_nanos,
                                predicted_cost_nanos: (lat.predicted_nanos() as f64
                                    * cond.cost_multiplier)
                                    as Nanos,
                                importance: m.importance,
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
                        events.push(SchedEvent::Finish {
                            worker,
                            job: JobId(id),
                        });
                        if let Some(m) = metas.remove(&id) {
                            let r = report
                                .classes
                                .get_mut(name(m.class))
                                .expect("every class has a report");
                            r.completed += 1;
                            if now > m.deadline_nanos {
                                r.deadline_misses += 1;
                            }
                            latencies[m.class]
                                .push((now - m.release_nanos) as f64 / NANOS_PER_MILLI as f64);
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
                                        release_nanos: now,
                                        ..m
                                    },
                                );
                                push(&mut queue, now, Ev::Release(next_job));
                            }
                            let _ = m.stream;
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
                        let cost = (self.classes[m.class].1.sample_nanos(&mut rng) as f64
                            * cond.cost_multiplier) as Nanos;
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
                            // A dropped token ends its request: the rest are dropped too.
                            let n = u64::from(m.tokens_left) + 1;
                            if pruned {
                                r.pruned += n;
                            } else {
                                r.shed += n;
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
        for (c, lat) in latencies.iter_mut().enumerate() {
            report.latencies_ms.insert(name(c).to_string(), lat.clone());
            if let Some(r) = report.classes.get_mut(name(c)) {
                r.p50_ms = crate::stats::quantile(lat, 0.5);
                r.p99_ms = crate::stats::quantile(lat, 0.99);
            }
        }
        report
    }
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
        let a = sim.run(7, 20_000_000_000, &Conditions::default(), None);
        let b = sim.run(7, 20_000_000_000, &Conditions::default(), None);
        assert_eq!(a, b);
        assert!(a.simulated);
        let v = &a.classes["vision"];
        assert!(v.completed > 50, "{a:?}");
        assert!(v.p99_ms >= v.p50_ms && v.p50_ms > 50.0, "{v:?}");
        assert!(a.throughput_ratio() > 0.8, "{a:?}");
    }

    #[test]
    fn heavier_costs_raise_latency() {
        let (sc, p) = sim_for("car");
        let sim = Simulator::new(&sc, &p, Policy::default()).expect("profile covers it");
        let light = sim.run(3, 30_000_000_000, &Conditions::default(), None);
        let heavy = sim.run(
            3,
            30_000_000_000,
            &Conditions {
                cost_multiplier: 1.6,
                ..Conditions::default()
            },
            None,
        );
        assert!(heavy.classes["vision"].p99_ms > light.classes["vision"].p99_ms);
    }
}
