//! The health loop (S3): the LDTI evaluated at the policy's rate from what the run
//! measures, its level, and the actions the level calls for.
//!
//! Inputs, each over a sliding window: the latency term uses the worst P99 offset beyond
//! the SLA over all job kinds (L₀ is the SLA, and a P99 within it counts as no offset —
//! the index rises when deadlines are at risk, not when jobs are faster than needed); the
//! drift term uses the largest clock drift the aligners estimate; the throughput term uses
//! the share of jobs served in time. Adaptive threshold compensation (S3) scales the level
//! thresholds when the policy enables it.
//!
//! Actions switch on at once and off only after the level has stayed lower for
//! [`RECOVERY_NANOS`], so one good sample does not undo a remedy.

use mmsched_core::ldti::{self, AdaptiveThreshold, HealthAction, LdtiInputs, Level};
use mmsched_core::policy::{LdtiPolicy, Policy};
use mmsched_core::time::Nanos;

/// How long the level must stay lower before an action is withdrawn.
pub const RECOVERY_NANOS: Nanos = 1_000_000_000;

/// What the loop measured for one evaluation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HealthInputs {
    /// Worst sliding P99 of latency / SLA over the job kinds (`None`: no samples).
    pub worst_p99_ratio: Option<f64>,
    /// Largest estimated clock drift among the streams, ppm.
    pub drift_ppm: f64,
    /// Share of recent jobs served in time, 0 … 1.
    pub served_fraction: f64,
}

/// The remedies in force.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Remedies {
    /// Camera frames are decimated to half the rate (degraded, `scale_frequency`).
    pub camera_scaled: bool,
    /// Missing audio packets are re-requested (degraded, `retransmit`).
    pub retransmit: bool,
    /// The heaviest branch's breaker is open (critical, `circuit_break`).
    pub breaker_open: bool,
    /// Skipped branches answer from the result cache, marked stale (critical, `use_cache`).
    pub use_cache: bool,
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
    policy: LdtiPolicy,
    adaptive: AdaptiveThreshold,
    level: Level,
    value: f64,
    remedies: Remedies,
    /// Last time each level (by index) was seen.
    last_seen: [Option<Nanos>; 3],
    last_eval: Option<Nanos>,
    evaluations: u64,
    sum: f64,
    max: f64,
    seconds_by_level: [f64; 3],
}

impl HealthMonitor {
    /// A monitor following `policy`'s `[ldti]` section.
    pub fn new(policy: &Policy) -> Self {
        let p = *policy.ldti();
        Self {
            adaptive: AdaptiveThreshold::new(p.adaptive_window as usize, p.adaptive_smoothing),
            policy: p,
            level: Level::Stable,
            value: 0.0,
            remedies: Remedies::default(),
            last_seen: [None; 3],
            last_eval: None,
            evaluations: 0,
            sum: 0.0,
            max: 0.0,
            seconds_by_level: [0.0; 3],
        }
    }

    /// Follows a new policy from the next evaluation on.
    pub fn set_policy(&mut self, policy: &Policy) {
        self.policy = *policy.ldti();
    }

    /// Time between two evaluations, nanoseconds.
    pub fn period_nanos(&self) -> Nanos {
        1_000_000_000 / u64::from(self.policy.evaluate_hz.max(1))
    }

    /// Evaluates at `now` and updates the remedies; returns what changed.
    pub fn evaluate(&mut self, now: Nanos, inputs: &HealthInputs) -> Vec<Change> {
        let offset = inputs.worst_p99_ratio.map_or(0.0, |r| (r - 1.0).max(0.0));
        let b = ldti::evaluate(
            &self.policy.weights,
            &LdtiInputs {
                latency_p99_nanos: ((1.0 + offset.min(1e6)) * 1e6) as u64,
                latency_ref_nanos: 1_000_000,
                drift_ppm: inputs.drift_ppm,
                throughput: inputs.served_fraction,
                throughput_max: 1.0,
            },
        );
        let value = b.value;
        let factor = if self.policy.adaptive_enabled {
            self.adaptive.update(value)
        } else {
            1.0
        };
        let level = self.policy.thresholds.scaled(factor).classify(value);
        if let Some(last) = self.last_eval {
            self.seconds_by_level[level as usize] += now.saturating_sub(last) as f64 / 1e9;
        }
        self.last_eval = Some(now);
        self.evaluations += 1;
        self.sum += value;
        self.max = self.max.max(value);
        self.value = value;
        self.level = level;
        for l in 0..=level as usize {
            self.last_seen[l] = Some(now);
        }
        self.update_remedies(now)
    }

    fn update_remedies(&mut self, now: Nanos) -> Vec<Change> {
        let recent = |l: Level| {
            self.last_seen[l as usize].is_some_and(|t| now.saturating_sub(t) < RECOVERY_NANOS)
        };
        let degraded = self.policy.actions.action_for(Level::Degraded);
        let critical = self.policy.actions.action_for(Level::Critical);
        let (scale, retransmit) = match degraded {
            HealthAction::Degraded {
                scale_frequency,
                retransmit,
            } => (scale_frequency, retransmit),
            _ => (false, false),
        };
        let (breaker, cache) = match critical {
            HealthAction::Critical {
                circuit_break,
                use_cache,
            } => (circuit_break, use_cache),
            _ => (false, false),
        };
        let in_degraded = recent(Level::Degraded);
        let in_critical = self.level == Level::Critical
            || (self.remedies.breaker_open && recent(Level::Critical));
        let next = Remedies {
            camera_scaled: scale && in_degraded,
            retransmit: retransmit && in_degraded,
            breaker_open: breaker && in_critical,
            use_cache: cache && in_critical,
        };
        let mut changes = Vec::new();
        let mut note = |on: bool, was: bool, what_on: &str, what_off: &str| {
            if on != was {
                changes.push(Change {
                    at_nanos: now,
                    level: self.level,
                    what: (if on { what_on } else { what_off }).to_string(),
                });
            }
        };
        let prev = self.remedies;
        note(
            next.camera_scaled,
            prev.camera_scaled,
            "camera rate halved",
            "camera rate restored",
        );
        note(
            next.retransmit,
            prev.retransmit,
            "audio retransmission on",
            "audio retransmission off",
        );
        note(
            next.breaker_open,
            prev.breaker_open,
            "breaker opened on the heaviest branch",
            "breaker closed",
        );
        note(
            next.use_cache,
            prev.use_cache,
            "answers from cache",
            "cache answers off",
        );
        self.remedies = next;
        changes
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
        self.remedies
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
