//! A source's own clock: the device clock plus a constant offset and a crystal drift.

use mmsched_core::time::Nanos;

/// The error of a source's clock against the device clock.
///
/// `stamp(t) = t + offset + ⌊t · drift_ppb / 10⁹⌋` for device time `t` (in integer
/// nanoseconds, so the result is exact and reproducible). This is the S5 model without
/// the noise term: drift α = 1.2e-6 s/s is `drift_ppb = 1200`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct SourceClock {
    /// Constant offset of the source clock, in nanoseconds (may be negative).
    pub offset_nanos: i64,
    /// Drift of the source clock, in parts per billion (ns per s; may be negative).
    pub drift_ppb: i64,
}

impl SourceClock {
    /// A clock with `offset_nanos` and `drift_ppb`.
    pub fn new(offset_nanos: i64, drift_ppb: i64) -> Self {
        Self {
            offset_nanos,
            drift_ppb,
        }
    }

    /// A clock from an offset in milliseconds and a drift in ppm (rounded to whole ppb).
    pub fn from_ms_ppm(offset_ms: f64, drift_ppm: f64) -> Self {
        Self {
            offset_nanos: (offset_ms * 1e6).round() as i64,
            drift_ppb: (drift_ppm * 1e3).round() as i64,
        }
    }

    /// What the source clock reads at device time `device_nanos` (clamped to the u64 range).
    pub fn stamp(&self, device_nanos: Nanos) -> u64 {
        let t = i128::from(device_nanos);
        let drift = (t * i128::from(self.drift_ppb)).div_euclid(1_000_000_000);
        let s = t + i128::from(self.offset_nanos) + drift;
        s.clamp(0, i128::from(u64::MAX)) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offset_and_drift_are_applied_exactly() {
        let c = SourceClock::new(-5_000_000, 1200);
        assert_eq!(c.stamp(10_000_000_000), 10_000_000_000 - 5_000_000 + 12_000);
        assert_eq!(c.stamp(1), 0, "clamped at zero, never wraps");
        let c = SourceClock::new(0, -250);
        // 3.000000001 s · −250 ppb = −750.00000025 ns → floor −751.
        assert_eq!(c.stamp(3_000_000_001), 3_000_000_001 - 751);
        assert_eq!(
            SourceClock::from_ms_ppm(2.5, 1.2),
            SourceClock::new(2_500_000, 1200)
        );
        assert_eq!(SourceClock::default().stamp(42), 42);
    }
}
