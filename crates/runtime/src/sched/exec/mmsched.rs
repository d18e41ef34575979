//! mmsched's executor: the core's shared decision step carried out on worker threads.

use std::collections::HashMap;
use std::time::Duration;

use mmsched_core::Modality;
use mmsched_core::arbiter::{ClassId, Job, JobId};
use mmsched_core::policy::Policy;
use mmsched_core::scheduler::{Decision, LogEntry, SchedEvent, Scheduler, SchedulerError};
use mmsched_core::slots::SlotState;
use mmsched_core::time::{Clock, NANOS_PER_MICRO, Nanos};

use super::boost::RiskBoost;
#[cfg(target_os = "linux")]
use super::boost::{SetWeight, WeightError};
use super::grant::GrantWithdrawal;
use super::steps::{StepLanes, ThreadLanes};
use super::{
    ExecEvent, Executor, MmschedControl, SchedulerKind, StepOutcome, Task, TaskInfo, done_event,
};
use crate::sched::worker::LaneConfig;

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
    /// Most intra-op threads one step may be granted (0 or 1: every step gets one).
    /// See [`thread_grant`].
    pub max_thread_grant: usize,
    /// The CPU weight a worker's resource group is raised to while a step at risk runs on
    /// it (see [`RiskBoost`]; `None`, or no resource groups: never raised).
    pub at_risk_cpu_weight: Option<u32>,
}

/// Intra-op threads for a step about to start: all `max` when no other job is queued or
/// running (`others`; a job of the same class counts not when their calls run one at a
/// time, [`Work::one_call_at_a_time`]: a batched decode leads the calls of every request in
/// flight) and nothing is booked (`booked`: a periodic stream holds a standing
/// reservation, or an admitted job's slots fall within the step's predicted cost), else 1.
/// So a lone LLM request (over the API, say) uses both cores while no camera runs, and one
/// while it does. Why not in the gaps between frames: a step slowed by other load overruns
/// its gap, the next frame lands on the other core, and the granted step's threads, which
/// wait for each other at every operation, then crawl (see [`super::GrantWithdrawal`]).
/// (A lane pinned to one CPU runs a step granted more threads on all the process's CPUs:
/// see [`WorkerPool::run_granted`].)
pub fn thread_grant(max: usize, others: bool, booked: bool) -> usize {
    if others || booked { 1 } else { max.max(1) }
}

struct Entry {
    info: TaskInfo,
    work: Option<Box<dyn Work>>,
    /// When its step started on a worker (none while it waits).
    started: Option<Nanos>,
}

use crate::sched::work::Work;

/// The unified scheduler, running its steps on `L`: worker threads by default, lanes in
/// virtual time for tests ([`crate::sched::virtual_time`]). See the [module docs](super).
pub struct MmschedExecutor<C: Clock, L: StepLanes = ThreadLanes> {
    sched: Scheduler,
    lanes: L,
    jobs: HashMap<JobId, Entry>,
    arrivals: Vec<SchedEvent>,
    /// The ends of steps that yielded, told to the core at the next poll together with the
    /// job's next step (see [`Executor::poll`] below).
    yielded: Vec<SchedEvent>,
    decisions: Vec<Decision>,
    next_id: u64,
    decision_nanos: u64,
    clock: C,
    /// Standing reservations by class: the worker that holds them.
    streams: HashMap<ClassId, u32>,
    max_thread_grant: usize,
    /// Withholds grants after one did not pay.
    grants: GrantWithdrawal,
    /// Whether steps may be granted more than one thread at all (off: an ablation).
    grants_on: bool,
    /// Raises a worker's group while a step at risk runs on it (with resource groups).
    boost: Option<RiskBoost>,
    /// Whether [`Self::boost`] acts (off: an ablation).
    boost_on: bool,
}

impl<C: Clock, L: StepLanes> std::fmt::Debug for MmschedExecutor<C, L> {
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
        #[cfg(target_os = "linux")]
        let boost = match (setup.at_risk_cpu_weight, cgroups.clone()) {
            (Some(weight), Some(handle)) => {
                let groups = setup.lanes.iter().map(|l| l.cgroup_class.clone()).collect();
                let set: SetWeight = Box::new(move |group: &str, weight: Option<u32>| {
                    handle
                        .set_cpu_weight(group, weight)
                        .map_err(|e| WeightError {
                            group: group.to_string(),
                            source: Box::new(e),
                        })
                });
                Some(RiskBoost::new(weight, groups, set))
            }
            _ => None,
        };
        #[cfg(not(target_os = "linux"))]
        let boost = None;
        let lanes = ThreadLanes::start(
            &setup.lanes,
            clock.clone(),
            #[cfg(target_os = "linux")]
            cgroups,
        );
        let mut exec = Self::with_lanes(policy, setup, clock, lanes)?;
        exec.boost = boost;
        Ok(exec)
    }
}

