//! The LDTI hook: the MCU evaluates the same health index (S3) as the Linux side, with
//! `mmsched-core`'s own math, so a level means the same thing on both.
//!
//! Evaluation is floating point; on a core without an FPU that is soft-float code, which is
//! why it lives in this hook and is only linked into firmware that calls it (the scheduler
//! itself is integer only).

use mmsched_core::ldti::{
    self, ActionSwitches, HealthAction, LdtiInputs, LdtiWeights, Level, LevelThresholds,
};

/// One evaluation: the index, its level and the action the policy asks for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Health {
    /// The index in [0, 1].
    pub ldti: f64,
    /// Its level.
    pub level: Level,
    /// What to do about it.
    pub action: HealthAction,
}

impl Health {
    /// The index in thousandths (0..=1000), for integer-only logs and traces.
    pub fn ldti_milli(&self) -> u32 {
        libm_round(self.ldti * 1000.0)
    }
}

fn libm_round(x: f64) -> u32 {
    // Non-negative by construction; `as` saturates NaN to 0.
    (x + 0.5) as u32
}

/// The policy half of the LDTI: weights, level thresholds and enabled actions, as in
/// `mmsched-core` (defaults are S3's α = 0.4, β = 0.35, γ = 0.25 and levels at 0.25 / 0.6).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct HealthMonitor {
    /// α, β, γ.
    pub weights: LdtiWeights,
    /// Where the levels start.
    pub thresholds: LevelThresholds,
    /// Which actions the policy enables.
    pub actions: ActionSwitches,
}

impl HealthMonitor {
    /// Evaluates the index on `inputs` and classifies it.
    #[inline(never)]
    pub fn evaluate(&self, inputs: &LdtiInputs) -> Health {
        let ldti = ldti::evaluate(&self.weights, inputs).value;
        let level = self.thresholds.classify(ldti);
        Health {
            ldti,
            level,
            action: self.actions.action_for(level),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_levels_as_the_core() {
        let m = HealthMonitor::default();
        let calm = LdtiInputs {
            latency_p99_nanos: 20_000_000,
            latency_ref_nanos: 20_000_000,
            drift_ppm: 0.0,
            throughput: 50.0,
            throughput_max: 50.0,
        };
        let h = m.evaluate(&calm);
        assert_eq!(h.level, Level::Stable);
        assert_eq!(h.ldti_milli(), 0);
        let bad = LdtiInputs {
            latency_p99_nanos: 60_000_000,
            drift_ppm: 800.0,
            throughput: 10.0,
            ..calm
        };
        let h = m.evaluate(&bad);
        let core = ldti::evaluate(&LdtiWeights::default(), &bad).value;
        assert_eq!(h.ldti, core);
        assert_eq!(h.level, LevelThresholds::default().classify(core));
        assert_eq!(h.level, Level::Critical);
        assert_eq!(h.action.level(), Level::Critical);
    }
}
