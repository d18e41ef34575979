//! mmsched's executor: the core's shared decision step carried out on worker threads.

use std::collections::HashMap;
use std::sync::mpsc::channel;
use std::time::Duration;

use mmsched_core::Modality;
use mmsched_core::arbiter::{ClassId, Job, JobId};
use mmsched_core::policy::Policy;
use mmsched_core::scheduler::{Decision, LogEntry, SchedEvent, Scheduler, SchedulerError};
use mmsched_core::slots::SlotState;
use mmsched_core::time::{Clock, NANOS_PER_MICRO, Nanos};

use super::{
    Completions, ExecEvent, Executor, MmschedControl, SchedulerKind, Task, TaskInfo, done_event,
};
use crate::sched::worker::{LaneConfig, WorkerPool};

/// How far ahead slot occupancy is measured, in nanoseconds.
const OCCUPANCY_WINDOW_NANOS: Nanos = 200_000_000;

/// How the workers are laid out.
#[derive(Debug, Clone, Default)]
pub struct MmschedSetup {
    /// One entry per worker thread.
    pub lanes: Vec<LaneConfig>,
    /// Workers restricted to some job classes, by class name (e.g. the audio worker).
    pub restricted: Vec<(u32, Vec<String>)>,
    /// Record every call on the scheduling core for replay
    /// ([`MmschedControl::take_step_log`]).
    pub record_steps: bool,
    /// Admission may shed jobs under overload (off: every job is admitted; for measuring
    /// what shedding is worth).
    pub no_shedding: bool,
}

struct Entry {
    info: TaskInfo,
    work: Option<Box<dyn Work>>,
}

use crate::sched::work::Work;

/// The unified scheduler on real threads. See the [module docs](super).
pub struct MmschedExecutor<C: Clock> {
    sched: Scheduler,
    pool: WorkerPool,
    done: Completions,
    jobs: HashMap<JobId, Entry>,
    arrivals: Vec<SchedEvent>,
    decisions: Vec<Decision>,
    next_id: u64,
    decision_nanos: u64,
    clock: C,
    /// Standing reservations by class: the worker that holds them.
    streams: HashMap<ClassId, u32>,
}

impl<C: Clock> std::fmt::Debug for MmschedExecutor<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MmschedExecutor")
            .field("workers", &self.sched.workers())
            .field("in_flight", &self.jobs.len())
            .finish()
    }
}

impl<C: Clock + Clone + Send + 'static> MmschedExecutor<C> {
    /// Starts the workers of `setup` under `policy`, with slot tables from `clock`'s now.
    pub fn new(
        policy: &Policy,
        setup: &MmschedSetup,
        clock: C,
        #[cfg(target_os = "linux")] cgroups: Option<crate::platform::cgroup::CgroupHandle>,
    ) -> Result<Self, SchedulerError> {
        let workers = u32::try_from(setup.lanes.len().max(1)).unwrap_or(u32::MAX);
        let mut sched = Scheduler::new(policy, workers, clock.now_nanos())?;
        if setup.record_steps {
            sched.record();
        }
        if setup.no_shedding {
            sched.set_shedding(false);
        }
        for (worker, classes) in &setup.restricted {
            let ids: Vec<ClassId> = classes.iter().map(|c| sched.class(c)).collect();
            sched.restrict_worker(*worker, &ids)?;
        }
        let (tx, done) = channel();
        let lanes = if setup.lanes.is_empty() {
            vec![LaneConfig::default()]
        } else {
            setup.lanes.clone()
        };
        let pool = WorkerPool::start(
            &lanes,
            clock.clone(),
            tx,
            #[cfg(target_os = "linux")]
            cgroups,
        );
        Ok(Self {
            sched,
            pool,
            done: Completions::new(done),
            jobs: HashMap::new(),
            arrivals: Vec::new(),
            decisions: Vec::new(),
            next_id: 0,
            decision_nanos: 0,
            clock,
            streams: HashMap::new(),
        })
    }

    /// The scheduling core (classes, queue length).
    pub fn scheduler(&self) -> &Scheduler {
        &self.sched
    }
}

