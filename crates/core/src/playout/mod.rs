//! The audio playout (jitter) buffer (S6): packets of fixed-length frames arrive with
//! jitter; frames must leave at a steady pace, in order, each exactly once.
//!
//! Two modes share one implementation:
//!
//! - **Fixed**: the classic static buffer. Frame `n` plays at `first_arrival + n·frame +
//!   delay`; a packet that arrives later than its play time is lost and its frame concealed.
//! - **Adaptive**: every packet's *relative delay* — how much later it arrived than the
//!   fastest path, `arrival − seq·frame − floor` — goes into a histogram whose older content
//!   is forgotten geometrically. The target delay is the one that **maximises the
//!   listener's quality**: it minimises the ITU-T G.107 E-model impairment over that
//!   histogram, the delay term of waiting against the loss term of the packets that would
//!   come later than the target (on top of those the network lost), re-evaluated with every
//!   packet ([`AdaptiveConfig::quality`]). Bursts — a run of late packets, or a late packet
//!   after a run of missing ones — raise the target at once to what they needed, and the
//!   raise decays ([`BurstConfig`]). The floor follows the path: it falls with a faster
//!   packet, rises when recent windows stay above it (a slow clock drift, or a hand-over to
//!   a slower path), and the histogram moves with it. What was learned of the old path
//!   stays: after a hand-over back to a faster path its delays are covered while the
//!   listener would rather wait for them than lose them if the path switched again, and
//!   forgotten with the histogram's memory otherwise. The play schedule moves
//!   towards the target smoothly: frames are stretched by at most `stretch_nanos`
//!   (time-scale expansion) or shortened by at most `accelerate_nanos` (acceleration)
//!   each, so the play times stay strictly increasing and no frame is skipped or repeated.
//!
//! Each call to [`PlayoutBuffer::poll`] decides at most one frame: *play* (its packet is
//! there) or *conceal* (missing: packet-loss concealment). A packet that arrives after its
//! frame was decided is reported *late* by [`PlayoutBuffer::on_packet`]. The buffer holds no
//! clock: the caller passes arrival and current times. All memory is allocated in
//! [`PlayoutBuffer::new`].

mod burst;
mod controller;
mod floor;
mod histogram;

use alloc::vec;
use alloc::vec::Vec;

pub use self::burst::BurstConfig;
use self::controller::Controller;
pub use self::controller::{AdaptiveConfig, ControllerState};
pub use self::histogram::QualityModel;
use crate::time::Nanos;

/// How the play schedule is chosen.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PlayoutMode {
    /// A static buffer: every frame plays `delay_nanos` after the first packet's schedule.
    Fixed {
        /// The buffer delay, in nanoseconds (e.g. one 20 ms frame).
        delay_nanos: u64,
    },
    /// A target delay that maximises the listener's E-model quality (see the module docs).
    Adaptive(AdaptiveConfig),
}

