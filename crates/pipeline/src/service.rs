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
//! The loop reads the device clock it is given ([`Clock`]); deadlines are times on that
//! clock, so a [`Submitter`] carries it. `mmsched run`'s loop takes outside jobs through
//! the same [`ExternalJobs`] book (see [`crate::config::External`]).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
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

/// A job and where its events go, as the service's loop (or `mmsched run`'s loop, which
/// takes the same submissions through [`crate::config::External`]) receives them.
pub struct Submission {
    /// The job.
    pub job: JobRequest,
    /// Its events (called on the loop's thread: it must not block).
    pub sink: EventSink,
}

impl std::fmt::Debug for Submission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.job.fmt(f)
    }
}

/// Submits jobs to a loop (the service's or a run's) on the loop's device clock.
#[derive(Clone)]
pub struct Submitter {
    tx: Sender<Submission>,
    clock: Arc<dyn Clock + Send + Sync>,
}

impl std::fmt::Debug for Submitter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Submitter").finish_non_exhaustive()
    }
}

impl Submitter {
    /// A submitter and the inbox the loop drains; `clock` must be the loop's clock.
    pub fn channel(clock: Arc<dyn Clock + Send + Sync>) -> (Self, Receiver<Submission>) {
        let (tx, rx) = mpsc::channel();
        (Self { tx, clock }, rx)
    }

    /// The device time the loop schedules on.
    pub fn now_nanos(&self) -> Nanos {
        self.clock.now_nanos()
    }

    /// Submits a job whose events go to `sink`.
    pub fn submit_to(&self, job: JobRequest, sink: EventSink) -> Result<(), ServiceError> {
        self.tx
            .send(Submission { job, sink })
            .map_err(|_| ServiceError::Stopped)
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
}

/// A running service: a loop thread of its own over one executor. Dropping it stops the
/// loop after the jobs in flight.
pub struct Service {
    submitter: Submitter,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Service {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Service").finish_non_exhaustive()
    }
}

impl Service {
    /// Starts the loop thread over `exec`, reading time from `clock`.
    pub fn start<C: Clock + Clone + Send + Sync + 'static>(
        mut exec: Box<dyn Executor>,
        clock: C,
    ) -> std::io::Result<Self> {
        let (submitter, rx) = Submitter::channel(Arc::new(clock.clone()));
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let thread = std::thread::Builder::new()
            .name("mmsched-service".into())
            .spawn(move || {
                let mut jobs = ExternalJobs::default();
                let mut events = Vec::new();
                loop {
                    let stop = stopping.load(Ordering::Relaxed);
                    // Block briefly for new jobs only when nothing is in flight.
                    let wait = if jobs.is_empty() && !stop {
                        IDLE_WAIT
                    } else {
                        Duration::ZERO
                    };
                    match rx.recv_timeout(wait) {
                        Ok(first) => {
                            for s in std::iter::once(first).chain(rx.try_iter()) {
                                let tag = jobs.next_tag();
                                jobs.submit(&mut *exec, clock.now_nanos(), tag, s);
                            }
                        }
                        Err(RecvTimeoutError::Timeout) => {}
                        Err(RecvTimeoutError::Disconnected) => {
                            stopping.store(true, Ordering::Relaxed);
                        }
                    }
                    let now = clock.now_nanos();
                    jobs.retry_deferred(&mut *exec, now);
                    exec.poll(now, &mut events);
                    for ev in events.drain(..) {
                        jobs.on_event(&mut *exec, now, ev);
                    }
                    if stop && jobs.is_empty() {
                        return;
                    }
                    if !jobs.is_empty() {
                        exec.wait(BUSY_WAIT);
                    }
                }
            })?;
        Ok(Self {
            submitter,
            stop,
            thread: Some(thread),
        })
    }

