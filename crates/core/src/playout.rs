//! The audio playout (jitter) buffer (S6): packets of fixed-length frames arrive with
//! jitter; frames must leave at a steady pace, in order, each exactly once.
//!
//! Two modes share one implementation:
//!
//! - **Fixed**: the classic static buffer. Frame `n` plays at `first_arrival + n·frame +
//!   delay`; a packet that arrives later than its play time is lost and its frame concealed.
//! - **Adaptive** (NetEQ is the reference): every packet's *relative delay* — how much later
//!   it arrived than the fastest packet seen, `arrival − seq·frame − min(arrival − seq·frame)`
//!   — goes into a histogram whose older content is forgotten geometrically (factor `f` per
//!   packet, e.g. 0.9995 ≈ a 40 s memory at 50 packets/s). The target delay is a high
//!   quantile (e.g. 0.995) of that histogram. The play schedule moves towards the target
//!   smoothly: frames are stretched by at most `stretch_nanos` (time-scale expansion) or
//!   shortened by at most `accelerate_nanos` (acceleration) each, so the play times stay
//!   strictly increasing and no frame is skipped or repeated.
//!
//! Each call to [`PlayoutBuffer::poll`] decides at most one frame: *play* (its packet is
//! there) or *conceal* (missing: packet-loss concealment). A packet that arrives after its
//! frame was decided is reported *late* by [`PlayoutBuffer::on_packet`]. The buffer holds no
//! clock: the caller passes arrival and current times. All memory is allocated in
//! [`PlayoutBuffer::new`].

use alloc::vec;
use alloc::vec::Vec;

use crate::time::Nanos;

/// How the play schedule is chosen.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PlayoutMode {
    /// A static buffer: every frame plays `delay_nanos` after the first packet's schedule.
    Fixed {
        /// The buffer delay, in nanoseconds (e.g. one 20 ms frame).
        delay_nanos: u64,
    },
    /// A target delay from a forgetting quantile of the relative packet delay.
    Adaptive {
        /// The quantile of relative delay to cover, in (0, 1) (e.g. 0.995).
        quantile: f64,
        /// Forgetting factor per packet, in (0, 1) (e.g. 0.9995).
        forgetting: f64,
        /// Smallest target delay, in nanoseconds.
        min_delay_nanos: u64,
        /// Largest target delay, in nanoseconds (also the histogram's range).
        max_delay_nanos: u64,
        /// Delay used until the histogram has data, in nanoseconds.
        initial_delay_nanos: u64,
        /// Largest lengthening of one frame when the delay must grow, in nanoseconds.
        stretch_nanos: u64,
        /// Largest shortening of one frame when the delay may shrink, in nanoseconds.
        accelerate_nanos: u64,
    },
}

impl PlayoutMode {
    /// The adaptive defaults used by the runtime and the simulator for 20 ms frames.
    pub fn adaptive_default() -> Self {
        PlayoutMode::Adaptive {
            quantile: 0.995,
            forgetting: 0.9995,
            min_delay_nanos: 10_000_000,
            max_delay_nanos: 200_000_000,
            initial_delay_nanos: 40_000_000,
            stretch_nanos: 10_000_000,
            accelerate_nanos: 2_000_000,
        }
    }
}

/// What happened to an arriving packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PacketOutcome {
    /// Stored until its frame plays.
    Buffered,
    /// Its frame was already decided (played or concealed): the packet is useless.
    Late,
    /// The same sequence number is already buffered.
    Duplicate,
    /// So far ahead of the play position that it does not fit the buffer: dropped.
    Overflow,
}

/// What the buffer decided for one frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameKind {
    /// The packet was there: decode and play it.
    Play,
    /// The packet was missing: conceal the gap (PLC).
    Conceal,
}

/// The decision for one frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameDecision {
    /// Sequence number of the frame.
    pub seq: u64,
    /// Play or conceal.
    pub kind: FrameKind,
    /// The time the frame is played, in nanoseconds.
    pub play_nanos: Nanos,
    /// The delay the buffer added for this frame: play time minus the time its packet
    /// would have arrived over the fastest path seen, in nanoseconds.
    pub added_delay_nanos: u64,
}

/// Settings of a [`PlayoutBuffer`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlayoutConfig {
    /// Frame (packet) duration, in nanoseconds (e.g. 20 ms).
    pub frame_nanos: u64,
    /// How many frames ahead of the play position can be held.
    pub capacity_frames: usize,
    /// Fixed or adaptive.
    pub mode: PlayoutMode,
}

const BUCKET_NANOS: u64 = 1_000_000;