impl<C: Clock + Clone + Send + 'static> Executor for MmschedExecutor<C> {
    fn kind(&self) -> SchedulerKind {
        SchedulerKind::Mmsched
    }

    fn class(&mut self, name: &str) -> ClassId {
        self.sched.class(name)
    }

    fn submit(&mut self, _now_nanos: Nanos, task: Task) -> JobId {
        let id = JobId(self.next_id);
        self.next_id += 1;
        let i = task.info;
        self.arrivals.push(SchedEvent::Arrive(Job {
            id,
            class: i.class,
            modality: i.modality,
            deadline_nanos: i.deadline_nanos,
            predicted_cost_nanos: i.predicted_cost_nanos,
            importance: i.importance,
        }));
        self.jobs.insert(
            id,
            Entry {
                info: i,
                work: Some(task.work),
            },
        );
        id
    }

    fn poll(&mut self, now_nanos: Nanos, out: &mut Vec<ExecEvent>) {
        let mut events = std::mem::take(&mut self.arrivals);
        for c in self.done.take() {
            events.push(SchedEvent::Finish {
                worker: c.lane as u32,
                job: c.job,
            });
            if let Some(e) = self.jobs.remove(&c.job) {
                out.push(done_event(c, e.info));
            }
        }
        if events.is_empty() && self.sched.queued() == 0 {
            self.arrivals = events;
            return;
        }
        let t0 = self.clock.now_nanos();
        self.decisions.clear();
        self.sched.step(now_nanos, &events, &mut self.decisions);
        self.decision_nanos += self.clock.now_nanos().saturating_sub(t0);
        events.clear();
        self.arrivals = events;
        for d in std::mem::take(&mut self.decisions) {
            match d {
                Decision::Admit { .. } => {}
                Decision::Shed { job } => {
                    if let Some(e) = self.jobs.remove(&job) {
                        out.push(ExecEvent::Shed {
                            job,
                            info: e.info,
                            work: e.work,
                        });
                    }
                }
                Decision::Prune { job } => {
                    if let Some(e) = self.jobs.remove(&job) {
                        out.push(ExecEvent::Pruned { job, info: e.info });
                    }
                }
                Decision::Start { worker, job, .. } => {
                    let Some(work) = self.jobs.get_mut(&job).and_then(|e| e.work.take()) else {
                        continue;
                    };
                    if self.pool.run(worker as usize, job, work).is_err() {
                        // The worker thread is gone: tell the core the job ended so the
                        // worker's slots are freed, and report the job as shed.
                        self.arrivals.push(SchedEvent::Finish { worker, job });
                        if let Some(e) = self.jobs.remove(&job) {
                            out.push(ExecEvent::Shed {
                                job,
                                info: e.info,
                                work: None,
                            });
                        }
                    }
                }
            }
        }
    }

    fn wait(&mut self, timeout: Duration) {
        self.done.wait(timeout);
    }

    fn in_flight(&self) -> usize {
        self.jobs.len()
    }

    fn occupancy(&self, now_nanos: Nanos) -> Vec<f64> {
        (0..self.sched.workers())
            .map(|w| {
                let Some(t) = self.sched.table(w) else {
                    return 0.0;
                };
                let slot_nanos = (t.slot_len_micros() * NANOS_PER_MICRO).max(1);
                let from = t.slot_at(now_nanos);
                let n = (OCCUPANCY_WINDOW_NANOS / slot_nanos).max(1);
                let booked = (from..from + n)
                    .filter(|&s| matches!(t.state(s), Ok(SlotState::Reserved | SlotState::Active)))
                    .count();
                booked as f64 / n as f64
            })
            .collect()
    }

    fn decision_nanos(&self) -> u64 {
        self.decision_nanos
    }

    fn notes(&self) -> Vec<String> {
        self.pool.notes().to_vec()
    }

    fn mmsched(&mut self) -> Option<&mut dyn MmschedControl> {
        Some(self)
    }
}

impl<C: Clock + Clone + Send + 'static> MmschedControl for MmschedExecutor<C> {
    fn reserve_stream(
        &mut self,
        class: ClassId,
        modality: Modality,
        first_nanos: Nanos,
        period_nanos: Nanos,
        cost_nanos: Nanos,
    ) {
        // The shared layout's booking (the simulator books the same way).
        if let Ok(lane) = mmsched_core::layout::book_stream(
            &mut self.sched,
            class,
            modality,
            first_nanos,
            period_nanos,
            cost_nanos,
        ) {
            self.streams.insert(class, lane);
        }
    }

    fn cancel_stream(&mut self, class: ClassId) {
        if let Some(w) = self.streams.remove(&class) {
            self.sched.cancel_stream(w, class);
        }
    }

    fn set_policy(&mut self, policy: &Policy) {
        self.sched.set_policy(policy);
    }

    fn set_battery(&mut self, fraction: f64) {
        self.arrivals.push(SchedEvent::Battery(fraction));
    }

    fn take_step_log(&mut self) -> Vec<LogEntry> {
        self.sched.take_log()
    }
}
