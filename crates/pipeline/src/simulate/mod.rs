//! A simulated run: the real run loop — the book of jobs, its cost model and decisions,
//! the branches, the health loop and its actions, the sources with their transports — on
//! a virtual clock, with the models replaced by simulated ones whose step costs are drawn
//! from the device profile (per model, rung and step) and whose answers are what each
//! input is known to hold. `mmsched sim run` is this.
//!
//! Why the real loop rather than a model of it: whatever the scheduler learns (rungs
//! chosen by expected correct results, steps, places, shadows, frames to come) reaches the
//! simulator with no code of its own, and a prediction differs from a run only where the
//! simulated models and lanes differ from the device — which is stated, not hidden:
//!
//! - a step's cost is drawn log-normal from the profile's median and P99 for its model,
//!   rung and step, else from the whole job's split evenly over its steps
//!   ([`draws`]); threads granted to a step do not shorten it;
//! - two computing steps side by side are slowed by the profile's co-run factor, and the
//!   scenario's background load takes cores as [`mmsched_world::load::LoadProfile`]
//!   says ([`lanes`]);
//! - an answer is right unless a mechanism makes it wrong (lines left unread) or a draw
//!   at the share the profile measured wrong for that rung does ([`ocr`], [`speech`]);
//! - the platform's signals (neighbours' CPU share, run-queue wait) are absent: a
//!   simulated device has no neighbours.
//!
//! Files: `draws.rs` the profile's figures and the seeded draws; `lanes.rs` a step's cost
//! on its lane; `ocr.rs`, `speech.rs` and `text.rs` the simulated models; `models.rs`
//! them as the run's [`crate::models::Models`].

mod draws;
mod lanes;
mod models;
mod ocr;
mod speech;
mod text;

use std::sync::{Arc, Mutex};

use mmsched_core::Modality;
use mmsched_runtime::sched::exec::{LaneQueue, MmschedExecutor, QueueOrder};
use mmsched_runtime::sched::lanes::standard_lanes;
use mmsched_runtime::sched::virtual_time::{VirtualClock, VirtualLanes};
use mmsched_runtime::sched::{Executor, SchedulerKind};
use mmsched_scenario::ModelKind;
use mmsched_world::load::LoadProfile;

use crate::config::{RunConfig, RunError};
use crate::inputs::DEVICE_EPOCH_NANOS;
use crate::platform::mmsched_setup;
use crate::run::{Observer, RunOutcome, RunParts, run_with};

pub use draws::Draws;
pub use models::SimulatedModels;

/// The class of scenario model `m`: a built-in kind, or the class its name registered (a
/// model of the user's own; `None` before it is registered).
fn class_of(m: &mmsched_scenario::Model) -> Option<crate::stats::Kind> {
    use crate::stats::Kind;
    Some(match m.kind {
        ModelKind::Vision => Kind::Vision,
        ModelKind::Vad => Kind::Vad,
        ModelKind::Asr => Kind::Asr,
        ModelKind::Llm => Kind::Llm,
        ModelKind::Onnx => crate::classes::find(&m.name)?,
    })
}

/// Runs `config` simulated: its scheduler's executor on virtual lanes (mmsched's, or the
/// `fifo` and `static-priority` queues on the same lanes), the simulated models, the real
/// loop. The same config and seed give the same run on any machine. `os-threads` is not
/// simulated: its threads share the cores by the OS's time slicing, which virtual lanes,
/// one step at a time each, do not model.
pub fn simulate(
    mut config: RunConfig,
    observer: &mut dyn Observer,
) -> Result<RunOutcome, RunError> {
    config.platform = false;
    config.simulated = true;
    let scenario = config.scenario.clone();
    for m in scenario
        .models()
        .iter()
        .filter(|m| m.kind == ModelKind::Onnx)
    {
        crate::classes::register(&m.name, &m.name, Modality::Image).map_err(|source| {
            RunError::OwnModelClass {
                name: m.name.clone(),
                source,
            }
        })?;
    }
    let profile = config.resolve_profile()?;
    let draws = Draws::new(&scenario, &profile, config.seed)
        .map_err(|source| RunError::Profile { source })?;
    let draws = Arc::new(Mutex::new(draws));
    let workers = scenario.device().workers.unwrap_or(2).max(1) as usize;
    let models = SimulatedModels::new(&scenario, workers, Arc::clone(&draws));
    let clock = VirtualClock::new(DEVICE_EPOCH_NANOS);
    let layout = standard_lanes(workers, false, &[]);
    let mut setup = mmsched_setup(&layout, false, !config.mechanisms.admission);
    // Threads do not shorten a simulated step: one thread per step, on any machine.
    setup.max_thread_grant = 1;
    // The general lanes come first, the voice-activity lane last.
    let compute_lanes = layout.lanes.len().saturating_sub(1).max(1);
    let cost = lanes::step_cost(
        draws,
        compute_lanes,
        profile.doc.device.logical_cores,
        LoadProfile::of(&scenario, config.duration_nanos),
        DEVICE_EPOCH_NANOS,
        config
            .conditions
            .clone()
            .map(|c| (c, DEVICE_EPOCH_NANOS + crate::run::START_LEAD_NANOS)),
    );
    let lanes = VirtualLanes::new(setup.lanes.len(), clock.clone(), cost);
    let mut exec: Box<dyn Executor> = match config.scheduler {
        SchedulerKind::Mmsched => Box::new(
            MmschedExecutor::with_lanes(&config.policy, &setup, clock.clone(), lanes)
                .map_err(|source| RunError::Scheduler { source })?,
        ),
        SchedulerKind::Fifo => Box::new(LaneQueue::new(QueueOrder::Fifo, &layout, lanes)),
        SchedulerKind::StaticPriority => {
            Box::new(LaneQueue::new(QueueOrder::StaticPriority, &layout, lanes))
        }
        SchedulerKind::OsThreads => {
            return Err(RunError::NotSimulated {
                scheduler: "os-threads",
            });
        }
    };
    if let Some(m) = exec.mmsched() {
        m.set_risk_boost(config.mechanisms.risk_boost);
        m.set_thread_grants(config.mechanisms.thread_grants);
    }
    let notes = vec![format!(
        "simulated: models drawn from {}, {workers} worker lane(s) in virtual time on {} core(s) (the profile's device; the scenario's background load is one thread beside them)",
        profile.source,
        lanes::device_cores(profile.doc.device.logical_cores, compute_lanes)
    )];
    let parts = RunParts {
        clock,
        exec,
        models: Arc::new(models),
        notes,
        signals: None,
    };
    run_with(config, parts, observer)
}
