//! Online per-stream clock alignment (S5): put every event of a stream that carries its own
//! clock on the one device timeline.
//!
//! A stream stamps each event with its own clock; the device sees it arrive later. For a
//! sample we know the pair (stream timestamp `s`, device arrival time `a`). Writing
//! `y = a − s` (the *apparent offset*) and `x = s` in seconds,
//!
//! ```text
//! y = θ + r · x + d        θ: clock offset, r: relative drift (ns/s = ppb), d ≥ 0: one-way delay
//! ```
//!
//! The delay `d` is one-sided (never negative) and heavy-tailed, so a least-squares fit over
//! all samples is biased by the mean delay and thrown off by every late packet. We therefore
//! use the classic **lower-envelope** approach of one-way clock-skew estimation:
//!
//! 1. **Minimum-delay filtering**: samples are grouped into blocks of stream time (default
//!    1 s, and at least 16 samples, so a 5 fps camera gets 3.2 s blocks); only the sample
//!    with the smallest `y` in each block is kept. Its delay is the smallest of the block,
//!    close to the path's minimum.
//! 2. **A two-state Kalman filter** (offset, drift) runs on the block minima. Between blocks
//!    the offset is predicted forward with the drift (so the state stays in local
//!    coordinates and the numbers stay well conditioned over days), and a small process
//!    noise on the drift lets it follow temperature changes of the crystal.
//! 3. **Envelope correction**: the minima still sit a little above the true minimum delay
//!    (the minimum of a block is small, not zero). The filtered line is lowered until it
//!    touches the lowest of the last `envelope_blocks` minima, which is the lower envelope of
//!    the recent past.
//!
//! The result maps a stream timestamp onto the device timeline as the time the event
//! *would have arrived over the fastest path* ([`ClockAligner::to_device_nanos`]).
//! [`ClockAligner::place`] then fuses it with the event's arrival time, the other source of
//! timing: the arrival is exact when the link does not jitter, the stamp is precise when
//! it does; which one dominates is decided per stream from the spread of their difference
//! against the stamps' known noise ([`AlignConfig::stamp_noise_nanos`]; see
//! [`TimingSource`]). The constant minimum transport delay itself is
//! not observable from one-way timestamps (no estimator can tell a clock offset from a fixed
//! delay); a stream's known fixed pipeline latency is a per-stream calibration that the
//! caller subtracts.
//!
//! Memory is allocated once, in [`ClockAligner::new`]; updates never allocate.

mod fusion;

use alloc::vec::Vec;

use self::fusion::Fusion;
pub use self::fusion::TimingSource;
use crate::time::Nanos;

const NANOS_PER_SEC_F: f64 = 1e9;

/// Settings of a [`ClockAligner`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AlignConfig {
    /// Length of a minimum-delay block, in nanoseconds of stream time (default 1 s).
    pub block_nanos: u64,
    /// Fewest samples in a block (default 16): a sparse stream's blocks last longer. The
    /// minimum of a few jittered delays sits well above the fastest path, and the envelope
    /// and the drift estimate would follow that noise.
    pub min_block_samples: u32,
    /// How many recent block minima define the lower envelope (default 16).
    pub envelope_blocks: usize,
    /// Standard deviation of a block minimum around the envelope, in nanoseconds
    /// (the Kalman measurement noise; default 1 ms).
    pub measurement_sigma_nanos: f64,
    /// Random-walk rate of the drift, in ppb per √s (the Kalman process noise that lets the
    /// drift follow temperature; default 1 ppb/√s).
    pub drift_walk_ppb_per_sqrt_sec: f64,
    /// Standard deviation of the source's own stamps around the true event time, in
    /// nanoseconds (exposure mid-point, interrupt latency, buffer granularity; default
    /// 1 ms). It decides which source of timing a placement trusts.
    pub stamp_noise_nanos: f64,
}

