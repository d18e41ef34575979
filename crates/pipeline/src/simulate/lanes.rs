//! What a step costs on the simulated device's lanes: the cost its model drew, slowed by
//! the work beside it as the device measured and as the scenario's background load takes
//! the cores.
//!
//! - Beside another computing step (two general lanes busy), by the class's co-run factor
//!   from the profile (`mmsched profile` times each model beside another): the models
//!   share caches and memory bandwidth.
//! - The scenario's background load (`background_load_pct`, `load_spike` episodes) takes
//!   the idle cores first and then a share of the busy ones
//!   ([`LoadProfile::stretch`]), with the busy count as the step starts. The device has
//!   the cores of the machine its profile was measured on (`device.logical_cores`), or
//!   one per general lane if that is more: a scenario of one worker on a two-core device
//!   leaves the load a core of its own, as a run there does.
//!
//! The voice-activity lane runs its tiny steps beside the others without slowing them, or
//! being slowed, as in the simulator before it drove the real loop.
//!
//! A run with changing conditions ([`crate::conditions`], a soak's heat, low-power mode
//! and assumed wear) multiplies every step's drawn cost, on every lane, by the cost
//! multiplier at the step's start: a throttled core is slower at everything.

use mmsched_core::time::Nanos;
use mmsched_runtime::sched::TaskInfo;
use mmsched_runtime::sched::virtual_time::{StepCost, StepStart};
use mmsched_world::load::LoadProfile;

use super::draws::{SharedDraws, lock};
use crate::conditions::ConditionSchedule;

/// The cores of the simulated device: those of the machine its profile was measured on
/// (`profile_cores`), at least one per general lane.
pub fn device_cores(profile_cores: u32, compute_lanes: usize) -> u32 {
    profile_cores.max(u32::try_from(compute_lanes).unwrap_or(u32::MAX))
}

/// The step costs of lanes `0..compute_lanes` (general) and the voice-activity lane after
/// them on a device of `cores` cores (at least one per general lane), with the load's time
/// counted from `origin_nanos`, under `conditions` counted from the inputs' start (given
/// with it) if the run has them.
pub fn step_cost(
    draws: SharedDraws,
    compute_lanes: usize,
    cores: u32,
    load: LoadProfile,
    origin_nanos: Nanos,
    conditions: Option<(ConditionSchedule, Nanos)>,
) -> StepCost {
    Box::new(move |_info: &TaskInfo, at: &StepStart| {
        // A step whose work left no cost (it failed before drawing) takes a nanosecond.
        let (work, corun) = lock(&draws).take().unwrap_or((1, 1.0));
        let work = match &conditions {
            None => work,
            Some((c, start)) => {
                let k = c.at(at.start_nanos.saturating_sub(*start)).cost_multiplier;
                (work as f64 * k.max(0.0)) as Nanos
            }
        };
        if at.lane >= compute_lanes {
            return work.max(1);
        }
        let busy = (0..compute_lanes).filter(|&l| at.is_busy(l)).count();
        let work = if busy > 1 {
            (work as f64 * corun) as Nanos
        } else {
            work
        };
        let cores = device_cores(cores, compute_lanes);
        let busy = u32::try_from(busy).unwrap_or(u32::MAX);
        let since = at.start_nanos.saturating_sub(origin_nanos);
        load.stretch(since, work, cores, busy).max(1)
    })
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use mmsched_core::Modality;
    use mmsched_core::arbiter::ClassId;
    use mmsched_scenario::Scenario;
    use mmsched_world::profile::Profile;

    use super::super::draws::Draws;
    use super::*;
    use crate::stats::Kind;

    const MS: Nanos = 1_000_000;

    fn info() -> TaskInfo {
        TaskInfo {
            class: ClassId(0),
            modality: Modality::Image,
            deadline_nanos: 0,
            predicted_cost_nanos: 0,
            importance: 1.0,
            committed: false,
            tag: 0,
        }
    }

    #[test]
    fn a_step_beside_another_is_slowed_and_the_load_takes_what_the_workers_leave() {
        let s = Scenario::load("ar-glasses").expect("shipped");
        let draws: SharedDraws = Arc::new(Mutex::new(
            Draws::new(&s, &Profile::reference(), 1).expect("figures"),
        ));
        let mut cost = step_cost(Arc::clone(&draws), 2, 2, LoadProfile::steady(0.5), 0, None);
        let mut at = |lane, busy_lanes| {
            lock(&draws).leave(Kind::Vision, 100 * MS);
            let start = StepStart {
                lane,
                start_nanos: 0,
                busy_lanes,
            };
            cost(&info(), &start)
        };
        // Alone on two cores: the half-core load runs on the idle one.
        assert_eq!(at(0, 0b001), 100 * MS);
        // The audio lane is never slowed.
        assert_eq!(at(2, 0b111), 100 * MS);
        // Both general lanes busy: each loses a quarter of its core to the load.
        let both = at(1, 0b011);
        assert!(both > 130 * MS && both < 135 * MS, "{both}");
    }

    #[test]
    fn one_lane_on_a_two_core_device_leaves_a_full_core_load_the_other_core() {
        let s = Scenario::load("ar-glasses").expect("shipped");
        let draws: SharedDraws = Arc::new(Mutex::new(
            Draws::new(&s, &Profile::reference(), 1).expect("figures"),
        ));
        let at = |cores| {
            let mut cost = step_cost(
                Arc::clone(&draws),
                1,
                cores,
                LoadProfile::steady(1.0),
                0,
                None,
            );
            lock(&draws).leave(Kind::Vision, 100 * MS);
            let start = StepStart {
                lane: 0,
                start_nanos: 0,
                busy_lanes: 0b01,
            };
            cost(&info(), &start)
        };
        // Two cores: the load spins on the one the worker leaves idle.
        assert_eq!(at(2), 100 * MS);
        // One core (or a profile that says fewer cores than lanes): they share it.
        let shared = at(1);
        assert!(shared > 195 * MS && shared < 205 * MS, "{shared}");
        assert_eq!(at(0), shared);
    }

    #[test]
    fn a_steps_cost_is_multiplied_by_the_conditions_at_its_start() {
        let s = Scenario::load("ar-glasses").expect("shipped");
        let draws: SharedDraws = Arc::new(Mutex::new(
            Draws::new(&s, &Profile::reference(), 1).expect("figures"),
        ));
        // Twice as slow from the inputs' second second on (they start at 10 s).
        let hot = ConditionSchedule::new(|t| crate::conditions::Conditions {
            cost_multiplier: if t >= 1_000_000_000 { 2.0 } else { 1.0 },
            ..Default::default()
        });
        let start = 10_000_000_000;
        let mut cost = step_cost(
            Arc::clone(&draws),
            2,
            2,
            LoadProfile::default(),
            0,
            Some((hot, start)),
        );
        let mut at = |start_nanos| {
            lock(&draws).leave(Kind::Vision, 100 * MS);
            let at = StepStart {
                lane: 0,
                start_nanos,
                busy_lanes: 0b001,
            };
            cost(&info(), &at)
        };
        assert_eq!(at(start + 500 * MS), 100 * MS);
        assert_eq!(at(start + 1_500 * MS), 200 * MS);
    }
}
