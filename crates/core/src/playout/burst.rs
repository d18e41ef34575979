//! Burst detection: a run of late packets (or a late packet right after a run of missing
//! ones, as when a hand-over queued the stream) raises the target delay at once to what the
//! late packets needed; the raise then decays geometrically, so a burst that does not come
//! back costs delay only for a few seconds. The learned target (the histogram's) takes over
//! as the raise decays.

/// Settings of burst and hand-over detection.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BurstConfig {
    /// Late packets within `window_frames` of each other that make a burst (e.g. 2).
    pub late_packets: u32,
    /// How close (in frames) the late packets of one burst are.
    pub window_frames: u32,
    /// Concealed frames in a row that make an outage; for `window_frames` after one, a
    /// single late packet is a burst.
    pub missing_frames: u32,
    /// Added above the latest late packet's delay when the target is raised, in nanoseconds.
    pub margin_nanos: u64,
    /// Half-life of a raise, in nanoseconds.
    pub half_life_nanos: u64,
    /// Length of the windows whose minimum path delay tracks the floor, in nanoseconds.
    pub floor_window_nanos: u64,
    /// A move of the floor by at least this much is a hand-over, in nanoseconds.
    pub floor_jump_nanos: u64,
}

impl BurstConfig {
    /// The defaults for 20 ms frames.
    pub const DEFAULT: Self = Self {
        late_packets: 2,
        window_frames: 25,
        missing_frames: 3,
        margin_nanos: 5_000_000,
        half_life_nanos: 2_000_000_000,
        floor_window_nanos: 1_000_000_000,
        floor_jump_nanos: 10_000_000,
    };
}

/// See the module docs.
#[derive(Debug, Clone)]
pub(super) struct BurstDetector {
    config: BurstConfig,
    /// The raised target, in nanoseconds above the floor (0: none).
    raise_nanos: f64,
    /// Factor the raise keeps per frame.
    keep_per_frame: f64,
    last_late_seq: Option<u64>,
    late_run: u32,
    missing_run: u32,
    armed_frames: u32,
    bursts: u64,
}

impl BurstDetector {
    /// A detector for frames of `frame_nanos`, starting with a raise of `initial_nanos`
    /// (the delay used before anything is learned).
    pub(super) fn new(config: BurstConfig, frame_nanos: u64, initial_nanos: u64) -> Self {
        let frames_per_half_life = config.half_life_nanos as f64 / frame_nanos.max(1) as f64;
        Self {
            config,
            raise_nanos: initial_nanos as f64,
            keep_per_frame: libm::pow(0.5, 1.0 / frames_per_half_life.max(1e-9)),
            last_late_seq: None,
            late_run: 0,
            missing_run: 0,
            armed_frames: 0,
            bursts: 0,
        }
    }

    /// The current raise, in nanoseconds above the floor.
    pub(super) fn raise_nanos(&self) -> u64 {
        self.raise_nanos as u64
    }

    /// Bursts detected so far.
    pub(super) fn bursts(&self) -> u64 {
        self.bursts
    }

    /// Packet `seq` came after its frame was decided, `relative_nanos` above the floor.
    pub(super) fn on_late(&mut self, seq: u64, relative_nanos: u64) {
        let near = self
            .last_late_seq
            .is_some_and(|l| l.abs_diff(seq) <= u64::from(self.config.window_frames));
        self.late_run = if near { self.late_run + 1 } else { 1 };
        self.last_late_seq = Some(seq);
        if self.late_run >= self.config.late_packets || self.armed_frames > 0 {
            let wanted = (relative_nanos + self.config.margin_nanos) as f64;
            if wanted > self.raise_nanos {
                self.bursts += 1;
                self.raise_nanos = wanted;
            }
        }
    }

    /// One frame was decided (`concealed`: its packet was missing); the raise decays.
    pub(super) fn on_frame(&mut self, concealed: bool) {
        self.raise_nanos *= self.keep_per_frame;
        self.armed_frames = self.armed_frames.saturating_sub(1);
        if concealed {
            self.missing_run += 1;
            if self.missing_run >= self.config.missing_frames {
                self.armed_frames = self.config.window_frames;
            }
        } else {
            self.missing_run = 0;
        }
    }

    /// The floor moved by `delta_nanos`: the raise is measured from the floor, so it moves
    /// the other way and the play schedule stays where it is.
    pub(super) fn on_floor_move(&mut self, delta_nanos: i128) {
        self.raise_nanos = (self.raise_nanos - delta_nanos as f64).max(0.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn two_late_packets_raise_the_target_and_it_decays() {
        let mut b = BurstDetector::new(BurstConfig::DEFAULT, 20 * MS, 0);
        b.on_late(10, 80 * MS);
        assert_eq!(b.raise_nanos(), 0, "one late packet is not a burst");
        b.on_late(12, 70 * MS);
        assert_eq!(b.raise_nanos(), 75 * MS);
        // Two seconds (100 frames) halve it.
        for _ in 0..100 {
            b.on_frame(false);
        }
        let r = b.raise_nanos();
        assert!((37 * MS..=38 * MS).contains(&r), "{r}");
        // Far-apart late packets are not a burst.
        let mut b = BurstDetector::new(BurstConfig::DEFAULT, 20 * MS, 0);
        b.on_late(10, 80 * MS);
        b.on_late(100, 80 * MS);
        assert_eq!(b.raise_nanos(), 0);
        assert_eq!(b.bursts(), 0);
    }

    #[test]
    fn after_an_outage_one_late_packet_is_enough() {
        let mut b = BurstDetector::new(BurstConfig::DEFAULT, 20 * MS, 0);
        for _ in 0..3 {
            b.on_frame(true);
        }
        b.on_late(50, 60 * MS);
        assert_eq!(b.raise_nanos(), 65 * MS);
        assert_eq!(b.bursts(), 1);
    }

    #[test]
    fn a_floor_move_keeps_the_schedule() {
        let mut b = BurstDetector::new(BurstConfig::DEFAULT, 20 * MS, 0);
        b.on_late(1, 90 * MS);
        b.on_late(2, 90 * MS);
        // The floor rose 40 ms: the same play time is 40 ms less above it.
        b.on_floor_move(40_000_000);
        assert_eq!(b.raise_nanos(), 55 * MS);
        b.on_floor_move(-10_000_000);
        assert_eq!(b.raise_nanos(), 65 * MS);
    }
}
