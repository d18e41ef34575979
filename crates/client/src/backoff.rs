//! Exponential backoff with jitter, for retrying a policy server that is down or failing.
//!
//! The n-th consecutive failure waits `min(max, initial · 2ⁿ⁻¹)` scaled by a random factor
//! in [0.5, 1): a fleet of devices that lost the same server does not come back in lockstep.

use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

/// The retry delay schedule.
#[derive(Debug, Clone)]
pub struct Backoff {
    initial: Duration,
    max: Duration,
    failures: u32,
    rng: u64,
}

impl Backoff {
    /// Delays start at `initial` and never exceed `max`; `seed` drives the jitter.
    pub fn new(initial: Duration, max: Duration, seed: u64) -> Self {
        Self {
            initial,
            max: max.max(initial),
            failures: 0,
            rng: splitmix64(seed),
        }
    }

    /// A seed from the process's random hasher keys (no extra dependency, differs per process).
    pub fn random_seed() -> u64 {
        let mut h = std::hash::RandomState::new().build_hasher();
        h.write_u64(0x006d_6d73_6368_6564);
        h.finish()
    }

    /// The delay before the next attempt after one more failure.
    pub fn next_delay(&mut self) -> Duration {
        self.failures = self.failures.saturating_add(1);
        let doublings = self.failures.saturating_sub(1).min(32);
        let base = self
            .initial
            .checked_mul(1u32 << doublings.min(31))
            .unwrap_or(self.max)
            .min(self.max);
        base.mul_f64(0.5 + 0.5 * self.unit())
    }

    /// Consecutive failures so far.
    pub fn failures(&self) -> u32 {
        self.failures
    }

    /// Back to the first delay after a success.
    pub fn reset(&mut self) {
        self.failures = 0;
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        let mut x = self.rng;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng = x;
        (x >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Spreads any seed (also 0, 1, 2…) over the whole state space; never returns 0, which
/// xorshift cannot leave.
fn splitmix64(seed: u64) -> u64 {
    let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)) | 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_double_up_to_the_cap_within_the_jitter_band() {
        let initial = Duration::from_millis(100);
        let max = Duration::from_secs(2);
        let mut b = Backoff::new(initial, max, 42);
        let mut bases = Vec::new();
        for n in 1..=10u32 {
            let d = b.next_delay();
            let base = (initial * 2u32.pow(n - 1)).min(max);
            assert!(d >= base / 2 && d < base, "n={n}: {d:?} vs {base:?}");
            bases.push(base);
        }
        assert_eq!(b.failures(), 10);
        b.reset();
        let d = b.next_delay();
        assert!(d < initial);
    }

    #[test]
    fn jitter_spreads_clients() {
        let a: Vec<_> = (0..5)
            .map(|s| Backoff::new(Duration::from_secs(1), Duration::from_secs(1), s).next_delay())
            .collect();
        let distinct = a.iter().collect::<std::collections::BTreeSet<_>>().len();
        assert!(distinct >= 4, "{a:?}");
    }

    #[test]
    fn huge_failure_counts_saturate() {
        let mut b = Backoff::new(Duration::from_secs(1), Duration::from_secs(60), 7);
        for _ in 0..100 {
            assert!(b.next_delay() <= Duration::from_secs(60));
        }
    }
}
