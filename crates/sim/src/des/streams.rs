//! The scenario's streams in a simulation: what each stream is (rate, SLA, link), and what
//! one of its samples becomes on a tick — a frame (lost on the link, dropped by the halved
//! camera rate, skipped by the image gate, cut by the breaker, or a `vision` job), audio
//! (32 ms `vad` chunks, and an `asr` job per utterance the speech gate closes), a text
//! request (one `llm` request of `tokens_per_request` steps).

use mmsched_core::Modality;
use mmsched_core::health::{Branch, Remedies, camera_drops, heaviest_branch};
use mmsched_core::steps::Chain;
use mmsched_core::time::Nanos;
use mmsched_scenario::{EpisodeKind, ModelKind, StreamKind};
use rand::RngExt;

use super::setup::SimRun;
use super::{Conditions, Simulator};
use crate::health_loop::HealthLoop;
use mmsched_world::jitter::GammaJitter;
use mmsched_world::mic::{VAD_CHUNK_NANOS, transcript_budget_nanos};

/// An image-gate episode (dark, blur) of a camera.
#[derive(Debug, Clone, Copy)]
pub(super) struct Gate {
    start_s: f64,
    end_s: f64,
    /// Share of the episode's frames the gate skips.
    fraction: f64,
}

/// One stream of the scenario, as the simulation runs it.
#[derive(Debug, Clone)]
pub(super) struct Lane {
    pub(super) kind: StreamKind,
    pub(super) period_nanos: Nanos,
    pub(super) sla_nanos: Nanos,
    pub(super) latency_nanos: Nanos,
    importance: f64,
    /// Probability that a sample is lost on the link.
    loss: f64,
    jitter: Option<GammaJitter>,
    /// The simulator's classes of the stream's models, in the stream's order.
    pub(super) classes: Vec<usize>,
    /// Steps of a text request.
    tokens: u32,
    /// Samples so far.
    ticks: u64,
    /// Image-gate episodes (dark, blur) of this stream.
    gates: Vec<Gate>,
}

impl Simulator<'_> {
    /// The scenario's streams under `cond`.
    pub(super) fn lanes(&self, cond: &Conditions) -> Vec<Lane> {
        let s = self.scenario;
        s.streams()
            .iter()
            .map(|st| {
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
                let (episode_loss_pct, gates) = self.episodes_of(&st.name);
                let mut loss_pct = st.loss_pct + episode_loss_pct;
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
                    jitter: jitter.filter(|_| st.kind != StreamKind::Imu),
                    classes: st
                        .models
                        .iter()
                        .filter_map(|m| s.model(m))
                        .filter_map(|m| self.class_of_model(m))
                        .collect(),
                    tokens: st.tokens_per_request.unwrap_or(32),
                    ticks: 0,
                    gates,
                }
            })
            .collect()
    }

    /// The episodes naming stream `name`: its extra packet loss, percent, and its
    /// image-gate episodes.
    fn episodes_of(&self, name: &str) -> (f64, Vec<Gate>) {
        let mut loss_pct = 0.0;
        let mut gates = Vec::new();
        for e in self.scenario.episodes() {
            if e.stream.as_deref() != Some(name) {
                continue;
            }
            match e.kind {
                EpisodeKind::PacketLoss => loss_pct += e.loss_pct.unwrap_or(0.0),
                EpisodeKind::Dark | EpisodeKind::Blur => gates.push(Gate {
                    start_s: e.start_s,
                    end_s: e.end_s.unwrap_or(f64::INFINITY),
                    fraction: e.fraction.unwrap_or(1.0),
                }),
                _ => {}
            }
        }
        (loss_pct, gates)
    }
}

impl SimRun<'_, '_> {
    /// Stream `i` produces its next sample at `now` (and the one after one period later).
    pub(super) fn on_tick(&mut self, i: usize, now: Nanos) {
        let lane = &mut self.lanes[i];
        self.queue
            .push(now + lane.period_nanos, super::events::Ev::Tick(i));
        lane.ticks += 1;
        let lost = lane.loss > 0.0 && self.rng.random::<f64>() < lane.loss;
        let jitter = lane.jitter.map_or(0, |j| j.sample_nanos(&mut self.rng));
        // Arrival on the device, after the stream's pipeline latency and jitter.
        let release = now + lane.latency_nanos + jitter;
        match lane.kind {
            StreamKind::Camera => self.frame(i, now, release, lost),
            StreamKind::Audio => self.audio(i, release, lost),
            StreamKind::Text => self.text_request(i, release),
            StreamKind::Imu => {}
        }
    }

    /// The remedies in force (none without an acting health loop).
    pub(super) fn remedies(&self) -> Remedies {
        self.health
            .as_deref()
            .map(HealthLoop::remedies)
            .unwrap_or_default()
    }

    /// Whether the open breaker cuts `branch` (the heaviest branch by mean latency so far).
    fn broken(&self, remedies: &Remedies, branch: Branch) -> bool {
        let mean = |k: ModelKind| {
            self.sim
                .class_of(k)
                .map_or(0.0, |c| mmsched_world::stats::mean(&self.latencies[c]))
        };
        remedies.breaker_open
            && heaviest_branch(
                mean(ModelKind::Vision),
                mean(ModelKind::Asr),
                self.sim.class_of(ModelKind::Asr).is_some(),
            ) == branch
    }

