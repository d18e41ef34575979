//! Quality rungs as the book handles them: how it picks them ([`RungMode`]; mmsched's
//! choice by expected correct results is [`super::decide`]) and the camera's standing
//! reservation, whose frames take a lane's time between a job's start and its deadline.

use mmsched_core::time::Nanos;

/// How the book picks rungs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RungMode {
    /// Every job at its model's richest rung (what the baselines run).
    #[default]
    Richest,
    /// Per job, the rung (or none: shed) worth the most right answers on time, less what
    /// it costs the work behind it (mmsched; [`super::decide`]).
    Adaptive,
    /// Per job, the richest rung whose predicted finish (a high percentile of its cost)
    /// meets its deadline: mmsched's rule before it weighed chances and correctness, kept
    /// for the ablation `mmsched-no-expected-value`.
    Fitting,
    /// Every job at the cheapest rung (a baseline degraded all the time).
    Cheapest,
}

impl RungMode {
    /// The name in `bench e2e`'s columns and summaries.
    pub fn as_str(self) -> &'static str {
        match self {
            RungMode::Richest => "richest",
            RungMode::Adaptive => "adaptive",
            RungMode::Fitting => "fitting",
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
