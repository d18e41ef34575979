//! The delay floor: the path delay of the fastest packets, which relative delays are
//! measured from. It falls at once when a faster packet comes, rises when the minimum of
//! recent windows stays above it (a slow clock drift between sender and receiver), and
//! jumps — a *hand-over* — when the path changes by at least a threshold.

use super::histogram::BUCKET_NANOS;

/// Windows of minima remembered: with 1 s windows, a 16 s view of the floor.
const WINDOWS: usize = 16;

/// A move of the floor, in nanoseconds of path delay (a whole number of buckets).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct FloorMove {
    /// How far the floor moved (positive: later).
    pub(super) delta_nanos: i128,
    /// Whether the move was a jump of the path (a hand-over), not drift or refinement.
    pub(super) hand_over: bool,
}

/// See the module docs. Paths are `arrival − seq · frame`, in nanoseconds.
#[derive(Debug, Clone)]
pub(super) struct FloorTracker {
    window_nanos: i128,
    jump_nanos: i128,
    floor: Option<i128>,
    minima: [i128; WINDOWS],
    filled: usize,
    newest: usize,
    current_min: i128,
    current_start: i128,
}

impl FloorTracker {
    /// A tracker whose windows last `window_nanos` and which calls a move of at least
    /// `jump_nanos` a hand-over.
    pub(super) fn new(window_nanos: u64, jump_nanos: u64) -> Self {
        Self {
            window_nanos: i128::from(window_nanos.max(1)),
            jump_nanos: i128::from(jump_nanos.max(BUCKET_NANOS)),
            floor: None,
            minima: [0; WINDOWS],
            filled: 0,
            newest: 0,
            current_min: i128::MAX,
            current_start: 0,
        }
    }

    /// The floor, once a packet has been seen.
    pub(super) fn floor(&self) -> Option<i128> {
        self.floor
    }

    /// Takes in a packet's path delay at `arrival_nanos`. `spread_nanos` is how far above
    /// the floor the fastest of the usual packets sit (a low quantile of the relative
    /// delay): a rise must exceed the jump threshold by that much, so the minimum of a
    /// window of heavy jitter is not mistaken for a new path.
    pub(super) fn observe(
        &mut self,
        path: i128,
        arrival_nanos: i128,
        spread_nanos: u64,
    ) -> Option<FloorMove> {
        let Some(floor) = self.floor else {
            self.floor = Some(path);
            self.current_min = path;
            self.current_start = arrival_nanos;
            return None;
        };
        if arrival_nanos - self.current_start >= self.window_nanos {
            self.newest = (self.newest + 1) % WINDOWS;
            self.minima[self.newest] = self.current_min;
            self.filled = (self.filled + 1).min(WINDOWS);
            self.current_min = i128::MAX;
            self.current_start = arrival_nanos;
        }
        self.current_min = self.current_min.min(path);
        let bucket = i128::from(BUCKET_NANOS);
        if path < floor {
            // A faster packet: the floor falls to it at once (whole buckets).
            let buckets = (floor - path + bucket - 1) / bucket;
            return Some(self.move_by(-buckets * bucket));
        }
        if self.filled == 0 {
            return None;
        }
        // The last complete window and the current one: at least one window long.
        let recent = self.current_min.min(self.minima[self.newest]);
        let threshold = self.jump_nanos + i128::from(spread_nanos);
        if recent - floor >= threshold {
            return Some(self.move_by((recent - floor) / bucket * bucket));
        }
        if self.filled == WINDOWS {
            let long = self
                .minima
                .iter()
                .copied()
                .fold(self.current_min, i128::min);
            if long - floor >= bucket {
                return Some(self.move_by((long - floor) / bucket * bucket));
            }
        }
        None
    }

    fn move_by(&mut self, delta_nanos: i128) -> FloorMove {
        if let Some(f) = &mut self.floor {
            *f += delta_nanos;
        }
        FloorMove {
            delta_nanos,
            hand_over: delta_nanos.abs() >= self.jump_nanos,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: i128 = 1_000_000;

    #[test]
    fn falls_at_once_and_rises_only_when_windows_stay_above() {
        let mut t = FloorTracker::new(1_000_000_000, 10_000_000);
        assert_eq!(t.observe(30 * MS, 0, 0), None);
        // 0.4 ms faster: the floor falls one whole bucket, not a hand-over.
        let m = t.observe(30 * MS - 400_000, 20 * MS, 0).expect("moved");
        assert_eq!((m.delta_nanos, m.hand_over), (-MS, false));
        assert_eq!(t.floor(), Some(29 * MS));
        // A new path 40 ms slower: after a full window above it, a hand-over upwards.
        let mut moved = None;
        for i in 1..200 {
            if let Some(m) = t.observe(69 * MS + (i % 3) * MS, i * 20 * MS, 2_000_000) {
                moved = Some((i, m));
                break;
            }
        }
        let (i, m) = moved.expect("the rise is seen");
        assert!((50..=101).contains(&i), "after {i} packets");
        assert_eq!((m.delta_nanos, m.hand_over), (40 * MS, true));
        // And back to the old path: a hand-over downwards, at once.
        let m = t.observe(29 * MS, 5_000 * MS, 0).expect("moved");
        assert_eq!((m.delta_nanos, m.hand_over), (-40 * MS, true));
    }

    #[test]
    fn a_slow_drift_moves_the_floor_bucket_by_bucket() {
        let mut t = FloorTracker::new(1_000_000_000, 10_000_000);
        let mut moves = 0;
        // The sender's clock runs 100 ppm slow: paths grow 2 µs a packet.
        for i in 0..50 * 60 {
            if let Some(m) = t.observe(30 * MS + i * 2_000, i * 20 * MS, 0) {
                assert!(!m.hand_over && m.delta_nanos == MS, "{m:?}");
                moves += 1;
            }
        }
        // 6 ms of drift in a minute, seen with the 16 s window's lag.
        assert!((4..=6).contains(&moves), "{moves}");
    }
}
