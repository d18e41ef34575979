//! Which of a stream's two sources of timing places its events.
//!
//! The **arrival time** is an upper bound on the event's fastest-path arrival (the
//! transport delay is never negative) and exact when the link does not jitter. The
//! **stamp**, mapped onto the device timeline by the estimated clock line, has precise
//! spacing but carries the source's stamping noise (σ, a setting). Their difference
//! `w = arrival − line(stamp)` is the transport jitter minus the stamp noise (plus the
//! line's slow error). Consecutive differences cancel the slow part:
//! `var(w_k − w_{k−1}) = 2·var(jitter) + 2·σ²`, so the transport jitter's spread is
//! `σ_J = √(var(Δw)/2 − σ²)`.
//!
//! The arrival dominates while `σ_J ≤ σ` (the link adds less uncertainty than the stamps
//! carry): events are placed at their arrival. Otherwise the stamp dominates: events are
//! placed at the stamp's mapping, but never later than their arrival. The switch has a
//! hysteresis of ±25 % so a spread near σ does not flap.

/// Which source of timing places a stream's events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TimingSource {
    /// The device arrival time (the link does not jitter more than the stamps are noisy).
    #[default]
    Arrival,
    /// The stream's own stamp mapped by the clock estimate, bounded by the arrival.
    Stamp,
}

impl TimingSource {
    /// `arrival` or `stamp`.
    pub fn as_str(self) -> &'static str {
        match self {
            TimingSource::Arrival => "arrival",
            TimingSource::Stamp => "stamp",
        }
    }
}

/// Placements needed before the estimate of the jitter is trusted.
const WARM_UP: u32 = 32;

/// Weight of a new squared difference in the running mean (about the last 128 events).
const ALPHA: f64 = 1.0 / 128.0;

/// See the module docs.
#[derive(Debug, Clone)]
pub(super) struct Fusion {
    stamp_noise_nanos: f64,
    previous: Option<f64>,
    mean_square_step: f64,
    steps: u32,
    source: TimingSource,
}

impl Fusion {
    pub(super) fn new(stamp_noise_nanos: f64) -> Self {
        Self {
            stamp_noise_nanos: stamp_noise_nanos.max(0.0),
            previous: None,
            mean_square_step: 0.0,
            steps: 0,
            source: TimingSource::Arrival,
        }
    }

    /// Takes in one event's `w = arrival − line(stamp)`, in nanoseconds.
    pub(super) fn update(&mut self, w: f64) {
        if let Some(prev) = self.previous {
            let step = w - prev;
            let weight = if self.steps < WARM_UP {
                1.0 / f64::from(self.steps + 1)
            } else {
                ALPHA
            };
            self.mean_square_step += weight * (step * step - self.mean_square_step);
            self.steps = self.steps.saturating_add(1);
        }
        self.previous = Some(w);
        if self.steps < WARM_UP {
            return;
        }
        let jitter = self.transport_jitter_nanos();
        let noise = self.stamp_noise_nanos;
        self.source = match self.source {
            TimingSource::Arrival if jitter > 1.25 * noise => TimingSource::Stamp,
            TimingSource::Stamp if jitter < 0.8 * noise => TimingSource::Arrival,
            kept => kept,
        };
    }

    /// The spread (1 σ) of the transport jitter, in nanoseconds.
    pub(super) fn transport_jitter_nanos(&self) -> f64 {
        let variance =
            self.mean_square_step / 2.0 - self.stamp_noise_nanos * self.stamp_noise_nanos;
        libm::sqrt(variance.max(0.0))
    }

    /// The source that places events now.
    pub(super) fn source(&self) -> TimingSource {
        self.source
    }

    /// Where an event goes: its arrival, or its stamp's mapping but not after its arrival.
    pub(super) fn place(&self, arrival_nanos: i128, mapped_nanos: i128) -> i128 {
        match self.source {
            TimingSource::Arrival => arrival_nanos,
            TimingSource::Stamp => mapped_nanos.min(arrival_nanos),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic zero-mean noise in [−1, 1) (SplitMix64 of `k`), σ = 1/√3.
    fn wobble(k: u64) -> f64 {
        let mut z = k.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    }

    #[test]
    fn a_clean_link_keeps_the_arrival_and_a_jittery_one_takes_the_stamp() {
        // Stamp noise of ±1.7 ms (σ ≈ 1 ms), no transport jitter, a slowly wandering line.
        let mut f = Fusion::new(1e6);
        for k in 0..1000 {
            f.update(1.7e6 * wobble(k) + 3e6 * libm::sin(k as f64 / 200.0));
        }
        assert_eq!(f.source(), TimingSource::Arrival);
        assert!(
            f.transport_jitter_nanos() < 0.5e6,
            "{}",
            f.transport_jitter_nanos()
        );
        // Add ±20 ms of transport jitter.
        for k in 0..1000 {
            f.update(1.7e6 * wobble(k) + 20e6 * (wobble(k + 7_777) + 1.0));
        }
        assert_eq!(f.source(), TimingSource::Stamp);
        assert!(
            f.transport_jitter_nanos() > 8e6,
            "{}",
            f.transport_jitter_nanos()
        );
        // Bounded by the arrival: a mapping after it is pulled back.
        assert_eq!(f.place(100, 130), 100);
        assert_eq!(f.place(100, 70), 70);
    }
}
