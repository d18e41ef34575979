//! The dispatcher: every scheduling decision of the runtime, with time passed in.
//!
//! It holds no threads and reads no clock, so the same decisions can be replayed and tested
//! exactly. Each decision goes through the core's functions — the ones the simulator uses:
//!
//! 1. **Admission** ([`Admission::decide`] over [`Arbiter::reevaluate`] scores): under
//!    overload the lowest-scoring jobs are shed until the predicted demand fits before
//!    every deadline on the available lanes; battery saver prunes heavy classes.
//! 2. **Dispatch order** ([`ReadyQueue`], the policy's rule, EDF by default).
//! 3. **Slots** (one [`SlotTable`] per lane, S1): periodic streams hold standing
//!    reservations; a job of such a stream runs in its stream's occurrence, any other job
//!    must fit in free slots starting now — so a long step never runs into the slot
//!    booked for the next frame or audio chunk.
//! 4. **Token-boundary preemption**: a job that yields after a step (one LLM decode step)
//!    comes back with its deadline and competes again, so a due frame goes first.

use std::collections::BTreeMap;

use mmsched_core::Modality;
use mmsched_core::arbiter::{
    Admission, Arbiter, Assessment, ClassId, Job, JobId, ReadyQueue, Verdict,
};
use mmsched_core::policy::Policy;
use mmsched_core::slots::{ReservationId, SlotError, SlotTable, SlotTableConfig, StandingId};
use mmsched_core::time::{NANOS_PER_MICRO, Nanos};

use super::cost::CostModel;
use super::work::StepOutcome;

/// How many queued jobs that do not fit before the next reserved slot are passed over
/// to look for one that does, per lane and decision.
const LOOKAHEAD: usize = 8;

/// A job the dispatcher sent to a lane.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Dispatch {
    /// The lane (worker) to run it on.
    pub lane: usize,
    /// The job.
    pub job: Job,
}

/// Everything one decision produced.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Decision {
    /// Jobs to start now.
    pub dispatched: Vec<Dispatch>,
    /// Jobs shed to relieve an overload (drop their work).
    pub shed: Vec<Job>,
    /// Jobs refused by battery saver (take the lighter path).
    pub pruned: Vec<Job>,
}

/// Per-class counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct ClassStats {
    /// Jobs submitted.
    pub jobs: u64,
    /// Jobs finished.
    pub completed: u64,
    /// Jobs finished after their deadline.
    pub deadline_misses: u64,
    /// Jobs shed under overload.
    pub shed: u64,
    /// Jobs pruned by battery saver.
    pub pruned: u64,
    /// Steps run (more than jobs for step-wise work).
    pub steps: u64,
    /// Times a yielding job was overtaken by another job at its step boundary.
    pub preempted: u64,
}

/// Why the dispatcher refused a request.
#[derive(Debug, thiserror::Error)]
pub enum DispatchError {
    /// A lane index out of range.
    #[error("lane {lane} does not exist ({lanes} lanes)")]
    NoSuchLane {
        /// The lane asked for.
        lane: usize,
        /// How many there are.
        lanes: usize,
    },
    /// A completion for a lane that runs nothing.
    #[error("lane {lane} is not running a job")]
    Idle {
        /// The lane.
        lane: usize,
    },
    /// The slot table refused.
    #[error(transparent)]
    Slots(#[from] SlotError),
}

#[derive(Debug)]
struct Running {
    job: Job,
    reservation: ReservationId,
    started_nanos: Nanos,
}

#[derive(Debug)]
struct Lane {
    table: SlotTable,
    running: Option<Running>,
    /// Standing reservations on this lane, by class.
    streams: BTreeMap<ClassId, StandingId>,
}

/// Every scheduling decision, with time passed in.
#[derive(Debug)]
pub struct Dispatcher {
    arbiter: Arbiter,
    admission: Admission,
    ready: ReadyQueue,
    pending: Vec<Job>,
    lanes: Vec<Lane>,
    cost: CostModel,
    slot_len_nanos: Nanos,
    battery_fraction: f64,
    next_id: u64,
    stats: BTreeMap<ClassId, ClassStats>,
    yielded: Option<JobId>,
    scratch_jobs: Vec<Job>,
    scratch_assess: Vec<Assessment>,
}

impl Dispatcher {
    /// A dispatcher for `lanes` (≥ 1) workers under `policy`, slot tables starting at
    /// `now_nanos`.
    pub fn new(policy: &Policy, lanes: usize, now_nanos: Nanos) -> Result<Self, DispatchError> {
        let config = SlotTableConfig::from_policy(policy.slots());
        let slot_len_nanos = config.slot_len_micros * NANOS_PER_MICRO;
        let base = now_nanos / slot_len_nanos;
        let lanes = (0..lanes.max(1))
            .map(|_| {
                Ok(Lane {
                    table: SlotTable::new(config, base)?,
                    running: None,
                    streams: BTreeMap::new(),
                })
            })
            .collect::<Result<Vec<_>, SlotError>>()?;
        Ok(Self {
            arbiter: Arbiter::new(policy),
            admission: Admission::with_capacity(64),
            ready: ReadyQueue::with_capacity(policy.arbiter().dispatch, 64),
            pending: Vec::new(),
            lanes,
            cost: CostModel::new(64, 3),
            slot_len_nanos,
            battery_fraction: 1.0,
            next_id: 0,
            stats: BTreeMap::new(),
            yielded: None,
            scratch_jobs: Vec::new(),
            scratch_assess: Vec::new(),
        })
    }

