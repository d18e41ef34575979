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
//!    booking `⌈cost / slot⌉` contiguous slots on the worker's table and firing them.
//!
//! Jobs are not preempted once started: long work is cut into schedulable units by the
//! caller (an LLM request is one job per token, S7), so a due frame waits at most one unit.

use alloc::vec::Vec;

use crate::arbiter::{Admission, Arbiter, Assessment, Job, JobId, ReadyQueue, Verdict};
use crate::policy::Policy;
use crate::slots::{ReservationId, SlotError, SlotId, SlotTable, SlotTableConfig};
use crate::time::{NANOS_PER_MICRO, Nanos};

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

#[derive(Debug, Clone, Copy)]
struct Running {
    job: JobId,
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
        })
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
        if !self.batch.is_empty() {
            self.admit(now_nanos, out);
        }
        self.dispatch(now_nanos, out);
    }

    fn admit(&mut self, now_nanos: Nanos, out: &mut Vec<Decision>) {
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
        let verdicts =
            self.admission
                .decide(&self.batch, &self.assessments, now_nanos, self.workers());
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
    }

    fn dispatch(&mut self, now_nanos: Nanos, out: &mut Vec<Decision>) {
        for w in 0..self.running.len() {
            if self.running[w].is_some() {
                continue;
            }
            let Some(next) = self.ready.pop() else { return };
            let table = &mut self.tables[w];
            let slot_nanos = table.slot_len_micros() * NANOS_PER_MICRO;
            let len = next.job.predicted_cost_nanos.div_ceil(slot_nanos).max(1);
            let len = u32::try_from(len)
                .unwrap_or(u32::MAX)
                .min(table.horizon_slots());
            let booked = table
                .reserve(next.job.modality, table.slot_at(now_nanos), len)
                .and_then(|r| table.activate(r.id));
            match booked {
                Ok(r) => {
                    self.running[w] = Some(Running {
                        job: next.job.id,
                        reservation: r.id,
                    });
                    out.push(Decision::Start {
                        worker: w as u32,
                        job: next.job.id,
                        start_slot: r.start_slot,
                        len_slots: r.len_slots,
                    });
                }
                Err(_) => {
                    // No room on this worker's horizon: keep the job for the next step.
                    self.ready.push(next.job, next.score);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Modality;
    use crate::arbiter::ClassId;
    use crate::time::NANOS_PER_MILLI;

    fn job(id: u64, class: ClassId, deadline_ms: u64, cost_ms: u64) -> Job {
        Job {
            id: JobId(id),
            class,
            modality: Modality::Image,
            deadline_nanos: deadline_ms * NANOS_PER_MILLI,
            predicted_cost_nanos: cost_ms * NANOS_PER_MILLI,
            importance: 0.5,
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
        s.step(
            10 * NANOS_PER_MILLI,
            &[SchedEvent::Finish {
                worker: 0,
                job: JobId(2),
            }],
            &mut out,
        );
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
        if let Some(h) = heavy.first() {
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
}
