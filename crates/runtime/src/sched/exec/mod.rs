//! Executors: who decides which job runs where, and when.
//!
//! [`Executor`] is the seam the runtime's main loop talks to: it submits jobs as their
//! inputs arrive, polls for what happened, and resubmits a job that yielded (an LLM after
//! one decode step) as a new job with the same deadline. Four executors sit behind it, so
//! a comparison runs on identical inputs in one binary:
//!
//! - [`MmschedExecutor`] (`mmsched`): the core's shared decision step — admission by
//!   score, shedding under overload, dispatch by the policy's rule (EDF by default) into
//!   reserved slots, standing reservations for periodic streams, a real-time audio worker;
//! - [`ThreadPerModel`] (`os-threads`): one thread per model, each draining its own
//!   first-come queue; the operating system decides who gets a core — what most
//!   multimodal applications do today;
//! - [`SharedQueue`] in first-come order (`fifo`): one queue, workers take the oldest job;
//! - [`SharedQueue`] by modality (`static-priority`): audio before vision before text,
//!   first-come within a modality; no preemption.

mod boost;
mod grant;
mod mmsched;
mod queue;
mod queue_lanes;
mod steps;
mod threads;

use std::fmt;
use std::str::FromStr;
use std::sync::mpsc::Receiver;
use std::time::Duration;

use mmsched_core::Modality;
use mmsched_core::arbiter::{ClassId, JobId};
use mmsched_core::policy::Policy;
use mmsched_core::scheduler::SchedulerError;
use mmsched_core::time::Nanos;

pub use boost::{RiskBoost, SetWeight, WeightError};
pub use grant::GrantWithdrawal;
pub use mmsched::{MmschedExecutor, MmschedSetup, thread_grant};
#[cfg(test)]
mod tests;
pub use queue::{QueueOrder, SharedQueue};
pub use queue_lanes::LaneQueue;
pub use steps::{StepLanes, ThreadLanes};
pub use threads::{ClassLanes, ThreadPerModel};

use super::work::{StepOutcome, Work, WorkError};
use super::worker::Completion;

/// Which scheduler runs the jobs (`--scheduler`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SchedulerKind {
    /// mmsched's unified scheduler (the default).
    Mmsched,
    /// One thread per model; the OS decides.
    OsThreads,
    /// One shared first-come queue.
    Fifo,
    /// One shared queue ordered by a fixed priority per modality.
    StaticPriority,
}

impl SchedulerKind {
    /// All four, mmsched first (the order of `bench e2e`).
    pub const ALL: [SchedulerKind; 4] = [
        SchedulerKind::Mmsched,
        SchedulerKind::OsThreads,
        SchedulerKind::Fifo,
        SchedulerKind::StaticPriority,
    ];

    /// The command-line and JSON name.
    pub fn as_str(self) -> &'static str {
        match self {
            SchedulerKind::Mmsched => "mmsched",
            SchedulerKind::OsThreads => "os-threads",
            SchedulerKind::Fifo => "fifo",
            SchedulerKind::StaticPriority => "static-priority",
        }
    }
}

impl fmt::Display for SchedulerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An unknown scheduler name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown scheduler {0:?}: use one of mmsched, os-threads, fifo, static-priority")]
pub struct UnknownScheduler(pub String);

impl FromStr for SchedulerKind {
    type Err = UnknownScheduler;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        SchedulerKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| UnknownScheduler(s.to_string()))
    }
}

/// What the scheduler knows about a job (everything but its work).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TaskInfo {
    /// Its class (from [`Executor::class`]).
    pub class: ClassId,
    /// Its modality.
    pub modality: Modality,
    /// Absolute deadline on the device timeline.
    pub deadline_nanos: Nanos,
    /// Predicted cost of its next step.
    pub predicted_cost_nanos: Nanos,
    /// Semantic importance γ in [0, 1].
    pub importance: f64,
    /// A later step of work under way: mmsched's admission never sheds it
    /// ([`mmsched_core::arbiter::Job::committed`]). The queue baselines never shed.
    pub committed: bool,
    /// A number the caller uses to find its own record of the job again.
    pub tag: u64,
}

/// A job to run: what it is and its work.
pub struct Task {
    /// The job's description.
    pub info: TaskInfo,
    /// Its work.
    pub work: Box<dyn Work>,
}

