//! How the decisions turned out: every decision mmsched's rung chooser made with a
//! predicted chance of ending in time is set against whether the job did (a reliability
//! table per class and rung), and the decisions that were wrong in hindsight are counted —
//! degraded though the richest rung would have ended in time, admitted but late, shed
//! though the device then stood idle long enough to run the job.
//!
//! Memory stays bounded in a run of any length: the table is ten bins per class and rung,
//! the sheds waiting to be judged end at their deadlines, and the lanes' busy intervals
//! are kept only as far back as the oldest of those.

use std::collections::{BTreeMap, VecDeque};

use mmsched_core::time::Nanos;
use mmsched_report::decisions::{CalibrationBin, CalibrationRow, DecisionsSummary};

use super::decide::{Choice, Verdict};
use crate::stats::Kind;

/// Bins of predicted chance (tenths).
const BINS: usize = 10;

/// One bin's running figures: decisions, Σ predicted, on time.
#[derive(Debug, Clone, Copy, Default)]
struct Bin {
    decisions: u64,
    predicted: f64,
    on_time: u64,
}

/// A shed job waiting for its deadline to be judged: was the device idle long enough?
#[derive(Debug, Clone, Copy)]
struct PendingShed {
    at: Nanos,
    deadline: Nanos,
    cost: Nanos,
}

/// See the [module docs](self).
#[derive(Debug, Clone, Default)]
pub struct Hindsight {
    decided: u64,
    shed_at_admission: u64,
    explored: u64,
    admitted_late: u64,
    degraded_richer_fit: u64,
    shed_device_idle: u64,
    pub(super) lines_all_read: u64,
    pub(super) lines_cut: u64,
    pub(super) shadows: u64,
    pub(super) shadows_busy: u64,
    pub(super) kept_over_core: u64,
    table: BTreeMap<(Kind, String), [Bin; BINS]>,
    pending: Vec<PendingShed>,
    /// Steps run on the general lanes: (start, end), in the order they ended.
    busy: VecDeque<(Nanos, Nanos)>,
    /// General lanes.
    lanes: u64,
}

impl Hindsight {
    /// Judging sheds against `lanes` general lanes.
    pub fn with_lanes(lanes: usize) -> Self {
        Self {
            lanes: lanes.max(1) as u64,
            ..Self::default()
        }
    }

    /// A job's admission was decided at `now`.
    pub(super) fn admitted(&mut self, choice: &Choice) {
        if choice.p_on_time.is_none() {
            return;
        }
        self.decided += 1;
        match choice.verdict {
            Verdict::Shed => self.shed_at_admission += 1,
            Verdict::Explore => self.explored += 1,
            Verdict::Run => {}
        }
    }

    /// A job admitted with the predicted chance `p` of ending in time at `rung` ended
    /// (`on_time`: it finished by its deadline).
    pub(super) fn outcome(&mut self, kind: Kind, rung: &str, p: f64, on_time: bool) {
        let bins = self.table.entry((kind, rung.to_string())).or_default();
        let i = ((p * BINS as f64) as usize).min(BINS - 1);
        bins[i].decisions += 1;
        bins[i].predicted += p;
        bins[i].on_time += u64::from(on_time);
        if !on_time {
            self.admitted_late += 1;
        }
    }

    /// A job ran at a cheaper rung, on time, and the richest would have ended in time too.
    pub(super) fn degraded_needlessly(&mut self) {
        self.degraded_richer_fit += 1;
    }

    /// A step ran on a general lane from `start` to `end`.
    pub(super) fn busy(&mut self, start: Nanos, end: Nanos) {
        self.busy.push_back((start, end));
    }

    /// A job of mean cost `cost` due at `deadline` was shed at `at`.
    pub(super) fn shed(&mut self, at: Nanos, deadline: Nanos, cost: Nanos) {
        if deadline > at {
            self.pending.push(PendingShed { at, deadline, cost });
        }
    }