impl Default for AlignConfig {
    fn default() -> Self {
        Self {
            block_nanos: 1_000_000_000,
            min_block_samples: 16,
            envelope_blocks: 16,
            measurement_sigma_nanos: 1e6,
            drift_walk_ppb_per_sqrt_sec: 1.0,
            stamp_noise_nanos: 1e6,
        }
    }
}

/// The current estimate of a stream's clock against the device clock.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct AlignEstimate {
    /// Apparent offset `arrival − stream` at the reference stream time, in nanoseconds
    /// (includes the constant minimum transport delay).
    pub offset_nanos: f64,
    /// Drift of the device clock against the stream clock, in parts per million.
    pub drift_ppm: f64,
    /// Stream timestamp the offset refers to, in nanoseconds.
    pub reference_stream_nanos: u64,
    /// Estimated 1-σ alignment error, in nanoseconds: the filter's offset uncertainty
    /// combined with how far recent block minima scatter above the envelope.
    pub residual_nanos: f64,
    /// Number of block minima the estimate is built on.
    pub blocks: u64,
    /// The source of timing that places the stream's events.
    pub source: TimingSource,
    /// Spread (1 σ) of the transport jitter seen beyond the stamp noise, in nanoseconds.
    pub transport_jitter_nanos: f64,
}

/// Where an event was placed, and by which source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    /// The event's fastest-path arrival on the device timeline, in nanoseconds.
    pub device_nanos: i128,
    /// The source that placed it.
    pub source: TimingSource,
    /// Whether the clock estimate was ready (else the arrival placed it by default).
    pub aligned: bool,
}

/// Online estimator of one stream's offset and drift against the device clock.
///
/// Why this shape: the runtime and the simulator both feed it `(stream time, arrival time)`
/// pairs as they come and read back a mapping; it holds no clock of its own and does no
/// I/O, so the same code serves live ingest, replays and tests.
#[derive(Debug, Clone)]
pub struct ClockAligner {
    config: AlignConfig,
    // Current (open) block.
    block_start: Option<u64>,
    block_min: Option<(u64, f64)>,
    block_samples: u32,
    // Kalman state at stream time `state_x`: offset (ns) and drift (ns/s).
    state_x: Option<u64>,
    offset: f64,
    drift: f64,
    p: [[f64; 2]; 2],
    // Ring of recent block minima (stream time, apparent offset).
    ring: Vec<(u64, f64)>,
    ring_next: usize,
    shift: f64,
    spread: f64,
    blocks: u64,
    fusion: Fusion,
}

impl ClockAligner {
    /// A fresh estimator; allocates its envelope ring once.
    pub fn new(config: AlignConfig) -> Self {
        let envelope_blocks = config.envelope_blocks.max(1);
        Self {
            config: AlignConfig {
                envelope_blocks,
                block_nanos: config.block_nanos.max(1),
                ..config
            },
            block_start: None,
            block_min: None,
            block_samples: 0,
            state_x: None,
            offset: 0.0,
            drift: 0.0,
            p: [[0.0; 2]; 2],
            ring: Vec::with_capacity(envelope_blocks),
            ring_next: 0,
            shift: 0.0,
            spread: 0.0,
            blocks: 0,
            fusion: Fusion::new(config.stamp_noise_nanos),
        }
    }

    /// Feeds one sample like [`ClockAligner::observe`] and places the event on the device
    /// timeline by the dominant source of timing: its arrival, or its stamp's mapping
    /// bounded by its arrival (see [`TimingSource`]). Until the clock estimate is ready,
    /// the arrival.
    pub fn place(&mut self, stream_nanos: u64, arrival_nanos: Nanos) -> Placement {
        self.observe(stream_nanos, arrival_nanos);
        let arrival = i128::from(arrival_nanos);
        if !self.is_ready() {
            return Placement {
                device_nanos: arrival,
                source: TimingSource::Arrival,
                aligned: false,
            };
        }
        let mapped = self.to_device_nanos(stream_nanos);
        self.fusion.update((arrival - mapped) as f64);
        Placement {
            device_nanos: self.fusion.place(arrival, mapped),
            source: self.fusion.source(),
            aligned: true,
        }
    }