impl fmt::Debug for Task {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.info.fmt(f)
    }
}

/// What happened to a submitted job.
pub enum ExecEvent {
    /// A step ended (the job finished, yielded, or failed).
    Done {
        /// The job.
        job: JobId,
        /// Its description.
        info: TaskInfo,
        /// The worker that ran it.
        worker: usize,
        /// What the step did.
        outcome: Result<StepOutcome, WorkError>,
        /// The work, handed back (resubmit it when it yielded).
        work: Box<dyn Work>,
        /// When the step started on the device timeline.
        started_nanos: Nanos,
        /// When it ended.
        ended_nanos: Nanos,
    },
    /// Shed by admission under overload.
    Shed {
        /// The job.
        job: JobId,
        /// Its description.
        info: TaskInfo,
        /// Its work, handed back (a job of many steps may be submitted again later, when
        /// its deadline still allows); `None` when the executor no longer has it.
        work: Option<Box<dyn Work>>,
    },
    /// Refused by battery saver: the caller takes the light path.
    Pruned {
        /// The job.
        job: JobId,
        /// Its description.
        info: TaskInfo,
    },
}

impl fmt::Debug for ExecEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExecEvent::Done {
                job,
                info,
                worker,
                outcome,
                started_nanos,
                ended_nanos,
                ..
            } => f
                .debug_struct("Done")
                .field("job", job)
                .field("info", info)
                .field("worker", worker)
                .field("outcome", outcome)
                .field("started_nanos", started_nanos)
                .field("ended_nanos", ended_nanos)
                .finish(),
            ExecEvent::Shed { job, info, .. } => f
                .debug_struct("Shed")
                .field("job", job)
                .field("info", info)
                .finish(),
            ExecEvent::Pruned { job, info } => f
                .debug_struct("Pruned")
                .field("job", job)
                .field("info", info)
                .finish(),
        }
    }
}

/// A scheduler that runs jobs on worker threads. See the module docs.
pub trait Executor: Send {
    /// Which scheduler this is.
    fn kind(&self) -> SchedulerKind;

    /// The id of a job class by name (created on first use).
    fn class(&mut self, name: &str) -> ClassId;

    /// Hands in a job that became runnable at `now_nanos`.
    fn submit(&mut self, now_nanos: Nanos, task: Task) -> JobId;

    /// Collects what happened since the last call into `out` and makes the decisions due
    /// at `now_nanos` (starting jobs on idle workers).
    fn poll(&mut self, now_nanos: Nanos, out: &mut Vec<ExecEvent>);

    /// Blocks until a step ends or `timeout` passes (whichever is first).
    fn wait(&mut self, timeout: Duration);

    /// Jobs submitted and not yet done, shed or pruned.
    fn in_flight(&self) -> usize;

    /// The steps running on the workers now: each one's tag and when it started. A step
    /// cannot be preempted, so a job that arrives behind it waits for its end however
    /// soon it is due. The baselines, which the book does not ask, tell nothing.
    fn running(&self) -> Vec<(u64, Nanos)> {
        Vec::new()
    }

    /// Worker threads running work right now, per worker (1.0 busy, 0.0 idle), or the
    /// share of the coming window booked on each worker's slot table where there is one.
    fn occupancy(&self, now_nanos: Nanos) -> Vec<f64>;

    /// Wall time spent making scheduling decisions so far, in nanoseconds: in the caller's
    /// thread ([`Executor::poll`]) for mmsched, on the worker threads choosing their next
    /// job for the shared-queue baselines ([`Executor::worker_side_decisions`]).
    fn decision_nanos(&self) -> u64;

    /// Whether [`Executor::decision_nanos`] is spent on the worker threads, outside the
    /// caller's calls (so the caller adds it to its own scheduling overhead).
    fn worker_side_decisions(&self) -> bool {
        false
    }

    /// What the workers' set-up did (pinning, real time, resource groups): log once.
    fn notes(&self) -> Vec<String>;

    /// mmsched's own controls, which the baselines do not have (`None` for them).
    fn mmsched(&mut self) -> Option<&mut dyn MmschedControl> {
        None
    }
}

