//! An inertial measurement unit: samples at a fixed rate (200 Hz by default), timestamps
//! only — what matters for scheduling and alignment is when a sample was taken.

use mmsched_core::Modality;
use mmsched_core::time::{Clock, Nanos};

use super::{Cadence, Source, SourceClock, SourceEvent};

/// Settings of an [`Imu`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImuConfig {
    /// Samples per second (≥ 1).
    pub rate_hz: u32,
    /// Device time of the first sample.
    pub start_nanos: Nanos,
    /// Stop after this many samples (`None`: never).
    pub limit: Option<u64>,
    /// The IMU's own clock error.
    pub clock: SourceClock,
}

impl Default for ImuConfig {
    fn default() -> Self {
        Self {
            rate_hz: 200,
            start_nanos: 0,
            limit: None,
            clock: SourceClock::default(),
        }
    }
}

/// An IMU source; events carry no payload.
#[derive(Debug)]
pub struct Imu<C: Clock> {
    device: C,
    cadence: Cadence,
    clock: SourceClock,
}

impl<C: Clock> Imu<C> {
    /// An IMU polled against `device`.
    pub fn new(config: ImuConfig, device: C) -> Self {
        let mut cadence = Cadence::per_second(config.start_nanos, config.rate_hz);
        if let Some(l) = config.limit {
            cadence = cadence.with_limit(l);
        }
        Self {
            device,
            cadence,
            clock: config.clock,
        }
    }
}

impl<C: Clock> Source for Imu<C> {
    type Payload = ();

    fn name(&self) -> &str {
        "imu"
    }

    fn modality(&self) -> Modality {
        Modality::Imu
    }

    fn next_due_nanos(&self) -> Option<Nanos> {
        self.cadence.next_due_nanos()
    }

    fn poll(&mut self) -> Option<SourceEvent<()>> {
        let (seq, at) = self.cadence.take_due(self.device.now_nanos())?;
        Some(SourceEvent {
            seq,
            capture_device_nanos: at,
            stamp_nanos: self.clock.stamp(at),
            payload: (),
            received_nanos: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mmsched_core::time::{ManualClock, NANOS_PER_MILLI};

    #[test]
    fn two_hundred_hz_stamped_with_offset_and_drift() {
        let device = ManualClock::new(0);
        let config = ImuConfig {
            clock: SourceClock::new(3 * NANOS_PER_MILLI as i64, 1_000),
            ..ImuConfig::default()
        };
        let mut imu = Imu::new(config, &device);
        device.set(1_000_000_000);
        let events: Vec<_> = std::iter::from_fn(|| imu.poll()).collect();
        assert_eq!(events.len(), 201, "0 ms … 1000 ms inclusive");
        let last = events.last().expect("events");
        assert_eq!(last.seq, 200);
        assert_eq!(last.capture_device_nanos, 1_000_000_000);
        assert_eq!(last.stamp_nanos, 1_000_000_000 + 3_000_000 + 1_000);
        assert_eq!(events[1].capture_device_nanos, 5 * NANOS_PER_MILLI);
        assert_eq!(imu.next_due_nanos(), Some(1_005_000_000));
        assert_eq!(imu.modality(), Modality::Imu);
    }
}
