//! RTP audio cut into the microphone's fixed packets. A sender packs samples as it likes
//! (ffmpeg fills each datagram up to its size limit); the playout buffer wants one packet
//! per `packet_ms`. The media timestamp places every sample exactly, so output packet *k*
//! holds source samples `[k·n, (k+1)·n)` after the first one, whichever datagrams brought
//! them, and is handed out once all of them are in. A lost datagram leaves its packets
//! incomplete: the playout buffer sees the gap, conceals it or asks for it again.

use std::collections::{BTreeMap, BTreeSet};

use crate::source::microphone::SAMPLE_RATE_HZ;

/// Packets kept open (or remembered as done) behind the newest: as much as the playout
/// buffer holds.
const WINDOW_PACKETS: u64 = 64;

/// A jump of the media clock this many packets ahead is a restarted sender, not loss.
const RESTART_PACKETS: u64 = 16 * WINDOW_PACKETS;

#[derive(Debug)]
struct Slot {
    samples: Vec<f32>,
    have: Vec<bool>,
    count: usize,
}

/// See the module docs.
#[derive(Debug)]
pub struct Assembler {
    rate_hz: u32,
    n: usize,
    out_n: usize,
    base: Option<u64>,
    newest: u64,
    open: BTreeMap<u64, Slot>,
    done: BTreeSet<u64>,
}

impl Assembler {
    /// Packets of `packet_ms` from audio at `rate_hz`; `None` unless a packet holds a whole
    /// number of samples at that rate.
    pub fn new(rate_hz: u32, packet_ms: u32) -> Option<Self> {
        let samples = u64::from(rate_hz) * u64::from(packet_ms);
        if rate_hz == 0 || packet_ms == 0 || !samples.is_multiple_of(1000) {
            return None;
        }
        Some(Self {
            rate_hz,
            n: usize::try_from(samples / 1000).ok()?,
            out_n: usize::try_from(u64::from(SAMPLE_RATE_HZ) * u64::from(packet_ms) / 1000).ok()?,
            base: None,
            newest: 0,
            open: BTreeMap::new(),
            done: BTreeSet::new(),
        })
    }

    /// Samples per packet at the source rate.
    pub fn source_samples(&self) -> usize {
        self.n
    }

    /// The media timestamp of the first sample of packet `k` (once known).
    pub fn packet_timestamp(&self, k: u64) -> Option<u64> {
        self.base.map(|b| b + k * self.n as u64)
    }

    /// Takes in `samples` (mono, source rate) whose first has extended media timestamp
    /// `ts`. Returns the packets this completes, oldest first, as (packet number, 16 kHz
    /// samples).
    pub fn push(&mut self, ts: u64, samples: &[f32]) -> Vec<(u64, Vec<f32>)> {
        let n = self.n as u64;
        let base = *self.base.get_or_insert(ts);
        if ts >= base && (ts - base) / n > self.newest + RESTART_PACKETS {
            // The sender started again with a new clock: carry on right after the newest.
            self.base = Some(ts - (self.newest + 1) * n);
            self.open.clear();
        }
        let base = self.base.unwrap_or(base);
        let low = self.newest.saturating_sub(WINDOW_PACKETS);
        let mut touched = BTreeSet::new();
        for (i, &v) in samples.iter().enumerate() {
            let Some(off) = (ts + i as u64).checked_sub(base) else {
                continue;
            };
            let k = off / n;
            if k < low || self.done.contains(&k) {
                continue;
            }
            let pos = (off % n) as usize;
            let slot = self.open.entry(k).or_insert_with(|| Slot {
                samples: vec![0.0; self.n],
                have: vec![false; self.n],
                count: 0,
            });
            if !slot.have[pos] {
                slot.have[pos] = true;
                slot.samples[pos] = v;
                slot.count += 1;
            }
            touched.insert(k);
            self.newest = self.newest.max(k);
        }
        let mut out = Vec::new();
        for k in touched {
            if self.open.get(&k).is_some_and(|s| s.count == self.n)
                && let Some(slot) = self.open.remove(&k)
            {
                self.done.insert(k);
                out.push((k, self.to_16k(&slot.samples)));
            }
        }
        let low = self.newest.saturating_sub(WINDOW_PACKETS);
        self.open.retain(|&k, _| k >= low);
        self.done.retain(|&k| k >= low);
        out
    }