/// What only mmsched's executor does: standing reservations, policy and battery input,
/// the decision log. The baselines have no slot tables, no policy and no log, so they do
/// not implement it; a caller reaches it through [`Executor::mmsched`].
pub trait MmschedControl {
    /// Books a standing reservation for a periodic stream. `cost_nanos` is the predicted
    /// cost per period; a job of the stream is due `due_after_nanos` after its occurrence
    /// starts, and until then the occurrence yields to jobs due earlier (`None`: never;
    /// see [`mmsched_core::scheduler::StreamBooking`]). On an error the stream has no
    /// reservation.
    fn reserve_stream(
        &mut self,
        class: ClassId,
        modality: Modality,
        first_nanos: Nanos,
        period_nanos: Nanos,
        cost_nanos: Nanos,
        due_after_nanos: Option<Nanos>,
    ) -> Result<(), SchedulerError>;

    /// Cancels a stream's standing reservation.
    fn cancel_stream(&mut self, class: ClassId);

    /// Whether a step at risk of missing its deadline raises its worker's resource group
    /// CPU weight while it runs (on by default; off to measure what it buys).
    fn set_risk_boost(&mut self, on: bool);

    /// Whether a lone step may be granted more than one thread ([`thread_grant`]; on by
    /// default, up to the set-up's `max_thread_grant`; off to measure what it buys).
    fn set_thread_grants(&mut self, on: bool);

    /// What raising resource groups for steps at risk did (`None` without resource
    /// groups, or when it is off).
    fn risk_boost_note(&self) -> Option<String>;

    /// What the thread grants did: steps granted more than one thread and how many took
    /// longer than predicted ([`GrantWithdrawal`]; `None` when none was granted).
    fn thread_grant_note(&self) -> Option<String>;

    /// Applies a new policy from the next decision on.
    fn set_policy(&mut self, policy: &Policy);

    /// Tells the scheduler the battery level, a fraction in [0, 1].
    fn set_battery(&mut self, fraction: f64);

    /// Every decision step recorded so far (with `record_steps` only).
    fn take_step_log(&mut self) -> Vec<mmsched_core::scheduler::LogEntry>;
}

/// Finished steps coming back from the workers, with the one a [`Executor::wait`]
/// received kept for the next poll.
#[derive(Debug)]
pub(crate) struct Completions {
    rx: Receiver<Completion>,
    stash: Vec<Completion>,
}

impl Completions {
    pub(crate) fn new(rx: Receiver<Completion>) -> Self {
        Self {
            rx,
            stash: Vec::new(),
        }
    }

    /// Every step finished so far.
    pub(crate) fn take(&mut self) -> Vec<Completion> {
        self.stash.extend(self.rx.try_iter());
        std::mem::take(&mut self.stash)
    }

    /// Reports every finished step of a job in `infos` (taking it out) into `out`.
    pub(crate) fn report(
        &mut self,
        infos: &mut std::collections::HashMap<JobId, TaskInfo>,
        out: &mut Vec<ExecEvent>,
    ) {
        for c in self.take() {
            if let Some(info) = infos.remove(&c.job) {
                out.push(done_event(c, info));
            }
        }
    }

    /// Blocks until a step finishes or `timeout` passes.
    pub(crate) fn wait(&mut self, timeout: Duration) {
        if self.stash.is_empty()
            && let Ok(c) = self.rx.recv_timeout(timeout)
        {
            self.stash.push(c);
        }
    }
}

/// The event of a finished step of the job described by `info`.
pub(crate) fn done_event(c: Completion, info: TaskInfo) -> ExecEvent {
    ExecEvent::Done {
        job: c.job,
        info,
        worker: c.lane,
        outcome: c.outcome,
        work: c.work,
        started_nanos: c.started_nanos,
        ended_nanos: c.ended_nanos,
    }
}

/// Names of classes for the executors that have no arbiter.
#[derive(Debug, Default)]
pub(crate) struct ClassNames(Vec<String>);

impl ClassNames {
    pub(crate) fn id(&mut self, name: &str) -> ClassId {
        if let Some(i) = self.0.iter().position(|n| n == name) {
            return ClassId(i as u32);
        }
        self.0.push(name.to_string());
        ClassId(self.0.len() as u32 - 1)
    }

    /// The name of `id` (empty for an id never given out).
    pub(crate) fn name(&self, id: ClassId) -> &str {
        self.0.get(id.0 as usize).map_or("", String::as_str)
    }
}

/// How long a worker thread waits for the next job before checking for shutdown.
pub(crate) const IDLE_POLL: Duration = Duration::from_millis(50);