    /// The id of a job class by name (created on first use), with its prior cost.
    pub fn class(&mut self, name: &str, prior_cost_nanos: Nanos) -> ClassId {
        let id = self.arbiter.class(name);
        self.cost.set_prior(id, prior_cost_nanos);
        id
    }

    /// The name of a class.
    pub fn class_name(&self, class: ClassId) -> Option<&str> {
        self.arbiter.class_name(class)
    }

    /// Sets the battery fraction η/η_max in [0, 1] used by scoring and battery saver.
    pub fn set_battery_fraction(&mut self, fraction: f64) {
        self.battery_fraction = if fraction.is_nan() {
            0.0
        } else {
            fraction.clamp(0.0, 1.0)
        };
    }

    /// Books a standing reservation on `lane` for the periodic stream of `class`: every
    /// `period_nanos` from `first_nanos`, long enough for the class's predicted cost.
    pub fn reserve_stream(
        &mut self,
        lane: usize,
        class: ClassId,
        modality: Modality,
        first_nanos: Nanos,
        period_nanos: Nanos,
    ) -> Result<StandingId, DispatchError> {
        let len = self.slots_for(self.cost.predict(class));
        let period = (period_nanos / self.slot_len_nanos).max(u64::from(len));
        let first = first_nanos / self.slot_len_nanos;
        let lanes = self.lanes.len();
        let l = self
            .lanes
            .get_mut(lane)
            .ok_or(DispatchError::NoSuchLane { lane, lanes })?;
        let id = l.table.reserve_periodic(modality, first, period, len)?;
        l.streams.insert(class, id);
        Ok(id)
    }

    fn slots_for(&self, cost_nanos: Nanos) -> u32 {
        u32::try_from(cost_nanos.div_ceil(self.slot_len_nanos).max(1)).unwrap_or(u32::MAX)
    }

    /// Submits a job of `class` due at `deadline_nanos`; it is decided on at the next
    /// [`Dispatcher::decide`].
    pub fn submit(&mut self, class: ClassId, modality: Modality, deadline_nanos: Nanos) -> JobId {
        let id = JobId(self.next_id);
        self.next_id += 1;
        self.stats.entry(class).or_default().jobs += 1;
        self.pending.push(Job {
            id,
            class,
            modality,
            deadline_nanos,
            predicted_cost_nanos: self.cost.predict(class),
            importance: self.arbiter.class_importance(class),
        });
        id
    }

