//! The scheduler's decision step: one function that turns what happened (jobs arrived,
//! jobs finished, the battery moved) into what to do (admit, shed, prune, start a job on a
//! worker in reserved slots).
//!
//! Why one step function: the runtime (real workers, real models) and the simulator
//! (virtual time, modelled job costs) must make **identical decisions on identical event
//! sequences**. Both hand their events to [`Scheduler::step`] and act on the returned
//! [`Decision`]s; neither has scheduling logic of its own. A golden trace of a seeded
//! simulation therefore shows exactly which decisions a change to this file moves.
//!
//! What a step does, in order:
//! 1. rolls every worker's slot table forward to `now` (S1);
//! 2. applies finished jobs (their slots go back to IDLE) and the battery level;
//! 3. if jobs arrived: scores the arrivals together with the queued jobs (S2) and runs
//!    admission — battery-saver pruning, then shedding of the lowest scores while the
//!    predicted demand does not fit before the deadlines;
//! 4. dispatches admitted jobs to idle workers by the policy's rule (EDF by default),
//!    booking `⌈cost / slot⌉` contiguous slots on the worker's table starting now and
//!    firing them. A job of a periodic stream with a standing reservation on the worker
//!    runs in its stream's occurrence (started early when the worker is idle before it,
//!    so a frame never waits for its slot on an idle worker); any other job must fit in
//!    free slots before the next reserved one — so a long step never runs into the slot
//!    booked for the next frame — unless it is due before that frame: an occurrence not
//!    started yet yields its slots to another class's job due earlier than the stream's
//!    job for it
//!    ([`StreamBooking::due_after_nanos`]), so reservations never reverse the order of
//!    deadlines. A job that does not fit is passed over (within a small lookahead) for
//!    one that does, and waits for a later step. A worker may be restricted to some
//!    classes (e.g. a real-time audio worker that runs only voice-activity jobs).
//!
//! Jobs are not preempted once started: long work is cut into schedulable units by the
//! caller (an LLM request is one job per token, S7), so a due frame waits at most one unit.

use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use crate::Modality;
use crate::arbiter::{
    Admission, Arbiter, Assessment, ClassId, Job, JobId, QueuedJob, ReadyQueue, Verdict,
};
use crate::policy::Policy;
use crate::slots::{
    ReservationId, SlotError, SlotId, SlotState, SlotTable, SlotTableConfig, StandingId,
};
use crate::time::{NANOS_PER_MICRO, Nanos};

/// How many queued jobs that cannot start on a worker now are passed over to look for one
/// that can, per worker and step.
const LOOKAHEAD: usize = 8;

/// Something the scheduler is told.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SchedEvent {
    /// A job became runnable.
    Arrive(Job),
    /// A worker finished a job it was given.
    Finish {
        /// The worker.
        worker: u32,
        /// The job.
        job: JobId,
    },
    /// The battery is now at this fraction of full (0 … 1).
    Battery(f64),
}

/// Something the scheduler decided.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Decision {
    /// The job was admitted with this score.
    Admit {
        /// The job.
        job: JobId,
        /// Its S2 score at admission.
        score: f64,
    },
    /// The job was shed to relieve an overload (it may have been admitted earlier).
    Shed {
        /// The job.
        job: JobId,
    },
    /// Battery saver disabled the job's class: take the light path.
    Prune {
        /// The job.
        job: JobId,
    },
    /// Run the job on the worker now; its slots are booked and ACTIVE.
    Start {
        /// The worker.
        worker: u32,
        /// The job.
        job: JobId,
        /// First booked slot.
        start_slot: SlotId,
        /// Booked slots.
        len_slots: u32,
    },
}

/// A periodic stream's standing reservation ([`Scheduler::reserve_stream`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamBooking {
    /// The stream's modality (recorded, never branched on).
    pub modality: Modality,
    /// Start of the first occurrence.
    pub first_nanos: Nanos,
    /// Time between occurrences.
    pub period_nanos: Nanos,
    /// Slots per occurrence, at most a period's worth.
    pub len_slots: u32,
    /// How long after an occurrence starts the stream's job for it is due. Until the
    /// occurrence starts, a job due earlier may take its slots: reservations keep the
    /// order of deadlines. `None`: the occurrences never yield.
    pub due_after_nanos: Option<Nanos>,
}

/// One call on a [`Scheduler`], as recorded for replay (see [`Scheduler::record`]).
///
/// A log of these, applied in order to a scheduler built with the same policy, worker
/// count and start time, must give back exactly the recorded decisions: that is how the
/// simulator checks that it and the runtime share one decision function.
#[derive(Debug, Clone, PartialEq)]
pub enum LogEntry {
    /// The scheduler was built with this many workers at this time ([`Scheduler::new`]).
    New {
        /// Workers.
        workers: u32,
        /// Construction time.
        now_nanos: Nanos,
    },
    /// A job class was registered (ids are given in order of registration).
    Class(alloc::string::String),
    /// [`Scheduler::restrict_worker`].
    Restrict {
        /// The worker.
        worker: u32,
        /// Its classes.
        classes: Vec<ClassId>,
    },
    /// [`Scheduler::reserve_stream`].
    ReserveStream {
        /// The worker.
        worker: u32,
        /// The stream's class.
        class: ClassId,
        /// Its booking.
        booking: StreamBooking,
    },
    /// [`Scheduler::cancel_stream`].
    CancelStream {
        /// The worker.
        worker: u32,
        /// The stream's class.
        class: ClassId,
    },
    /// [`Scheduler::set_policy`] (boxed: a policy is large next to the other entries).
    SetPolicy(Box<Policy>),
    /// [`Scheduler::set_shedding`].
    Shedding(bool),
    /// [`Scheduler::step`] with what it was told and what it decided.
    Step {
        /// Its time.
        now_nanos: Nanos,
        /// Its events.
        events: Vec<SchedEvent>,
        /// Its decisions.
        decisions: Vec<Decision>,
    },
}

/// Why a set-up call of the scheduler was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchedulerError {
    /// A worker index out of range.
    #[error("worker {worker} does not exist (the scheduler has {workers} workers)")]
    NoSuchWorker {
        /// The worker asked for.
        worker: u32,
        /// How many there are.
        workers: u32,
    },
    /// The slot table refused the booking.
    #[error(transparent)]
    Slots(#[from] SlotError),
}