    /// A camera frame captured at `now`, arriving at `release` unless `lost`.
    fn frame(&mut self, i: usize, now: Nanos, release: Nanos, lost: bool) {
        let lane = &self.lanes[i];
        // OCR's class (the first the camera feeds without one), then the models of your
        // own, which see every frame that arrives: the gate and the breaker are OCR's.
        let vision = self
            .sim
            .class_of(ModelKind::Vision)
            .filter(|v| lane.classes.contains(v));
        let Some(&c) = vision.as_ref().or(lane.classes.first()) else {
            return;
        };
        let own: Vec<usize> = lane
            .classes
            .iter()
            .copied()
            .filter(|&k| Some(k) != vision)
            .collect();
        let everyone =
            |c: usize| std::iter::once(c).chain(own.iter().copied().filter(move |&k| k != c));
        if lost {
            for k in everyone(c) {
                self.reports[k].lost += 1;
            }
            return;
        }
        let remedies = self.remedies();
        if camera_drops(&remedies, lane.ticks - 1, || self.losses[c].behind()) {
            for k in everyone(c) {
                self.reports[k].decimated += 1;
            }
            return;
        }
        let (sla, importance) = (lane.sla_nanos, lane.importance);
        for &k in &own {
            let chain = Chain::new(release + sla, 1, false);
            self.book(k, release, chain, importance, Modality::Image);
        }
        if vision.is_none() {
            return;
        }
        let lane = &self.lanes[i];
        let t_s = self.cond.start_s + now as f64 / 1e9;
        let gated = lane
            .gates
            .iter()
            .any(|g| (g.start_s..g.end_s).contains(&t_s) && self.rng.random::<f64>() < g.fraction);
        if gated {
            self.reports[c].skipped += 1;
            return;
        }
        if self.broken(&remedies, Branch::Vision) {
            let r = &mut self.reports[c];
            r.broken += 1;
            r.stale += u64::from(remedies.use_cache);
            return;
        }
        let chain = Chain::new(release + sla, 1, false);
        self.book(c, release, chain, importance, Modality::Image);
    }

    /// One packet of audio, arriving at `release` unless `lost` (concealed, or re-requested
    /// while retransmission is on): the VAD chunks it completes, and the utterances the
    /// speech gate closes in it.
    fn audio(&mut self, i: usize, mut release: Nanos, lost: bool) {
        let remedies = self.remedies();
        let lane = &self.lanes[i];
        let (packet, loss, latency) = (lane.period_nanos, lane.loss, lane.latency_nanos);
        if lost {
            // A copy comes back one round trip later, lost again with the link's loss; a
            // request sent into an outage is lost too.
            let recovered = remedies.retransmit
                && self.rng.random::<f64>() * (loss * 100.0)
                    < lane_recoverable_pct(self.cond, loss)
                && self.rng.random::<f64>() >= loss;
            for &c in &self.lanes[i].classes {
                if self.sim.classes[c].0 == ModelKind::Vad.as_str() {
                    self.reports[c].lost += 1;
                    self.reports[c].recovered += u64::from(recovered);
                }
            }
            if recovered {
                release += 2 * latency;
            }
        }
        let lane = &self.lanes[i];
        let audio = lane.ticks * packet;
        let chunks = (audio - packet) / VAD_CHUNK_NANOS..audio / VAD_CHUNK_NANOS;
        let (sla, importance) = (lane.sla_nanos, lane.importance);
        for c in lane.classes.clone() {
            if self.sim.classes[c].0 == ModelKind::Asr.as_str() {
                for length in self.sim.speech.closed_between(audio - packet, audio) {
                    if self.broken(&remedies, Branch::Speech) {
                        let r = &mut self.reports[c];
                        r.broken += 1;
                        r.stale += u64::from(remedies.use_cache);
                    } else {
                        // Due within the time it took to say it.
                        let due = release + transcript_budget_nanos(length) + sla;
                        let chain = Chain::new(due, 1, false);
                        self.book(c, release, chain, importance, Modality::Audio);
                    }
                }
            } else {
                for _ in chunks.clone() {
                    let chain = Chain::new(release + sla, 1, false);
                    self.book(c, release, chain, importance, Modality::Audio);
                }
            }
        }
    }

    /// A text request arriving at `release`: one request of the stream's tokens, a step
    /// each. A stream's request keeps its place: its first step, shed, competes again (as
    /// the runtime's text branch books it).
    fn text_request(&mut self, i: usize, release: Nanos) {
        let lane = &self.lanes[i];
        let (sla, importance, tokens) = (lane.sla_nanos, lane.importance, lane.tokens);
        for c in lane.classes.clone() {
            let chain = Chain::new(release + sla, tokens, true);
            self.book(c, release, chain, importance, Modality::Text);
        }
    }
}

/// The part of a networked stream's loss probability `loss` that retransmission can
/// recover, in percent: all of it but the outage share.
fn lane_recoverable_pct(cond: &Conditions, loss: f64) -> f64 {
    (loss * 100.0 - cond.outage_loss_pct).max(0.0)
}
