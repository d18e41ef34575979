//! A fixed event cadence on the device timeline, without accumulated rounding.

use mmsched_core::time::{NANOS_PER_SEC, Nanos};

/// Event `k` is due at `start + ⌊k · period_num / period_den⌋` nanoseconds: a 30 fps
/// camera is `period_num = 10⁹, period_den = 30`, so frame times never accumulate the
/// third of a nanosecond a rounded period would lose per frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cadence {
    start_nanos: Nanos,
    period_num: u64,
    period_den: u64,
    next: u64,
    limit: Option<u64>,
}

impl Cadence {
    /// `hz` events per second from `start_nanos` (`hz` ≥ 1).
    pub fn per_second(start_nanos: Nanos, hz: u32) -> Self {
        Self::with_period(start_nanos, NANOS_PER_SEC, u64::from(hz.max(1)))
    }

    /// One event every `period_nanos` (≥ 1) from `start_nanos`.
    pub fn every(start_nanos: Nanos, period_nanos: Nanos) -> Self {
        Self::with_period(start_nanos, period_nanos.max(1), 1)
    }

    fn with_period(start_nanos: Nanos, period_num: u64, period_den: u64) -> Self {
        Self {
            start_nanos,
            period_num,
            period_den,
            next: 0,
            limit: None,
        }
    }

    /// Ends the cadence after `count` events.
    pub fn with_limit(mut self, count: u64) -> Self {
        self.limit = Some(count);
        self
    }

    /// Device time of event `k`.
    pub fn due_nanos(&self, k: u64) -> Nanos {
        let offset = u128::from(k) * u128::from(self.period_num) / u128::from(self.period_den);
        self.start_nanos
            .saturating_add(u64::try_from(offset).unwrap_or(u64::MAX))
    }

    /// The average period, in nanoseconds (rounded down).
    pub fn period_nanos(&self) -> Nanos {
        self.period_num / self.period_den
    }

    /// Device time of the next event, unless the cadence has ended.
    pub fn next_due_nanos(&self) -> Option<Nanos> {
        match self.limit {
            Some(l) if self.next >= l => None,
            _ => Some(self.due_nanos(self.next)),
        }
    }

    /// If the next event is due at `now_nanos`, returns its index and capture time and
    /// moves on.
    pub fn take_due(&mut self, now_nanos: Nanos) -> Option<(u64, Nanos)> {
        let due = self.next_due_nanos()?;
        if due > now_nanos {
            return None;
        }
        let k = self.next;
        self.next += 1;
        Some((k, due))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thirty_fps_has_no_accumulated_rounding() {
        let c = Cadence::per_second(7, 30);
        assert_eq!(c.due_nanos(0), 7);
        assert_eq!(c.due_nanos(1), 7 + 33_333_333);
        assert_eq!(c.due_nanos(30), 7 + NANOS_PER_SEC);
        assert_eq!(c.due_nanos(30 * 3600), 7 + 3600 * NANOS_PER_SEC);
        assert_eq!(c.period_nanos(), 33_333_333);
    }

    #[test]
    fn events_are_taken_in_order_only_when_due() {
        let mut c = Cadence::every(100, 10).with_limit(3);
        assert_eq!(c.take_due(99), None);
        assert_eq!(c.take_due(125), Some((0, 100)));
        assert_eq!(c.take_due(125), Some((1, 110)));
        assert_eq!(c.take_due(125), Some((2, 120)));
        assert_eq!(c.take_due(1000), None, "limit reached");
        assert_eq!(c.next_due_nanos(), None);
    }
}