    /// Feeds one sample: the stream's own timestamp and the device time it arrived.
    /// Samples are expected in stream-time order; a sample older than the open block is
    /// ignored (a reordered packet carries no new envelope information).
    pub fn observe(&mut self, stream_nanos: u64, arrival_nanos: Nanos) {
        let y = arrival_nanos as f64 - stream_nanos as f64;
        let start = *self.block_start.get_or_insert(stream_nanos);
        if stream_nanos < start {
            return;
        }
        if stream_nanos - start >= self.config.block_nanos
            && self.block_samples >= self.config.min_block_samples
        {
            self.close_block();
            self.block_start = Some(stream_nanos);
            self.block_samples = 0;
        }
        self.block_samples = self.block_samples.saturating_add(1);
        match self.block_min {
            Some((_, best)) if best <= y => {}
            _ => self.block_min = Some((stream_nanos, y)),
        }
    }

    fn close_block(&mut self) {
        let Some((x, y)) = self.block_min.take() else {
            return;
        };
        self.blocks += 1;
        self.kalman_update(x, y);
        if self.ring.len() < self.config.envelope_blocks {
            self.ring.push((x, y));
        } else {
            self.ring[self.ring_next] = (x, y);
        }
        self.ring_next = (self.ring_next + 1) % self.config.envelope_blocks;
        // Lower envelope: the line is lowered until it touches the lowest recent minimum.
        let mut lowest = f64::INFINITY;
        let mut sum_sq = 0.0;
        for &(rx, ry) in &self.ring {
            let r = ry - self.line_at(rx);
            lowest = lowest.min(r);
            sum_sq += r * r;
        }
        self.shift = lowest.min(0.0);
        let n = self.ring.len() as f64;
        let mean_sq = sum_sq / n;
        // Scatter of the minima above the corrected envelope.
        self.spread = libm::sqrt((mean_sq - self.shift * self.shift).max(0.0) / n);
    }

    fn kalman_update(&mut self, x: u64, y: f64) {
        let Some(prev_x) = self.state_x else {
            self.state_x = Some(x);
            self.offset = y;
            self.drift = 0.0;
            // Offset known to the measurement noise; drift unknown (±1000 ppm = 1e6 ns/s).
            let r = self.config.measurement_sigma_nanos;
            self.p = [[r * r, 0.0], [0.0, 1e12]];
            return;
        };
        let dt = x.saturating_sub(prev_x) as f64 / NANOS_PER_SEC_F;
        // Predict: offset moves with the drift; the drift takes a random-walk step.
        self.offset += self.drift * dt;
        let [[p00, p01], [p10, p11]] = self.p;
        let q = self.config.drift_walk_ppb_per_sqrt_sec;
        let n00 = p00 + dt * (p10 + p01) + dt * dt * p11;
        let n01 = p01 + dt * p11;
        let n10 = p10 + dt * p11;
        let n11 = p11 + q * q * dt;
        // Update with the block minimum (H = [1, 0]).
        let r = self.config.measurement_sigma_nanos;
        let s = n00 + r * r;
        let k0 = n00 / s;
        let k1 = n10 / s;
        let innovation = y - self.offset;
        self.offset += k0 * innovation;
        self.drift += k1 * innovation;
        self.p = [
            [(1.0 - k0) * n00, (1.0 - k0) * n01],
            [n10 - k1 * n00, n11 - k1 * n01],
        ];
        self.state_x = Some(x);
    }

    /// The filtered (not yet envelope-corrected) line at stream time `x`.
    fn line_at(&self, x: u64) -> f64 {
        let Some(ref_x) = self.state_x else {
            return 0.0;
        };
        self.offset + self.drift * (x as f64 - ref_x as f64) / NANOS_PER_SEC_F
    }

    /// Whether at least two blocks have been closed (offset and drift both estimated).
    pub fn is_ready(&self) -> bool {
        self.blocks >= 2
    }