impl<C: Clock + Clone + Send + 'static, L: StepLanes> MmschedExecutor<C, L> {
    /// The scheduler of `setup` under `policy` running its steps on `lanes` (one per entry
    /// of `setup.lanes`, at least one), with slot tables from `clock`'s now.
    pub fn with_lanes(
        policy: &Policy,
        setup: &MmschedSetup,
        clock: C,
        lanes: L,
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
        Ok(Self {
            sched,
            lanes,
            jobs: HashMap::new(),
            arrivals: Vec::new(),
            yielded: Vec::new(),
            decisions: Vec::new(),
            next_id: 0,
            decision_nanos: 0,
            clock,
            streams: HashMap::new(),
            max_thread_grant: setup.max_thread_grant,
            grants: GrantWithdrawal::default(),
            grants_on: true,
            boost: None,
            boost_on: true,
        })
    }

    /// Whether `job`'s step starting at `now_nanos` is at risk: predicted to end after its
    /// deadline, and of a class that matters at least as much as every other job in
    /// flight (it may take CPU time from them).
    fn at_risk(&self, now_nanos: Nanos, job: JobId) -> bool {
        let Some(entry) = self.jobs.get(&job) else {
            return false;
        };
        let info = &entry.info;
        info.predicted_cost_nanos > info.deadline_nanos.saturating_sub(now_nanos)
            && self
                .jobs
                .values()
                .all(|e| e.info.importance <= info.importance)
    }

    /// Threads to grant `job`'s step starting at `now_nanos` ([`thread_grant`]; one while
    /// grants are withheld, [`GrantWithdrawal`]).
    fn grant_for(&self, now_nanos: Nanos, job: JobId) -> usize {
        if self.max_thread_grant <= 1 || !self.grants_on || !self.grants.allows(now_nanos) {
            return 1;
        }
        let Some(entry) = self.jobs.get(&job) else {
            return 1;
        };
        // Jobs of a class whose calls run one at a time wait for this step's call: they
        // compute nothing beside it.
        let serial = entry.work.as_ref().is_some_and(|w| w.one_call_at_a_time());
        let others = self
            .jobs
            .iter()
            .any(|(&j, e)| j != job && !(serial && e.info.class == entry.info.class));
        let end_nanos = now_nanos.saturating_add(entry.info.predicted_cost_nanos);
        // The slot scan runs on every start, so only when nothing else already decided.
        let booked = !self.streams.is_empty()
            || (!others
                && (0..self.sched.workers()).any(|w| {
                    self.sched.table(w).is_some_and(|t| {
                        (t.slot_at(now_nanos)..=t.slot_at(end_nanos))
                            .any(|s| matches!(t.state(s), Ok(SlotState::Reserved)))
                    })
                }));
        thread_grant(self.max_thread_grant, others, booked)
    }

    /// The scheduling core (classes, queue length).
    pub fn scheduler(&self) -> &Scheduler {
        &self.sched
    }
}