    /// A handle that submits jobs to this service.
    pub fn submitter(&self) -> Submitter {
        self.submitter.clone()
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The jobs submitted from outside a loop and where their events go: the one place that
/// turns executor events into [`JobEvent`]s, used by the service's loop and by
/// `mmsched run`'s loop alike.
#[derive(Default)]
pub struct ExternalJobs {
    cost: Option<CostModel>,
    /// Classes whose prior cost is set.
    priors: HashSet<ClassId>,
    jobs: HashMap<u64, Job>,
    /// Shed steps of started jobs waiting to compete again: (tag, due time, info, work).
    deferred: Vec<(u64, Nanos, TaskInfo, Box<dyn Work>)>,
    /// Tags this book hands out (when the loop has no tags of its own).
    last_tag: u64,
}

impl std::fmt::Debug for ExternalJobs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExternalJobs")
            .field("jobs", &self.jobs.len())
            .field("deferred", &self.deferred.len())
            .finish()
    }
}

/// A job in the book.
struct Job {
    sink: EventSink,
    /// Steps it has run.
    steps: u32,
}

impl ExternalJobs {
    fn cost(&mut self) -> &mut CostModel {
        self.cost.get_or_insert_with(|| {
            CostModel::new(COST_WINDOW, COST_MIN_SAMPLES, COST_MAX_AGE_NANOS)
        })
    }

    /// A fresh tag, for a loop without tags of its own.
    pub fn next_tag(&mut self) -> u64 {
        self.last_tag += 1;
        self.last_tag
    }

