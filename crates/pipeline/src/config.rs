//! What one run is: the scenario, the policy, the scheduler and how long.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::Receiver;

use mmsched_backends::BackendError;
use mmsched_core::policy::Policy;
use mmsched_core::time::Nanos;
use mmsched_runtime::sched::SchedulerKind;
use mmsched_scenario::Scenario;

/// Everything one run needs.
#[derive(Debug)]
pub struct RunConfig {
    /// The scenario (streams, rates, SLAs, episodes).
    pub scenario: Scenario,
    /// The scheduling policy at the start (hot reloads arrive on `policy_updates`).
    pub policy: Policy,
    /// Which scheduler runs the jobs.
    pub scheduler: SchedulerKind,
    /// How long to feed inputs, in nanoseconds (jobs in flight then finish).
    pub duration_nanos: Nanos,
    /// Seed of every random choice (jitter, loss).
    pub seed: u64,
    /// Ask the OS for resource groups, real-time priority and pinning (mmsched only;
    /// refused requests are noted once and the run goes on without them).
    pub platform: bool,
    /// Write an mmtrace file of the run here.
    pub trace_path: Option<PathBuf>,
    /// Keep every decision of the mmsched scheduler for replay in the simulator.
    pub record_steps: bool,
    /// New policies to apply between decisions (from the HTTP API or a policy URL).
    pub policy_updates: Option<Receiver<Policy>>,
    /// Set to stop early (Ctrl-C): the run ends as if its duration had passed.
    pub stop: Arc<AtomicBool>,
}

impl RunConfig {
    /// A run of `scenario` for its own duration and seed under `scheduler` with `policy`.
    pub fn new(scenario: Scenario, policy: Policy, scheduler: SchedulerKind) -> Self {
        let duration_nanos = (scenario.duration_s().max(0.0) * 1e9) as Nanos;
        let seed = scenario.seed();
        Self {
            scenario,
            policy,
            scheduler,
            duration_nanos,
            seed,
            platform: true,
            trace_path: None,
            record_steps: false,
            policy_updates: None,
            stop: Arc::new(AtomicBool::new(false)),
        }
    }
}

/// Why a run could not start or finish.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// A model could not be loaded (missing files say which command fetches them).
    #[error("cannot load the {model} model")]
    Model {
        /// Which model.
        model: &'static str,
        /// Why.
        source: BackendError,
    },
    /// A cached model file is not the pinned one.
    #[error(transparent)]
    ModelFile(mmsched_models::ModelError),
    /// The scenario asks for something the runtime cannot build.
    #[error("scenario {scenario}: {reason}")]
    Scenario {
        /// Its name.
        scenario: String,
        /// What is wrong and how to fix it.
        reason: String,
    },
    /// The scheduler could not be set up.
    #[error("cannot set up the scheduler: {0}")]
    Scheduler(String),
    /// Writing the trace failed.
    #[error("cannot write the trace file {}", path.display())]
    Trace {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}
