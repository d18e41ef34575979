//! The S6 speech-jitter experiment: 20 ms audio packets through the jitter injector into
//! the real playout buffer of `mmsched-core`, once with a fixed 20 ms buffer and once with
//! the adaptive buffer; frame loss and E-model MOS for each.
//!
//! Time is simulated: the experiment walks packet arrivals and frame play times in time
//! order (a small discrete-event loop), so hours of audio take milliseconds.

use mmsched_core::playout::{FrameKind, PlayoutBuffer, PlayoutConfig, PlayoutMode};
use serde::Serialize;

use crate::emodel::{self, Codec};
use crate::jitter::{GammaJitter, JitterInjector, PacketRecord};
use crate::rng::stream_rng;

/// Audio frame (packet) length: 20 ms.
pub const FRAME_NANOS: u64 = 20_000_000;

/// Settings of the experiment.
#[derive(Debug, Clone, Copy)]
pub struct SpeechConfig {
    /// Run seed.
    pub seed: u64,
    /// Independent calls simulated per row (each starts a fresh buffer).
    pub calls: u32,
    /// 20 ms frames per call.
    pub frames_per_call: u32,
    /// Constant one-way network delay, in ms.
    pub base_delay_ms: f64,
    /// Random packet loss on the network, in percent (on top of late packets).
    pub network_loss_pct: f64,
    /// Codec impairment values for the MOS.
    pub codec: Codec,
}

impl Default for SpeechConfig {
    fn default() -> Self {
        Self {
            seed: 1,
            calls: 20,
            frames_per_call: 15_000,
            base_delay_ms: 30.0,
            network_loss_pct: 0.0,
            codec: Codec::g711_plc(),
        }
    }
}

/// Result of one buffer on one packet stream.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct BufferResult {
    /// Frames concealed (packet late or lost), in percent of all frames.
    pub loss_pct: f64,
    /// E-model MOS.
    pub mos: f64,
    /// Mean delay the buffer added over the fastest path, in ms.
    pub added_delay_ms: f64,
    /// Mean mouth-to-ear delay used for the MOS, in ms.
    pub mouth_to_ear_ms: f64,
}

/// One row of the S6 table.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct JitterRow {
    /// Target P99 of the injected jitter, in ms (0 = no jitter).
    pub p99_ms: f64,
    /// Gamma scale θ used, in ms.
    pub scale_ms: f64,
    /// The fixed 20 ms buffer.
    pub fixed: BufferResult,
    /// The adaptive buffer.
    pub adaptive: BufferResult,
}

/// The fixed reference buffer: 20 ms.
pub fn fixed_mode() -> PlayoutMode {
    PlayoutMode::Fixed {
        delay_nanos: FRAME_NANOS,
    }
}

#[derive(Debug, Default, Clone, Copy)]
struct Tally {
    frames: u64,
    concealed: u64,
    delay_sum_nanos: f64,
}

