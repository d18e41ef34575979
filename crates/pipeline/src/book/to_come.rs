//! The inputs still to come from the device's own streams, and what a job's time costs
//! them. A camera that outruns its lanes makes the next frames, not only the admitted
//! work, pay for a rung's extra milliseconds: the admitted work behind a job is seldom more
//! than the frame before, while the frames to come are due one after another.
//!
//! Each kind's stream is followed by its inputs' release times (a moving average of the
//! gaps between them), deadline span and importance. Its next inputs are expected at that
//! rate; one arriving while a job would still hold the lanes waits for the rest of that
//! job's time, on top of the admitted work left when it arrives (the lanes draining it as
//! one fluid queue), and loses the chance that this wait takes from ending in time.

use mmsched_core::time::Nanos;
use mmsched_runtime::sched::dist::CostDist;

/// How far a new gap moves the average: one eighth, as TCP smooths its round trip.
const GAP_WEIGHT: f64 = 0.125;

/// A kind's stream as its inputs arrive.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct Stream {
    /// The last input's release.
    last: Option<Nanos>,
    /// The average gap between releases (none before the second input).
    gap: Option<f64>,
    /// The last input's deadline span (due this long after release).
    span: Nanos,
    /// The last input's importance.
    importance: f64,
}

impl Stream {
    /// An input released at `release`, due `span` later, with `importance`.
    pub(super) fn arrived(&mut self, release: Nanos, span: Nanos, importance: f64) {
        if let Some(last) = self.last.filter(|&l| release > l) {
            let gap = (release - last) as f64;
            self.gap = Some(self.gap.map_or(gap, |g| g + GAP_WEIGHT * (gap - g)));
        }
        if self.last.is_none_or(|l| release > l) {
            self.last = Some(release);
        }
        self.span = span;
        self.importance = importance;
    }

    /// The inputs expected after `now` and before `until`: (release, deadline,
    /// importance), earliest first.
    pub(super) fn expected(&self, now: Nanos, until: Nanos) -> Vec<(Nanos, Nanos, f64)> {
        let (Some(last), Some(gap)) = (self.last, self.gap) else {
            return Vec::new();
        };
        let gap = (gap.round() as Nanos).max(1);
        // The first release after both `last` and `now`.
        let behind = now.saturating_sub(last) / gap + 1;
        let mut at = last.saturating_add(behind.saturating_mul(gap));
        let mut out = Vec::new();
        while at < until {
            out.push((at, at.saturating_add(self.span), self.importance));
            at = at.saturating_add(gap);
        }
        out
    }
}

/// What a job holding the lanes from `start` for `shift` (its time over the lanes) costs
/// an input of cost `cost` arriving at `release`, due at `deadline`, with `queued` of the
/// admitted work (over the lanes) ahead of it at `now`: the chance its wait takes from
/// ending in time.
pub(super) fn chance_lost(
    cost: &CostDist,
    (release, deadline): (Nanos, Nanos),
    queued: Nanos,
    (start, shift): (Nanos, Nanos),
    now: Nanos,
) -> f64 {
    // The admitted work the lanes have not drained by its arrival.
    let left = queued.saturating_sub(release.saturating_sub(now));
    // The part of the job's time still ahead of it when it arrives.
    let wait = start
        .saturating_add(shift)
        .saturating_sub(release)
        .min(shift);
    let budget = deadline.saturating_sub(release.saturating_add(left));
    (cost.within(budget) - cost.within(budget.saturating_sub(wait))).max(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Nanos = 1_000_000;

    #[test]
    fn a_camera_is_expected_at_its_rate_after_now() {
        let mut s = Stream::default();
        assert!(s.expected(0, 10_000 * MS).is_empty(), "nothing seen");
        s.arrived(0, 120 * MS, 0.7);
        assert!(s.expected(0, 10_000 * MS).is_empty(), "no rate yet");
        s.arrived(66 * MS, 120 * MS, 0.7);
        s.arrived(133 * MS, 120 * MS, 0.7);
        let next = s.expected(140 * MS, 300 * MS);
        let releases: Vec<Nanos> = next.iter().map(|e| e.0).collect();
        // The gaps 66 and 67 ms average to 66.125 ms.
        assert_eq!(releases, [199_125_000, 265_250_000]);
        assert_eq!(next[0].1, 319_125_000);
        assert_eq!(next[0].2, 0.7);
        // A release out of order does not move the stream back.
        s.arrived(100 * MS, 120 * MS, 0.7);
        assert_eq!(s.expected(140 * MS, 200 * MS)[0].0, 199_125_000);
    }

    #[test]
    fn an_input_loses_only_the_wait_it_meets() {
        let cost = CostDist::from_percentiles(50 * MS, 70 * MS);
        let window = (100 * MS, 220 * MS);
        // The job holds the lanes from 0 to 30 ms: an input at 100 ms does not meet it.
        assert_eq!(chance_lost(&cost, window, 0, (0, 30 * MS), 0), 0.0);
        // From 80 to 130 ms: it waits 30 ms, with 120 ms to its deadline and 50 ms P50.
        let lost = chance_lost(&cost, window, 0, (80 * MS, 50 * MS), 0);
        let expected = cost.within(120 * MS) - cost.within(90 * MS);
        assert!((lost - expected).abs() < 1e-12 && lost > 0.0, "{lost}");
        // Behind 150 ms of admitted work (50 ms left at its arrival) it loses more.
        let queued = chance_lost(&cost, window, 150 * MS, (80 * MS, 50 * MS), 0);
        assert!(queued > lost, "{queued} vs {lost}");
    }
}