#[derive(Debug, Clone, Copy)]
struct Running {
    job: JobId,
    class: ClassId,
    reservation: ReservationId,
}

/// The scheduling core shared by the runtime and the simulator. See the module docs.
#[derive(Debug, Clone)]
pub struct Scheduler {
    arbiter: Arbiter,
    admission: Admission,
    ready: ReadyQueue,
    tables: Vec<SlotTable>,
    running: Vec<Option<Running>>,
    battery_fraction: f64,
    batch: Vec<Job>,
    arrived: usize,
    assessments: Vec<Assessment>,
    /// Per worker: the classes it may run (`None`: any).
    allowed: Vec<Option<Vec<ClassId>>>,
    /// Per worker: standing reservations of periodic streams, by class, with how long
    /// after an occurrence starts the stream's job for it is due.
    streams: Vec<BTreeMap<ClassId, (StandingId, Option<Nanos>)>>,
    passed: Vec<QueuedJob>,
    log: Option<Vec<LogEntry>>,
    created_nanos: Nanos,
    /// Workers in the order they choose jobs: dedicated ones first.
    dispatch_order: Vec<usize>,
    /// Whether admission may shed (off only to measure what shedding is worth).
    shedding: bool,
    /// Predicted cost of the queued jobs per worker group (general, dedicated).
    queued_cost: [u128; 2],
    /// How many queued jobs each worker group has (general, dedicated): a dedicated
    /// worker skips the queue while none is of its group, instead of passing over jobs it
    /// may not run.
    queued_jobs: [usize; 2],
    /// How many queued jobs have each deadline: the latest bounds the urgency of the set.
    queued_deadlines: BTreeMap<Nanos, u32>,
    /// Whether admission may skip the full pass when it provably decides the same (off
    /// only in tests, to compare the two).
    fast_admission: bool,
}

impl Scheduler {
    /// A scheduler for `workers` workers (at least 1) following `policy`; each worker
    /// gets its own slot table of the policy's slot length and horizon, starting at
    /// `now_nanos`.
    pub fn new(policy: &Policy, workers: u32, now_nanos: Nanos) -> Result<Self, SlotError> {
        let workers = workers.max(1);
        let config = SlotTableConfig::from_policy(policy.slots());
        let base = now_nanos / (config.slot_len_micros.max(1) * NANOS_PER_MICRO);
        let tables = (0..workers)
            .map(|_| SlotTable::new(config, base))
            .collect::<Result<Vec<_>, _>>()?;
        let arbiter = Arbiter::new(policy);
        Ok(Scheduler {
            ready: ReadyQueue::with_capacity(arbiter.dispatch_rule(), 256),
            arbiter,
            admission: Admission::with_capacity(256),
            tables,
            running: alloc::vec![None; workers as usize],
            battery_fraction: 1.0,
            batch: Vec::with_capacity(256),
            arrived: 0,
            assessments: Vec::with_capacity(256),
            allowed: alloc::vec![None; workers as usize],
            streams: alloc::vec![BTreeMap::new(); workers as usize],
            passed: Vec::with_capacity(LOOKAHEAD),
            log: None,
            created_nanos: now_nanos,
            dispatch_order: (0..workers as usize).collect(),
            shedding: true,
            queued_cost: [0; 2],
            queued_jobs: [0; 2],
            queued_deadlines: BTreeMap::new(),
            fast_admission: true,
        })
    }

    /// Starts recording every call from now on (for replay; see [`LogEntry`]).
    /// The log starts with how the scheduler was built, so a replay can build its twin
    /// ([`Scheduler::from_log`]); call it before anything else.
    pub fn record(&mut self) {
        let (workers, now_nanos) = (self.workers(), self.created_nanos);
        self.log
            .get_or_insert_with(|| alloc::vec![LogEntry::New { workers, now_nanos }]);
    }

    /// A scheduler built like the one that recorded `log` (its first entry), under `policy`.
    pub fn from_log(policy: &Policy, log: &[LogEntry]) -> Result<Self, SchedulerError> {
        let (workers, now_nanos) = match log.first() {
            Some(LogEntry::New { workers, now_nanos }) => (*workers, *now_nanos),
            _ => (1, 0),
        };
        Ok(Scheduler::new(policy, workers, now_nanos)?)
    }

    /// Takes what was recorded so far (empty when not recording).
    pub fn take_log(&mut self) -> Vec<LogEntry> {
        self.log.as_mut().map(core::mem::take).unwrap_or_default()
    }

    fn note(&mut self, entry: impl FnOnce() -> LogEntry) {
        if let Some(log) = &mut self.log {
            log.push(entry());
        }
    }

    /// The id of a job class by name, registered on first use (recorded, unlike
    /// registering through [`Scheduler::arbiter_mut`]).
    pub fn class(&mut self, name: &str) -> ClassId {
        self.note(|| LogEntry::Class(name.into()));
        self.arbiter.class(name)
    }

    /// Switches to `policy` for the next steps (hot reload): weights, importance, battery
    /// saver and the dispatch rule. Slot length and horizon are fixed at construction.
    pub fn set_policy(&mut self, policy: &Policy) {
        self.note(|| LogEntry::SetPolicy(Box::new(policy.clone())));
        self.arbiter.set_policy(policy);
        let rule = self.arbiter.dispatch_rule();
        if rule != self.ready.rule() {
            let mut ready = ReadyQueue::with_capacity(rule, self.ready.len().max(256));
            while let Some(q) = self.ready.pop() {
                ready.push(q.job, q.score);
            }
            self.ready = ready;
        }
    }

    /// Lets admission shed under overload (the default) or admit every job that is not
    /// pruned (to measure what shedding is worth).
    pub fn set_shedding(&mut self, on: bool) {
        self.note(|| LogEntry::Shedding(on));
        self.shedding = on;
    }

    /// Restricts `worker` to jobs of `classes` (e.g. a real-time audio worker).
    pub fn restrict_worker(
        &mut self,
        worker: u32,
        classes: &[ClassId],
    ) -> Result<(), SchedulerError> {
        let workers = self.workers();
        let a = self
            .allowed
            .get_mut(worker as usize)
            .ok_or(SchedulerError::NoSuchWorker { worker, workers })?;
        *a = Some(classes.to_vec());
        let n = self.allowed.len();
        let dedicated = (0..n).filter(|&w| self.allowed[w].is_some());
        let general = (0..n).filter(|&w| self.allowed[w].is_none());
        self.dispatch_order = dedicated.chain(general).collect();
        self.retrack();
        self.note(|| LogEntry::Restrict {
            worker,
            classes: classes.to_vec(),
        });
        Ok(())
    }

