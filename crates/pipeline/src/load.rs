//! Background CPU load from the scenario: the device's steady `background_load_pct` and
//! `load_spike` episodes (e.g. a compositor's GPU-driver work every 300 ms on AR glasses).
//!
//! The load is real: one thread spins for the demanded share of every 5 ms tick and
//! sleeps the rest. It spins by its own CPU clock, not the wall clock, and carries what
//! it could not burn in a tick (it was preempted, by a real-time worker for instance) into
//! the next: so every scheduler under comparison loses the same CPU time, whatever
//! priority its workers have.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use mmsched_core::time::{Clock, Nanos};
pub use mmsched_world::load::LoadProfile;

const TICK_NANOS: Nanos = 5_000_000;

/// CPU time the load thread was asked for and burnt, nanoseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LoadSpent {
    /// Demanded by the profile up to the stop.
    pub demanded_nanos: u64,
    /// Burnt by the thread (its own CPU clock).
    pub burnt_nanos: u64,
}

/// The running load thread; stops when dropped or [`LoadGenerator::finish`]ed.
#[derive(Debug)]
pub struct LoadGenerator {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<LoadSpent>>,
}

/// The calling thread's CPU time so far, nanoseconds (0 where the OS cannot tell).
fn thread_cpu_nanos(origin: &Option<cpu_time::ThreadTime>) -> u64 {
    origin
        .as_ref()
        .and_then(|t| t.try_elapsed().ok())
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

impl LoadGenerator {
    /// Starts generating `profile` from `clock`'s now (no thread for an idle profile).
    pub fn start<C: Clock + Send + 'static>(profile: LoadProfile, clock: C) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let handle = (!profile.is_idle()).then(|| {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                let start = clock.now_nanos();
                let origin = cpu_time::ThreadTime::try_now().ok();
                let mut spent = LoadSpent::default();
                let mut sink = 0u64;
                let mut next_tick = start;
                while !stop.load(Ordering::Relaxed) {
                    let tick = clock.now_nanos().max(next_tick);
                    let busy = (profile.at(tick - start) * TICK_NANOS as f64) as Nanos;
                    spent.demanded_nanos += busy;
                    // Burn until the CPU time burnt catches up with the demand so far
                    // (without a CPU clock, for this tick's share of wall time).
                    let behind = || match &origin {
                        Some(_) => thread_cpu_nanos(&origin) < spent.demanded_nanos,
                        None => clock.now_nanos() < tick + busy,
                    };
                    while behind() && !stop.load(Ordering::Relaxed) {
                        for _ in 0..256 {
                            sink = std::hint::black_box(
                                sink.wrapping_mul(6364136223846793005).wrapping_add(1),
                            );
                        }
                    }
                    next_tick = tick + TICK_NANOS;
                    let left = next_tick.saturating_sub(clock.now_nanos());
                    std::thread::sleep(Duration::from_nanos(left));
                }
                spent.burnt_nanos = thread_cpu_nanos(&origin);
                spent
            })
        });
        Self { stop, handle }
    }

    /// Stops the thread and says how much CPU time it was asked for and burnt (`None`
    /// without load).
    pub fn finish(mut self) -> Option<LoadSpent> {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.take().and_then(|h| h.join().ok())
    }
}

impl Drop for LoadGenerator {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_thread_burns_the_cpu_time_it_was_asked_for() {
        let p = LoadProfile::steady(0.2);
        let g = LoadGenerator::start(p, mmsched_core::time::MonotonicClock::new());
        std::thread::sleep(Duration::from_millis(200));
        let spent = g.finish().expect("a load thread ran");
        // 20 % of each 5 ms tick it wakes for: about 40 ms over 200 ms on an idle machine;
        // on a busy one it wakes for fewer ticks (a tick it slept through is not
        // demanded), so at least one tick's share. It never burns more than it was asked
        // for (beyond the last spin's granularity).
        assert!(spent.demanded_nanos >= 1_000_000, "{spent:?}");
        assert!(
            spent.burnt_nanos <= spent.demanded_nanos + TICK_NANOS,
            "{spent:?}"
        );
        assert!(spent.burnt_nanos > 0, "{spent:?}");
        assert!(
            LoadGenerator::start(
                LoadProfile::default(),
                mmsched_core::time::MonotonicClock::new()
            )
            .finish()
            .is_none()
        );
    }
}