    /// Decides at `now_nanos`: admits or sheds what is waiting, then fills idle lanes.
    pub fn decide(&mut self, now_nanos: Nanos) -> Decision {
        let mut decision = Decision::default();
        let now_slot = now_nanos / self.slot_len_nanos;
        for lane in &mut self.lanes {
            lane.table.advance_to(now_slot, |_| {});
        }
        self.admit(now_nanos, &mut decision);
        for lane in 0..self.lanes.len() {
            if self.lanes[lane].running.is_some() {
                continue;
            }
            if let Some(job) = self.pick(lane, now_nanos) {
                decision.dispatched.push(Dispatch { lane, job });
            }
        }
        if let Some(y) = self.yielded.take() {
            // The yielding job did not get a lane back at once: it was overtaken.
            let restarted = decision.dispatched.iter().any(|d| d.job.id == y);
            let waiting = self
                .ready
                .iter()
                .find(|q| q.job.id == y)
                .map(|q| q.job.class);
            if let (false, Some(class)) = (restarted, waiting) {
                self.stats.entry(class).or_default().preempted += 1;
            }
        }
        decision
    }

    fn admit(&mut self, now_nanos: Nanos, decision: &mut Decision) {
        if self.pending.is_empty() {
            return;
        }
        self.scratch_jobs.clear();
        self.scratch_jobs.extend(self.ready.iter().map(|q| q.job));
        self.scratch_jobs.append(&mut self.pending);
        // Work already running occupies its lane: admission sees only the free capacity.
        let busy = self.lanes.iter().filter(|l| l.running.is_some()).count();
        let free_lanes = u32::try_from(self.lanes.len() - busy).unwrap_or(1).max(1);
        self.arbiter.reevaluate(
            &self.scratch_jobs,
            now_nanos,
            self.battery_fraction,
            &mut self.scratch_assess,
        );
        let verdicts = self.admission.decide(
            &self.scratch_jobs,
            &self.scratch_assess,
            now_nanos,
            free_lanes,
        );
        self.ready.clear();
        for ((job, a), v) in self
            .scratch_jobs
            .iter()
            .zip(&self.scratch_assess)
            .zip(verdicts)
        {
            match v {
                Verdict::Admit => self.ready.push(*job, a.score),
                Verdict::Shed => {
                    self.stats.entry(job.class).or_default().shed += 1;
                    decision.shed.push(*job);
                }
                Verdict::Pruned => {
                    self.stats.entry(job.class).or_default().pruned += 1;
                    decision.pruned.push(*job);
                }
            }
        }
    }

    /// Takes the first ready job (in dispatch order, within a small lookahead) that can
    /// run on `lane` now, and books its slots.
    fn pick(&mut self, lane: usize, now_nanos: Nanos) -> Option<Job> {
        let now_slot = now_nanos / self.slot_len_nanos;
        let mut passed = Vec::new();
        let mut chosen = None;
        while passed.len() < LOOKAHEAD {
            let Some(q) = self.ready.pop() else { break };
            match self.book(lane, &q.job, now_slot) {
                Some(reservation) => {
                    chosen = Some((q.job, reservation));
                    break;
                }
                None => passed.push(q),
            }
        }
        for q in passed {
            self.ready.push(q.job, q.score);
        }
        let (job, reservation) = chosen?;
        self.lanes[lane].running = Some(Running {
            job,
            reservation,
            started_nanos: now_nanos,
        });
        Some(job)
    }

    /// Books slots for `job` on `lane` starting now: its stream's current occurrence if
    /// it has one, else free slots that end before the next reserved one.
    fn book(&mut self, lane: usize, job: &Job, now_slot: u64) -> Option<ReservationId> {
        let len = self.slots_for(job.predicted_cost_nanos);
        let l = &mut self.lanes[lane];
        if let Some(standing) = l.streams.get(&job.class).copied() {
            // Periodic work runs in its own occurrence: the one holding this slot, or
            // the next one when it is the next thing on the lane (work-conserving start).
            let own = |r: &mmsched_core::slots::Reservation| {
                r.standing == Some(standing) && r.state == mmsched_core::slots::SlotState::Reserved
            };
            if let Ok(Some(r)) = l.table.occupant(now_slot)
                && own(&r)
            {
                return l.table.activate(r.id).ok().map(|r| r.id);
            }
            if let Ok(Some(r)) = l.table.occupant(now_slot + 1)
                && own(&r)
                && l.table.state(now_slot).ok() == Some(mmsched_core::slots::SlotState::Idle)
            {
                return l.table.activate(r.id).ok().map(|r| r.id);
            }
        }
        let r = l.table.reserve_at(job.modality, now_slot, len).ok()?;
        l.table.activate(r.id).ok().map(|r| r.id)
    }