    /// Books a standing reservation on `worker` for the periodic stream of `class` (see
    /// [`StreamBooking`]). Jobs of `class` on that worker run in its occurrences; other
    /// jobs must fit around them, unless they are due before the stream's job of an
    /// occurrence that has not started. A class holds at most one stream per worker:
    /// booking again replaces the previous one.
    pub fn reserve_stream(
        &mut self,
        worker: u32,
        class: ClassId,
        booking: StreamBooking,
    ) -> Result<StandingId, SchedulerError> {
        let w = worker as usize;
        let workers = self.workers();
        let Some(table) = self.tables.get_mut(w) else {
            return Err(SchedulerError::NoSuchWorker { worker, workers });
        };
        if let Some((old, _)) = self.streams[w].remove(&class) {
            let _ = table.cancel_standing(old);
        }
        let slot_nanos = table.slot_len_micros() * NANOS_PER_MICRO;
        // An occurrence longer than the period would overlap the next one: it is cut to
        // the period, so occurrence k still starts with the stream's k-th job.
        let period = (booking.period_nanos / slot_nanos).max(1);
        let len = u32::try_from(u64::from(booking.len_slots.max(1)).min(period)).unwrap_or(1);
        let first = booking.first_nanos / slot_nanos;
        let id = table.reserve_periodic(booking.modality, first, period, len)?;
        self.streams[w].insert(class, (id, booking.due_after_nanos));
        self.note(|| LogEntry::ReserveStream {
            worker,
            class,
            booking,
        });
        Ok(id)
    }

    /// Cancels the standing reservation of `class` on `worker`, if any.
    pub fn cancel_stream(&mut self, worker: u32, class: ClassId) {
        let w = worker as usize;
        if let (Some(table), Some((id, _))) = (
            self.tables.get_mut(w),
            self.streams.get_mut(w).and_then(|s| s.remove(&class)),
        ) {
            let _ = table.cancel_standing(id);
        }
        self.note(|| LogEntry::CancelStream { worker, class });
    }

    /// The slot table of `worker` (occupancy, for reports).
    pub fn table(&self, worker: u32) -> Option<&SlotTable> {
        self.tables.get(worker as usize)
    }

    /// The arbiter, to register job classes ([`Arbiter::class`]) before the first step.
    pub fn arbiter_mut(&mut self) -> &mut Arbiter {
        &mut self.arbiter
    }

    /// The arbiter.
    pub fn arbiter(&self) -> &Arbiter {
        &self.arbiter
    }

    /// Number of workers.
    pub fn workers(&self) -> u32 {
        self.running.len() as u32
    }

    /// Admitted jobs waiting for a worker.
    pub fn queued(&self) -> usize {
        self.ready.len()
    }

    /// Admitted jobs of `class` not finished yet: waiting for a worker or running.
    /// O(queued + workers).
    pub fn in_work(&self, class: ClassId) -> usize {
        let waiting = self.ready.iter().filter(|q| q.job.class == class).count();
        let running = self.running.iter().flatten().filter(|r| r.class == class);
        waiting + running.count()
    }

    /// The job a worker is running, if any.
    pub fn running(&self, worker: u32) -> Option<JobId> {
        self.running
            .get(worker as usize)
            .copied()
            .flatten()
            .map(|r| r.job)
    }

    /// One decision step at `now_nanos`: applies `events` and appends the decisions to
    /// `out` (in a deterministic order). See the module docs for what happens.
    pub fn step(&mut self, now_nanos: Nanos, events: &[SchedEvent], out: &mut Vec<Decision>) {
        for table in &mut self.tables {
            let slot = table.slot_at(now_nanos);
            // An ACTIVE booking that overran is ended by the table; the job's Finish
            // event then finds no live reservation, which is fine.
            table.advance_to(slot, |_| {});
        }
        self.batch.clear();
        for event in events {
            match *event {
                SchedEvent::Finish { worker, job } => {
                    let w = worker as usize;
                    if let Some(r) = self.running.get(w).copied().flatten()
                        && r.job == job
                    {
                        let _ = self.tables[w].complete(r.reservation);
                        self.running[w] = None;
                    }
                }
                SchedEvent::Battery(fraction) => {
                    self.battery_fraction = if fraction.is_nan() {
                        0.0
                    } else {
                        fraction.clamp(0.0, 1.0)
                    };
                }
                SchedEvent::Arrive(job) => self.batch.push(job),
            }
        }
        let first = out.len();
        if !self.batch.is_empty() {
            self.admit(now_nanos, out);
        }
        self.dispatch(now_nanos, out);
        if let Some(log) = &mut self.log {
            log.push(LogEntry::Step {
                now_nanos,
                events: events.to_vec(),
                decisions: out[first..].to_vec(),
            });
        }
    }

    /// Applies a recorded log to this scheduler (built like the recorded one) and checks
    /// that every step decides exactly what was recorded. Returns the index of the first
    /// entry that differs, with what this scheduler decided instead.
    pub fn replay(&mut self, log: &[LogEntry]) -> Result<usize, (usize, Vec<Decision>)> {
        let mut out = Vec::new();
        for (i, entry) in log.iter().enumerate() {
            match entry {
                LogEntry::New { .. } => {}
                LogEntry::Class(name) => {
                    self.class(name);
                }
                LogEntry::Restrict { worker, classes } => {
                    let _ = self.restrict_worker(*worker, classes);
                }
                LogEntry::ReserveStream {
                    worker,
                    class,
                    booking,
                } => {
                    let _ = self.reserve_stream(*worker, *class, *booking);
                }
                LogEntry::CancelStream { worker, class } => self.cancel_stream(*worker, *class),
                LogEntry::SetPolicy(p) => self.set_policy(p),
                LogEntry::Shedding(on) => self.set_shedding(*on),
                LogEntry::Step {
                    now_nanos,
                    events,
                    decisions,
                } => {
                    out.clear();
                    self.step(*now_nanos, events, &mut out);
                    if &out != decisions {
                        return Err((i, out));
                    }
                }
            }
        }
        Ok(log.len())
    }