impl<C: Clock + Clone + Send + 'static, L: StepLanes> Executor for MmschedExecutor<C, L> {
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
            committed: i.committed,
        }));
        self.jobs.insert(
            id,
            Entry {
                info: i,
                work: Some(task.work),
                started: None,
            },
        );
        id
    }

    /// A step that yielded keeps its worker until the next poll: the caller resubmits the
    /// job's next step from the `Done` event, and the core then weighs that step against
    /// the queued jobs by their deadlines. Freeing the worker at once would hand it to
    /// whatever was queued before the next step even arrived, so a text request lost its
    /// worker at every token, by arrival rather than by deadline.
    fn poll(&mut self, now_nanos: Nanos, out: &mut Vec<ExecEvent>) {
        let mut events = std::mem::take(&mut self.arrivals);
        events.append(&mut self.yielded);
        for c in self.lanes.finished() {
            if let Some(b) = &mut self.boost {
                b.end(c.lane);
            }
            self.grants.ended(c.job, c.started_nanos, c.ended_nanos);
            let finish = SchedEvent::Finish {
                worker: c.lane as u32,
                job: c.job,
            };
            if matches!(c.outcome, Ok(StepOutcome::Yield)) {
                self.yielded.push(finish);
            } else {
                events.push(finish);
            }
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
                    let grant = self.grant_for(now_nanos, job);
                    // Only with resource groups to raise: the check walks the jobs in flight.
                    if self.boost_on
                        && self.boost.is_some()
                        && self.at_risk(now_nanos, job)
                        && let Some(b) = &mut self.boost
                    {
                        b.start(worker as usize);
                    }
                    let Some(entry) = self.jobs.get_mut(&job) else {
                        continue;
                    };
                    let Some(mut work) = entry.work.take() else {
                        continue;
                    };
                    // Every granted step in flight now shares the cores with this one, but
                    // those of its class when they lead calls it waits for.
                    self.grants.other_started(entry.info.class);
                    entry.started = Some(now_nanos);
                    work.grant_threads(grant);
                    if grant > 1 {
                        let serial = work.one_call_at_a_time().then_some(entry.info.class);
                        self.grants
                            .started(job, entry.info.predicted_cost_nanos, serial);
                    }
                    if self
                        .lanes
                        .start(worker as usize, job, &entry.info, work, grant)
                        .is_err()
                    {
                        // The worker thread is gone: tell the core the job ended so the
                        // worker's slots (and its group's weight) are freed, and report the
                        // job as shed.
                        if let Some(b) = &mut self.boost {
                            b.end(worker as usize);
                        }
                        self.grants.abandoned(job);
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
        // Submitted jobs and yielded steps are decided at the next poll: no waiting then.
        if self.arrivals.is_empty() && self.yielded.is_empty() {
            self.lanes.wait(timeout);
        }
    }

    fn in_flight(&self) -> usize {
        self.jobs.len()
    }

    fn running(&self) -> Vec<(u64, Nanos)> {
        self.jobs
            .values()
            .filter_map(|e| e.started.map(|at| (e.info.tag, at)))
            .collect()
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
        self.lanes.notes()
    }

    fn mmsched(&mut self) -> Option<&mut dyn MmschedControl> {
        Some(self)
    }
}

impl<C: Clock + Clone + Send + 'static, L: StepLanes> MmschedControl for MmschedExecutor<C, L> {
    fn reserve_stream(
        &mut self,
        class: ClassId,
        modality: Modality,
        first_nanos: Nanos,
        period_nanos: Nanos,
        cost_nanos: Nanos,
        due_after_nanos: Option<Nanos>,
    ) -> Result<(), SchedulerError> {
        // The shared layout's booking (the simulator books the same way).
        let lane = mmsched_core::layout::book_stream(
            &mut self.sched,
            class,
            modality,
            first_nanos,
            period_nanos,
            cost_nanos,
            due_after_nanos,
        )?;
        self.streams.insert(class, lane);
        Ok(())
    }

    fn set_risk_boost(&mut self, on: bool) {
        self.boost_on = on;
    }

    fn risk_boost_note(&self) -> Option<String> {
        self.boost
            .as_ref()
            .filter(|_| self.boost_on)
            .map(RiskBoost::note)
    }

    fn set_thread_grants(&mut self, on: bool) {
        self.grants_on = on;
    }

    fn thread_grant_note(&self) -> Option<String> {
        self.grants.note()
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use mmsched_core::time::MonotonicClock;

    use super::*;
    use crate::sched::work::{StepOutcome, WorkError};

    #[test]
    fn the_grant_is_the_maximum_only_for_a_lone_step_with_nothing_booked() {
        assert_eq!(thread_grant(2, false, false), 2);
        assert_eq!(thread_grant(2, true, false), 1, "another job");
        assert_eq!(thread_grant(2, false, true), 1, "a frame is due");
        assert_eq!(thread_grant(0, false, false), 1, "at least one");
    }

    /// Work that records the grant its step was given and takes `busy` of wall time.
    struct Probe {
        granted: Arc<AtomicUsize>,
        busy: Duration,
    }

    impl Work for Probe {
        fn step(&mut self) -> Result<StepOutcome, WorkError> {
            std::thread::sleep(self.busy);
            Ok(StepOutcome::Finished)
        }
        fn grant_threads(&mut self, threads: usize) {
            self.granted.store(threads, Ordering::SeqCst);
        }
    }

    fn executor() -> MmschedExecutor<MonotonicClock> {
        let setup = MmschedSetup {
            lanes: vec![LaneConfig::default(), LaneConfig::default()],
            max_thread_grant: 2,
            ..MmschedSetup::default()
        };
        MmschedExecutor::new(
            &Policy::default(),
            &setup,
            MonotonicClock::new(),
            #[cfg(target_os = "linux")]
            None,
        )
        .expect("executor")
    }

    fn task(
        ex: &mut MmschedExecutor<MonotonicClock>,
        now: Nanos,
        granted: &Arc<AtomicUsize>,
    ) -> Task {
        Task {
            info: TaskInfo {
                class: ex.class("text"),
                modality: Modality::Text,
                deadline_nanos: now + 5_000_000_000,
                predicted_cost_nanos: 5_000_000,
                importance: 0.5,
                committed: false,
                tag: 0,
            },
            work: Box::new(Probe {
                granted: granted.clone(),
                busy: Duration::from_millis(20),
            }),
        }
    }

    /// Polls until every submitted job is done.
    fn drain(ex: &mut MmschedExecutor<MonotonicClock>) {
        let mut out = Vec::new();
        for _ in 0..500 {
            ex.poll(ex.clock.now_nanos(), &mut out);
            if ex.in_flight() == 0 {
                return;
            }
            ex.wait(Duration::from_millis(10));
        }
        panic!("jobs did not finish");
    }

    #[test]
    fn a_lone_step_gets_both_threads_and_two_steps_at_once_get_one_each() {
        let mut ex = executor();
        let alone = Arc::new(AtomicUsize::new(0));
        let now = ex.clock.now_nanos();
        let t = task(&mut ex, now, &alone);
        ex.submit(now, t);
        drain(&mut ex);
        assert_eq!(alone.load(Ordering::SeqCst), 2);

        let (a, b) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let now = ex.clock.now_nanos();
        let (ta, tb) = (task(&mut ex, now, &a), task(&mut ex, now, &b));
        ex.submit(now, ta);
        ex.submit(now, tb);
        drain(&mut ex);
        assert_eq!((a.load(Ordering::SeqCst), b.load(Ordering::SeqCst)), (1, 1));
    }

    #[test]
    fn a_step_at_risk_raises_its_workers_group_until_it_ends() {
        let mut ex = executor();
        let (calls, set) = super::super::boost::recorder();
        let groups = vec![Some("general".to_string()), Some("general".to_string())];
        ex.boost = Some(RiskBoost::new(400, groups, set));
        let granted = Arc::new(AtomicUsize::new(0));
        // Due in 5 s: not at risk.
        let now = ex.clock.now_nanos();
        let t = task(&mut ex, now, &granted);
        ex.submit(now, t);
        drain(&mut ex);
        assert!(calls.lock().expect("lock").is_empty());
        // Due in 4 ms with 5 ms of predicted work: at risk.
        let now = ex.clock.now_nanos();
        let mut t = task(&mut ex, now, &granted);
        t.info.deadline_nanos = now + 4_000_000;
        ex.submit(now, t);
        drain(&mut ex);
        let seen = calls.lock().expect("lock").clone();
        assert_eq!(
            seen,
            super::super::boost::raised_then_restored("general", 400)
        );
        // Switched off (the ablation), nothing is raised.
        ex.set_risk_boost(false);
        calls.lock().expect("lock").clear();
        let now = ex.clock.now_nanos();
        let mut t = task(&mut ex, now, &granted);
        t.info.deadline_nanos = now + 4_000_000;
        ex.submit(now, t);
        drain(&mut ex);
        assert!(calls.lock().expect("lock").is_empty());
        assert_eq!(ex.risk_boost_note(), None);
    }

    /// The threads a lone 5 ms step is granted while the camera's standing reservation has
    /// its first frame `first_in` from now, then one every `period` (2 ms each).
    fn grant_beside_a_camera(first_in: Nanos, period: Nanos) -> usize {
        let mut ex = executor();
        let now = ex.clock.now_nanos();
        let camera = ex.class("camera");
        ex.reserve_stream(
            camera,
            Modality::Image,
            now + first_in,
            period,
            2_000_000,
            None,
        )
        .expect("books");
        let granted = Arc::new(AtomicUsize::new(0));
        let t = task(&mut ex, now, &granted);
        ex.submit(now, t);
        drain(&mut ex);
        granted.load(Ordering::SeqCst)
    }

    #[test]
    fn a_standing_reservation_within_the_step_limits_the_grant_to_one() {
        // A frame every 4 ms: whenever the 5 ms step starts, a frame is due within it.
        assert_eq!(grant_beside_a_camera(1_000_000, 4_000_000), 1);
    }

    #[test]
    fn a_standing_reservation_limits_the_grant_to_one_even_when_its_next_frame_is_far() {
        // A frame every 10 s, the first in 5 s: none is due within the 5 ms step.
        assert_eq!(grant_beside_a_camera(5_000_000_000, 10_000_000_000), 1);
    }
}