/// The playout buffer. See the module documentation.
#[derive(Debug, Clone)]
pub struct PlayoutBuffer {
    config: PlayoutConfig,
    slots: Vec<Option<u64>>,
    histogram: Vec<f64>,
    weight: f64,
    total: f64,
    /// Smallest `arrival − seq·frame` seen (the fastest path), in signed nanoseconds.
    reference: Option<i128>,
    next_seq: Option<u64>,
    next_play: i128,
    target_nanos: u64,
    /// A lower bound on the target set by the receiver (e.g. room for retransmissions).
    floor_nanos: u64,
}

impl PlayoutBuffer {
    /// A buffer for `config`; all memory is allocated here.
    pub fn new(config: PlayoutConfig) -> Self {
        let config = PlayoutConfig {
            frame_nanos: config.frame_nanos.max(1),
            capacity_frames: config.capacity_frames.max(1),
            mode: config.mode,
        };
        let (buckets, target) = match config.mode {
            PlayoutMode::Fixed { delay_nanos } => (0, delay_nanos),
            PlayoutMode::Adaptive {
                max_delay_nanos,
                initial_delay_nanos,
                ..
            } => (
                (max_delay_nanos / BUCKET_NANOS + 1) as usize,
                initial_delay_nanos,
            ),
        };
        Self {
            slots: vec![None; config.capacity_frames],
            histogram: vec![0.0; buckets],
            weight: 1.0,
            total: 0.0,
            reference: None,
            next_seq: None,
            next_play: 0,
            target_nanos: target,
            floor_nanos: 0,
            config,
        }
    }

    /// The current target delay over the fastest path, in nanoseconds: the learned
    /// quantile, raised to the floor if one is set.
    pub fn target_delay_nanos(&self) -> u64 {
        self.target_nanos.max(self.floor_nanos)
    }

    /// Keeps the adaptive target at or above `floor_nanos` (capped at the mode's maximum
    /// delay) until changed; 0 removes the floor. A fixed buffer ignores it. The play
    /// position moves towards a new target by the mode's stretch and accelerate steps.
    pub fn set_delay_floor_nanos(&mut self, floor_nanos: u64) {
        if let PlayoutMode::Adaptive {
            max_delay_nanos, ..
        } = self.config.mode
        {
            self.floor_nanos = floor_nanos.min(max_delay_nanos);
        }
    }

    /// The sequence number of the next frame to be decided (`None` before any packet).
    pub fn next_seq(&self) -> Option<u64> {
        self.next_seq
    }

    /// The time the next frame is due, in nanoseconds (`None` before any packet).
    pub fn next_play_nanos(&self) -> Option<Nanos> {
        self.next_seq.map(|_| clamp_nanos(self.next_play))
    }

    /// Takes in one packet that arrived at `arrival_nanos`.
    pub fn on_packet(&mut self, seq: u64, arrival_nanos: Nanos) -> PacketOutcome {
        self.accept(seq, arrival_nanos, true)
    }

    /// Takes in a retransmitted copy of packet `seq`. It is buffered like any packet but
    /// does not train the delay estimate: a copy travels a NACK round trip more than the
    /// path delay, and learning it would raise the playout delay of every later frame.
    pub fn on_retransmitted_packet(&mut self, seq: u64, arrival_nanos: Nanos) -> PacketOutcome {
        let learn = self.next_seq.is_none();
        self.accept(seq, arrival_nanos, learn)
    }

    fn accept(&mut self, seq: u64, arrival_nanos: Nanos, learn: bool) -> PacketOutcome {
        let frame = self.config.frame_nanos as i128;
        let path = arrival_nanos as i128 - seq as i128 * frame;
        let next = match self.next_seq {
            Some(next) => next,
            None => {
                self.next_seq = Some(seq);
                self.reference = Some(path);
                self.next_play = arrival_nanos as i128 + self.target_nanos as i128;
                seq
            }
        };
        if learn {
            self.learn(path);
        }
        if seq < next {
            return PacketOutcome::Late;
        }
        if seq - next >= self.config.capacity_frames as u64 {
            return PacketOutcome::Overflow;
        }
        let slot = (seq % self.config.capacity_frames as u64) as usize;
        if self.slots[slot] == Some(seq) {
            return PacketOutcome::Duplicate;
        }
        self.slots[slot] = Some(seq);
        PacketOutcome::Buffered
    }

