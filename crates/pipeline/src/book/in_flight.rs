//! When a job being decided would start ([`Book::start_of`]): the steps running on the
//! workers and the work due before it, shared out over its lanes.
//!
//! A step is not preempted: a job that arrives while a step of a job due later runs waits
//! for that step to end, however soon it is due itself. Without counting that wait, a
//! frame arriving during a transcription's 200 ms step on one worker was admitted as if
//! the worker were free (a chance near 1), and the core's admission shed it when the step
//! ended. Steps are due by their own deadlines, not their job's: a text request's tokens,
//! or a transcription's step, due before a frame run before it, though the request is due
//! seconds later. The start is uncertain as that work is: the chance to end in time is
//! averaged over it ([`Start`]).
//!
//! Shared out as a fluid, the work ahead predicts a frame in one step on two lanes to
//! start later than it does: it takes the first lane free. A variant that laid the work
//! out lane by lane made the frames' predictions come true far better (`sim run`, seeds
//! 1–8 pooled, worst bin 0.12–0.19 off on `scenarios/bench/{overload,many-lines,
//! assistant-first}.toml`, against 0.23–0.42 here), but decided worse (`utility_correct`
//! 0.880, 0.909 and 0.982, seeds 1–16, against 0.902, 0.918 and 0.985 here): admitted on
//! the better odds, more frames took the lanes the transcriptions' steps needed (119 of
//! 128 on time on overload, against 126), a risk the frames' decisions do not see. Until
//! they do, the fluid decides.

use mmsched_core::time::Nanos;
use mmsched_runtime::sched::Executor;
use mmsched_runtime::sched::dist::normal_quantile;

use super::Book;
use super::decide::Reading;
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

    /// When a `kind` job due at `deadline` with `importance`, decided at `now`, would
    /// start, and how uncertain that is: the work ahead of it at its means, shared out
    /// over its lanes — the jobs ahead (due no later and as important) whole, and of the
    /// others (as important, or committed) the steps due before its first step; at least
    /// the rest of each step running.
    pub(super) fn start_of(
        &mut self,
        tag: u64,
        kind: Kind,
        (deadline, importance): (Nanos, f64),
        now: Nanos,
    ) -> Start {
        let audio = kind == Kind::Vad;
        let running = self.running_steps.clone();
        let due = self.first_step_due(tag, deadline, now);
        let beside: Vec<u64> = self
            .jobs
            .iter()
            .filter(|&(&t, j)| t != tag && j.admitted && (j.kind == Kind::Vad) == audio)
            .map(|(&t, _)| t)
            .collect();
        let (mut total, mut var) = (0 as Nanos, 0.0);
        for t in beside {
            let Some(j) = self.jobs.get(&t) else {
                continue;
            };
            let as_important = self.importance_of(j) >= importance;
            let whole = j.deadline <= deadline && as_important;
            // A less important job's steps not yet committed yield: admission sheds them
            // first.
            let yields = !as_important && !j.chain.committed() && !j.kept;
            let step = running.iter().find(|&&(r, _)| r == t).map(|&(_, s)| s);
            let (k, d, text, step_due) = (j.kind, j.deadline, j.text.is_some(), j.step_due);
            let rung = j.rung.as_ref().map_or("", |r| r.name()).to_string();
            let (hint, steps) = ((j.running, j.running_hint), j.chain.steps_after + 1);
            let elapsed = step.map_or(0, |s| now.saturating_sub(s));
            let done = j.work.saturating_add(elapsed);
            let rest = self.rest_of((k, &rung, done, steps), now, Reading::Mean);
            let step_rest = self.costs.step_rest_hinted(k, &rung, hint, elapsed, now);
            let ahead = if whole {
                rest
            } else if yields {
                0
            } else if text {
                self.tokens_due_before((k, &rung, steps), (d, due), rest, now)
            } else {
                let this_step = if step_due.is_some_and(|s| s <= due) {
                    step_rest
                } else {
                    0
                };
                let steps_left = (k, rung.as_str(), done, steps, hint);
                let later = self.later_steps_due_before(steps_left, (d, due), rest, now);
                this_step.saturating_add(later)
            };
            let hold = if step.is_some() {
                ahead.max(step_rest)
            } else {
                ahead
            };
            if hold > 0 {
                total = total.saturating_add(hold);
                var += self.variance_of(k, &rung, hold, now);
            }
        }
        let lanes = self.lanes_of(kind);
        Start {
            at: now.saturating_add(total / lanes),
            sd: (var.sqrt() / lanes as f64).round() as Nanos,
        }
    }

    /// The variance of `hold` of a `kind` job's work at `rung`, as that share of a job of
    /// independent parts (tokens for a text request): a whole job's variance for a whole
    /// job, a share of it for the rest of one or some of its tokens.
    fn variance_of(&mut self, kind: Kind, rung: &str, hold: Nanos, now: Nanos) -> f64 {
        let d = if kind == Kind::Llm {
            self.costs.step_dist(kind, rung, None, now)
        } else {
            self.costs.job_dist(kind, rung, now)
        };
        let spread = (d.sigma() * d.sigma()).exp_m1();
        hold as f64 * d.mean().max(1) as f64 * spread
    }

    /// How much of a text request's rest (`rest` at its mean; at `rung`, `steps` tokens
    /// left), due at `deadline`, the executor runs before a step due at `due`: a token is
    /// due when the tokens after it still fit at their predicted cost
    /// ([`Book::step_due`]), so those whose turn comes before `due` are ahead.
    fn tokens_due_before(
        &mut self,
        (kind, rung, steps): (Kind, &str, u32),
        (deadline, due): (Nanos, Nanos),
        rest: Nanos,
        now: Nanos,
    ) -> Nanos {
        if !self.rules.spreads_text_deadlines() {
            return 0;
        }
        let each = self.costs.step_hinted(kind, rung, None, None, now).max(1);
        let later = deadline.saturating_sub(due).div_ceil(each);
        let tokens = Nanos::from(steps).saturating_sub(later);
        rest / Nanos::from(steps).max(1) * tokens
    }

    /// How much of the steps after a job's step in flight (a `kind` job at `rung`, `done`
    /// run, `steps` left, the step in flight `hint`; due at `deadline`, `rest` at its mean)
    /// the executor runs before a step due at `due`: each is due when the rest after it,
    /// at its P99, still fits ([`Book::step_due`]), so the part of those steps that must
    /// end by `due` is ahead (a transcription's encoder layers as its slack runs out).
    fn later_steps_due_before(
        &mut self,
        (kind, rung, done, steps, hint): (Kind, &str, Nanos, u32, StepHint),
        (deadline, due): (Nanos, Nanos),
        rest: Nanos,
        now: Nanos,
    ) -> Nanos {
        if !self.rules.spreads_text_deadlines() || !self.rules.mechanisms.step_deadlines {
            return 0;
        }
        let high = self.rest_of((kind, rung, done, steps), now, Reading::Quantile(0.99));
        let step = self.costs.step_hinted(kind, rung, hint.0, hint.1, now);
        let after = high.saturating_sub(step);
        if high == 0 || after == 0 {
            return 0;
        }
        let part = after.saturating_sub(deadline.saturating_sub(due));
        (rest as u128 * part as u128 / high as u128) as Nanos
    }

    /// When the first step of the job of `tag` (due at `deadline`) is due, as
    /// [`Book::step_due`] will set it: a text request's first token when its remaining
    /// ones still fit after it, an OCR frame's detection when its recognition (at its P99)
    /// still fits after it, the job's own deadline for any other.
    fn first_step_due(&mut self, tag: u64, deadline: Nanos, now: Nanos) -> Nanos {
        let Some(j) = self.jobs.get(&tag) else {
            return deadline;
        };
        if !self.rules.spreads_text_deadlines() {
            return deadline;
        }
        let (kind, work, steps, text) = (j.kind, j.work, j.chain.steps_after, j.text.is_some());
        let rung = j
            .rung
            .as_ref()
            .map_or_else(|| self.rungs_of_richest(kind), |r| r.name().to_string());
        if text {
            let each = self.costs.step_hinted(kind, &rung, None, None, now);
            let after = each.saturating_mul(Nanos::from(steps));
            return mmsched_core::steps::latest_finish(now, deadline, each, after);
        }
        let detect = mmsched_backends::ocr::OcrStepKind::Detect.as_str();
        if kind != Kind::Vision || self.fuse_vision || !self.rules.mechanisms.step_deadlines {
            return deadline;
        }
        let first = self.costs.step_hinted(kind, &rung, Some(detect), None, now);
        let rest = self.rest_of((kind, &rung, work, 1), now, Reading::Quantile(0.99));
        let after = rest.saturating_sub(first);
        mmsched_core::steps::latest_finish(now, deadline, first, after)
    }
}

