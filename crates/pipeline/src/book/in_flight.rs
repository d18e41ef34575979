//! The steps running on the workers, as admission sees them. A step is not preempted: a
//! job that arrives while a step of a job due later runs waits for that step to end,
//! however soon it is due itself. Admission counts that wait in the job's start
//! ([`Book::blocked`]). Without it, a frame arriving during a transcription's 200 ms step
//! on one worker was admitted as if the worker were free (a chance near 1), and the core's
//! admission shed it when the step ended.

use mmsched_core::time::Nanos;
use mmsched_runtime::sched::Executor;

use super::Book;
use super::rungs::RungMode;
use crate::stats::Kind;

impl Book {
    /// Asks the executor which steps run now (for mmsched's choice only: the rules before
    /// it never read them).
    pub(super) fn look_at_running(&mut self, exec: &dyn Executor) {
        if self.rules.rungs == RungMode::Adaptive && self.rules.mechanisms.running_steps {
            self.running_steps = exec.running();
        }
    }

    /// How long the steps running now keep a `kind` job due at `deadline` with
    /// `importance` off its lanes, beyond the work counted ahead of it
    /// ([`Book::work_ahead`]): when every one of its lanes runs a step, the mean of what is
    /// left of the steps of jobs not ahead of it (due later, or less important), over the
    /// lanes; nothing while a lane is free.
    pub(super) fn blocked(
        &mut self,
        tag: u64,
        kind: Kind,
        (deadline, importance): (Nanos, f64),
        now: Nanos,
    ) -> Nanos {
        let audio = kind == Kind::Vad;
        let mut busy: Nanos = 0;
        let mut behind = Vec::new();
        for &(t, started) in &self.running_steps {
            let Some(j) = self.jobs.get(&t) else {
                continue;
            };
            if t == tag || (j.kind == Kind::Vad) != audio {
                continue;
            }
            busy += 1;
            let ahead = j.deadline <= deadline && self.importance_of(j) >= importance;
            if !ahead {
                let rung = j.rung.as_ref().map_or("", |r| r.name()).to_string();
                behind.push((j.kind, rung, (j.running, j.running_hint), started));
            }
        }
        let lanes = self.lanes_of(kind);
        if busy < lanes {
            return 0;
        }
        let left: Nanos = behind
            .into_iter()
            .map(|(k, rung, step, started)| {
                let elapsed = now.saturating_sub(started);
                self.costs.step_rest_hinted(k, &rung, step, elapsed, now)
            })
            .sum();
        left / lanes
    }
}