    fn learn(&mut self, path: i128) {
        let PlayoutMode::Adaptive {
            quantile,
            forgetting,
            min_delay_nanos,
            max_delay_nanos,
            ..
        } = self.config.mode
        else {
            return;
        };
        let reference = self.reference.map_or(path, |r| r.min(path));
        self.reference = Some(reference);
        let relative = (path - reference).max(0) as u64;
        let bucket = ((relative / BUCKET_NANOS) as usize).min(self.histogram.len() - 1);
        // Geometric forgetting without touching every bucket: new samples weigh 1/f more
        // than the previous one; rescale everything when the weights grow large.
        let f = forgetting.clamp(1e-6, 1.0 - 1e-12);
        self.weight /= f;
        if self.weight > 1e200 {
            for b in &mut self.histogram {
                *b /= self.weight;
            }
            self.total /= self.weight;
            self.weight = 1.0;
        }
        self.histogram[bucket] += self.weight;
        self.total += self.weight;
        // Target: the smallest delay covering `quantile` of the (weighted) packets.
        let tail_allowed = (1.0 - quantile.clamp(0.0, 1.0)) * self.total;
        let mut tail = 0.0;
        let mut edge = self.histogram.len();
        while edge > 0 {
            let mass = self.histogram[edge - 1];
            if tail + mass > tail_allowed {
                break;
            }
            tail += mass;
            edge -= 1;
        }
        let quantile_nanos = edge as u64 * BUCKET_NANOS;
        self.target_nanos = quantile_nanos.clamp(min_delay_nanos, max_delay_nanos);
    }

    /// Decides the next frame if it is due at `now_nanos`; `None` if nothing is due yet.
    pub fn poll(&mut self, now_nanos: Nanos) -> Option<FrameDecision> {
        let seq = self.next_seq?;
        if (now_nanos as i128) < self.next_play {
            return None;
        }
        let frame = self.config.frame_nanos as i128;
        let slot = (seq % self.config.capacity_frames as u64) as usize;
        let kind = if self.slots[slot] == Some(seq) {
            self.slots[slot] = None;
            FrameKind::Play
        } else {
            FrameKind::Conceal
        };
        let play = self.next_play;
        let fastest = self.reference.unwrap_or(play) + seq as i128 * frame;
        let decision = FrameDecision {
            seq,
            kind,
            play_nanos: clamp_nanos(play),
            added_delay_nanos: clamp_nanos(play - fastest),
        };
        self.next_seq = Some(seq + 1);
        let mut next_play = play + frame;
        if let PlayoutMode::Adaptive {
            stretch_nanos,
            accelerate_nanos,
            ..
        } = self.config.mode
        {
            let desired = self.reference.unwrap_or(play)
                + (seq as i128 + 1) * frame
                + self.target_delay_nanos() as i128;
            // Never shorten a frame below half its length: play times strictly increase.
            let accelerate = (accelerate_nanos as i128).min(frame / 2);
            let step = (desired - next_play).clamp(-accelerate, stretch_nanos as i128);
            next_play += step;
        }
        self.next_play = next_play;
        Some(decision)
    }
}

