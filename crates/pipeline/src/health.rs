//! The run's health loop: a thin adapter over the core's step function
//! ([`mmsched_core::health::HealthController`], the same one the simulator runs), called at
//! the policy's rate, plus what the run reports about it (mean and maximum index, seconds
//! per level, the changes for the log and the trace).
//!
//! Inputs, each over the run's sliding window: the latency ratio is the worst P99 / SLA
//! over the job kinds (the index's latency term is one-sided: a P99 within the SLA counts as
//! no offset); the drift is the largest clock drift the aligners estimate; the throughput is
//! the share of jobs served in time.

use mmsched_core::health::{HealthController, Measurements};
use mmsched_core::ldti::Level;
use mmsched_core::policy::Policy;
use mmsched_core::time::Nanos;

pub use mmsched_core::health::{RECOVERY_NANOS, Remedies};

/// What the loop measured for one evaluation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HealthInputs {
    /// Worst sliding P99 of latency / SLA over the job kinds (`None`: no samples).
    pub worst_p99_ratio: Option<f64>,
    /// Largest estimated clock drift among the streams, ppm.
    pub drift_ppm: f64,
    /// Share of recent jobs served in time, 0 … 1.
    pub served_fraction: f64,
    /// Whether the run's own work exceeds its lanes
    /// ([`mmsched_core::health::OwnLoad`]); `None`: unknown, the remedies act on the
    /// level alone.
    pub own_overload: Option<bool>,
}

/// A change of remedies, for the log and the trace.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// When.
    pub at_nanos: Nanos,
    /// The level at that time.
    pub level: Level,
    /// What changed, e.g. `camera rate halved`.
    pub what: String,
}

/// The loop's state. See the module docs.
#[derive(Debug, Clone)]
pub struct HealthMonitor {
    controller: HealthController,
    level: Level,
    value: f64,
    last_eval: Option<Nanos>,
    evaluations: u64,
    sum: f64,
    max: f64,
    seconds_by_level: [f64; 3],
}

impl HealthMonitor {
    /// A monitor following `policy`'s `[ldti]` section.
    pub fn new(policy: &Policy) -> Self {
        Self {
            controller: HealthController::new(policy.ldti()),
            level: Level::Stable,
            value: 0.0,
            last_eval: None,
            evaluations: 0,
            sum: 0.0,
            max: 0.0,
            seconds_by_level: [0.0; 3],
        }
    }

    /// Follows a new policy from the next evaluation on.
    pub fn set_policy(&mut self, policy: &Policy) {
        self.controller.set_policy(policy.ldti());
    }

    /// Time between two evaluations, nanoseconds.
    pub fn period_nanos(&self) -> Nanos {
        self.controller.period_nanos()
    }

    /// Evaluates at `now` and updates the remedies; returns what changed.
    pub fn evaluate(&mut self, now: Nanos, inputs: &HealthInputs) -> Vec<Change> {
        let step = self.controller.step(
            now,
            &Measurements {
                latency_ratio: inputs.worst_p99_ratio,
                drift_ppm: inputs.drift_ppm,
                served_fraction: inputs.served_fraction,
                own_overload: inputs.own_overload,
            },
        );
        let (value, level) = (step.ldti.value, step.level);
        if let Some(last) = self.last_eval {
            self.seconds_by_level[level as usize] += now.saturating_sub(last) as f64 / 1e9;
        }
        self.last_eval = Some(now);
        self.evaluations += 1;
        self.sum += value;
        self.max = self.max.max(value);
        self.value = value;
        self.level = level;
        step.changes()
            .map(|(remedy, on)| Change {
                at_nanos: now,
                level,
                what: remedy.describe(on).to_string(),
            })
            .collect()
    }

    /// Whether an evaluation is due at `now`.
    pub fn due(&self, now: Nanos) -> bool {
        self.last_eval
            .is_none_or(|t| now >= t + self.period_nanos())
    }

    /// When the next evaluation is due.
    pub fn next_due(&self) -> Nanos {
        self.last_eval.map_or(0, |t| t + self.period_nanos())
    }

    /// The remedies in force.
    pub fn remedies(&self) -> Remedies {
        self.controller.remedies()
    }

    /// The last value and level.
    pub fn current(&self) -> (f64, Level) {
        (self.value, self.level)
    }

    /// Evaluations so far.
    pub fn evaluations(&self) -> u64 {
        self.evaluations
    }

    /// Mean and maximum of the index so far.
    pub fn mean_max(&self) -> (f64, f64) {
        if self.evaluations == 0 {
            (0.0, 0.0)
        } else {
            (self.sum / self.evaluations as f64, self.max)
        }
    }

    /// Seconds spent at each level: stable, degraded, critical.
    pub fn seconds_by_level(&self) -> [f64; 3] {
        self.seconds_by_level
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Nanos = 1_000_000;

    fn inputs(ratio: f64, served: f64) -> HealthInputs {
        HealthInputs {
            worst_p99_ratio: Some(ratio),
            drift_ppm: 3.0,
            served_fraction: served,
            own_overload: None,
        }
    }

    #[test]
    fn within_the_sla_is_stable_and_overload_escalates_then_recovers() {
        let mut h = HealthMonitor::new(&Policy::default());
        assert!(h.evaluate(0, &inputs(0.5, 1.0)).is_empty());
        assert_eq!(h.current().1, Level::Stable);
        // P99 at 1.8× the SLA and a third of the jobs late: degraded.
        let changes = h.evaluate(10 * MS, &inputs(1.8, 0.66));
        assert_eq!(h.current().1, Level::Degraded, "{:?}", h.current());
        assert!(h.remedies().camera_scaled && h.remedies().retransmit);
        assert_eq!(changes.len(), 2);
        // Far over the SLA and nothing served: critical, breaker open.
        h.evaluate(20 * MS, &inputs(5.0, 0.0));
        assert_eq!(h.current().1, Level::Critical);
        assert!(h.remedies().breaker_open && h.remedies().use_cache);
        // Healthy again: remedies stay for the recovery time, then go.
        h.evaluate(30 * MS, &inputs(0.5, 1.0));
        assert!(h.remedies().camera_scaled);
        h.evaluate(30 * MS + RECOVERY_NANOS + MS, &inputs(0.5, 1.0));
        assert_eq!(h.remedies(), Remedies::default());
        let s = h.seconds_by_level();
        assert!(s[0] > 1.0 && s[1] > 0.0 && s[2] > 0.0, "{s:?}");
        assert_eq!(h.evaluations(), 5);
    }

    #[test]
    fn evaluations_follow_the_policy_rate() {
        let h = HealthMonitor::new(&Policy::default());
        assert!(h.period_nanos() <= 10 * MS, "at least 100 Hz");
        assert!(h.due(0));
    }
}
