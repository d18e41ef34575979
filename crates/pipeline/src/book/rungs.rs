//! Choosing a job's quality rung when it is admitted: the richest rung whose predicted
//! finish meets its deadline, given the work already admitted ahead of it. Work counts as
//! ahead when it is due no later and is at least as important, so under load the least
//! important jobs degrade first, and with headroom every job runs its richest rung (no
//! accuracy is given up when nothing is gained). A job's rung is fixed once its first step
//! has run: Whisper's span is set by its log-mel step, OCR's detector input by its
//! detection.
//!
//! On one general lane the camera's standing reservation takes the lane at every frame, so
//! another job runs only in the gaps between frames: a rung then meets its deadline only
//! if its dearest step fits one gap (a longer step waits for a gap that never comes) and
//! its whole cost fits the gaps before the deadline.

use mmsched_core::time::Nanos;

use super::{Book, Job};
use crate::models::Rung;
use crate::stats::Kind;

/// How the book picks rungs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RungMode {
    /// Every job at its model's richest rung (what the baselines run).
    #[default]
    Richest,
    /// Per job, the richest rung whose predicted finish meets its deadline (mmsched).
    Adaptive,
    /// Every job at the cheapest rung (a baseline degraded all the time).
    Cheapest,
}

impl RungMode {
    /// The name in `bench e2e`'s columns and summaries.
    pub fn as_str(self) -> &'static str {
        match self {
            RungMode::Richest => "richest",
            RungMode::Adaptive => "adaptive",
            RungMode::Cheapest => "cheapest",
        }
    }
}

/// A camera's standing reservation: from `first` on, an occurrence of `cost` every
/// `period`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Standing {
    /// When the first occurrence starts.
    pub first: Nanos,
    /// Between two occurrences' starts.
    pub period: Nanos,
    /// Each occurrence's length.
    pub cost: Nanos,
}

impl Standing {
    /// The time in `[from, to)` that no occurrence takes.
    pub fn free_within(&self, from: Nanos, to: Nanos) -> Nanos {
        if to <= from {
            return 0;
        }
        (to - from) - (self.taken_before(to) - self.taken_before(from))
    }

    /// The time occurrences take between the first and `t`.
    fn taken_before(&self, t: Nanos) -> Nanos {
        if self.period == 0 || t <= self.first {
            return 0;
        }
        let busy = self.cost.min(self.period);
        let since = t - self.first;
        since / self.period * busy + (since % self.period).min(busy)
    }

    /// The longest stretch between two occurrences.
    pub fn gap(&self) -> Nanos {
        self.period.saturating_sub(self.cost)
    }
}

impl Book {
    /// The rungs of `kind`'s model in the policy, richest first (none for a kind without
    /// rungs).
    fn rungs_of(&self, kind: Kind) -> Vec<Rung> {
        let r = self.policy.rungs();
        match kind {
            Kind::Vision => r.vision().iter().cloned().map(Rung::Vision).collect(),
            Kind::Asr => r.asr().iter().cloned().map(Rung::Asr).collect(),
            Kind::Vad | Kind::Llm => Vec::new(),
        }
    }

    /// The name of `kind`'s richest rung (empty for a kind without rungs).
    pub(super) fn rungs_of_richest(&self, kind: Kind) -> String {
        self.rungs_of(kind)
            .first()
            .map_or(String::new(), |r| r.name().to_string())
    }

    /// The rung for the job of `tag`, about to be admitted at `now`.
    pub(super) fn choose_rung(&mut self, tag: u64, now: Nanos) -> Option<Rung> {
        let (kind, deadline, importance) = {
            let j = self.jobs.get(&tag)?;
            (j.kind, j.deadline, self.importance_of(j))
        };
        let mut rungs = self.rungs_of(kind);
        if rungs.is_empty() {
            return None;
        }
        let cheapest = rungs.len() - 1;
        let pick = match self.rules.rungs {
            RungMode::Richest => 0,
            RungMode::Cheapest => cheapest,
            RungMode::Adaptive => {
                let start = now + self.work_ahead(tag, kind, deadline, importance, now);
                (0..rungs.len())
                    .find(|&i| self.meets(kind, rungs[i].name(), (start, deadline), now))
                    .unwrap_or(cheapest)
            }
        };
        Some(rungs.swap_remove(pick))
    }

