//! The run's own load on its general lanes ([`mmsched_core::health::OwnLoad`]): the lane
//! time its steps took over the health window, as measured, and the predicted cost of the
//! steps handed to the executor and not yet ended. The health loop asks it whether the
//! run's own work exceeds its lanes before a remedy keeps work from the models.
//!
//! Voice-activity steps run on a lane of their own and are left out, as is that lane.

use std::collections::{HashMap, VecDeque};

use mmsched_core::health::OwnLoad;
use mmsched_core::time::Nanos;

use super::Book;
use crate::stats::Kind;

/// Steps on the general lanes: those that ended recently and those in flight.
#[derive(Debug, Default)]
pub(super) struct OwnWork {
    /// (start, end) of the steps that ended, oldest first.
    spans: VecDeque<(Nanos, Nanos)>,
    /// Predicted cost of each job's step in flight, by tag (a job has one at a time).
    in_flight: HashMap<u64, Nanos>,
}

impl OwnWork {
    /// A step of a `kind` job was handed to the executor with `predicted` cost.
    pub(super) fn submitted(&mut self, kind: Kind, tag: u64, predicted: Nanos) {
        if kind != Kind::Vad {
            self.in_flight.insert(tag, predicted);
        }
    }

    /// `tag`'s step ended (done, failed or shed); `ran` its time on a lane, if it ran;
    /// `kind` its job's (`None`: the job is no longer booked, its step still leaves).
    pub(super) fn ended(&mut self, kind: Option<Kind>, tag: u64, ran: Option<(Nanos, Nanos)>) {
        self.in_flight.remove(&tag);
        let general = kind.is_some_and(|k| k != Kind::Vad);
        if let Some((start, end)) = ran.filter(|_| general) {
            self.spans.push_back((start, end.max(start)));
        }
    }

    /// The load over the `window` before `now` on `lanes` lanes.
    pub(super) fn load(&mut self, now: Nanos, window: Nanos, lanes: usize) -> OwnLoad {
        let from = now.saturating_sub(window);
        while self.spans.front().is_some_and(|&(_, end)| end <= from) {
            self.spans.pop_front();
        }
        let busy = self
            .spans
            .iter()
            .map(|&(start, end)| end.min(now).saturating_sub(start.max(from)))
            .fold(0u64, u64::saturating_add);
        OwnLoad {
            busy_nanos: busy,
            outstanding_nanos: self
                .in_flight
                .values()
                .fold(0u64, |a, &c| a.saturating_add(c)),
            capacity_nanos: window.saturating_mul(lanes as u64),
        }
    }
}

impl Book {
    /// The run's own load on its general lanes over the `window` before `now`.
    pub fn own_load(&mut self, now: Nanos, window: Nanos) -> OwnLoad {
        let lanes = self.general_lanes.max(1);
        self.own.load(now, window, lanes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Nanos = 1_000_000;

    #[test]
    fn counts_lane_time_inside_the_window_and_the_steps_in_flight() {
        let mut w = OwnWork::default();
        // Ended before the window: forgotten.
        w.submitted(Kind::Vision, 1, 80 * MS);
        w.ended(Some(Kind::Vision), 1, Some((0, 100 * MS)));
        // Straddles the window's start: only its part inside counts.
        w.submitted(Kind::Asr, 2, 700 * MS);
        w.ended(Some(Kind::Asr), 2, Some((900 * MS, 1_300 * MS)));
        // Voice activity runs on a lane of its own.
        w.submitted(Kind::Vad, 3, 5 * MS);
        w.ended(Some(Kind::Vad), 3, Some((1_500 * MS, 1_505 * MS)));
        // In flight: its prediction.
        w.submitted(Kind::Vision, 4, 90 * MS);
        w.submitted(Kind::Vad, 5, 5 * MS);
        let load = w.load(3_000 * MS, 2_000 * MS, 2);
        assert_eq!(load.busy_nanos, 300 * MS);
        assert_eq!(load.outstanding_nanos, 90 * MS);
        assert_eq!(load.capacity_nanos, 4_000 * MS);
        assert!(!load.overloaded());
        // A shed step leaves the lanes without having run.
        w.ended(None, 4, None);
        assert_eq!(w.load(3_000 * MS, 2_000 * MS, 2).outstanding_nanos, 0);
    }

    #[test]
    fn busy_lanes_with_more_waiting_are_overloaded() {
        let mut w = OwnWork::default();
        for lane in 0..2u64 {
            w.submitted(Kind::Vision, lane, 0);
            w.ended(Some(Kind::Vision), lane, Some((0, 2_000 * MS)));
        }
        assert!(
            !w.load(2_000 * MS, 2_000 * MS, 2).overloaded(),
            "busy, none waiting"
        );
        w.submitted(Kind::Llm, 9, 30 * MS);
        assert!(w.load(2_000 * MS, 2_000 * MS, 2).overloaded());
    }
}