    /// No job in flight or waiting.
    pub fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }

    /// Submits `s` to `exec` under `tag`.
    pub fn submit(&mut self, exec: &mut dyn Executor, now: Nanos, tag: u64, s: Submission) {
        let job = s.job;
        let class = exec.class(&job.class);
        if self.priors.insert(class) {
            self.cost().set_prior(class, job.prior_cost_nanos);
        }
        let info = TaskInfo {
            class,
            modality: job.modality,
            deadline_nanos: job.deadline_nanos,
            predicted_cost_nanos: self.cost().predict(class, now),
            importance: job.importance,
            committed: false,
            tag,
        };
        self.jobs.insert(
            tag,
            Job {
                sink: s.sink,
                steps: 0,
            },
        );
        exec.submit(
            now,
            Task {
                info,
                work: job.work,
            },
        );
    }

    /// Takes `ev` if it is about one of these jobs (`None`), else gives it back.
    pub fn on_event(
        &mut self,
        exec: &mut dyn Executor,
        now: Nanos,
        ev: ExecEvent,
    ) -> Option<ExecEvent> {
        let tag = match &ev {
            ExecEvent::Done { info, .. }
            | ExecEvent::Shed { info, .. }
            | ExecEvent::Pruned { info, .. } => info.tag,
        };
        if !self.jobs.contains_key(&tag) {
            return Some(ev);
        }
        match ev {
            ExecEvent::Done {
                mut info,
                outcome,
                work,
                started_nanos,
                ended_nanos,
                ..
            } => {
                self.cost()
                    .record(info.class, ended_nanos.saturating_sub(started_nanos), now);
                let predicted = self.cost().predict(info.class, now);
                let job = self.jobs.get_mut(&tag)?;
                job.steps += 1;
                match outcome {
                    Ok(StepOutcome::Yield) => {
                        (job.sink)(JobEvent::Step {
                            started_nanos,
                            ended_nanos,
                        });
                        info.predicted_cost_nanos = predicted;
                        // Its next step would throw this one away if shed.
                        info.committed = true;
                        exec.submit(now, Task { info, work });
                    }
                    Ok(StepOutcome::Finished) => {
                        (job.sink)(JobEvent::Done {
                            started_nanos,
                            ended_nanos,
                            on_time: ended_nanos <= info.deadline_nanos,
                        });
                        self.jobs.remove(&tag);
                    }
                    Err(e) => {
                        (job.sink)(JobEvent::Failed(e.chain()));
                        self.jobs.remove(&tag);
                    }
                }
            }
            ExecEvent::Shed {
                info,
                work: Some(work),
                ..
            } if now < info.deadline_nanos && self.jobs.get(&tag).is_some_and(|j| j.steps > 0) => {
                self.deferred.push((tag, now + RETRY_NANOS, info, work));
            }
            ExecEvent::Shed { .. } | ExecEvent::Pruned { .. } => {
                if let Some(mut job) = self.jobs.remove(&tag) {
                    (job.sink)(JobEvent::Shed);
                }
            }
        }
        None
    }

    /// Submits the deferred steps whose retry is due; past its deadline a step is shed.
    pub fn retry_deferred(&mut self, exec: &mut dyn Executor, now: Nanos) {
        if self.deferred.is_empty() {
            return;
        }
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
                info.predicted_cost_nanos = self.cost().predict(info.class, now);
                exec.submit(now, Task { info, work });
            }
        }
    }

    /// Ends every job left (the loop is stopping): each gets `Failed` saying why.
    pub fn close(&mut self, why: &str) {
        self.deferred.clear();
        for (_, mut job) in self.jobs.drain() {
            (job.sink)(JobEvent::Failed(why.to_string()));
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
    use mmsched_runtime::sched::{LaneConfig, SchedulerKind, WorkError};

    fn mmsched() -> (Service, Submitter) {
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
        let s = Service::start(Box::new(exec), clock).expect("service");
        let submitter = s.submitter();
        (s, submitter)
    }

    fn job(service: &Submitter, deadline_ms: u64, work: Box<dyn Work>) -> JobRequest {
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
        let (_service, s) = mmsched();
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
        let service = Service::start(Box::new(exec), clock).expect("service");
        let s = service.submitter();
        // A FIFO baseline never sheds: 30 ms of work due in 5 ms ends late.
        let rx = s.submit(job(&s, 5, steps(1, 30))).expect("submitted");
        assert!(matches!(
            events(&rx)[..],
            [JobEvent::Done { on_time: false, .. }]
        ));
        let failing: Box<dyn Work> = Box::new(|| {
            Err(WorkError::Engine {
                model: "test",
                source: "engine broke".into(),
            })
        });
        let rx = s.submit(job(&s, 1_000, failing)).expect("submitted");
        assert_eq!(
            events(&rx),
            vec![JobEvent::Failed(
                "the test model failed: engine broke".into()
            )]
        );
    }

    #[test]
    fn a_job_that_cannot_make_its_deadline_is_shed_by_mmsched() {
        let (_service, s) = mmsched();
        // Teach the cost model that a step takes 50 ms, then ask for one due in 1 ms.
        for _ in 0..3 {
            let rx = s.submit(job(&s, 5_000, steps(1, 50))).expect("submitted");
            events(&rx);
        }
        let rx = s.submit(job(&s, 1, steps(1, 50))).expect("submitted");
        assert_eq!(events(&rx), vec![JobEvent::Shed]);
    }

    /// An executor in virtual time: it runs one queued step per `poll`, taking `step_nanos`
    /// of device time, or sheds every job while `shedding` is set.
    struct Stepper {
        queue: std::collections::VecDeque<Task>,
        step_nanos: Nanos,
        shedding: bool,
        next: u64,
    }

    impl Executor for Stepper {
        fn kind(&self) -> SchedulerKind {
            SchedulerKind::Fifo
        }
        fn class(&mut self, _name: &str) -> ClassId {
            ClassId(0)
        }
        fn submit(&mut self, _now: Nanos, task: Task) -> mmsched_core::arbiter::JobId {
            self.next += 1;
            self.queue.push_back(task);
            mmsched_core::arbiter::JobId(self.next)
        }
        fn poll(&mut self, now: Nanos, out: &mut Vec<ExecEvent>) {
            let Some(mut task) = self.queue.pop_front() else {
                return;
            };
            let job = mmsched_core::arbiter::JobId(self.next);
            if self.shedding {
                out.push(ExecEvent::Shed {
                    job,
                    info: task.info,
                    work: Some(task.work),
                });
                return;
            }
            let outcome = task.work.step();
            out.push(ExecEvent::Done {
                job,
                info: task.info,
                worker: 0,
                outcome,
                work: task.work,
                started_nanos: now,
                ended_nanos: now + self.step_nanos,
            });
        }
        fn wait(&mut self, _timeout: Duration) {}
        fn in_flight(&self) -> usize {
            self.queue.len()
        }
        fn occupancy(&self, _now: Nanos) -> Vec<f64> {
            Vec::new()
        }
        fn decision_nanos(&self) -> u64 {
            0
        }
        fn notes(&self) -> Vec<String> {
            Vec::new()
        }
    }

    /// Work of `n` steps that never sleeps.
    fn instant_steps(n: u32) -> Box<dyn Work> {
        let mut left = n;
        Box::new(move || {
            left -= 1;
            Ok(if left == 0 {
                StepOutcome::Finished
            } else {
                StepOutcome::Yield
            })
        })
    }

    fn submission(deadline_nanos: Nanos, work: Box<dyn Work>) -> (Submission, Receiver<JobEvent>) {
        let (tx, rx) = mpsc::channel();
        let job = JobRequest {
            class: "text".into(),
            modality: Modality::Text,
            deadline_nanos,
            prior_cost_nanos: 1_000_000,
            importance: 0.5,
            work,
        };
        let sink: EventSink = Box::new(move |e| {
            let _ = tx.send(e);
        });
        (Submission { job, sink }, rx)
    }

    /// Drives `book` over `exec` from `now` in steps of `tick` until `until`.
    fn drive(
        book: &mut ExternalJobs,
        exec: &mut Stepper,
        mut now: Nanos,
        tick: Nanos,
        until: Nanos,
    ) {
        let mut events = Vec::new();
        while now < until {
            book.retry_deferred(exec, now);
            exec.poll(now, &mut events);
            for ev in events.drain(..) {
                assert!(
                    book.on_event(exec, now, ev).is_none(),
                    "an outside job's event"
                );
            }
            now += tick;
        }
    }

    fn stepper(step_ms: u64) -> Stepper {
        Stepper {
            queue: Default::default(),
            step_nanos: step_ms * 1_000_000,
            shedding: false,
            next: 0,
        }
    }

    #[test]
    fn in_virtual_time_a_yielding_job_competes_again_and_ends_late_past_its_deadline() {
        let mut book = ExternalJobs::default();
        let mut exec = stepper(10);
        // Three steps of 10 ms, due at 25 ms: the last one ends at 30 ms or later.
        let (s, rx) = submission(25_000_000, instant_steps(3));
        book.submit(&mut exec, 0, 1, s);
        drive(&mut book, &mut exec, 0, 10_000_000, 100_000_000);
        let ev: Vec<_> = rx.try_iter().collect();
        assert_eq!(ev.len(), 3, "{ev:?}");
        assert!(matches!(ev[0], JobEvent::Step { .. }));
        assert!(
            matches!(ev[2], JobEvent::Done { on_time: false, .. }),
            "{ev:?}"
        );
        assert!(book.is_empty());
    }

    #[test]
    fn in_virtual_time_a_shed_step_of_a_started_job_retries_until_its_deadline() {
        let mut book = ExternalJobs::default();
        let mut exec = stepper(1);
        let (s, rx) = submission(100_000_000, instant_steps(5));
        book.submit(&mut exec, 0, 1, s);
        // One step runs, then the executor sheds everything: the job waits and retries
        // every 20 ms instead of losing its tokens, until its 100 ms deadline.
        drive(&mut book, &mut exec, 0, 1_000_000, 1_000_000);
        exec.shedding = true;
        drive(&mut book, &mut exec, 1_000_000, 1_000_000, 99_000_000);
        assert!(!book.is_empty(), "still waiting before the deadline");
        let steps: Vec<_> = rx.try_iter().collect();
        assert_eq!(steps.len(), 1, "{steps:?}");
        drive(&mut book, &mut exec, 99_000_000, 1_000_000, 130_000_000);
        assert_eq!(rx.try_iter().collect::<Vec<_>>(), vec![JobEvent::Shed]);
        assert!(book.is_empty());
    }

    #[test]
    fn in_virtual_time_a_job_shed_before_its_first_step_is_shed_at_once_and_close_fails_the_rest() {
        let mut book = ExternalJobs::default();
        let mut exec = stepper(1);
        exec.shedding = true;
        let (s, rx) = submission(100_000_000, instant_steps(2));
        book.submit(&mut exec, 0, 1, s);
        drive(&mut book, &mut exec, 0, 1_000_000, 2_000_000);
        assert_eq!(rx.try_iter().collect::<Vec<_>>(), vec![JobEvent::Shed]);
        let (s, rx) = submission(100_000_000, instant_steps(2));
        book.submit(&mut exec, 2_000_000, 2, s);
        book.close("stopping");
        assert_eq!(
            rx.try_iter().collect::<Vec<_>>(),
            vec![JobEvent::Failed("stopping".into())]
        );
    }
}
