//! The MCU's share of the policy document (`policies/*.toml`): task priorities, slot
//! geometry and the LDTI settings, taken from the same [`Policy`] the Linux side runs and
//! computed with `mmsched-core`'s own code.
//!
//! Firmware build scripts call this on the host (see `firmware/mcu-demo/build.rs`) and
//! write the answers as constants, so a policy change rebuilds the firmware with it and
//! the two sides cannot drift apart.
//!
//! **Priorities.** The policy defines a task's priority as the S2 score
//! `w_d · normalize(1/δ) + w_i · γ + w_b · η/η_max`. A fixed-priority kernel evaluates it
//! once per task, with the task's relative deadline as δ (normalised over the MCU's task
//! set, as the arbiter does over its job set), its class's importance γ and a full battery,
//! using [`Arbiter`] itself, and maps the score in [0, 1] to the nearest of the 32 levels.
//! Tasks whose scores round to the same level are FIFO peers.

use mmsched_core::Modality;
use mmsched_core::arbiter::{Arbiter, Job, JobId};
use mmsched_core::policy::Policy;

use crate::health::HealthMonitor;
use crate::task::{PRIORITY_LEVELS, Priority};

/// One MCU task as the policy sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct McuTask<'a> {
    /// The job class whose importance γ applies (`vad`, `imu`, …; unlisted classes take the
    /// policy's `default`).
    pub class: &'a str,
    /// What it handles (recorded, as on the Linux side; no decision looks at it).
    pub modality: Modality,
    /// Its relative deadline δ (for a periodic task, its period), in microseconds.
    pub deadline_micros: u64,
}

/// The priority level of each task, in order.
pub fn priorities<const T: usize>(policy: &Policy, tasks: &[McuTask<'_>; T]) -> [Priority; T] {
    let mut arbiter = Arbiter::new(policy);
    let mut jobs = [Job {
        id: JobId(0),
        class: arbiter.class("default"),
        modality: Modality::Log,
        deadline_nanos: 0,
        predicted_cost_nanos: 0,
        importance: 0.0,
        committed: false,
    }; T];
    for (i, (job, task)) in jobs.iter_mut().zip(tasks).enumerate() {
        *job = Job {
            id: JobId(i as u64),
            class: arbiter.class(task.class),
            modality: task.modality,
            deadline_nanos: task.deadline_micros.saturating_mul(1_000),
            predicted_cost_nanos: 0,
            importance: policy.importance(task.class),
            committed: false,
        };
    }
    let bounds = arbiter.bounds(jobs.iter(), 0);
    jobs.map(|job| level_of(arbiter.assess(&job, 0, 1.0, &bounds).score))
}

/// The level nearest to `score` ∈ [0, 1] (scores outside are clamped).
pub fn level_of(score: f64) -> Priority {
    let top = (PRIORITY_LEVELS - 1) as f64;
    let level = (score.clamp(0.0, 1.0) * top + 0.5) as u8;
    Priority::new(level).unwrap_or(Priority::MAX)
}

/// The slot length in ticks of a timer running at `ticks_per_micro`.
pub fn slot_ticks(policy: &Policy, ticks_per_micro: u32) -> u64 {
    policy
        .slots()
        .slot_len_micros
        .saturating_mul(u64::from(ticks_per_micro))
}

/// The MCU's booking window: the policy's horizon, capped at `max_slots` (the RAM the
/// firmware gives its slot book).
pub fn slot_window(policy: &Policy, max_slots: usize) -> usize {
    usize::try_from(policy.slots().horizon_slots).map_or(max_slots, |h| h.min(max_slots))
}

/// The LDTI weights, level thresholds and enabled actions.
pub fn health_monitor(policy: &Policy) -> HealthMonitor {
    let l = policy.ldti();
    HealthMonitor {
        weights: l.weights,
        thresholds: l.thresholds,
        actions: l.actions,
    }
}
