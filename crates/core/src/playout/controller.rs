//! The adaptive buffer's target delay: learned from the histogram of relative delay by the
//! E-model ([`DelayHistogram::best_delay_nanos`]), raised at once by bursts
//! ([`BurstDetector`]), and kept relative to a floor that follows hand-overs and drift
//! ([`FloorTracker`]).

use super::burst::{BurstConfig, BurstDetector};
use super::floor::FloorTracker;
use super::histogram::{DelayHistogram, QualityModel};

/// Quantile of relative delay taken as the spread of the fastest packets above the floor
/// (see [`FloorTracker::observe`]).
const FLOOR_SPREAD_QUANTILE: f64 = 0.05;

/// Settings of the adaptive buffer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdaptiveConfig {
    /// Forgetting factor per packet of the delay histogram, in (0, 1) (e.g. 0.9995 ≈ a
    /// 40 s memory at 50 packets/s).
    pub forgetting: f64,
    /// Smallest target delay, in nanoseconds.
    pub min_delay_nanos: u64,
    /// Largest target delay, in nanoseconds (also the histogram's range).
    pub max_delay_nanos: u64,
    /// Delay used until the histogram has data, in nanoseconds; it decays like a burst's
    /// raise.
    pub initial_delay_nanos: u64,
    /// Largest lengthening of one frame when the delay must grow, in nanoseconds.
    pub stretch_nanos: u64,
    /// Largest shortening of one frame when the delay may shrink, in nanoseconds.
    pub accelerate_nanos: u64,
    /// What the target delay optimises: the listener's E-model quality.
    pub quality: QualityModel,
    /// Burst and hand-over detection.
    pub burst: BurstConfig,
}

impl AdaptiveConfig {
    /// The defaults of the runtime and the simulator for 20 ms frames.
    pub const DEFAULT: Self = Self {
        forgetting: 0.9995,
        min_delay_nanos: 10_000_000,
        max_delay_nanos: 200_000_000,
        initial_delay_nanos: 80_000_000,
        stretch_nanos: 10_000_000,
        accelerate_nanos: 2_000_000,
        quality: QualityModel::G711_PLC,
        burst: BurstConfig::DEFAULT,
    };
}

/// What the controller knows, for reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ControllerState {
    /// The target delay above the floor, in nanoseconds.
    pub target_nanos: u64,
    /// The part learned from the delay histogram, in nanoseconds.
    pub learned_nanos: u64,
    /// The part raised by bursts (and the initial delay), decaying, in nanoseconds.
    pub raised_nanos: u64,
    /// Bursts detected.
    pub bursts: u64,
    /// Hand-overs (jumps of the delay floor) detected.
    pub hand_overs: u64,
}

/// See the module docs.
#[derive(Debug, Clone)]
pub(super) struct Controller {
    config: AdaptiveConfig,
    floor: FloorTracker,
    histogram: DelayHistogram,
    burst: BurstDetector,
    /// Frames decided and frames lost in the network (concealed, never late), both with
    /// the histogram's forgetting.
    frames: f64,
    lost: f64,
    learned_nanos: u64,
    hand_overs: u64,
}

impl Controller {
    pub(super) fn new(config: AdaptiveConfig, frame_nanos: u64) -> Self {
        let max = config.max_delay_nanos.max(config.min_delay_nanos);
        Self {
            floor: FloorTracker::new(
                config.burst.floor_window_nanos,
                config.burst.floor_jump_nanos,
            ),
            histogram: DelayHistogram::new(max, config.forgetting),
            burst: BurstDetector::new(config.burst, frame_nanos, config.initial_delay_nanos),
            frames: 0.0,
            lost: 0.0,
            learned_nanos: config.min_delay_nanos,
            hand_overs: 0,
            config,
        }
    }

    /// The floor (path delay of the fastest packets) the target is measured from.
    pub(super) fn floor(&self) -> Option<i128> {
        self.floor.floor()
    }

    /// The target delay above the floor, in nanoseconds.
    pub(super) fn target_nanos(&self) -> u64 {
        self.learned_nanos
            .max(self.burst.raise_nanos())
            .clamp(self.config.min_delay_nanos, self.config.max_delay_nanos)
    }

    pub(super) fn state(&self) -> ControllerState {
        ControllerState {
            target_nanos: self.target_nanos(),
            learned_nanos: self.learned_nanos,
            raised_nanos: self.burst.raise_nanos(),
            bursts: self.burst.bursts(),
            hand_overs: self.hand_overs,
        }
    }

    /// Learns one packet with path delay `path` (`arrival − seq · frame`) that arrived at
    /// `arrival_nanos`; `late`: its frame was already decided.
    pub(super) fn learn(&mut self, seq: u64, path: i128, arrival_nanos: i128, late: bool) {
        let spread = self.histogram.quantile_nanos(FLOOR_SPREAD_QUANTILE);
        if let Some(m) = self.floor.observe(path, arrival_nanos, spread) {
            let bucket = i128::from(super::histogram::BUCKET_NANOS);
            // What was learned stays: after a hand-over back to a faster path, the slower
            // one's delays are still in the histogram, and covered as long as the listener
            // would rather wait than lose them if the path switched again.
            self.histogram.shift((-m.delta_nanos / bucket) as i64);
            self.hand_overs += u64::from(m.hand_over);
            self.burst.on_floor_move(m.delta_nanos);
        }
        let floor = self.floor.floor().unwrap_or(path);
        let relative = (path - floor).max(0) as u64;
        self.histogram.add(relative);
        if late {
            self.burst.on_late(seq, relative);
            // Concealed, but not lost in the network.
            self.lost = (self.lost - 1.0).max(0.0);
        }
        let network_loss = if self.frames > 0.0 {
            self.lost / self.frames
        } else {
            0.0
        };
        self.learned_nanos = self.histogram.best_delay_nanos(
            &self.config.quality,
            network_loss,
            self.config.min_delay_nanos,
            self.config.max_delay_nanos,
        );
    }

    /// One frame was decided (`concealed`: its packet was missing).
    pub(super) fn on_frame(&mut self, concealed: bool) {
        let f = self.config.forgetting.clamp(1e-6, 1.0);
        self.frames = self.frames * f + 1.0;
        self.lost = self.lost * f + if concealed { 1.0 } else { 0.0 };
        self.burst.on_frame(concealed);
    }
}
