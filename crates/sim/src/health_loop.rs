//! The health loop inside a simulation: the core's [`HealthController`] stepped at the
//! policy's rate on the same sliding-window measurements the runtime takes (worst P99 of
//! latency / deadline budget per job class, share of jobs served in time, over the last
//! [`HEALTH_WINDOW_NANOS`]), plus what the simulation reports about it.
//!
//! With `acting` off the loop still evaluates (so a run without the health loop has an
//! LDTI curve too) but the simulator ignores its remedies — as the runtime does for the
//! baseline schedulers.

use std::collections::VecDeque;

use mmsched_core::health::{HealthController, Measurements, Remedies};
use mmsched_core::ldti::Level;
use mmsched_core::policy::LdtiPolicy;
use mmsched_core::time::Nanos;
use serde::Serialize;

/// The sliding window of the loop's measurements (the runtime's too).
pub const HEALTH_WINDOW_NANOS: Nanos = 2_000_000_000;

/// A remedy switched on or off.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HealthChange {
    /// When, seconds on the loop's timeline.
    pub t_s: f64,
    /// The level then.
    pub level: Level,
    /// What changed, e.g. `camera rate halved`.
    pub action: &'static str,
}

/// The controller, the measurement windows, and the loop's record.
#[derive(Debug, Clone)]
pub struct HealthLoop {
    controller: HealthController,
    /// Whether the simulator carries out the remedies.
    pub acting: bool,
    /// Largest clock drift of the streams, ppm (the drift input).
    pub drift_ppm: f64,
    /// Where the current simulation starts on the loop's timeline (a soak runs samples of
    /// consecutive windows; the controller's recovery timers span them).
    pub offset_nanos: Nanos,
    ratios: Vec<VecDeque<(Nanos, f64)>>,
    served: Vec<VecDeque<(Nanos, f64)>>,
    /// Evaluations so far.
    pub evaluations: u64,
    /// Sum of the index over the evaluations.
    pub ldti_sum: f64,
    /// Largest index.
    pub ldti_max: f64,
    /// Seconds at each level: stable, degraded, critical.
    pub seconds_by_level: [f64; 3],
    /// Remedy changes, in order.
    pub changes: Vec<HealthChange>,
    last: Option<Nanos>,
    level: Level,
    scratch: Vec<f64>,
}

impl HealthLoop {
    /// A loop under `policy`, acting on its remedies or not.
    pub fn new(policy: &LdtiPolicy, acting: bool) -> Self {
        Self {
            controller: HealthController::new(policy),
            acting,
            drift_ppm: 0.0,
            offset_nanos: 0,
            ratios: Vec::new(),
            served: Vec::new(),
            evaluations: 0,
            ldti_sum: 0.0,
            ldti_max: 0.0,
            seconds_by_level: [0.0; 3],
            changes: Vec::new(),
            last: None,
            level: Level::Stable,
            scratch: Vec::new(),
        }
    }

    /// The same loop with another recovery time (see [`HealthController::with_recovery_nanos`]).
    pub fn with_recovery_nanos(mut self, nanos: Nanos) -> Self {
        self.controller = self.controller.with_recovery_nanos(nanos);
        self
    }

    /// Time between two evaluations.
    pub fn period_nanos(&self) -> Nanos {
        self.controller.period_nanos()
    }

    /// The remedies the simulator must carry out now (none when not acting).
    pub fn remedies(&self) -> Remedies {
        if self.acting {
            self.controller.remedies()
        } else {
            Remedies::default()
        }
    }

    /// The level of the last evaluation.
    pub fn level(&self) -> Level {
        self.level
    }

    /// Forgets the measurement windows (a new simulation starts).
    pub fn reset_windows(&mut self, classes: usize) {
        self.ratios = vec![VecDeque::new(); classes];
        self.served = vec![VecDeque::new(); classes];
    }

    /// A job of `class` finished `latency` into a budget of `budget` (nanoseconds).
    pub fn completed(&mut self, class: usize, now: Nanos, latency: Nanos, budget: Nanos) {
        let ratio = latency as f64 / budget.max(1) as f64;
        if let Some(w) = self.ratios.get_mut(class) {
            w.push_back((now, ratio));
        }
        if let Some(w) = self.served.get_mut(class) {
            w.push_back((now, if latency <= budget { 1.0 } else { 0.0 }));
        }
    }

    /// A job of `class` was shed or pruned.
    pub fn dropped(&mut self, class: usize, now: Nanos) {
        if let Some(w) = self.served.get_mut(class) {
            w.push_back((now, 0.0));
        }
    }

    /// One evaluation at simulation time `now`.
    pub fn evaluate(&mut self, now: Nanos) {
        let cut = now.saturating_sub(HEALTH_WINDOW_NANOS);
        for w in self.ratios.iter_mut().chain(self.served.iter_mut()) {
            while w.front().is_some_and(|(t, _)| *t < cut) {
                w.pop_front();
            }
        }
        let mut latency_ratio: Option<f64> = None;
        for w in self.ratios.iter().filter(|w| !w.is_empty()) {
            self.scratch.clear();
            self.scratch.extend(w.iter().map(|s| s.1));
            let p99 = mmsched_world::stats::quantile(&mut self.scratch, 0.99);
            latency_ratio = Some(latency_ratio.map_or(p99, |r| r.max(p99)));
        }
        let (n, ok) = self
            .served
            .iter()
            .flatten()
            .fold((0usize, 0.0), |(n, ok), s| (n + 1, ok + s.1));
        let at = self.offset_nanos + now;
        let step = self.controller.step(
            at,
            &Measurements {
                latency_ratio,
                drift_ppm: self.drift_ppm,
                served_fraction: if n == 0 { 1.0 } else { ok / n as f64 },
                // The simulator's lanes run only the scenario's work: no neighbour to
                // tell apart, so the remedies follow the level alone.
                own_overload: None,
            },
        );
        if let Some(last) = self.last {
            self.seconds_by_level[step.level as usize] += at.saturating_sub(last) as f64 / 1e9;
        }
        self.last = Some(at);
        self.level = step.level;
        self.evaluations += 1;
        self.ldti_sum += step.ldti.value;
        self.ldti_max = self.ldti_max.max(step.ldti.value);
        if self.acting {
            for (remedy, on) in step.changes() {
                self.changes.push(HealthChange {
                    t_s: at as f64 / 1e9,
                    level: step.level,
                    action: remedy.describe(on),
                });
            }
        }
    }

    /// Mean index over the evaluations (0 before the first).
    pub fn ldti_mean(&self) -> f64 {
        if self.evaluations == 0 {
            0.0
        } else {
            self.ldti_sum / self.evaluations as f64
        }
    }
}