    /// One packet at the source rate to 16 kHz: area averaging when the source is faster
    /// (each output sample the mean of the source samples it covers, a box low-pass that
    /// keeps aliasing down), linear interpolation when it is slower. Rougher than the WAV
    /// reader's windowed sinc, and per packet; a sender at 16 kHz needs neither.
    fn to_16k(&self, s: &[f32]) -> Vec<f32> {
        if self.rate_hz == SAMPLE_RATE_HZ {
            return s.to_vec();
        }
        let r = f64::from(self.rate_hz) / f64::from(SAMPLE_RATE_HZ);
        let last = s.len() - 1;
        (0..self.out_n)
            .map(|j| {
                if r > 1.0 {
                    let a = ((j as f64 * r) as usize).min(last);
                    let b = (((j + 1) as f64 * r) as usize).clamp(a + 1, s.len());
                    s[a..b].iter().sum::<f32>() / (b - a) as f32
                } else {
                    let x = j as f64 * r;
                    let i = (x as usize).min(last);
                    let f = (x - i as f64) as f32;
                    s[i] + (s[(i + 1).min(last)] - s[i]) * f
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ramp(from: usize, len: usize) -> Vec<f32> {
        (from..from + len).map(|i| i as f32).collect()
    }

    #[test]
    fn datagrams_of_any_size_become_whole_packets_in_place() {
        // 16 kHz, 20 ms packets of 320 samples; datagrams of 700 samples, as ffmpeg sends.
        let mut a = Assembler::new(16_000, 20).expect("whole samples");
        let t0 = 1_000_000;
        let out = a.push(t0, &ramp(0, 700));
        assert_eq!(out.iter().map(|p| p.0).collect::<Vec<_>>(), [0, 1]);
        assert_eq!(out[1].1, ramp(320, 320));
        // The next datagram is lost; the one after fills 4 and 6 in part, 5 whole.
        let out = a.push(t0 + 1400, &ramp(1400, 700));
        assert_eq!(out.iter().map(|p| p.0).collect::<Vec<_>>(), [5]);
        // The lost one arrives late (a retransmission): packets 2, 3, 4 complete.
        let out = a.push(t0 + 700, &ramp(700, 700));
        assert_eq!(out.iter().map(|p| p.0).collect::<Vec<_>>(), [2, 3, 4]);
        assert_eq!(out[0].1, ramp(640, 320), "samples from two datagrams");
        assert!(
            a.push(t0 + 700, &ramp(700, 700)).is_empty(),
            "a duplicate adds nothing"
        );
        assert!(
            a.push(t0 - 5, &[1.0; 5]).is_empty(),
            "before the first sample"
        );
        assert_eq!(a.packet_timestamp(3), Some(t0 + 960));
    }

    #[test]
    fn a_restarted_sender_carries_on_after_the_newest_packet() {
        let mut a = Assembler::new(16_000, 20).expect("whole samples");
        a.push(0, &ramp(0, 640));
        let out = a.push(50_000_000, &ramp(0, 320));
        assert_eq!(out.iter().map(|p| p.0).collect::<Vec<_>>(), [2]);
    }

    #[test]
    fn other_rates_are_converted_to_16_khz() {
        assert!(Assembler::new(11_025, 20).is_none(), "220.5 samples");
        let mut a = Assembler::new(48_000, 20).expect("960 samples");
        assert_eq!(a.source_samples(), 960);
        let out = a.push(0, &ramp(0, 960));
        let s = &out[0].1;
        assert_eq!(s.len(), 320);
        assert_eq!(s[0], 1.0, "mean of 0, 1, 2");
        assert_eq!(s[319], 958.0);
        let mut a = Assembler::new(8_000, 20).expect("160 samples");
        let s = &a.push(0, &ramp(0, 160))[0].1;
        assert_eq!(s.len(), 320);
        assert_eq!((s[0], s[1], s[2], s[319]), (0.0, 0.5, 1.0, 159.0));
        let mut a = Assembler::new(44_100, 20).expect("882 samples");
        let s = &a.push(0, &vec![0.25; 882])[0].1;
        assert_eq!(s.len(), 320);
        assert!(s.iter().all(|&v| (v - 0.25).abs() < 1e-6));
    }
}