    /// Reports that the step running on `lane` ended at `now_nanos` with `outcome`. A
    /// finished job is counted (and a miss if late); a yielding job goes back to compete
    /// with its deadline unchanged.
    pub fn complete(
        &mut self,
        lane: usize,
        now_nanos: Nanos,
        outcome: StepOutcome,
    ) -> Result<Job, DispatchError> {
        let running = self.end_running(lane)?;
        let job = running.job;
        self.cost
            .record(job.class, now_nanos.saturating_sub(running.started_nanos));
        let stats = self.stats.entry(job.class).or_default();
        stats.steps += 1;
        match outcome {
            StepOutcome::Finished => {
                stats.completed += 1;
                if now_nanos > job.deadline_nanos {
                    stats.deadline_misses += 1;
                }
            }
            StepOutcome::Yield => {
                let mut next = job;
                next.predicted_cost_nanos = self.cost.predict(job.class);
                self.pending.push(next);
                self.yielded = Some(job.id);
            }
        }
        Ok(job)
    }

    /// Drops a job that failed on `lane` (counted as neither completed nor missed).
    pub fn abandon(&mut self, lane: usize) -> Result<Job, DispatchError> {
        Ok(self.end_running(lane)?.job)
    }

    /// Takes the step running on `lane` off it and ends its slot booking.
    fn end_running(&mut self, lane: usize) -> Result<Running, DispatchError> {
        let lanes = self.lanes.len();
        let l = self
            .lanes
            .get_mut(lane)
            .ok_or(DispatchError::NoSuchLane { lane, lanes })?;
        let running = l.running.take().ok_or(DispatchError::Idle { lane })?;
        // The booking may already have been retired by the horizon (an overrun): fine.
        let _ = l.table.complete(running.reservation);
        Ok(running)
    }

    /// Counts per class so far.
    pub fn stats(&self) -> &BTreeMap<ClassId, ClassStats> {
        &self.stats
    }

    /// The predicted cost of the next job of `class`.
    pub fn predicted_cost_nanos(&self, class: ClassId) -> Nanos {
        self.cost.predict(class)
    }

    /// Jobs admitted and waiting for a lane.
    pub fn ready_len(&self) -> usize {
        self.ready.len() + self.pending.len()
    }

