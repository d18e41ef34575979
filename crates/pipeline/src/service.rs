//! The runtime as a service: work submitted from any thread — an HTTP handler, a source —
//! goes to one executor (mmsched's scheduler or a baseline) driven by one loop thread, and
//! every job's fate comes back on the job's own channel.
//!
//! A job is a [`Work`] with its class, deadline, predicted cost and importance. A step that
//! yields (a text request between two tokens) competes again with the same deadline, so
//! the scheduler decides again at every token boundary. A job the scheduler sheds ends
//! with [`JobEvent::Shed`]; one that finishes late is still reported, with
//! `on_time: false`: the caller decides what a late answer is worth.
//!
//! The loop reads the device clock it is given ([`Clock`]), so it runs the same under a
//! manual clock in tests.

use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::Duration;

use mmsched_core::Modality;
use mmsched_core::arbiter::ClassId;
use mmsched_core::time::{Clock, Nanos};
use mmsched_runtime::sched::cost::CostModel;
use mmsched_runtime::sched::{ExecEvent, Executor, StepOutcome, Task, TaskInfo, Work};

/// How long the loop sleeps when nothing is in flight before it looks for new jobs again.
const IDLE_WAIT: Duration = Duration::from_millis(50);
/// How long the loop waits for a completion before it looks for new jobs again.
const BUSY_WAIT: Duration = Duration::from_millis(1);
/// A shed step of a job that has already run waits this long before it competes again
/// (as in `mmsched run`): shedding it would throw away the work already done.
const RETRY_NANOS: Nanos = 20_000_000;
/// Samples the cost model keeps per class, and how many it needs before it trusts them.
const COST_WINDOW: usize = 64;
const COST_MIN_SAMPLES: usize = 3;
const COST_MAX_AGE_NANOS: Nanos = 60_000_000_000;

/// Where a job's events go.
pub type EventSink = Box<dyn FnMut(JobEvent) + Send>;

/// One job for the service.
pub struct JobRequest {
    /// The scheduling class (e.g. `text`, `vision`, `asr`).
    pub class: String,
    /// What kind of input it is.
    pub modality: Modality,
    /// Device time by which the result is due.
    pub deadline_nanos: Nanos,
    /// Cost of one step to assume for the class until the service has measured it,
    /// nanoseconds (from the device profile).
    pub prior_cost_nanos: Nanos,
    /// Importance in [0, 1].
    pub importance: f64,
    /// The work, stepped by a worker.
    pub work: Box<dyn Work>,
}

impl std::fmt::Debug for JobRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobRequest")
            .field("class", &self.class)
            .field("modality", &self.modality)
            .field("deadline_nanos", &self.deadline_nanos)
            .field("prior_cost_nanos", &self.prior_cost_nanos)
            .field("importance", &self.importance)
            .finish_non_exhaustive()
    }
}

/// What happened to a job.
#[derive(Debug, Clone, PartialEq)]
pub enum JobEvent {
    /// A step ran and yielded; the next one is queued with the same deadline.
    Step {
        /// Device time the step started.
        started_nanos: Nanos,
        /// Device time it ended.
        ended_nanos: Nanos,
    },
    /// The last step finished.
    Done {
        /// Device time the last step started.
        started_nanos: Nanos,
        /// Device time it ended.
        ended_nanos: Nanos,
        /// Whether it ended by the deadline.
        on_time: bool,
    },
    /// The scheduler shed the job (overload): it will not run.
    Shed,
    /// The work failed; the message says why.
    Failed(String),
}

/// Why a job could not be submitted.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ServiceError {
    /// The service has stopped.
    #[error("the scheduler has stopped; restart the server")]
    Stopped,
}

enum Command {
    Submit(JobRequest, EventSink),
    Stop,
}

/// A running service; dropping it stops the loop after the jobs in flight.
pub struct Service<C: Clock + Clone + Send + 'static> {
    tx: Sender<Command>,
    clock: C,
    thread: Option<JoinHandle<()>>,
}

impl<C: Clock + Clone + Send + 'static> std::fmt::Debug for Service<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Service").finish_non_exhaustive()
    }
}

impl<C: Clock + Clone + Send + 'static> Service<C> {
    /// Starts the loop thread over `exec`, reading time from `clock`.
    pub fn start(exec: Box<dyn Executor>, clock: C) -> std::io::Result<Self> {
        let (tx, rx) = mpsc::channel();
        let loop_clock = clock.clone();
        let thread = std::thread::Builder::new()
            .name("mmsched-service".into())
            .spawn(move || Loop::new(exec, loop_clock).run(&rx))?;
        Ok(Self {
            tx,
            clock,
            thread: Some(thread),
        })
    }

    /// The device time the service schedules on.
    pub fn now_nanos(&self) -> Nanos {
        self.clock.now_nanos()
    }

    /// Submits a job; its events arrive on the returned channel, the last one being
    /// `Done`, `Shed` or `Failed`.
    pub fn submit(&self, job: JobRequest) -> Result<Receiver<JobEvent>, ServiceError> {
        let (tx, rx) = mpsc::channel();
        self.submit_to(
            job,
            Box::new(move |e| {
                let _ = tx.send(e);
            }),
        )?;
        Ok(rx)
    }

    /// Submits a job whose events go to `events` (called on the service's thread: it
    /// must not block).
    pub fn submit_to(&self, job: JobRequest, events: EventSink) -> Result<(), ServiceError> {
        self.tx
            .send(Command::Submit(job, events))
            .map_err(|_| ServiceError::Stopped)
    }
}

