//! The virtual clock of the simulator.

use std::cell::Cell;

use mmsched_core::Clock;
use mmsched_core::time::Nanos;

/// Simulated device time: it only moves when the simulator calls [`VirtualClock::advance`]
/// or [`VirtualClock::advance_to`]. Components under simulation read it through the core's
/// [`Clock`] trait, exactly as they read the OS clock in the runtime.
#[derive(Debug, Default)]
pub struct VirtualClock {
    now_nanos: Cell<Nanos>,
}

impl VirtualClock {
    /// A clock standing at `start_nanos`.
    pub fn new(start_nanos: Nanos) -> Self {
        Self {
            now_nanos: Cell::new(start_nanos),
        }
    }

    /// Moves time forward by `delta_nanos` (saturating).
    pub fn advance(&self, delta_nanos: Nanos) {
        self.now_nanos
            .set(self.now_nanos.get().saturating_add(delta_nanos));
    }

    /// Moves time forward to `at_nanos`; earlier times are ignored (time never goes back).
    pub fn advance_to(&self, at_nanos: Nanos) {
        if at_nanos > self.now_nanos.get() {
            self.now_nanos.set(at_nanos);
        }
    }
}

impl Clock for VirtualClock {
    fn now_nanos(&self) -> Nanos {
        self.now_nanos.get()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moves_only_forward() {
        let c = VirtualClock::new(10);
        c.advance(5);
        c.advance_to(3);
        assert_eq!(c.now_nanos(), 15);
        c.advance_to(100);
        assert_eq!(c.now_nanos(), 100);
    }
}