    /// The worker group that runs `job`: 1 when a restricted worker accepts its class,
    /// else 0 (the general workers).
    fn group_of(&self, job: &Job) -> usize {
        usize::from(
            self.allowed
                .iter()
                .flatten()
                .any(|classes| classes.contains(&job.class)),
        )
    }

    /// Workers per group: (general, restricted).
    fn group_workers(&self) -> [u32; 2] {
        let restricted = self.allowed.iter().filter(|a| a.is_some()).count() as u32;
        [self.workers() - restricted, restricted]
    }

    fn track_add(&mut self, job: &Job) {
        let g = self.group_of(job);
        self.queued_cost[g] += u128::from(job.predicted_cost_nanos);
        self.queued_jobs[g] += 1;
        *self.queued_deadlines.entry(job.deadline_nanos).or_default() += 1;
    }

    fn track_remove(&mut self, job: &Job) {
        let g = self.group_of(job);
        self.queued_cost[g] -= u128::from(job.predicted_cost_nanos);
        self.queued_jobs[g] -= 1;
        if let Some(n) = self.queued_deadlines.get_mut(&job.deadline_nanos) {
            *n -= 1;
            if *n == 0 {
                self.queued_deadlines.remove(&job.deadline_nanos);
            }
        }
    }

    /// Rebuilds the queued jobs' cost and deadline counts from the queue.
    fn retrack(&mut self) {
        self.queued_cost = [0; 2];
        self.queued_jobs = [0; 2];
        self.queued_deadlines.clear();
        let jobs: Vec<Job> = self.ready.iter().map(|q| q.job).collect();
        for job in &jobs {
            self.track_add(job);
        }
    }

    /// Admission without a pass over the queue, when it provably decides what the full
    /// pass would (EDF dispatch, no class pruned, and the whole demand of each worker group
    /// — queued and arriving — fits before the earliest deadline of the set, so no window
    /// can overflow and nothing is shed). The arrivals are scored against the urgency
    /// bounds of the whole set, which the earliest and latest deadlines give (urgency
    /// falls with the deadline), and queued ahead of equal-deadline jobs, as the full pass
    /// leaves them. O(arrivals · log n). Returns false when the full pass must run.
    fn admit_fast(&mut self, now_nanos: Nanos, out: &mut Vec<Decision>) -> bool {
        if self.ready.rule() != crate::policy::DispatchRule::Edf
            || self.arbiter.prunes_any(self.battery_fraction)
        {
            return false;
        }
        let Some(first) = self.batch.first().copied() else {
            return true;
        };
        let mut earliest = self
            .ready
            .peek()
            .map_or(first.deadline_nanos, |q| q.job.deadline_nanos);
        let mut latest = self
            .queued_deadlines
            .last_key_value()
            .map_or(first.deadline_nanos, |(d, _)| *d);
        let mut cost = self.queued_cost;
        for job in &self.batch {
            earliest = earliest.min(job.deadline_nanos);
            latest = latest.max(job.deadline_nanos);
            cost[self.group_of(job)] += u128::from(job.predicted_cost_nanos);
        }
        if self.shedding {
            let window = u128::from(earliest.saturating_sub(now_nanos));
            let fits = cost
                .iter()
                .zip(self.group_workers())
                .all(|(c, w)| *c <= window * u128::from(w));
            if !fits {
                return false;
            }
        }
        let raw = |deadline_nanos| {
            let probe = Job {
                deadline_nanos,
                ..first
            };
            Arbiter::urgency_and_risk(&probe, now_nanos).0
        };
        let mut bounds = crate::arbiter::UrgencyBounds::EMPTY;
        bounds.include(raw(earliest));
        bounds.include(raw(latest));
        let battery = self.battery_fraction;
        let batch = core::mem::take(&mut self.batch);
        for job in &batch {
            let score = self.arbiter.assess(job, now_nanos, battery, &bounds).score;
            out.push(Decision::Admit { job: job.id, score });
            self.track_add(job);
        }
        let start = out.len() - batch.len();
        let scored = batch.iter().zip(&out[start..]).map(|(job, d)| match d {
            Decision::Admit { score, .. } => (*job, *score),
            _ => (*job, 0.0),
        });
        self.ready.push_ahead(scored);
        self.batch = batch;
        true
    }

    fn admit(&mut self, now_nanos: Nanos, out: &mut Vec<Decision>) {
        if self.fast_admission && self.admit_fast(now_nanos, out) {
            return;
        }
        // Arrivals first (in event order), then the queued jobs: all compete for the same
        // capacity, and a queued job can be shed in favour of a more valuable arrival.
        self.arrived = self.batch.len();
        while let Some(q) = self.ready.pop() {
            self.batch.push(q.job);
        }
        self.arbiter.reevaluate(
            &self.batch,
            now_nanos,
            self.battery_fraction,
            &mut self.assessments,
        );
        // Capacity per group of workers: a restricted worker (the audio worker) adds
        // capacity only for the classes it runs, and those classes' demand is tested
        // against it alone; the general workers carry everything else. Without
        // shedding, the demand test is skipped (nothing is over any capacity).
        let groups = if self.shedding {
            self.group_workers()
        } else {
            [u32::MAX, u32::MAX]
        };
        let allowed = &self.allowed;
        let verdicts = self.admission.decide_grouped(
            &self.batch,
            &self.assessments,
            now_nanos,
            &groups,
            |job| {
                usize::from(
                    allowed
                        .iter()
                        .flatten()
                        .any(|classes| classes.contains(&job.class)),
                )
            },
        );
        for (i, (job, verdict)) in self.batch.iter().zip(verdicts).enumerate() {
            let score = self.assessments[i].score;
            let arrival = i < self.arrived;
            match verdict {
                Verdict::Admit => {
                    self.ready.push(*job, score);
                    if arrival {
                        out.push(Decision::Admit { job: job.id, score });
                    }
                }
                Verdict::Shed => out.push(Decision::Shed { job: job.id }),
                Verdict::Pruned => out.push(Decision::Prune { job: job.id }),
            }
        }
        self.retrack();
    }

