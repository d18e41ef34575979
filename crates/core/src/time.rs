//! Time on the device timeline: integers with the unit in the name, and a passed-in clock.

/// Nanoseconds on the device timeline (monotonic, starting wherever the clock starts).
pub type Nanos = u64;

/// Nanoseconds in one millisecond.
pub const NANOS_PER_MILLI: u64 = 1_000_000;
/// Nanoseconds in one microsecond.
pub const NANOS_PER_MICRO: u64 = 1_000;
/// Nanoseconds in one second.
pub const NANOS_PER_SEC: u64 = 1_000_000_000;

/// A source of monotonic device time.
///
/// The core never reads the wall clock: every component that needs "now" is handed a
/// `Clock`. The runtime passes a monotonic OS clock, the simulator a virtual clock that it
/// advances event by event, and tests a [`ManualClock`] they move with `advance`. This one
/// seam is what makes the scheduler deterministic, simulatable and testable.
pub trait Clock {
    /// The current time on the device timeline, in nanoseconds.
    fn now_nanos(&self) -> Nanos;
}

/// A clock that only moves when told to: for tests and deterministic replays.
#[derive(Debug, Default)]
pub struct ManualClock {
    now_nanos: core::cell::Cell<Nanos>,
}

impl ManualClock {
    /// A clock standing at `start_nanos`.
    pub fn new(start_nanos: Nanos) -> Self {
        Self {
            now_nanos: core::cell::Cell::new(start_nanos),
        }
    }

    /// Moves time forward by `delta_nanos` (saturating at the end of the timeline).
    pub fn advance(&self, delta_nanos: Nanos) {
        self.now_nanos
            .set(self.now_nanos.get().saturating_add(delta_nanos));
    }

    /// Jumps to `at_nanos`, which must not be in the past: a monotonic clock never goes back.
    pub fn set(&self, at_nanos: Nanos) {
        if at_nanos > self.now_nanos.get() {
            self.now_nanos.set(at_nanos);
        }
    }
}

impl Clock for ManualClock {
    fn now_nanos(&self) -> Nanos {
        self.now_nanos.get()
    }
}

impl<C: Clock + ?Sized> Clock for &C {
    fn now_nanos(&self) -> Nanos {
        (**self).now_nanos()
    }
}

/// The OS monotonic clock, for the std runtime: the one place that reads real time.
/// Its zero is the moment it was created.
#[cfg(feature = "std")]
#[derive(Debug, Clone, Copy)]
pub struct MonotonicClock {
    origin: std::time::Instant,
}

#[cfg(feature = "std")]
impl MonotonicClock {
    /// A clock whose zero is now.
    pub fn new() -> Self {
        Self {
            origin: std::time::Instant::now(),
        }
    }
}

#[cfg(feature = "std")]
impl Default for MonotonicClock {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(feature = "std")]
impl Clock for MonotonicClock {
    fn now_nanos(&self) -> Nanos {
        // u64 nanoseconds last 584 years from the clock's creation.
        self.origin.elapsed().as_nanos() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_forward() {
        let clock = ManualClock::new(5);
        clock.advance(10);
        assert_eq!(clock.now_nanos(), 15);
        clock.set(3);
        assert_eq!(clock.now_nanos(), 15, "a monotonic clock never goes back");
        clock.set(40);
        assert_eq!(clock.now_nanos(), 40);
        clock.advance(u64::MAX);
        assert_eq!(clock.now_nanos(), u64::MAX);
    }
}
