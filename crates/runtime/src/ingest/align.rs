//! Per-stream clock alignment at ingest, with the residual alignment error tracked.
//!
//! Each stream's events carry the stream's own timestamp; the device sees them arrive later.
//! The core's online estimator ([`ClockAligner`], the same one the simulator runs) learns
//! the stream's offset and drift from (stamp, arrival) pairs and places each event at its
//! fastest-path arrival, from the source of timing that dominates for the stream (its
//! arrival where the link does not jitter more than the stamps are noisy, else its stamp
//! mapped onto the device timeline, never after its arrival); the stream's known fixed
//! pipeline latency (a per-stream calibration) is then subtracted to get the capture time.
//! Until the estimator is ready, an event is placed at its arrival minus that latency.
//!
//! Where the true capture time is known (sources carry it as ground truth), the difference
//! is the residual alignment error, kept in a histogram for its percentiles.

use hdrhistogram::Histogram;
use mmsched_core::align::{AlignConfig, AlignEstimate, ClockAligner, TimingSource};
use mmsched_core::time::Nanos;

/// Where an event was placed on the device timeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placed {
    /// Estimated capture time on the device timeline.
    pub device_nanos: Nanos,
    /// Whether the estimate came from the aligner (else from the arrival time).
    pub aligned: bool,
    /// The source of timing that placed it.
    pub source: TimingSource,
}

/// Alignment of one stream.
#[derive(Debug)]
pub struct StreamIngest {
    aligner: ClockAligner,
    latency_nanos: Nanos,
    residual: Histogram<u64>,
    placed: u64,
    /// Signed errors (placed − true capture) since the last [`StreamIngest::take_mean_error_nanos`]:
    /// their sum and count.
    window: (i128, u64),
}

impl StreamIngest {
    /// Alignment for a stream whose fixed pipeline latency is `latency_nanos`.
    pub fn new(latency_nanos: Nanos, config: AlignConfig) -> Self {
        Self {
            aligner: ClockAligner::new(config),
            latency_nanos,
            // 1 ns .. 1 h at 3 significant digits; constant memory for any run length.
            residual: Histogram::new_with_bounds(1, 3_600_000_000_000, 3)
                .expect("constant histogram bounds are valid"),
            placed: 0,
            window: (0, 0),
        }
    }

    /// Observes an event stamped `stamp_nanos` (stream clock) that arrived at
    /// `arrival_nanos` (device clock), and places it on the device timeline.
    pub fn place(&mut self, stamp_nanos: u64, arrival_nanos: Nanos) -> Placed {
        let p = self.aligner.place(stamp_nanos, arrival_nanos);
        self.placed += 1;
        let capture =
            (p.device_nanos - i128::from(self.latency_nanos)).clamp(0, i128::from(u64::MAX));
        Placed {
            device_nanos: capture as u64,
            aligned: p.aligned,
            source: p.source,
        }
    }

    /// Records the alignment error of an aligned placement against the true capture time.
    pub fn record_truth(&mut self, placed: Placed, capture_device_nanos: Nanos) {
        if placed.aligned {
            let err = placed.device_nanos.abs_diff(capture_device_nanos).max(1);
            // Saturate rather than fail on an absurd error: it is still the worst seen.
            let _ = self.residual.record(err.min(self.residual.high()));
            let signed = i128::from(placed.device_nanos) - i128::from(capture_device_nanos);
            self.window = (self.window.0 + signed, self.window.1 + 1);
        }
    }

    /// The mean signed error (placed − true capture, ns) of the aligned placements checked
    /// since the previous call; `None` if there were none. Two streams' means subtracted
    /// give how far apart the pair places two events captured at the same moment.
    pub fn take_mean_error_nanos(&mut self) -> Option<f64> {
        let (sum, n) = std::mem::take(&mut self.window);
        (n > 0).then(|| sum as f64 / n as f64)
    }

    /// The `q` quantile (0 ..= 1) of the absolute residual error, in nanoseconds (0 before
    /// any aligned placement was checked).
    pub fn residual_quantile_nanos(&self, q: f64) -> u64 {
        if self.residual.is_empty() {
            0
        } else {
            self.residual.value_at_quantile(q.clamp(0.0, 1.0))
        }
    }