    /// Whether a `kind` job at `rung` starting at `start` is predicted to end by
    /// `deadline`: its cost fits before it and, on one general lane beside the camera's
    /// standing reservation, its dearest step fits a gap between frames and its cost the
    /// time the frames leave (with more general lanes a frame takes one of them and a step
    /// runs on another).
    fn meets(
        &mut self,
        kind: Kind,
        rung: &str,
        (start, deadline): (Nanos, Nanos),
        now: Nanos,
    ) -> bool {
        let cost = self.costs.job(kind, rung, now);
        if start.saturating_add(cost) > deadline {
            return false;
        }
        let beside_frames = matches!(kind, Kind::Asr | Kind::Llm) && self.general_lanes <= 1;
        match self.standing.filter(|_| beside_frames) {
            Some(s) => {
                self.costs.largest_step(kind, rung, now) <= s.gap()
                    && cost <= s.free_within(start, deadline)
            }
            None => true,
        }
    }

    /// The importance a job is scheduled with.
    pub(super) fn importance_of(&self, j: &Job) -> f64 {
        j.importance
            .unwrap_or_else(|| self.policy.importance(j.kind.as_str()))
    }

    /// The time the admitted work ahead of a job takes on its lanes: the rest of every job
    /// on the same lanes due no later than `deadline` and at least as important, over the
    /// lanes.
    fn work_ahead(
        &mut self,
        tag: u64,
        kind: Kind,
        deadline: Nanos,
        importance: f64,
        now: Nanos,
    ) -> Nanos {
        let audio = kind == Kind::Vad;
        let ahead: Vec<(Kind, String, Nanos, u32)> = self
            .jobs
            .iter()
            .filter(|&(&t, j)| {
                t != tag
                    && j.admitted
                    && (j.kind == Kind::Vad) == audio
                    && j.deadline <= deadline
                    && self.importance_of(j) >= importance
            })
            .map(|(_, j)| {
                let rung = j.rung.as_ref().map_or("", |r| r.name()).to_string();
                (j.kind, rung, j.work, j.chain.steps_after + 1)
            })
            .collect();
        let mut total: Nanos = 0;
        for (kind, rung, done, steps_left) in ahead {
            let rest = if kind == Kind::Llm {
                // A text request: its tokens left, a step each.
                self.costs.step(kind, &rung, None, now) * Nanos::from(steps_left)
            } else {
                self.costs.job(kind, &rung, now).saturating_sub(done)
            };
            total = total.saturating_add(rest);
        }
        let lanes = if audio { 1 } else { self.general_lanes.max(1) };
        total / lanes as Nanos
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MS: Nanos = 1_000_000;

    /// A camera at 4 fps whose frames take 90 ms, from 100 ms on.
    fn camera() -> Standing {
        Standing {
            first: 100 * MS,
            period: 250 * MS,
            cost: 90 * MS,
        }
    }

    #[test]
    fn the_frames_take_their_occurrences_out_of_a_window() {
        let s = camera();
        assert_eq!(s.gap(), 160 * MS);
        // Before the first frame nothing is taken.
        assert_eq!(s.free_within(0, 100 * MS), 100 * MS);
        // One second from the first frame: four frames of 90 ms.
        assert_eq!(s.free_within(100 * MS, 1_100 * MS), 640 * MS);
        // A window starting inside a frame loses only the rest of it.
        assert_eq!(s.free_within(150 * MS, 350 * MS), 200 * MS - 40 * MS);
        assert_eq!(
            s.free_within(150 * MS, 400 * MS),
            250 * MS - 40 * MS - 50 * MS
        );
        assert_eq!(s.free_within(400 * MS, 300 * MS), 0, "an empty window");
    }

    proptest! {
        /// Against a millisecond-by-millisecond count of the time no frame takes.
        #[test]
        fn free_time_is_what_no_occurrence_covers(
            first in 0u64..500,
            period in 1u64..300,
            cost in 0u64..400,
            from in 0u64..2_000,
            len in 0u64..1_500,
        ) {
            let s = Standing { first, period, cost };
            let to = from + len;
            let busy = |t: u64| t >= first && (t - first) % period < cost.min(period);
            let expected = (from..to).filter(|&t| !busy(t)).count() as u64;
            prop_assert_eq!(s.free_within(from, to), expected);
        }
    }
}