    fn dispatch(&mut self, now_nanos: Nanos, out: &mut Vec<Decision>) {
        debug_assert_eq!(self.queued_jobs.iter().sum::<usize>(), self.ready.len());
        // Dedicated workers choose first: a job that a restricted worker accepts goes
        // there and leaves the general workers to the rest.
        for i in 0..self.dispatch_order.len() {
            let w = self.dispatch_order[i];
            if self.running[w].is_some() {
                continue;
            }
            if self.ready.is_empty() {
                return;
            }
            if self.allowed[w].is_some() && self.queued_jobs[1] == 0 {
                // No queued job is of a class a dedicated worker runs: popping would
                // only pass over jobs this worker may not run.
                continue;
            }
            let mut chosen = None;
            while self.passed.len() < LOOKAHEAD {
                let Some(q) = self.ready.pop() else { break };
                let allowed = self.allowed[w]
                    .as_ref()
                    .is_none_or(|classes| classes.contains(&q.job.class));
                match allowed.then(|| self.book(w, &q.job, now_nanos)).flatten() {
                    Some(r) => {
                        chosen = Some((q.job, r));
                        break;
                    }
                    None => self.passed.push(q),
                }
            }
            // Passed-over jobs keep their place for the next worker and the next step.
            for q in self.passed.drain(..) {
                self.ready.push(q.job, q.score);
            }
            if let Some((job, (reservation, start_slot, len_slots))) = chosen {
                self.track_remove(&job);
                self.running[w] = Some(Running {
                    job: job.id,
                    class: job.class,
                    reservation,
                });
                out.push(Decision::Start {
                    worker: w as u32,
                    job: job.id,
                    start_slot,
                    len_slots,
                });
            }
        }
    }

    /// Books and fires slots for `job` on worker `w` starting now: its stream's
    /// occurrence (the one holding this slot, or the next one when it starts in the next
    /// slot and this one is free), else free slots from now on.
    fn book(
        &mut self,
        w: usize,
        job: &Job,
        now_nanos: Nanos,
    ) -> Option<(ReservationId, SlotId, u32)> {
        let table = &mut self.tables[w];
        let now_slot = table.slot_at(now_nanos);
        let slot_nanos = table.slot_len_micros() * NANOS_PER_MICRO;
        let len = job.predicted_cost_nanos.div_ceil(slot_nanos).max(1);
        let len = u32::try_from(len)
            .unwrap_or(u32::MAX)
            .min(table.horizon_slots());
        if let Some((standing, _)) = self.streams[w].get(&job.class).copied() {
            // The stream's occurrence holding this slot; else, when the slots up to the
            // stream's next occurrence are idle and the job would run into it, that
            // occurrence fired early: the job starts now. Waiting for it would leave the
            // worker idle while a frame ages, and nothing else can use the idle slots
            // before it while the job runs.
            let own = |r: &crate::slots::Reservation| {
                r.standing == Some(standing) && r.state == SlotState::Reserved
            };
            let occurrence = table
                .next_booking(now_slot, len.max(2))
                .ok()
                .flatten()
                .filter(own);
            if let Some(r) = occurrence {
                return table
                    .activate(r.id)
                    .ok()
                    .map(|r| (r.id, r.start_slot, r.len_slots));
            }
        }
        let r = match table.reserve_at(job.modality, now_slot, len) {
            Ok(r) => r,
            Err(_) => {
                let yielding = occurrences_due_after(table, &self.streams[w], now_slot, len, job)?;
                for id in yielding {
                    table.release(id).ok()?;
                }
                table.reserve_at(job.modality, now_slot, len).ok()?
            }
        };
        table
            .activate(r.id)
            .ok()
            .map(|r| (r.id, r.start_slot, r.len_slots))
    }
}

