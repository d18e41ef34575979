//! Where mmsched's executor runs the steps it starts: on worker threads ([`ThreadLanes`]),
//! or, in tests, on lanes in virtual time ([`crate::sched::virtual_time::VirtualLanes`]).
//! The decisions are the same either way; only the place the work runs differs.

use std::sync::mpsc::channel;
use std::time::Duration;

use mmsched_core::arbiter::JobId;
use mmsched_core::time::Clock;

use super::{Completions, TaskInfo};
use crate::sched::work::Work;
use crate::sched::worker::{Completion, LaneConfig, WorkerPool};

/// Lanes that run one step at a time each and report the steps that ended.
pub trait StepLanes: Send {
    /// Starts a step of `job` (described by `info`) on `lane` with `threads` intra-op
    /// threads. Returns the work if the lane cannot take it (its thread has gone).
    fn start(
        &mut self,
        lane: usize,
        job: JobId,
        info: &TaskInfo,
        work: Box<dyn Work>,
        threads: usize,
    ) -> Result<(), Box<dyn Work>>;

    /// Every step that has ended since the last call.
    fn finished(&mut self) -> Vec<Completion>;

    /// Blocks until a step ends or `timeout` passes (whichever is first).
    fn wait(&mut self, timeout: Duration);

    /// What the lanes' set-up did (pinning, real time, resource groups): log once.
    fn notes(&self) -> Vec<String>;
}

/// One worker thread per lane (see [`WorkerPool`]).
#[derive(Debug)]
pub struct ThreadLanes {
    pool: WorkerPool,
    done: Completions,
}

impl ThreadLanes {
    /// Starts one thread per entry of `lanes` (at least one), timing steps with `clock`.
    pub fn start<C: Clock + Clone + Send + 'static>(
        lanes: &[LaneConfig],
        clock: C,
        #[cfg(target_os = "linux")] cgroups: Option<crate::platform::cgroup::CgroupHandle>,
    ) -> Self {
        let (tx, done) = channel();
        let lanes = if lanes.is_empty() {
            vec![LaneConfig::default()]
        } else {
            lanes.to_vec()
        };
        let pool = WorkerPool::start(
            &lanes,
            clock,
            tx,
            #[cfg(target_os = "linux")]
            cgroups,
        );
        Self {
            pool,
            done: Completions::new(done),
        }
    }
}

impl StepLanes for ThreadLanes {
    fn start(
        &mut self,
        lane: usize,
        job: JobId,
        _info: &TaskInfo,
        work: Box<dyn Work>,
        threads: usize,
    ) -> Result<(), Box<dyn Work>> {
        self.pool.run_granted(lane, job, work, threads)
    }

    fn finished(&mut self) -> Vec<Completion> {
        self.done.take()
    }

    fn wait(&mut self, timeout: Duration) {
        self.done.wait(timeout);
    }

    fn notes(&self) -> Vec<String> {
        self.pool.notes().to_vec()
    }
}