/// The kind of a job's step in flight, and how many steps the work said the job takes.
type StepHint = (Option<&'static str>, Option<u32>);

/// When a job would start ([`Book::start_of`]): the mean, and the standard deviation
/// about it.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Start {
    at: Nanos,
    sd: Nanos,
}

/// Equally likely starts a chance is averaged over.
const START_POINTS: u32 = 16;

impl Start {
    /// The start were the work ahead to take its mean.
    pub(super) fn mean(&self) -> Nanos {
        self.at
    }

    /// The chance that the job ends in time, `within(start)` giving the chance for a
    /// given start: averaged over equally likely starts, the normal quantiles (i + ½)/n
    /// about the mean.
    pub(super) fn chance(&self, mut within: impl FnMut(Nanos) -> f64) -> f64 {
        if self.sd == 0 {
            return within(self.at);
        }
        let sum: f64 = (0..START_POINTS)
            .map(|i| {
                let z = normal_quantile((f64::from(i) + 0.5) / f64::from(START_POINTS));
                let at = (self.at as f64 + z * self.sd as f64).max(0.0).round() as Nanos;
                within(at)
            })
            .sum();
        sum / f64::from(START_POINTS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Nanos = 1_000_000;

    /// On time when started by `by` (a job of no cost due then).
    fn started_by(by: Nanos) -> impl FnMut(Nanos) -> f64 {
        move |at| f64::from(u8::from(at <= by))
    }

    #[test]
    fn a_certain_start_is_read_at_its_mean() {
        let s = Start {
            at: 120 * MS,
            sd: 0,
        };
        assert_eq!(s.chance(started_by(120 * MS)), 1.0);
        assert_eq!(s.chance(started_by(119 * MS)), 0.0);
    }

    #[test]
    fn an_uncertain_start_spreads_the_chance_about_its_mean() {
        // Free at 30 ms ± 10: by 25 ms about Φ(−½) = 0.31 of the time, by 30 ms half.
        let s = Start {
            at: 30 * MS,
            sd: 10 * MS,
        };
        let early = s.chance(started_by(25 * MS));
        let half = s.chance(started_by(30 * MS));
        assert!((early - 0.31).abs() < 0.07, "{early}");
        assert!((half - 0.5).abs() < 0.07, "{half}");
        assert_eq!(started_by(25 * MS)(s.mean()), 0.0);
    }
}
