//! Conditions of the simulated device that change over a run: what a long soak's
//! environment (heat, battery, wear, radio) does to it, as a schedule over the run's time.
//!
//! A soak runs samples of its windows back to back in one simulated run; the schedule
//! says, for each moment of that run, what the device's environment is then. The run
//! carries each condition out through the mechanism that meets it on a device:
//!
//! - `cost_multiplier` stretches every step's cost on the simulated lanes
//!   (`simulate/lanes.rs`);
//! - `link_loss` loses events on the camera's and the microphone's transports, on top of
//!   the scenario's own loss ([`mmsched_runtime::source::delivery::Delivered`]);
//! - `clock_drift_ppm` makes every stream's clock run that much faster than its own drift
//!   (a warm crystal): its events' stamps move by the drift integrated over time, and the
//!   run's clock alignment estimates it as it would on a device — the drift the health
//!   loop reads;
//! - `battery_fraction` is the charge the scheduler is told at every health evaluation
//!   (battery saver prunes by it).

use std::sync::Arc;

use mmsched_core::time::Nanos;

/// The device's conditions at one moment.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Conditions {
    /// Every step costs this many times what its model drew (1: as drawn).
    pub cost_multiplier: f64,
    /// Probability that a camera frame or a microphone packet sent now is lost, on top of
    /// the stream's own loss.
    pub link_loss: f64,
    /// Drift of every stream's clock on top of its own, ppm.
    pub clock_drift_ppm: f64,
    /// The battery's charge, a fraction in [0, 1].
    pub battery_fraction: f64,
}

impl Default for Conditions {
    fn default() -> Self {
        Self {
            cost_multiplier: 1.0,
            link_loss: 0.0,
            clock_drift_ppm: 0.0,
            battery_fraction: 1.0,
        }
    }
}

/// The conditions at each moment of a run, by nanoseconds since the run's inputs started.
#[derive(Clone)]
pub struct ConditionSchedule(Arc<dyn Fn(Nanos) -> Conditions + Send + Sync>);

impl ConditionSchedule {
    /// A schedule that says `at(t)` at `t` nanoseconds after the inputs start.
    pub fn new(at: impl Fn(Nanos) -> Conditions + Send + Sync + 'static) -> Self {
        Self(Arc::new(at))
    }

    /// The conditions `since_start` nanoseconds after the inputs started.
    pub fn at(&self, since_start: Nanos) -> Conditions {
        (self.0)(since_start)
    }
}

impl std::fmt::Debug for ConditionSchedule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConditionSchedule")
            .field("at_start", &self.at(0))
            .finish()
    }
}