impl<C: Clock + Clone + Send + 'static> Drop for Service<C> {
    fn drop(&mut self) {
        let _ = self.tx.send(Command::Stop);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The loop's state: the executor and where each job's events go.
struct Loop<C: Clock> {
    exec: Box<dyn Executor>,
    clock: C,
    cost: CostModel,
    /// Classes whose prior cost is set.
    priors: std::collections::HashSet<ClassId>,
    next_tag: u64,
    jobs: std::collections::HashMap<u64, Job>,
    /// Shed steps of started jobs waiting to compete again: (tag, due time, info, work).
    deferred: Vec<(u64, Nanos, TaskInfo, Box<dyn Work>)>,
    events: Vec<ExecEvent>,
}

/// A job in the service.
struct Job {
    sink: EventSink,
    /// Steps it has run.
    steps: u32,
}

impl<C: Clock> Loop<C> {
    fn new(exec: Box<dyn Executor>, clock: C) -> Self {
        Self {
            exec,
            clock,
            cost: CostModel::new(COST_WINDOW, COST_MIN_SAMPLES, COST_MAX_AGE_NANOS),
            priors: std::collections::HashSet::new(),
            next_tag: 0,
            jobs: std::collections::HashMap::new(),
            deferred: Vec::new(),
            events: Vec::new(),
        }
    }

    fn run(mut self, rx: &Receiver<Command>) {
        let mut stopping = false;
        loop {
            // Take every command waiting; block briefly only when there is nothing to do.
            let wait = if self.jobs.is_empty() && !stopping {
                IDLE_WAIT
            } else {
                Duration::ZERO
            };
            match rx.recv_timeout(wait) {
                Ok(cmd) => {
                    stopping |= self.command(cmd);
                    while let Ok(cmd) = rx.try_recv() {
                        stopping |= self.command(cmd);
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => stopping = true,
            }
            self.poll();
            if stopping && self.jobs.is_empty() {
                return;
            }
            if !self.jobs.is_empty() {
                self.exec.wait(BUSY_WAIT);
            }
        }
    }

    /// Handles one command; `true` when it asks the loop to stop.
    fn command(&mut self, cmd: Command) -> bool {
        match cmd {
            Command::Submit(job, sink) => {
                self.next_tag += 1;
                let tag = self.next_tag;
                let class = self.exec.class(&job.class);
                if self.priors.insert(class) {
                    self.cost.set_prior(class, job.prior_cost_nanos);
                }
                let now = self.clock.now_nanos();
                let info = TaskInfo {
                    class,
                    modality: job.modality,
                    deadline_nanos: job.deadline_nanos,
                    predicted_cost_nanos: self.cost.predict(class, now),
                    importance: job.importance,
                    tag,
                };
                self.jobs.insert(tag, Job { sink, steps: 0 });
                self.exec.submit(
                    now,
                    Task {
                        info,
                        work: job.work,
                    },
                );
                false
            }
            Command::Stop => true,
        }
    }

    fn poll(&mut self) {
        let now = self.clock.now_nanos();
        self.retry_deferred(now);
        self.exec.poll(now, &mut self.events);
        for ev in std::mem::take(&mut self.events) {
            match ev {
                ExecEvent::Done {
                    mut info,
                    outcome,
                    work,
                    started_nanos,
                    ended_nanos,
                    ..
                } => {
                    let Some(job) = self.jobs.get_mut(&info.tag) else {
                        continue;
                    };
                    job.steps += 1;
                    self.cost
                        .record(info.class, ended_nanos.saturating_sub(started_nanos), now);
                    match outcome {
                        Ok(StepOutcome::Yield) => {
                            (job.sink)(JobEvent::Step {
                                started_nanos,
                                ended_nanos,
                            });
                            info.predicted_cost_nanos = self.cost.predict(info.class, now);
                            self.exec.submit(now, Task { info, work });
                        }
                        Ok(StepOutcome::Finished) => {
                            (job.sink)(JobEvent::Done {
                                started_nanos,
                                ended_nanos,
                                on_time: ended_nanos <= info.deadline_nanos,
                            });
                            self.jobs.remove(&info.tag);
                        }
                        Err(e) => {
                            (job.sink)(JobEvent::Failed(e.to_string()));
                            self.jobs.remove(&info.tag);
                        }
                    }
                }
                ExecEvent::Shed {
                    info,
                    work: Some(work),
                    ..
                } if now < info.deadline_nanos
                    && self.jobs.get(&info.tag).is_some_and(|j| j.steps > 0) =>
                {
                    self.deferred
                        .push((info.tag, now + RETRY_NANOS, info, work));
                }
                ExecEvent::Shed { info, .. } | ExecEvent::Pruned { info, .. } => {
                    if let Some(mut job) = self.jobs.remove(&info.tag) {
                        (job.sink)(JobEvent::Shed);
                    }
                }
            }
        }
    }

    /// Submits the deferred steps whose retry is due; past its deadline a step is shed.
    fn retry_deferred(&mut self, now: Nanos) {
        let (due, waiting): (Vec<_>, Vec<_>) = std::mem::take(&mut self.deferred)
            .into_iter()
            .partition(|(_, at, info, _)| now >= *at || now >= info.deadline_nanos);
        self.deferred = waiting;
        for (tag, _, mut info, work) in due {
            if now >= info.deadline_nanos {
                if let Some(mut job) = self.jobs.remove(&tag) {
                    (job.sink)(JobEvent::Shed);
                }
            } else {
                info.predicted_cost_nanos = self.cost.predict(info.class, now);
                self.exec.submit(now, Task { info, work });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mmsched_core::policy::Policy;
    use mmsched_core::time::MonotonicClock;
    use mmsched_runtime::sched::exec::{MmschedExecutor, MmschedSetup, QueueOrder, SharedQueue};
    use mmsched_runtime::sched::lanes::standard_lanes;
    use mmsched_runtime::sched::{LaneConfig, WorkError};

    fn mmsched() -> Service<MonotonicClock> {
        let clock = MonotonicClock::new();
        let setup = MmschedSetup {
            lanes: vec![LaneConfig::default(), LaneConfig::default()],
            ..MmschedSetup::default()
        };
        let exec = MmschedExecutor::new(
            &Policy::default(),
            &setup,
            clock,
            #[cfg(target_os = "linux")]
            None,
        )
        .expect("executor");
        Service::start(Box::new(exec), clock).expect("service")
    }

    fn job(service: &Service<MonotonicClock>, deadline_ms: u64, work: Box<dyn Work>) -> JobRequest {
        JobRequest {
            class: "text".into(),
            modality: Modality::Text,
            deadline_nanos: service.now_nanos() + deadline_ms * 1_000_000,
            prior_cost_nanos: 1_000_000,
            importance: 0.5,
            work,
        }
    }

    /// Work of `steps` steps of `ms` milliseconds each.
    fn steps(n: u32, ms: u64) -> Box<dyn Work> {
        let mut left = n;
        Box::new(move || {
            std::thread::sleep(Duration::from_millis(ms));
            left -= 1;
            Ok(if left == 0 {
                StepOutcome::Finished
            } else {
                StepOutcome::Yield
            })
        })
    }

    fn events(rx: &Receiver<JobEvent>) -> Vec<JobEvent> {
        let mut out = Vec::new();
        while let Ok(e) = rx.recv_timeout(Duration::from_secs(10)) {
            let last = !matches!(e, JobEvent::Step { .. });
            out.push(e);
            if last {
                break;
            }
        }
        out
    }

    #[test]
    fn a_yielding_job_runs_every_step_and_ends_on_time() {
        let s = mmsched();
        let rx = s.submit(job(&s, 5_000, steps(3, 1))).expect("submitted");
        let ev = events(&rx);
        assert_eq!(ev.len(), 3, "{ev:?}");
        assert!(matches!(ev[0], JobEvent::Step { .. }));
        assert!(
            matches!(ev[2], JobEvent::Done { on_time: true, .. }),
            "{ev:?}"
        );
    }

    #[test]
    fn a_late_job_is_reported_late_and_a_failing_one_failed() {
        let clock = MonotonicClock::new();
        let layout = standard_lanes(1, false, &[]);
        let exec = SharedQueue::new(
            QueueOrder::Fifo,
            &layout,
            clock,
            #[cfg(target_os = "linux")]
            None,
        );
        let s = Service::start(Box::new(exec), clock).expect("service");
        // A FIFO baseline never sheds: 30 ms of work due in 5 ms ends late.
        let rx = s.submit(job(&s, 5, steps(1, 30))).expect("submitted");
        assert!(matches!(
            events(&rx)[..],
            [JobEvent::Done { on_time: false, .. }]
        ));
        let failing: Box<dyn Work> = Box::new(|| Err(WorkError("engine broke".into())));
        let rx = s.submit(job(&s, 1_000, failing)).expect("submitted");
        assert_eq!(events(&rx), vec![JobEvent::Failed("engine broke".into())]);
    }

    #[test]
    fn a_job_that_cannot_make_its_deadline_is_shed_by_mmsched() {
        let s = mmsched();
        // Teach the cost model that a step takes 50 ms, then ask for one due in 1 ms.
        for _ in 0..3 {
            let rx = s.submit(job(&s, 5_000, steps(1, 50))).expect("submitted");
            events(&rx);
        }
        let rx = s.submit(job(&s, 1, steps(1, 50))).expect("submitted");
        assert_eq!(events(&rx), vec![JobEvent::Shed]);
    }
}