impl PlayoutMode {
    /// The adaptive defaults used by the runtime and the simulator for 20 ms frames.
    pub fn adaptive_default() -> Self {
        PlayoutMode::Adaptive(AdaptiveConfig::DEFAULT)
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

/// The playout buffer. See the module documentation.
#[derive(Debug, Clone)]
pub struct PlayoutBuffer {
    config: PlayoutConfig,
    slots: Vec<Option<u64>>,
    /// The adaptive mode's target (`None`: fixed).
    controller: Option<Controller>,
    /// The fixed mode's reference: the first packet's `arrival − seq·frame`.
    first_path: Option<i128>,
    next_seq: Option<u64>,
    next_play: i128,
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
        let controller = match config.mode {
            PlayoutMode::Fixed { .. } => None,
            PlayoutMode::Adaptive(a) => Some(Controller::new(a, config.frame_nanos)),
        };
        Self {
            slots: vec![None; config.capacity_frames],
            controller,
            first_path: None,
            next_seq: None,
            next_play: 0,
            floor_nanos: 0,
            config,
        }
    }

    /// The current target delay over the fastest path, in nanoseconds: the fixed delay, or
    /// the adaptive controller's target raised to the receiver's floor if one is set.
    pub fn target_delay_nanos(&self) -> u64 {
        match (&self.controller, self.config.mode) {
            (Some(c), _) => c.target_nanos().max(self.floor_nanos),
            (None, PlayoutMode::Fixed { delay_nanos }) => delay_nanos,
            (None, PlayoutMode::Adaptive(a)) => a.initial_delay_nanos,
        }
    }

    /// What the adaptive controller knows (`None` for a fixed buffer).
    pub fn controller_state(&self) -> Option<ControllerState> {
        self.controller.as_ref().map(Controller::state)
    }

    /// Keeps the adaptive target at or above `floor_nanos` (capped at the mode's maximum
    /// delay) until changed; 0 removes the floor. A fixed buffer ignores it. The play
    /// position moves towards a new target by the mode's stretch and accelerate steps.
    pub fn set_delay_floor_nanos(&mut self, floor_nanos: u64) {
        if let PlayoutMode::Adaptive(a) = self.config.mode {
            self.floor_nanos = floor_nanos.min(a.max_delay_nanos);
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
        let first = self.next_seq.is_none();
        let next = *self.next_seq.get_or_insert(seq);
        if learn && let Some(c) = &mut self.controller {
            c.learn(seq, path, arrival_nanos as i128, seq < next);
        }
        if first {
            self.first_path = Some(path);
            self.next_play = arrival_nanos as i128 + self.target_delay_nanos() as i128;
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

    /// The `arrival − seq·frame` of the fastest path: the adaptive floor, or the first
    /// packet's for a fixed buffer.
    fn reference(&self) -> Option<i128> {
        self.controller
            .as_ref()
            .and_then(Controller::floor)
            .or(self.first_path)
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
        let reference = self.reference().unwrap_or(play - seq as i128 * frame);
        let fastest = reference + seq as i128 * frame;
        let decision = FrameDecision {
            seq,
            kind,
            play_nanos: clamp_nanos(play),
            added_delay_nanos: clamp_nanos(play - fastest),
        };
        self.next_seq = Some(seq + 1);
        let mut next_play = play + frame;
        if let PlayoutMode::Adaptive(a) = self.config.mode {
            if let Some(c) = &mut self.controller {
                c.on_frame(kind == FrameKind::Conceal);
            }
            let desired = reference + (seq as i128 + 1) * frame + self.target_delay_nanos() as i128;
            // Never shorten a frame below half its length: play times strictly increase.
            let accelerate = (a.accelerate_nanos as i128).min(frame / 2);
            let step = (desired - next_play).clamp(-accelerate, a.stretch_nanos as i128);
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

    /// Runs packets `seqs`, packet `s` arriving at `arrival(s)` (`None`: lost), through
    /// `b` in virtual time: every frame is decided when it is due, between arrivals in time
    /// order, up to the last sequence number.
    fn drive(
        b: &mut PlayoutBuffer,
        seqs: core::ops::Range<u64>,
        arrival: impl Fn(u64) -> Option<u64>,
    ) -> Vec<FrameDecision> {
        let last = seqs.end - 1;
        let mut arrivals: Vec<(u64, u64)> =
            seqs.filter_map(|s| arrival(s).map(|a| (a, s))).collect();
        arrivals.sort_unstable();
        let mut out = Vec::new();
        let mut decide_until = |b: &mut PlayoutBuffer, until: Option<u64>| {
            while let (Some(due), Some(next)) = (b.next_play_nanos(), b.next_seq()) {
                if next > last || until.is_some_and(|t| due > t) {
                    break;
                }
                out.extend(b.poll(due));
            }
        };
        for (at, seq) in arrivals {
            decide_until(b, Some(at));
            b.on_packet(seq, at);
        }
        decide_until(b, None);
        out
    }

    fn concealed(frames: &[FrameDecision]) -> usize {
        frames
            .iter()
            .filter(|d| d.kind == FrameKind::Conceal)
            .count()
    }

    /// A small deterministic jitter of 0 … 4 ms.
    fn small_jitter(seq: u64) -> u64 {
        (seq.wrapping_mul(2_654_435_761) % 5) * MS
    }

    const MS: u64 = 1_000_000;

    #[test]
    fn the_target_covers_jitter_the_listener_would_rather_wait_for() {
        // Every 10th packet 35 ms late: losing 10 % costs far more than waiting 35 ms.
        let mut b = PlayoutBuffer::new(cfg(PlayoutMode::adaptive_default()));
        drive(&mut b, 0..2000, |s| {
            Some(s * FRAME + if s % 10 == 0 { 35 * MS } else { 0 })
        });
        let t = b.target_delay_nanos();
        assert!((35 * MS..=37 * MS).contains(&t), "target {t}");
        // One packet in a thousand 150 ms late: not worth 150 ms for everyone.
        let mut b = PlayoutBuffer::new(cfg(PlayoutMode::adaptive_default()));
        drive(&mut b, 0..3000, |s| {
            Some(s * FRAME + if s % 1000 == 500 { 150 * MS } else { 0 })
        });
        assert_eq!(b.target_delay_nanos(), 10 * MS);
    }

    #[test]
    fn a_clean_link_gets_the_smallest_delay_and_loses_nothing() {
        let mut b = PlayoutBuffer::new(cfg(PlayoutMode::adaptive_default()));
        let frames = drive(&mut b, 0..3000, |s| Some(30 * MS + s * FRAME));
        assert_eq!(frames.len(), 3000);
        assert_eq!(concealed(&frames), 0);
        // The initial 80 ms decays (half-life 2 s) to the 10 ms minimum within seconds:
        // 70 ms · 2 s / ln 2 ≈ 0.2 s·ms over the minute, 3.4 ms on the mean.
        let late: Vec<u64> = frames[750..].iter().map(|d| d.added_delay_nanos).collect();
        assert!(late.iter().all(|&d| d == 10 * MS), "{:?}", &late[..5]);
        let mean = frames.iter().map(|d| d.added_delay_nanos).sum::<u64>() / 3000;
        assert!(mean < 14 * MS, "mean added delay {mean}");
        let s = b.controller_state().expect("adaptive");
        assert_eq!((s.bursts, s.hand_overs), (0, 0));
    }

    /// The adaptive defaults with burst detection switched off.
    fn without_bursts() -> PlayoutMode {
        let mut a = AdaptiveConfig::DEFAULT;
        a.burst.late_packets = u32::MAX;
        a.burst.missing_frames = u32::MAX;
        PlayoutMode::Adaptive(a)
    }

    #[test]
    fn a_burst_raises_the_target_at_once_and_the_raise_decays() {
        // A queue builds up for 1 s at t = 20 s: delays ramp to +80 ms in 4 packets, stay,
        // and drain; outside it, 0 … 4 ms of jitter.
        let burst = |s: u64| match s {
            1000..=1003 => (s - 999) * 20 * MS,
            1004..=1049 => 80 * MS,
            _ => 0,
        };
        let arrival = |s: u64| Some(s * FRAME + small_jitter(s) + burst(s));
        let mut b = PlayoutBuffer::new(cfg(PlayoutMode::adaptive_default()));
        let frames = drive(&mut b, 0..1300, arrival);
        assert_eq!(concealed(&frames[..1000]), 0);
        let lost = concealed(&frames[1000..1060]);
        let s = b.controller_state().expect("adaptive");
        assert!(s.bursts >= 1, "{s:?}");
        // Two late packets to see the burst, then the schedule stretches 10 ms a frame up
        // to the 80 ms: about 2 + 7 frames.
        assert!(lost <= 10, "{lost} of 50 frames concealed in the burst");
        // Learning the burst from the histogram alone takes longer.
        let mut slow = PlayoutBuffer::new(cfg(without_bursts()));
        let unaided = concealed(&drive(&mut slow, 0..1300, arrival)[1000..1060]);
        assert!(unaided >= lost + lost / 2, "{unaided} against {lost}");
        // Six seconds on, the raise has fallen to an eighth.
        assert!(s.raised_nanos <= 12 * MS, "{s:?}");
        // A fixed 20 ms buffer loses the burst.
        let mut fixed = PlayoutBuffer::new(cfg(PlayoutMode::Fixed {
            delay_nanos: 20 * MS,
        }));
        assert!(concealed(&drive(&mut fixed, 0..1300, arrival)[1000..1060]) >= 45);
    }

    #[test]
    fn a_hand_over_moves_the_floor_and_the_delay_follows() {
        // At t = 20 s the path gets 60 ms longer; at t = 60 s it is back, for good.
        let path = |s: u64| match s {
            1000..=2999 => 90 * MS,
            _ => 30 * MS,
        };
        let arrival = |s: u64| Some(s * FRAME + path(s) + small_jitter(s));
        let mut b = PlayoutBuffer::new(cfg(PlayoutMode::adaptive_default()));
        let frames = drive(&mut b, 0..21_000, arrival);
        let s = b.controller_state().expect("adaptive");
        assert_eq!(s.hand_overs, 2, "{s:?}");
        // The longer path costs a few frames while the schedule stretches to it: two late
        // packets to see it, then 10 ms a frame up to the 60 ms.
        let lost = concealed(&frames[1000..1100]);
        assert!(lost <= 10, "{lost} concealed after the hand-over");
        let mut slow = PlayoutBuffer::new(cfg(without_bursts()));
        let unaided = concealed(&drive(&mut slow, 0..4500, arrival)[1000..1100]);
        assert!(unaided > lost, "{unaided} against {lost}");
        // Once the floor has moved, the delay over it is small again: the longer path is
        // the path now, not jitter. (The last frames on it are measured from the shorter
        // path's floor once its first packet is in.)
        let settled = &frames[2500..2990];
        assert_eq!(concealed(settled), 0);
        let over = settled
            .iter()
            .map(|d| d.added_delay_nanos)
            .max()
            .unwrap_or(0);
        assert!(over <= 20 * MS, "{over} ns over the new floor");
        // Back on the shorter path nothing is lost, and the longer path stays covered while
        // it is a large share of what the histogram remembers…
        assert_eq!(concealed(&frames[3000..]), 0);
        let play_delay = |k: usize| frames[k].play_nanos - (k as u64 * FRAME + 30 * MS);
        assert!(play_delay(3500) >= 60 * MS, "{}", play_delay(3500));
        // …and is forgotten within minutes once it does not come back.
        assert!(play_delay(20_999) <= 20 * MS, "{}", play_delay(20_999));
    }

    #[test]
    fn retransmitted_copies_do_not_raise_the_target() {
        // Every 20th packet comes 120 ms late, as a copy after a NACK round trip would.
        let late_copy = |s: u64| s * FRAME + if s.is_multiple_of(20) { 120 * MS } else { 0 };
        let mut learned = PlayoutBuffer::new(cfg(PlayoutMode::adaptive_default()));
        drive(&mut learned, 0..2000, |s| Some(late_copy(s)));
        assert!(learned.target_delay_nanos() >= 120 * MS);
        let mut ignored = PlayoutBuffer::new(cfg(PlayoutMode::adaptive_default()));
        let mut arrivals: Vec<(u64, u64)> = (0..2000).map(|s| (late_copy(s), s)).collect();
        arrivals.sort_unstable();
        for (at, seq) in arrivals {
            while ignored.next_play_nanos().is_some_and(|due| due <= at) {
                ignored.poll(at);
            }
            if seq % 20 == 0 {
                ignored.on_retransmitted_packet(seq, at);
            } else {
                ignored.on_packet(seq, at);
            }
        }
        let t = ignored.target_delay_nanos();
        assert!(t <= 20 * MS, "{t}");
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
