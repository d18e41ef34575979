//! A small deterministic simulation of one preemptive worker running periodic tasks, to
//! compare dispatch rules: EDF against dispatch by score.
//!
//! Time is integer nanoseconds and there is no randomness, so a task set always gives the
//! same report. Jobs are released at `offset + k · period`, due `relative_deadline` later,
//! and run for exactly their cost (the simulation's model of execution: no real work is
//! done). The worker re-decides at every release and completion; a job that misses its
//! deadline still runs to completion (and is counted once as missed).

use alloc::vec::Vec;

use super::job::{ClassId, Job, JobId};
use super::ready::ReadyQueue;
use super::score::Arbiter;
use crate::Modality;
use crate::policy::DispatchRule;
use crate::time::Nanos;

/// One periodic task.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PeriodicTask {
    /// Release of the first job.
    pub offset_nanos: Nanos,
    /// Time between releases (> 0).
    pub period_nanos: Nanos,
    /// Deadline of each job after its release (implicit deadlines: equal to the period).
    pub relative_deadline_nanos: Nanos,
    /// Execution time of each job.
    pub cost_nanos: Nanos,
    /// The class of its jobs.
    pub class: ClassId,
    /// The modality of its jobs (recorded only).
    pub modality: Modality,
    /// Importance γ of its jobs.
    pub importance: f64,
}

impl PeriodicTask {
    /// A task with implicit deadline (= period), released first at 0.
    pub fn implicit(period_nanos: Nanos, cost_nanos: Nanos, importance: f64) -> Self {
        PeriodicTask {
            offset_nanos: 0,
            period_nanos,
            relative_deadline_nanos: period_nanos,
            cost_nanos,
            class: ClassId(0),
            modality: Modality::Log,
            importance,
        }
    }
}

/// The outcome of one simulation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WorkerReport {
    /// Jobs released (every one of them ran to completion).
    pub released: u64,
    /// Jobs that finished after their deadline.
    pub missed: u64,
    /// Times a running job was set aside for another.
    pub preemptions: u64,
    /// When the last job finished.
    pub finished_at_nanos: Nanos,
}

/// Runs `tasks` on one preemptive worker, releasing jobs before `until_nanos`, and
/// dispatching by `rule`. Under [`DispatchRule::Score`] every ready job is re-scored by
/// `arbiter` (at battery fraction `battery_fraction`) at each decision, since scores
/// change as slack shrinks.
pub fn simulate_one_worker(
    tasks: &[PeriodicTask],
    rule: DispatchRule,
    arbiter: &Arbiter,
    battery_fraction: f64,
    until_nanos: Nanos,
) -> WorkerReport {
    let mut report = WorkerReport::default();
    let mut next_release: Vec<Option<Nanos>> = tasks
        .iter()
        .map(|t| (t.period_nanos > 0 && t.offset_nanos < until_nanos).then_some(t.offset_nanos))
        .collect();
    // Remaining work of each job, by job id.
    let mut remaining: Vec<Nanos> = Vec::new();
    let mut queue = ReadyQueue::with_capacity(rule, tasks.len() * 2);
    let mut running: Option<super::QueuedJob> = None;
    let mut now: Nanos = 0;
    loop {
        // Release every job due by now.
        for (i, t) in tasks.iter().enumerate() {
            while let Some(at) = next_release[i].filter(|&at| at <= now) {
                let id = JobId(remaining.len() as u64);
                remaining.push(t.cost_nanos);
                report.released += 1;
                let job = Job {
                    id,
                    class: t.class,
                    modality: t.modality,
                    deadline_nanos: at.saturating_add(t.relative_deadline_nanos),
                    predicted_cost_nanos: t.cost_nanos,
                    importance: t.importance,
                    committed: false,
                };
                queue.push(job, 0.0);
                let next = at.saturating_add(t.period_nanos);
                next_release[i] = (next < until_nanos).then_some(next);
            }
        }
        // Decide: the running job competes with the queue.
        running = match running.take() {
            Some(mut r) => {
                r.job.predicted_cost_nanos = remaining[r.job.id.0 as usize];
                if rule == DispatchRule::Score {
                    // Scores move with time: re-score everything, the running job included.
                    queue.push(r.job, r.score);
                    queue.rescore(arbiter, now, battery_fraction);
                    let next = queue.pop();
                    if next.is_some_and(|n| n.job.id != r.job.id) {
                        report.preemptions += 1;
                    }
                    next
                } else if queue.preempts(&r) {
                    queue.push(r.job, r.score);
                    report.preemptions += 1;
                    queue.pop()
                } else {
                    Some(r)
                }
            }
            None => {
                if rule == DispatchRule::Score {
                    queue.rescore(arbiter, now, battery_fraction);
                }
                queue.pop()
            }
        };
        let release_at = next_release.iter().flatten().copied().min();
        match running {
            None => match release_at {
                Some(at) => now = at,
                None => break,
            },
            Some(r) => {
                let id = r.job.id.0 as usize;
                let finish = now.saturating_add(remaining[id]);
                match release_at {
                    Some(at) if at < finish => {
                        remaining[id] -= at - now;
                        now = at;
                    }
                    _ => {
                        remaining[id] = 0;
                        now = finish;
                        report.finished_at_nanos = now;
                        if now > r.job.deadline_nanos {
                            report.missed += 1;
                        }
                        running = None;
                    }
                }
            }
        }
    }
    report
}
