//! What no real buffer can beat, as references for the table: the *ceiling* (no added
//! delay, only the frames the network lost concealed) and the *oracle* (the best constant
//! delay over the fastest path, chosen in hindsight over all the row's calls).

use super::BufferResult;
use mmsched_world::emodel::{self, Codec};
use mmsched_world::jitter::PacketRecord;

/// Relative delays counted in 1 ms steps up to this many ms (later ones in the last).
const RANGE_MS: usize = 400;

/// Every packet's delay over the fastest path, and the frames the network lost, over the
/// calls of one row.
#[derive(Debug, Clone)]
pub(super) struct Bounds {
    frames: u64,
    lost: u64,
    /// Packets by the smallest whole-ms delay that has them on time.
    by_delay_ms: Vec<u64>,
}

impl Default for Bounds {
    fn default() -> Self {
        Self {
            frames: 0,
            lost: 0,
            by_delay_ms: vec![0; RANGE_MS + 1],
        }
    }
}

impl Bounds {
    /// Adds one call: frames from the first arrived packet's sequence number to the last
    /// one, as the buffers decide them; `fastest_nanos` is the network's fastest one-way
    /// delay.
    pub(super) fn add_call(&mut self, packets: &[PacketRecord], fastest_nanos: i64) {
        let Some(start) = packets
            .iter()
            .filter(|p| p.arrival_nanos.is_some())
            .map(|p| p.seq)
            .min()
        else {
            return;
        };
        let last = packets.iter().map(|p| p.seq).max().unwrap_or(start);
        let mut arrived = 0;
        for p in packets.iter().filter(|p| p.seq >= start) {
            if let Some(a) = p.arrival_nanos {
                arrived += 1;
                let over = (a - p.send_nanos - fastest_nanos).max(0) as u64;
                let ms = over.div_ceil(1_000_000) as usize;
                self.by_delay_ms[ms.min(RANGE_MS)] += 1;
            }
        }
        let frames = last - start + 1;
        self.frames += frames;
        self.lost += frames - arrived.min(frames);
    }

    fn score(
        &self,
        codec: &Codec,
        network_delay_ms: f64,
        delay_ms: f64,
        late: u64,
    ) -> BufferResult {
        let loss_pct = 100.0 * (self.lost + late) as f64 / self.frames.max(1) as f64;
        let mouth_to_ear_ms = codec.codec_delay_ms + network_delay_ms + delay_ms;
        BufferResult {
            loss_pct,
            mos: emodel::mos(codec, mouth_to_ear_ms, loss_pct),
            added_delay_ms: delay_ms,
            mouth_to_ear_ms,
        }
    }

    /// No added delay; only the frames whose packet never came are concealed.
    pub(super) fn ceiling(&self, codec: &Codec, network_delay_ms: f64) -> BufferResult {
        self.score(codec, network_delay_ms, 0.0, 0)
    }

    /// The constant delay over the fastest path (whole ms) with the highest MOS, and its
    /// result.
    pub(super) fn oracle(&self, codec: &Codec, network_delay_ms: f64) -> (u64, BufferResult) {
        let mut late: u64 = self.by_delay_ms.iter().sum();
        let mut best = (0, self.score(codec, network_delay_ms, 0.0, late));
        for (ms, count) in self.by_delay_ms.iter().enumerate() {
            late -= count;
            let r = self.score(codec, network_delay_ms, ms as f64, late);
            if r.mos > best.1.mos {
                best = (ms as u64, r);
            }
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packet(seq: u64, over_ms: Option<f64>) -> PacketRecord {
        let send = seq as i64 * 20_000_000;
        PacketRecord {
            seq,
            send_nanos: send,
            arrival_nanos: over_ms.map(|o| send + 30_000_000 + (o * 1e6) as i64),
        }
    }

    #[test]
    fn the_oracle_covers_what_is_worth_waiting_for() {
        // 1000 packets: 2 % come 50 ms late, one is lost.
        let packets: Vec<PacketRecord> = (0..1000)
            .map(|s| match s {
                500 => packet(s, None),
                _ if s % 50 == 1 => packet(s, Some(50.0)),
                _ => packet(s, Some(0.5)),
            })
            .collect();
        let mut b = Bounds::default();
        b.add_call(&packets, 30_000_000);
        let c = Codec::g711_plc();
        let ceiling = b.ceiling(&c, 30.0);
        assert!((ceiling.loss_pct - 0.1).abs() < 1e-9);
        let (ms, oracle) = b.oracle(&c, 30.0);
        assert_eq!(ms, 50);
        assert!((oracle.loss_pct - 0.1).abs() < 1e-9);
        assert!(oracle.mos < ceiling.mos);
    }
}