    /// Aligned placements checked against the truth.
    pub fn residual_samples(&self) -> u64 {
        self.residual.len()
    }

    /// The current offset/drift estimate, if any.
    pub fn estimate(&self) -> Option<AlignEstimate> {
        self.aligner.estimate()
    }

    /// Events placed.
    pub fn placed(&self) -> u64 {
        self.placed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::SourceClock;
    use crate::source::delivery::Delivered;
    use crate::source::imu::{Imu, ImuConfig};
    use mmsched_core::time::{ManualClock, NANOS_PER_MILLI, NANOS_PER_SEC};
    use mmsched_world::jitter::{GammaJitter, JitterInjector};

    #[test]
    fn the_mean_signed_error_is_taken_per_window() {
        let mut s = StreamIngest::new(0, AlignConfig::default());
        let at = |device_nanos| Placed {
            device_nanos,
            aligned: true,
            source: TimingSource::Stamp,
        };
        // Placed 3 ms late, then 1 ms early: a mean of +1 ms.
        s.record_truth(at(103 * NANOS_PER_MILLI), 100 * NANOS_PER_MILLI);
        s.record_truth(at(199 * NANOS_PER_MILLI), 200 * NANOS_PER_MILLI);
        // A placement by arrival before the aligner is ready is not an aligned error.
        s.record_truth(
            Placed {
                aligned: false,
                ..at(900 * NANOS_PER_MILLI)
            },
            300 * NANOS_PER_MILLI,
        );
        assert_eq!(s.take_mean_error_nanos(), Some(NANOS_PER_MILLI as f64));
        assert_eq!(s.take_mean_error_nanos(), None, "the window starts again");
        assert_eq!(s.residual_samples(), 2);
    }

    #[test]
    fn a_drifting_jittery_stream_is_aligned_far_better_than_by_arrival() {
        let device = ManualClock::new(0);
        let imu = Imu::new(
            ImuConfig {
                limit: Some(200 * 120),
                clock: SourceClock::new(-40 * NANOS_PER_MILLI as i64, 30_000),
                ..ImuConfig::default()
            },
            &device,
        );
        let latency = 2 * NANOS_PER_MILLI;
        let injector = JitterInjector {
            base_delay_nanos: latency,
            jitter: GammaJitter::new(2.0, 4.0).expect("valid"),
            loss_probability: 0.0,
        };
        let mut imu = Delivered::new(imu, &device, injector, 9, 1);
        let mut ingest = StreamIngest::new(latency, AlignConfig::default());
        let mut raw_errors = Vec::new();
        while let Some(next) = imu.next_due_nanos() {
            device.set(next);
            while let Some(a) = imu.poll() {
                let placed = ingest.place(a.event.stamp_nanos, a.arrival_nanos);
                let truth = a.event.capture_device_nanos;
                if truth > 30 * NANOS_PER_SEC {
                    ingest.record_truth(placed, truth);
                    raw_errors.push(a.arrival_nanos - truth);
                }
            }
        }
        assert_eq!(ingest.placed(), 24_000);
        raw_errors.sort_unstable();
        let raw_p99 = raw_errors[raw_errors.len() * 99 / 100];
        let aligned_p99 = ingest.residual_quantile_nanos(0.99);
        println!(
            "residual P99: aligned {} µs, by arrival {} µs",
            aligned_p99 / 1_000,
            raw_p99 / 1_000
        );
        assert!(ingest.residual_samples() > 15_000);
        assert!(
            aligned_p99 * 4 < raw_p99,
            "aligned P99 {aligned_p99} ns vs raw P99 {raw_p99} ns"
        );
        assert!(
            aligned_p99 < 3 * NANOS_PER_MILLI,
            "aligned P99 {aligned_p99} ns"
        );
        // The stream clock runs 30 ppm fast: the device's drift against it is negative.
        // (The estimator is still converging on the drift after 2 minutes; the offset
        // tracking is what keeps the residual small.)
        let est = ingest.estimate().expect("estimated");
        assert!(
            est.drift_ppm < -10.0 && est.drift_ppm > -50.0,
            "drift {}",
            est.drift_ppm
        );
    }
}
