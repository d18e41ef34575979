//! One buffer over one call's packets, in time order, and the figures of what it did.

use mmsched_core::playout::{FrameDecision, FrameKind, PlayoutBuffer, PlayoutConfig, PlayoutMode};

use super::{BufferResult, FRAME_NANOS};
use mmsched_world::emodel::{self, Codec};
use mmsched_world::jitter::PacketRecord;

/// Frames decided, concealed, and their added delay, summed over calls.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Tally {
    frames: u64,
    concealed: u64,
    delay_sum_nanos: f64,
}

impl Tally {
    pub(super) fn add(&mut self, concealed: bool, added_delay_nanos: f64) {
        self.frames += 1;
        self.concealed += u64::from(concealed);
        self.delay_sum_nanos += added_delay_nanos;
    }
}

/// Runs one playout buffer over `packets` (one call) and adds to `tally`. A frame's added
/// delay is its play time minus its packet's send time minus `fastest_nanos`, the
/// network's fastest one-way delay.
pub(super) fn play(
    packets: &[PacketRecord],
    mode: PlayoutMode,
    fastest_nanos: i64,
    tally: &mut Tally,
) {
    let Some(first) = packets.first() else { return };
    let last_seq = packets.iter().map(|p| p.seq).max().unwrap_or(first.seq);
    // Shift times so the earliest is at 1 s: the buffer works in unsigned nanoseconds.
    let origin = packets
        .iter()
        .filter_map(|p| p.arrival_nanos)
        .min()
        .unwrap_or(0)
        - 1_000_000_000;
    let mut arrivals: Vec<(u64, u64)> = packets
        .iter()
        .filter_map(|p| p.arrival_nanos.map(|a| ((a - origin) as u64, p.seq)))
        .collect();
    arrivals.sort_unstable();
    // Send times by sequence number (a trace may miss some: they are then extrapolated).
    let send_of = |seq: u64| -> i64 {
        match packets.binary_search_by_key(&seq, |p| p.seq) {
            Ok(i) => packets[i].send_nanos,
            Err(_) => first.send_nanos + (seq as i64 - first.seq as i64) * FRAME_NANOS as i64,
        }
    };
    let mut buf = PlayoutBuffer::new(PlayoutConfig {
        frame_nanos: FRAME_NANOS,
        capacity_frames: 256,
        mode,
    });
    let record = |d: FrameDecision, t: &mut Tally| {
        let sent = send_of(d.seq) - origin;
        let added = d.play_nanos as i64 - sent - fastest_nanos;
        t.add(d.kind == FrameKind::Conceal, added as f64);
    };
    for &(at, seq) in &arrivals {
        while let Some(due) = buf.next_play_nanos() {
            if due > at || buf.next_seq().is_some_and(|s| s > last_seq) {
                break;
            }
            if let Some(d) = buf.poll(due) {
                record(d, tally);
            }
        }
        buf.on_packet(seq, at);
    }
    // Drain: decide every remaining frame up to the last sequence number.
    while let (Some(due), Some(next)) = (buf.next_play_nanos(), buf.next_seq()) {
        if next > last_seq {
            break;
        }
        if let Some(d) = buf.poll(due) {
            record(d, tally);
        }
    }
    // Frames before the first arrival (lost leading packets) never reach the buffer.
}

/// The figures of `t`, with `network_delay_ms` of network delay in the mouth-to-ear delay.
pub(super) fn result(t: &Tally, codec: &Codec, network_delay_ms: f64) -> BufferResult {
    let frames = t.frames.max(1) as f64;
    let loss_pct = 100.0 * t.concealed as f64 / frames;
    let added_delay_ms = t.delay_sum_nanos / frames / 1e6;
    let mouth_to_ear_ms = codec.codec_delay_ms + network_delay_ms + added_delay_ms;
    BufferResult {
        loss_pct,
        mos: emodel::mos(codec, mouth_to_ear_ms, loss_pct),
        added_delay_ms,
        mouth_to_ear_ms,
    }
}