    /// Whether every lane is idle and nothing waits.
    pub fn is_idle(&self) -> bool {
        self.ready_len() == 0 && self.lanes.iter().all(|l| l.running.is_none())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mmsched_core::time::NANOS_PER_MILLI;

    const MS: Nanos = NANOS_PER_MILLI;

    fn dispatcher(lanes: usize) -> Dispatcher {
        Dispatcher::new(&Policy::default(), lanes, 0).expect("default policy builds")
    }

    #[test]
    fn earliest_deadline_runs_first() {
        let mut d = dispatcher(1);
        let llm = d.class("llm", MS);
        let vision = d.class("vision", 5 * MS);
        d.submit(llm, Modality::Text, 500 * MS);
        let frame = d.submit(vision, Modality::Image, 33 * MS);
        let got = d.decide(0);
        assert_eq!(got.dispatched.len(), 1);
        assert_eq!(got.dispatched[0].job.id, frame);
        assert!(got.shed.is_empty() && got.pruned.is_empty());
        d.complete(0, 5 * MS, StepOutcome::Finished)
            .expect("running");
        assert_eq!(d.decide(5 * MS).dispatched[0].job.class, llm);
        assert_eq!(d.stats()[&vision].completed, 1);
        assert_eq!(d.stats()[&vision].deadline_misses, 0);
    }

    #[test]
    fn a_due_frame_preempts_the_llm_at_a_token_boundary() {
        let mut d = dispatcher(1);
        let llm = d.class("llm", 2 * MS);
        let vision = d.class("vision", 4 * MS);
        let generation = d.submit(llm, Modality::Text, 2_000 * MS);
        assert_eq!(d.decide(0).dispatched[0].job.id, generation);
        // A frame arrives while the decode step runs: nothing can start on the busy lane.
        let frame = d.submit(vision, Modality::Image, 40 * MS);
        assert!(d.decide(MS).dispatched.is_empty());
        // At the token boundary the frame goes first, then generation resumes.
        d.complete(0, 2 * MS, StepOutcome::Yield).expect("running");
        assert_eq!(d.decide(2 * MS).dispatched[0].job.id, frame);
        assert_eq!(d.stats()[&llm].preempted, 1);
        d.complete(0, 6 * MS, StepOutcome::Finished)
            .expect("running");
        let next = d.decide(6 * MS).dispatched[0].job;
        assert_eq!(next.id, generation, "same job, same deadline");
        assert_eq!(next.deadline_nanos, 2_000 * MS);
        d.complete(0, 8 * MS, StepOutcome::Finished)
            .expect("running");
        assert_eq!(d.stats()[&llm].steps, 2);
        assert_eq!(d.stats()[&llm].completed, 1);
        assert!(d.is_idle());
    }

    #[test]
    fn overload_sheds_the_lowest_score() {
        let mut policy_spec = mmsched_core::policy::PolicySpec::default();
        policy_spec.importance.insert("vision".into(), 0.9);
        policy_spec.importance.insert("background".into(), 0.1);
        let policy = Policy::try_from(policy_spec).expect("valid");
        let mut d = Dispatcher::new(&policy, 1, 0).expect("builds");
        let vision = d.class("vision", 20 * MS);
        let bg = d.class("background", 20 * MS);
        let keep = d.submit(vision, Modality::Image, 30 * MS);
        let drop = d.submit(bg, Modality::Log, 30 * MS);
        let got = d.decide(0);
        assert_eq!(
            got.shed.len(),
            1,
            "two 20 ms jobs cannot both finish within 30 ms"
        );
        assert_eq!(got.shed[0].id, drop);
        assert_eq!(got.dispatched[0].job.id, keep);
        assert_eq!(d.stats()[&bg].shed, 1);
    }

    #[test]
    fn battery_saver_prunes_heavy_classes() {
        let mut d = dispatcher(1);
        let llm = d.class("llm", MS);
        d.set_battery_fraction(0.05);
        d.submit(llm, Modality::Text, 100 * MS);
        let got = d.decide(0);
        assert_eq!(got.pruned.len(), 1);
        assert!(got.dispatched.is_empty());
    }

    #[test]
    fn long_steps_never_run_into_a_streams_reserved_slot() {
        let mut d = dispatcher(1);
        let audio = d.class("audio", 3 * MS);
        let llm = d.class("llm", 10 * MS);
        // Audio every 20 ms from 20 ms, 3 slots each: slots 20–22, 40–42, …
        d.reserve_stream(0, audio, Modality::Audio, 20 * MS, 20 * MS)
            .expect("books");
        let generation = d.submit(llm, Modality::Text, 5_000 * MS);
        // At 12 ms a 10 ms step would overlap the audio slot at 20 ms: it waits.
        assert!(d.decide(12 * MS).dispatched.is_empty());
        // The audio packet runs in its occurrence.
        let pkt = d.submit(audio, Modality::Audio, 40 * MS);
        let got = d.decide(20 * MS);
        assert_eq!(got.dispatched[0].job.id, pkt);
        d.complete(0, 23 * MS, StepOutcome::Finished)
            .expect("running");
        // After it, 10 ms fit before the next occurrence at 40 ms.
        assert_eq!(d.decide(23 * MS).dispatched[0].job.id, generation);
        assert_eq!(d.stats()[&audio].deadline_misses, 0);
    }

    #[test]
    fn predicted_cost_follows_measurements() {
        let mut d = dispatcher(1);
        let v = d.class("vision", 50 * MS);
        assert_eq!(d.predicted_cost_nanos(v), 50 * MS);
        let mut now = 0;
        for _ in 0..3 {
            d.submit(v, Modality::Image, now + 1_000 * MS);
            assert_eq!(d.decide(now).dispatched.len(), 1);
            now += 8 * MS;
            d.complete(0, now, StepOutcome::Finished).expect("running");
        }
        assert_eq!(d.predicted_cost_nanos(v), 8 * MS);
        assert!(matches!(
            d.complete(0, now, StepOutcome::Finished),
            Err(DispatchError::Idle { .. })
        ));
        assert!(matches!(
            d.complete(5, now, StepOutcome::Finished),
            Err(DispatchError::NoSuchLane { .. })
        ));
    }
}
