//! Choosing a job's quality rung when it is admitted: the richest rung whose predicted
//! finish meets its deadline, given the work already admitted ahead of it. Work counts as
//! ahead when it is due no later and is at least as important, so under load the least
//! important jobs degrade first, and with headroom every job runs its richest rung (no
//! accuracy is given up when nothing is gained). A job's rung is fixed once its first step
//! has run: Whisper's span is set by its log-mel step, OCR's detector input by its
//! detection.

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
                    .find(|&i| {
                        start.saturating_add(self.costs.job(kind, rungs[i].name(), now)) <= deadline
                    })
                    .unwrap_or(cheapest)
            }
        };
        Some(rungs.swap_remove(pick))
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