/// Runs one playout buffer over `packets` (one call) and adds to `tally`.
fn play(packets: &[PacketRecord], mode: PlayoutMode, tally: &mut Tally) {
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
    let mut buf = PlayoutBuffer::new(PlayoutConfig {
        frame_nanos: FRAME_NANOS,
        capacity_frames: 256,
        mode,
    });
    let record = |d: mmsched_core::playout::FrameDecision, t: &mut Tally| {
        t.frames += 1;
        if d.kind == FrameKind::Conceal {
            t.concealed += 1;
        }
        t.delay_sum_nanos += d.added_delay_nanos as f64;
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

fn result(t: &Tally, codec: &Codec, network_delay_ms: f64) -> BufferResult {
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

/// Generates one call's packets through the injector.
fn call_packets(cfg: &SpeechConfig, injector: &JitterInjector, call: u64) -> Vec<PacketRecord> {
    let mut rng = stream_rng(cfg.seed, 0x5EEC_0000 + call);
    (0..cfg.frames_per_call as u64)
        .map(|seq| {
            let send = seq * FRAME_NANOS;
            PacketRecord {
                seq,
                send_nanos: send as i64,
                arrival_nanos: injector.arrival(send, &mut rng).map(|a| a as i64),
            }
        })
        .collect()
}

/// One row: `calls` seeded calls with Gamma jitter, through both buffers.
pub fn run_row(cfg: &SpeechConfig, p99_ms: f64, jitter: GammaJitter) -> JitterRow {
    let injector = JitterInjector {
        base_delay_nanos: (cfg.base_delay_ms * 1e6) as u64,
        jitter,
        loss_probability: cfg.network_loss_pct / 100.0,
    };
    let (mut fixed, mut adaptive) = (Tally::default(), Tally::default());
    for call in 0..cfg.calls as u64 {
        let packets = call_packets(cfg, &injector, call);
        play(&packets, fixed_mode(), &mut fixed);
        play(&packets, PlayoutMode::adaptive_default(), &mut adaptive);
    }
    JitterRow {
        p99_ms,
        scale_ms: jitter.scale_ms(),
        fixed: result(&fixed, &cfg.codec, cfg.base_delay_ms),
        adaptive: result(&adaptive, &cfg.codec, cfg.base_delay_ms),
    }
}

/// The S6 table: no jitter, P99 28 ms and P99 42 ms (Gamma shape 2, scale calibrated).
pub fn run_table(cfg: &SpeechConfig, mut progress: impl FnMut()) -> Vec<JitterRow> {
    [0.0, 28.0, 42.0]
        .iter()
        .map(|&p99| {
            let jitter = if p99 == 0.0 {
                GammaJitter::new(2.0, 0.0)
            } else {
                GammaJitter::with_p99(2.0, p99)
            }
            .expect("table parameters are valid");
            let row = run_row(cfg, p99, jitter);
            progress();
            row
        })
        .collect()
}

/// Replays a captured packet-arrival trace through both buffers. The network delay for the
/// MOS is the trace's fastest one-way delay (0 if the clocks of the trace are not comparable).
pub fn replay_trace(packets: &[PacketRecord], codec: &Codec) -> JitterRow {
    let (mut fixed, mut adaptive) = (Tally::default(), Tally::default());
    play(packets, fixed_mode(), &mut fixed);
    play(packets, PlayoutMode::adaptive_default(), &mut adaptive);
    let one_way: Vec<f64> = packets
        .iter()
        .filter_map(|p| p.arrival_nanos.map(|a| (a - p.send_nanos) as f64 / 1e6))
        .collect();
    let fastest = one_way
        .iter()
        .copied()
        .fold(f64::INFINITY, f64::min)
        .max(0.0);
    let mut jitter: Vec<f64> = one_way.iter().map(|d| d - fastest).collect();
    let p99 = crate::stats::quantile(&mut jitter, 0.99);
    // Lost packets inside the trace are concealed by the buffers like late ones.
    JitterRow {
        p99_ms: p99,
        scale_ms: 0.0,
        fixed: result(
            &fixed,
            codec,
            if fastest.is_finite() { fastest } else { 0.0 },
        ),
        adaptive: result(
            &adaptive,
            codec,
            if fastest.is_finite() { fastest } else { 0.0 },
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> SpeechConfig {
        SpeechConfig {
            calls: 4,
            frames_per_call: 5000,
            ..SpeechConfig::default()
        }
    }

    #[test]
    fn no_jitter_loses_nothing() {
        let row = run_row(&small(), 0.0, GammaJitter::new(2.0, 0.0).expect("valid"));
        assert_eq!(row.fixed.loss_pct, 0.0);
        assert_eq!(row.adaptive.loss_pct, 0.0);
        assert!(row.fixed.mos > 4.3);
    }

    #[test]
    fn adaptive_beats_fixed_under_jitter() {
        let row = run_row(
            &small(),
            42.0,
            GammaJitter::with_p99(2.0, 42.0).expect("valid"),
        );
        assert!(row.fixed.loss_pct > 3.0, "{row:?}");
        assert!(row.adaptive.loss_pct < row.fixed.loss_pct / 3.0, "{row:?}");
        assert!(row.adaptive.mos > row.fixed.mos, "{row:?}");
    }

    #[test]
    fn same_seed_same_result() {
        let j = GammaJitter::with_p99(2.0, 28.0).expect("valid");
        assert_eq!(run_row(&small(), 28.0, j), run_row(&small(), 28.0, j));
    }
}