/// The bookings of `table` in `from..from + len` when every one of them is a standing
/// occurrence not started yet, of another stream than `job`'s, whose stream's job is due
/// after `job`: EDF would run `job` first, so those occurrences yield their slots to it.
/// `None` when anything else is in the way (a running job, a one-off booking, an
/// occurrence due no later than `job`, an occurrence of `job`'s own stream: a stream's
/// jobs take its occurrences in order, see [`Scheduler::step`]).
fn occurrences_due_after(
    table: &SlotTable,
    streams: &BTreeMap<ClassId, (StandingId, Option<Nanos>)>,
    from: SlotId,
    len: u32,
    job: &Job,
) -> Option<Vec<ReservationId>> {
    let end = from.saturating_add(u64::from(len));
    if end > table.end_slot() {
        // The job would not fit inside the horizon even with the occurrences released.
        return None;
    }
    let mut yielding = Vec::new();
    let mut at = from;
    while at < end {
        let left = u32::try_from(end - at).unwrap_or(u32::MAX);
        let Some(b) = table.next_booking(at, left).ok().flatten() else {
            break;
        };
        let (class, (_, due_after)) = streams
            .iter()
            .find(|(_, (id, _))| b.standing == Some(*id))?;
        if *class == job.class {
            return None;
        }
        let due_after = (*due_after)?;
        let due = table
            .slot_start_nanos(b.start_slot)
            .saturating_add(due_after);
        if b.state != SlotState::Reserved || due <= job.deadline_nanos {
            return None;
        }
        yielding.push(b.id);
        at = b.end_slot();
    }
    Some(yielding)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Modality;
    use crate::arbiter::ClassId;
    use crate::time::NANOS_PER_MILLI;

    /// Worker 0 reports job `id` finished at `at`.
    fn finish(s: &mut Scheduler, at: Nanos, id: u64, out: &mut Vec<Decision>) {
        let done = SchedEvent::Finish {
            worker: 0,
            job: JobId(id),
        };
        s.step(at, &[done], out);
    }

    fn booking(
        modality: Modality,
        first_nanos: Nanos,
        period_nanos: Nanos,
        len_slots: u32,
        due_after_nanos: Option<Nanos>,
    ) -> StreamBooking {
        StreamBooking {
            modality,
            first_nanos,
            period_nanos,
            len_slots,
            due_after_nanos,
        }
    }

    /// One worker whose periodic stream of class `stream` holds `len` 1 ms slots every
    /// `every_ms` from `every_ms` on, each occurrence's job due `due_after` after it starts,
    /// and the class `llm` that must fit around it.
    fn one_worker_with_a_stream(
        stream: &str,
        modality: Modality,
        every_ms: u64,
        len: u32,
        due_after: Option<Nanos>,
    ) -> (Scheduler, ClassId, ClassId) {
        let mut s = Scheduler::new(&Policy::default(), 1, 0).expect("valid policy");
        let class = s.arbiter_mut().class(stream);
        let llm = s.arbiter_mut().class("llm");
        let every = every_ms * NANOS_PER_MILLI;
        s.reserve_stream(0, class, booking(modality, every, every, len, due_after))
            .expect("books");
        (s, class, llm)
    }

    fn job(id: u64, class: ClassId, deadline_ms: u64, cost_ms: u64) -> Job {
        Job {
            id: JobId(id),
            class,
            modality: Modality::Image,
            deadline_nanos: deadline_ms * NANOS_PER_MILLI,
            predicted_cost_nanos: cost_ms * NANOS_PER_MILLI,
            importance: 0.5,
            committed: false,
        }
    }

    #[test]
    fn dispatches_by_earliest_deadline_and_books_slots() {
        let mut s = Scheduler::new(&Policy::default(), 1, 0).expect("valid policy");
        let c = s.arbiter_mut().class("vision");
        let mut out = Vec::new();
        s.step(
            0,
            &[
                SchedEvent::Arrive(job(1, c, 100, 10)),
                SchedEvent::Arrive(job(2, c, 50, 10)),
            ],
            &mut out,
        );
        assert!(matches!(out[0], Decision::Admit { job: JobId(1), .. }));
        assert!(matches!(out[1], Decision::Admit { job: JobId(2), .. }));
        let Decision::Start {
            worker,
            job,
            len_slots,
            ..
        } = out[2]
        else {
            panic!("expected a start, got {out:?}");
        };
        assert_eq!((worker, job), (0, JobId(2)));
        let slot_ms = Policy::default().slots().slot_len_micros as f64 / 1000.0;
        assert_eq!(len_slots, (10.0 / slot_ms).ceil() as u32);
        assert_eq!(s.running(0), Some(JobId(2)));
        out.clear();
        finish(&mut s, 10 * NANOS_PER_MILLI, 2, &mut out);
        assert!(matches!(out[0], Decision::Start { job: JobId(1), .. }));
    }

    #[test]
    fn sheds_under_overload_and_prunes_on_low_battery() {
        let mut s = Scheduler::new(&Policy::default(), 1, 0).expect("valid policy");
        let vision = s.arbiter_mut().class("vision");
        let mut out = Vec::new();
        // Two 40 ms jobs due in 50 ms on one worker: one must go.
        s.step(
            0,
            &[
                SchedEvent::Arrive(job(1, vision, 50, 40)),
                SchedEvent::Arrive(job(2, vision, 50, 40)),
            ],
            &mut out,
        );
        let shed = out
            .iter()
            .filter(|d| matches!(d, Decision::Shed { .. }))
            .count();
        assert_eq!(shed, 1, "{out:?}");
        let heavy = Policy::default().arbiter().heavy_classes.clone();
        let h = heavy
            .first()
            .expect("the default policy names a heavy class");
        let class = s.arbiter_mut().class(h);
        out.clear();
        s.step(
            1,
            &[
                SchedEvent::Battery(0.05),
                SchedEvent::Arrive(job(3, class, 10_000, 1)),
            ],
            &mut out,
        );
        assert!(out.contains(&Decision::Prune { job: JobId(3) }), "{out:?}");
    }

    #[test]
    fn same_events_same_decisions() {
        let run = || {
            let mut s = Scheduler::new(&Policy::default(), 2, 0).expect("valid policy");
            let c = s.arbiter_mut().class("asr");
            let mut out = Vec::new();
            for i in 0..50u64 {
                let ev = [SchedEvent::Arrive(job(i, c, i * 7 + 30, 5 + i % 7))];
                s.step(i * NANOS_PER_MILLI, &ev, &mut out);
            }
            out
        };
        assert_eq!(run(), run());
    }

    #[test]
    fn a_restricted_worker_runs_only_its_classes() {
        let mut s = Scheduler::new(&Policy::default(), 2, 0).expect("valid policy");
        let vad = s.arbiter_mut().class("vad");
        let llm = s.arbiter_mut().class("llm");
        s.restrict_worker(1, &[vad]).expect("worker 1 exists");
        assert!(s.restrict_worker(2, &[vad]).is_err());
        let mut out = Vec::new();
        // Two LLM steps: only worker 0 may take one; the other waits.
        s.step(
            0,
            &[
                SchedEvent::Arrive(job(1, llm, 1_000, 10)),
                SchedEvent::Arrive(job(2, llm, 1_000, 10)),
            ],
            &mut out,
        );
        let starts: Vec<_> = out
            .iter()
            .filter_map(|d| match d {
                Decision::Start { worker, job, .. } => Some((*worker, *job)),
                _ => None,
            })
            .collect();
        assert_eq!(starts.len(), 1, "{out:?}");
        assert_eq!(starts[0].0, 0);
        out.clear();
        // A VAD job goes to the audio worker although it arrives last.
        s.step(
            1_000_000,
            &[SchedEvent::Arrive(job(3, vad, 60, 1))],
            &mut out,
        );
        assert!(
            out.contains(&Decision::Start {
                worker: 1,
                job: JobId(3),
                start_slot: 1,
                len_slots: 1
            }),
            "{out:?}"
        );
    }

    /// The fast admission path decides exactly what the full pass does, on random event
    /// sequences with overloads, ties, a restricted worker, a standing reservation and a
    /// battery that crosses the saver threshold.
    #[test]
    fn fast_admission_decides_what_the_full_pass_decides() {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move |n: u64| {
            seed ^= seed >> 12;
            seed ^= seed << 25;
            seed ^= seed >> 27;
            seed.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
        };
        let (mut sheds, mut deepest) = (0, 0);
        for round in 0..40u64 {
            let build = |fast: bool| {
                let mut s = Scheduler::new(&Policy::default(), 3, 0).expect("valid policy");
                s.fast_admission = fast;
                let classes: Vec<ClassId> = ["vision", "vad", "asr", "llm"]
                    .iter()
                    .map(|c| s.class(c))
                    .collect();
                s.restrict_worker(2, &[classes[1]]).expect("exists");
                let frames = booking(
                    Modality::Image,
                    5 * NANOS_PER_MILLI,
                    40 * NANOS_PER_MILLI,
                    4,
                    Some(30 * NANOS_PER_MILLI),
                );
                s.reserve_stream(0, classes[0], frames).expect("books");
                (s, classes)
            };
            let (mut fast, classes) = build(true);
            let (mut full, _) = build(false);
            let (mut out_fast, mut out_full) = (Vec::new(), Vec::new());
            let mut id = 0;
            for step in 0..150u64 {
                let now = step * 2 * NANOS_PER_MILLI;
                let mut events = Vec::new();
                for w in 0..3 {
                    if next(3) == 0
                        && let Some(job) = fast.running(w)
                    {
                        events.push(SchedEvent::Finish { worker: w, job });
                    }
                }
                if next(20) == 0 {
                    events.push(SchedEvent::Battery(next(100) as f64 / 100.0));
                }
                for _ in 0..next(4) {
                    id += 1;
                    // Few distinct deadlines, so ties occur; tight ones overload.
                    let due = now + (1 + next(6)) * (5 + round % 7) * NANOS_PER_MILLI;
                    let mut j = job(id, classes[next(4) as usize], 0, next(12) + 1);
                    j.deadline_nanos = due;
                    j.importance = next(10) as f64 / 10.0;
                    events.push(SchedEvent::Arrive(j));
                }
                out_fast.clear();
                out_full.clear();
                fast.step(now, &events, &mut out_fast);
                full.step(now, &events, &mut out_full);
                assert_eq!(out_fast, out_full, "round {round}, step {step}");
                assert_eq!(fast.queued(), full.queued());
                sheds += out_full
                    .iter()
                    .filter(|d| matches!(d, Decision::Shed { .. } | Decision::Prune { .. }))
                    .count();
                deepest = deepest.max(full.queued());
            }
        }
        // The sequences did overload (the full pass shed) and queue up.
        assert!(sheds > 50 && deepest > 10, "{sheds} shed, {deepest} deep");
    }

    #[test]
    fn a_voice_activity_worker_adds_no_capacity_for_other_jobs() {
        let mut s = Scheduler::new(&Policy::default(), 2, 0).expect("valid policy");
        let vad = s.class("vad");
        let vision = s.class("vision");
        s.restrict_worker(1, &[vad]).expect("exists");
        let mut out = Vec::new();
        // Two 40 ms frames due in 50 ms: two workers could, but one runs only VAD.
        s.step(
            0,
            &[
                SchedEvent::Arrive(job(1, vision, 50, 40)),
                SchedEvent::Arrive(job(2, vision, 50, 40)),
                SchedEvent::Arrive(job(3, vad, 50, 40)),
            ],
            &mut out,
        );
        let shed: Vec<_> = out
            .iter()
            .filter_map(|d| match d {
                Decision::Shed { job } => Some(*job),
                _ => None,
            })
            .collect();
        assert_eq!(shed.len(), 1, "{out:?}");
        assert_ne!(shed[0], JobId(3), "the VAD job has its own worker");
        // Without shedding every job is admitted.
        let mut s = Scheduler::new(&Policy::default(), 2, 0).expect("valid policy");
        let vision = s.class("vision");
        s.set_shedding(false);
        out.clear();
        s.step(
            0,
            &[
                SchedEvent::Arrive(job(1, vision, 50, 40)),
                SchedEvent::Arrive(job(2, vision, 50, 40)),
                SchedEvent::Arrive(job(3, vision, 50, 40)),
            ],
            &mut out,
        );
        assert!(
            !out.iter().any(|d| matches!(d, Decision::Shed { .. })),
            "{out:?}"
        );
    }

    #[test]
    fn long_steps_never_run_into_a_streams_reserved_slot() {
        const MS: Nanos = NANOS_PER_MILLI;
        // Audio every 20 ms from 20 ms, 3 slots (1 ms each) per occurrence.
        let (mut s, audio, llm) = one_worker_with_a_stream("audio", Modality::Audio, 20, 3, None);
        assert!(
            s.reserve_stream(3, audio, booking(Modality::Audio, 0, MS, 1, None))
                .is_err()
        );
        let mut out = Vec::new();
        // At 12 ms a 10 ms step would overlap the occurrence at 20 ms: it waits.
        s.step(
            12 * MS,
            &[SchedEvent::Arrive(job(1, llm, 5_000, 10))],
            &mut out,
        );
        assert!(
            !out.iter().any(|d| matches!(d, Decision::Start { .. })),
            "{out:?}"
        );
        out.clear();
        // The audio job runs in its occurrence at 20 ms.
        let mut pkt = job(2, audio, 40, 3);
        pkt.modality = Modality::Audio;
        s.step(20 * MS, &[SchedEvent::Arrive(pkt)], &mut out);
        assert!(
            out.contains(&Decision::Start {
                worker: 0,
                job: JobId(2),
                start_slot: 20,
                len_slots: 3
            }),
            "{out:?}"
        );
        out.clear();
        // After it, 10 ms fit before the next occurrence at 40 ms.
        finish(&mut s, 23 * MS, 2, &mut out);
        assert!(
            matches!(
                out[..],
                [Decision::Start {
                    job: JobId(1),
                    start_slot: 23,
                    ..
                }]
            ),
            "{out:?}"
        );
        // Cancelling the stream frees its future occurrences.
        s.cancel_stream(0, audio);
        assert_eq!(s.table(0).map(|t| t.live_reservations()), Some(1));
    }

    #[test]
    fn an_occurrence_not_started_yields_to_a_job_due_before_its_frame() {
        const MS: Nanos = NANOS_PER_MILLI;
        // Frames every 100 ms from 100 ms, 30 slots each, a frame due 50 ms after its
        // occurrence starts.
        let (mut s, camera, llm) =
            one_worker_with_a_stream("camera", Modality::Image, 100, 30, Some(50 * MS));
        let mut out = Vec::new();
        // A 20 ms step due at 200 ms does not fit before the occurrence at 100 ms, whose
        // frame is due first (150 ms): it waits.
        s.step(
            90 * MS,
            &[SchedEvent::Arrive(job(1, llm, 200, 20))],
            &mut out,
        );
        assert!(
            !out.iter().any(|d| matches!(d, Decision::Start { .. })),
            "{out:?}"
        );
        // A step due at 130 ms is due before that frame: the occurrence yields to it.
        s.step(
            91 * MS,
            &[SchedEvent::Arrive(job(2, llm, 130, 20))],
            &mut out,
        );
        assert_eq!(
            out.last(),
            Some(&Decision::Start {
                worker: 0,
                job: JobId(2),
                start_slot: 91,
                len_slots: 20
            }),
            "{out:?}"
        );
        let t = s.table(0).expect("worker 0");
        assert!(t.occupant(t.slot_at(200 * MS)).expect("inside").is_some());
        // The frame then runs in free slots as soon as the step ends.
        out.clear();
        s.step(
            100 * MS,
            &[SchedEvent::Arrive(job(3, camera, 150, 30))],
            &mut out,
        );
        finish(&mut s, 111 * MS, 2, &mut out);
        assert_eq!(
            out.last(),
            Some(&Decision::Start {
                worker: 0,
                job: JobId(3),
                start_slot: 111,
                len_slots: 30
            }),
            "{out:?}"
        );
        // Occurrences of a stream booked without a due time never yield.
        let (mut s, _, llm) = one_worker_with_a_stream("camera", Modality::Image, 100, 30, None);
        out.clear();
        s.step(
            91 * MS,
            &[SchedEvent::Arrive(job(2, llm, 130, 20))],
            &mut out,
        );
        assert!(
            !out.iter().any(|d| matches!(d, Decision::Start { .. })),
            "{out:?}"
        );
    }

    #[test]
    fn a_stream_costlier_than_its_period_keeps_its_period() {
        const MS: Nanos = NANOS_PER_MILLI;
        let (s, _, _) = one_worker_with_a_stream("camera", Modality::Image, 100, 150, None);
        let t = s.table(0).expect("worker 0");
        for k in 1..4u64 {
            let r = t.occupant(t.slot_at(k * 100 * MS)).expect("inside");
            assert!(
                r.is_some_and(|r| r.start_slot == k * 100 && r.len_slots == 100),
                "occurrence {k}: {r:?}"
            );
        }
    }

    #[test]
    fn a_streams_job_on_an_idle_worker_starts_early_in_its_next_occurrence() {
        const MS: Nanos = NANOS_PER_MILLI;
        // Frames every 100 ms from 100 ms, 30 slots (1 ms each) per occurrence.
        let (mut s, camera, llm) =
            one_worker_with_a_stream("camera", Modality::Image, 100, 30, None);
        let mut out = Vec::new();
        // At 80 ms a 30 ms frame does not fit before the occurrence at 100 ms, and the
        // worker is idle: it starts at once, in that occurrence.
        s.step(
            80 * MS,
            &[SchedEvent::Arrive(job(1, camera, 230, 30))],
            &mut out,
        );
        assert_eq!(
            out.last(),
            Some(&Decision::Start {
                worker: 0,
                job: JobId(1),
                start_slot: 100,
                len_slots: 30
            }),
            "{out:?}"
        );
        assert_eq!(
            (s.in_work(camera), s.in_work(llm)),
            (1, 0),
            "running counts"
        );
        out.clear();
        finish(&mut s, 110 * MS, 1, &mut out);
        assert_eq!(s.in_work(camera), 0);
        // Another class still may not run into the stream's next occurrence (at 200 ms)...
        s.step(
            185 * MS,
            &[SchedEvent::Arrive(job(2, llm, 5_000, 20))],
            &mut out,
        );
        assert!(
            !out.iter().any(|d| matches!(d, Decision::Start { .. })),
            "{out:?}"
        );
        assert_eq!(s.in_work(llm), 1, "waiting counts");
        // ...and the stream's own frame keeps its place ahead of it.
        s.step(
            190 * MS,
            &[SchedEvent::Arrive(job(3, camera, 330, 30))],
            &mut out,
        );
        assert!(
            out.contains(&Decision::Start {
                worker: 0,
                job: JobId(3),
                start_slot: 200,
                len_slots: 30
            }),
            "{out:?}"
        );
    }

    #[test]
    fn a_new_policy_changes_the_dispatch_rule_for_queued_jobs() {
        let mut s = Scheduler::new(&Policy::default(), 1, 0).expect("valid policy");
        let c = s.arbiter_mut().class("vision");
        let mut out = Vec::new();
        s.step(
            0,
            &[
                SchedEvent::Arrive(job(1, c, 100, 10)),
                SchedEvent::Arrive(job(2, c, 500, 10)),
                SchedEvent::Arrive(job(3, c, 50, 10)),
            ],
            &mut out,
        );
        let mut spec = Policy::default().to_spec();
        spec.arbiter.dispatch = Some(crate::policy::DispatchRule::Score);
        s.set_policy(&Policy::try_from(spec).expect("valid"));
        assert_eq!(s.queued(), 2);
        assert_eq!(
            s.arbiter().dispatch_rule(),
            crate::policy::DispatchRule::Score
        );
    }

    #[test]
    fn a_recorded_log_replays_to_the_same_decisions() {
        let mut s = Scheduler::new(&Policy::default(), 2, 0).expect("valid policy");
        s.record();
        let vad = s.class("vad");
        let llm = s.class("llm");
        s.restrict_worker(1, &[vad]).expect("exists");
        let chunks = booking(
            Modality::Audio,
            20 * NANOS_PER_MILLI,
            20 * NANOS_PER_MILLI,
            2,
            Some(10 * NANOS_PER_MILLI),
        );
        s.reserve_stream(0, vad, chunks).expect("books");
        let mut out = Vec::new();
        for i in 0..40u64 {
            let class = if i % 3 == 0 { llm } else { vad };
            let mut ev = vec![SchedEvent::Arrive(job(i, class, i * 9 + 60, 1 + i % 4))];
            if let Some(j) = s.running(0) {
                ev.push(SchedEvent::Finish { worker: 0, job: j });
            }
            s.step(i * 3 * NANOS_PER_MILLI, &ev, &mut out);
        }
        let log = s.take_log();
        assert!(log.len() > 40);
        let mut again = Scheduler::from_log(&Policy::default(), &log).expect("valid policy");
        assert_eq!(again.workers(), 2);
        assert_eq!(again.replay(&log), Ok(log.len()));
        // A different policy decides differently somewhere, and replay says where.
        let mut spec = Policy::default().to_spec();
        spec.arbiter.dispatch = Some(crate::policy::DispatchRule::Score);
        let other = Policy::try_from(spec).expect("valid");
        let mut different = Scheduler::new(&other, 1, 0).expect("valid policy");
        assert!(different.replay(&log).is_err());
    }
}