    /// Judges the sheds whose deadline has passed by `now`, and forgets the busy
    /// intervals no shed still waiting can overlap.
    pub(super) fn settle(&mut self, now: Nanos) {
        let (due, waiting): (Vec<_>, Vec<_>) =
            self.pending.drain(..).partition(|p| p.deadline <= now);
        self.pending = waiting;
        for p in due {
            if self.idle_within(p.at, p.deadline) >= p.cost {
                self.shed_device_idle += 1;
            }
        }
        let keep_from = self.pending.iter().map(|p| p.at).min().unwrap_or(now);
        while self.busy.front().is_some_and(|&(_, end)| end <= keep_from) {
            self.busy.pop_front();
        }
    }

    /// The general lanes' idle time in `[from, to)`.
    fn idle_within(&self, from: Nanos, to: Nanos) -> Nanos {
        let busy: Nanos = self
            .busy
            .iter()
            .map(|&(s, e)| e.min(to).saturating_sub(s.max(from)))
            .sum();
        (to - from).saturating_mul(self.lanes).saturating_sub(busy)
    }

    /// The figures for `summary.json` (the rung estimates are the book's to add).
    pub fn summary(&self) -> DecisionsSummary {
        let calibration: Vec<CalibrationRow> = self
            .table
            .iter()
            .map(|((kind, rung), bins)| CalibrationRow {
                class: kind.as_str().to_string(),
                rung: rung.clone(),
                bins: bins
                    .iter()
                    .enumerate()
                    .filter(|(_, b)| b.decisions > 0)
                    .map(|(i, b)| CalibrationBin {
                        lo: i as f64 / BINS as f64,
                        hi: (i + 1) as f64 / BINS as f64,
                        decisions: b.decisions,
                        predicted: b.predicted / b.decisions as f64,
                        on_time: b.on_time as f64 / b.decisions as f64,
                    })
                    .collect(),
            })
            .collect();
        let calibration_max_gap = calibration
            .iter()
            .filter_map(CalibrationRow::max_gap)
            .reduce(f64::max)
            .unwrap_or(f64::NAN);
        DecisionsSummary {
            decided: self.decided,
            shed_at_admission: self.shed_at_admission,
            explored: self.explored,
            admitted_late: self.admitted_late,
            degraded_richer_fit: self.degraded_richer_fit,
            shed_device_idle: self.shed_device_idle,
            lines_all_read: self.lines_all_read,
            lines_cut: self.lines_cut,
            shadows: self.shadows,
            shadows_busy: self.shadows_busy,
            kept_over_core: self.kept_over_core,
            calibration,
            calibration_max_gap,
            rungs: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Nanos = 1_000_000;

    #[test]
    fn outcomes_fill_tenths_and_the_gap_reads_populated_bins_only() {
        // 49 decisions near 0.85 are enough to read within 0.1; 5 near 0.15 are not.
        let mut h = Hindsight::with_lanes(1);
        for i in 0..60 {
            h.outcome(Kind::Vision, "det320", 0.85, i < 51);
        }
        for _ in 0..5 {
            h.outcome(Kind::Vision, "det320", 0.15, true);
        }
        let s = h.summary();
        let row = &s.calibration[0];
        assert_eq!(row.bins.len(), 2);
        assert_eq!((row.bins[1].lo, row.bins[1].decisions), (0.8, 60));
        assert!((row.bins[1].on_time - 0.85).abs() < 1e-12);
        assert!(
            s.calibration_max_gap.abs() < 1e-9,
            "{}",
            s.calibration_max_gap
        );
        assert_eq!(s.admitted_late, 9);
    }

    #[test]
    fn a_shed_counts_as_wrong_when_the_lanes_stood_idle_long_enough() {
        let mut h = Hindsight::with_lanes(1);
        // Shed at 0, due at 100 ms, costing 30 ms: the lane is busy 0–80 ms, so 20 ms idle.
        h.shed(0, 100 * MS, 30 * MS);
        // Shed at 0, due at 200 ms: busy 0–80 and 150–160, so 110 ms idle.
        h.shed(0, 200 * MS, 30 * MS);
        h.busy(0, 80 * MS);
        h.busy(150 * MS, 160 * MS);
        h.settle(100 * MS);
        assert_eq!(h.summary().shed_device_idle, 0);
        h.settle(200 * MS);
        assert_eq!(h.summary().shed_device_idle, 1);
        assert!(
            h.busy.is_empty(),
            "nothing waits: the intervals are forgotten"
        );
    }
}