fn clamp_nanos(v: i128) -> u64 {
    v.clamp(0, u64::MAX as i128) as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const FRAME: u64 = 20_000_000;

    fn cfg(mode: PlayoutMode) -> PlayoutConfig {
        PlayoutConfig {
            frame_nanos: FRAME,
            capacity_frames: 64,
            mode,
        }
    }

    #[test]
    fn fixed_buffer_plays_on_time_packets_and_conceals_late_ones() {
        let mut b = PlayoutBuffer::new(cfg(PlayoutMode::Fixed { delay_nanos: FRAME }));
        assert_eq!(b.on_packet(0, 100), PacketOutcome::Buffered);
        assert_eq!(b.poll(100), None);
        let d = b.poll(100 + FRAME).expect("frame 0 due");
        assert_eq!((d.seq, d.kind), (0, FrameKind::Play));
        // Packet 1 is 25 ms late: beyond the 20 ms buffer.
        let d = b.poll(100 + 2 * FRAME).expect("frame 1 due");
        assert_eq!((d.seq, d.kind), (1, FrameKind::Conceal));
        assert_eq!(
            b.on_packet(1, 100 + FRAME + 25_000_000),
            PacketOutcome::Late
        );
        assert_eq!(b.on_packet(2, 100 + 2 * FRAME), PacketOutcome::Buffered);
        assert_eq!(b.on_packet(2, 100 + 2 * FRAME), PacketOutcome::Duplicate);
        assert_eq!(b.on_packet(1000, 100), PacketOutcome::Overflow);
    }

    #[test]
    fn adaptive_target_grows_with_jitter() {
        let mut b = PlayoutBuffer::new(cfg(PlayoutMode::adaptive_default()));
        // Every 10th packet is 35 ms late: the 0.995 quantile must cover it.
        for seq in 0..2000u64 {
            let extra = if seq % 10 == 0 { 35_000_000 } else { 0 };
            b.on_packet(seq, seq * FRAME + extra);
        }
        let t = b.target_delay_nanos();
        assert!((35_000_000..=37_000_000).contains(&t), "target {t}");
    }

    #[test]
    fn retransmitted_copies_do_not_raise_the_target() {
        let mut learned = PlayoutBuffer::new(cfg(PlayoutMode::adaptive_default()));
        let mut ignored = PlayoutBuffer::new(cfg(PlayoutMode::adaptive_default()));
        // Every 20th packet comes 120 ms late, as a copy after a NACK round trip would.
        for seq in 0..2000u64 {
            let on_time = seq * FRAME;
            if seq % 20 == 0 {
                learned.on_packet(seq, on_time + 120_000_000);
                ignored.on_retransmitted_packet(seq, on_time + 120_000_000);
            } else {
                learned.on_packet(seq, on_time);
                ignored.on_packet(seq, on_time);
            }
        }
        assert!(learned.target_delay_nanos() >= 120_000_000);
        assert!(
            ignored.target_delay_nanos() <= 20_000_000,
            "{}",
            ignored.target_delay_nanos()
        );
        // A copy is still buffered and played.
        let mut b = PlayoutBuffer::new(cfg(PlayoutMode::adaptive_default()));
        b.on_packet(0, 0);
        assert_eq!(b.on_retransmitted_packet(1, FRAME), PacketOutcome::Buffered);
    }

    #[test]
    fn a_delay_floor_raises_the_target_and_the_play_position_follows() {
        let mut b = PlayoutBuffer::new(cfg(PlayoutMode::adaptive_default()));
        b.set_delay_floor_nanos(150_000_000);
        assert_eq!(b.target_delay_nanos(), 150_000_000);
        b.set_delay_floor_nanos(u64::MAX);
        assert_eq!(
            b.target_delay_nanos(),
            200_000_000,
            "capped at the maximum delay"
        );
        b.set_delay_floor_nanos(150_000_000);
        let mut last = None;
        for seq in 0..100u64 {
            b.on_packet(seq, seq * FRAME);
            while let Some(d) = b.poll(seq * FRAME) {
                last = Some(d);
            }
        }
        let added = last.expect("frames played").added_delay_nanos;
        assert!((145_000_000..=155_000_000).contains(&added), "{added}");
        let mut fixed = PlayoutBuffer::new(cfg(PlayoutMode::Fixed { delay_nanos: FRAME }));
        fixed.set_delay_floor_nanos(150_000_000);
        assert_eq!(fixed.target_delay_nanos(), FRAME);
    }

    proptest! {
        #[test]
        fn never_plays_a_frame_twice_or_out_of_order(
            adaptive in any::<bool>(),
            events in proptest::collection::vec((0u64..300, 0u64..80_000_000, 0u64..30_000_000), 1..400),
        ) {
            let mode = if adaptive { PlayoutMode::adaptive_default() } else {
                PlayoutMode::Fixed { delay_nanos: FRAME }
            };
            let mut b = PlayoutBuffer::new(cfg(mode));
            // Packets (seq, jitter) arrive at seq·frame + jitter; polls happen between them.
            let mut arrivals: Vec<(u64, u64)> = events.iter().map(|&(s, j, _)| (s * FRAME + j, s)).collect();
            arrivals.sort();
            let mut last: Option<FrameDecision> = None;
            let mut played = alloc::collections::BTreeSet::new();
            let mut now = 0u64;
            for (k, &(at, seq)) in arrivals.iter().enumerate() {
                let step = events[k].2;
                while now + step < at {
                    now += step.max(1_000_000);
                    while let Some(d) = b.poll(now) {
                        if let Some(prev) = last {
                            prop_assert_eq!(d.seq, prev.seq + 1);
                            prop_assert!(d.play_nanos > prev.play_nanos);
                        }
                        if d.kind == FrameKind::Play {
                            prop_assert!(played.insert(d.seq), "frame {} played twice", d.seq);
                        }
                        last = Some(d);
                    }
                }
                // Some packets are retransmitted copies, and the receiver moves the delay
                // floor now and then (both derived from the drawn values).
                if step % 7 == 0 {
                    b.set_delay_floor_nanos(events[k].1 * 3);
                }
                let outcome = if seq % 5 == 0 {
                    b.on_retransmitted_packet(seq, at)
                } else {
                    b.on_packet(seq, at)
                };
                if played.contains(&seq) {
                    prop_assert_ne!(outcome, PacketOutcome::Buffered);
                }
            }
        }
    }
}