    /// The current estimate, or `None` before the first block has closed.
    pub fn estimate(&self) -> Option<AlignEstimate> {
        let reference = self.state_x?;
        Some(AlignEstimate {
            offset_nanos: self.offset + self.shift,
            // drift in ns/s is ppb; ppm = ppb / 1000.
            drift_ppm: self.drift / 1000.0,
            reference_stream_nanos: reference,
            residual_nanos: libm::sqrt(self.p[0][0] + self.spread * self.spread),
            blocks: self.blocks,
            source: self.fusion.source(),
            transport_jitter_nanos: self.fusion.transport_jitter_nanos(),
        })
    }

    /// Maps a stream timestamp onto the device timeline (fastest-path arrival time), in
    /// nanoseconds. Before the first block has closed, the best guess is the open block's
    /// minimum offset; with no sample at all, the timestamp itself.
    pub fn to_device_nanos(&self, stream_nanos: u64) -> i128 {
        let offset = if self.state_x.is_some() {
            self.line_at(stream_nanos) + self.shift
        } else {
            self.block_min.map_or(0.0, |(_, y)| y)
        };
        stream_nanos as i128 + libm::round(offset) as i128
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A tiny deterministic generator so the test needs no RNG crate.
    struct Lcg(u64);
    impl Lcg {
        fn next_unit(&mut self) -> f64 {
            self.0 = self
                .0
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((self.0 >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        }
        /// Exponential with the given mean (one-sided, heavy enough tail).
        fn exp(&mut self, mean: f64) -> f64 {
            -mean * libm::log(self.next_unit())
        }
    }

    /// Runs a synthetic stream: true event times every `period`, stream clock with offset and
    /// drift, arrival with minimum delay plus exponential jitter. Returns the worst absolute
    /// mapping error (against arrival over the fastest path) over the last 10 s.
    fn run(offset_ns: f64, drift_ppm: f64, jitter_mean_ns: f64, seed: u64, secs: u64) -> f64 {
        let mut rng = Lcg(seed);
        let mut est = ClockAligner::new(AlignConfig::default());
        let period: u64 = 20_000_000;
        let min_delay = 5_000_000.0;
        let n = secs * 1_000_000_000 / period;
        let base: f64 = 1e12;
        let mut worst: f64 = 0.0;
        for i in 0..n {
            let t = base + (i * period) as f64;
            let stream = t * (1.0 + drift_ppm * 1e-6) + offset_ns;
            let arrival = t + min_delay + rng.exp(jitter_mean_ns);
            est.observe(stream as u64, arrival as u64);
            if i * period > (secs - 10) * 1_000_000_000 {
                let mapped = est.to_device_nanos(stream as u64) as f64;
                worst = worst.max((mapped - (t + min_delay)).abs());
            }
        }
        worst
    }

    #[test]
    fn tracks_offset_and_drift_under_one_sided_jitter() {
        let worst = run(3.0e9, 50.0, 8e6, 7, 120);
        assert!(worst < 2e6, "worst error {worst} ns");
    }

    /// The P99 mapping error of every aligned placement of a 5 Hz stream (4 ppm drift,
    /// exponential jitter of mean 12 ms) over 60 s.
    fn sparse_p99(config: AlignConfig) -> f64 {
        let mut rng = Lcg(11);
        let mut est = ClockAligner::new(config);
        let period: u64 = 200_000_000;
        let min_delay = 30_000_000.0;
        let base: f64 = 1e12;
        let mut errors = Vec::new();
        for i in 0..300u64 {
            let t = base + (i * period) as f64;
            let stream = t * (1.0 + 4e-6) + 250e6;
            est.observe(stream as u64, (t + min_delay + rng.exp(12e6)) as u64);
            if est.is_ready() {
                let mapped = est.to_device_nanos(stream as u64) as f64;
                errors.push((mapped - (t + min_delay)).abs());
            }
        }
        errors.sort_by(f64::total_cmp);
        errors[errors.len() * 99 / 100]
    }

    #[test]
    fn a_sparse_stream_gets_blocks_long_enough_for_a_good_minimum() {
        let default = sparse_p99(AlignConfig::default());
        let one_second_blocks = sparse_p99(AlignConfig {
            min_block_samples: 1,
            ..AlignConfig::default()
        });
        assert!(default < 3e6, "P99 {default} ns");
        assert!(
            default < one_second_blocks,
            "{default} ns against {one_second_blocks} ns with 5-sample blocks"
        );
    }

    #[test]
    fn estimate_reports_drift() {
        let mut est = ClockAligner::new(AlignConfig::default());
        for i in 0..6000u64 {
            let t = i * 10_000_000;
            // Stream clock runs 100 ppm fast; arrival has no delay at all.
            let stream = t + t / 10_000;
            est.observe(stream, t + 1_000_000_000);
        }
        let e = est.estimate().expect("blocks closed");
        assert!(est.is_ready());
        // arrival − stream = c − 100 ppm · t: a drift of about −100 ppm.
        assert!((e.drift_ppm + 100.0).abs() < 1.0, "{e:?}");
        assert!(e.residual_nanos < 2e6, "{e:?}");
    }

    /// P99 of the placement error (ns) over the last 60 s of a 50 Hz stream with stamp
    /// noise of σ ≈ 1 ms, 20 ppm of drift, and exponential jitter of `jitter_mean_ns`;
    /// and the source that placed it.
    fn placement_p99(jitter_mean_ns: f64) -> (f64, TimingSource) {
        let mut rng = Lcg(5);
        let mut est = ClockAligner::new(AlignConfig {
            stamp_noise_nanos: 1e6,
            ..AlignConfig::default()
        });
        let min_delay = 5e6;
        let mut errors = Vec::new();
        let mut source = TimingSource::Arrival;
        for i in 0..9000u64 {
            let t = 1e12 + (i * 20_000_000) as f64;
            // Sum of 12 uniforms − 6: σ = 1, near enough to Gaussian.
            let noise: f64 = (0..12).map(|_| rng.next_unit()).sum::<f64>() - 6.0;
            let stamp = t * (1.0 + 20e-6) + 7e9 + noise * 1e6;
            let arrival = t + min_delay + rng.exp(jitter_mean_ns);
            let p = est.place(stamp as u64, arrival as u64);
            if i >= 6000 {
                errors.push((p.device_nanos as f64 - (t + min_delay)).abs());
                source = p.source;
            }
        }
        errors.sort_by(f64::total_cmp);
        (errors[errors.len() * 99 / 100], source)
    }

    #[test]
    fn placement_takes_the_arrival_on_a_clean_link_and_the_stamp_on_a_jittery_one() {
        // No jitter: the arrival is exact, and the stamps' noise does not get in.
        let (clean, source) = placement_p99(0.0);
        assert_eq!(source, TimingSource::Arrival);
        assert!(clean < 2.0, "P99 {clean} ns");
        // Exponential jitter of mean 10 ms (arrival P99 ≈ 46 ms): the stamps place it to
        // within a few σ of their noise.
        let (jittery, source) = placement_p99(10e6);
        assert_eq!(source, TimingSource::Stamp);
        assert!(jittery < 5e6, "P99 {jittery} ns");
    }

    #[test]
    fn no_samples_maps_identity_and_reorders_are_ignored() {
        let mut est = ClockAligner::new(AlignConfig::default());
        assert_eq!(est.to_device_nanos(42), 42);
        assert!(est.estimate().is_none());
        est.observe(1_000, 2_000);
        est.observe(500, 10);
        assert_eq!(est.to_device_nanos(1_000), 2_000);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        #[test]
        fn converges_on_synthetic_drift(
            offset_ms in -5_000.0f64..5_000.0,
            drift_ppm in -200.0f64..200.0,
            jitter_ms in 0.0f64..20.0,
            seed in any::<u64>(),
        ) {
            let worst = run(offset_ms * 1e6, drift_ppm, jitter_ms * 1e6, seed, 90);
            prop_assert!(worst < 3e6, "worst error {} ms", worst / 1e6);
        }
    }
}
