//! The microphone path after the network: packets into the adaptive playout buffer (S6),
//! played audio cut into the 32 ms chunks Silero VAD reads, and chunk speech
//! probabilities turned into utterances for Whisper by the speech gate (S4).
//!
//! Packets are 20 ms, VAD chunks 32 ms, so the two do not line up: a played packet waits
//! until the chunk holding its last sample has a probability, then goes to the gate with
//! it. VAD results may come back out of order (two workers); they are put back in chunk
//! order before the gate sees them. A gap in the packet sequence is reported at once, so a
//! retransmission can be requested while there is still time to play the packet.

use std::collections::{BTreeMap, VecDeque};

use mmsched_core::playout::{FrameKind, PacketOutcome, PlayoutBuffer, PlayoutConfig, PlayoutMode};
use mmsched_core::policy::Policy;
use mmsched_core::time::Nanos;
use mmsched_runtime::router::GateCounts;
use mmsched_runtime::router::speech::{SegmenterConfig, SpeechGate, Utterance};
use mmsched_world::mic;

use crate::config::RunError;
use crate::latency::Latencies;
use crate::rtp_record::RtpRecorder;

/// Samples per VAD chunk (32 ms at 16 kHz).
pub const CHUNK_SAMPLES: usize = 512;

/// Frames the playout buffer can hold ahead of the play position.
const CAPACITY_FRAMES: usize = 64;

/// A chunk ready for voice-activity detection.
#[derive(Debug, Clone, PartialEq)]
pub struct VadChunk {
    /// Chunk number from 0.
    pub index: u64,
    /// The samples.
    pub samples: Vec<f32>,
    /// Device time its last sample was played: the job's release.
    pub ready_nanos: Nanos,
}

#[derive(Debug)]
struct Played {
    end_sample: u64,
    play_nanos: Nanos,
    samples: Vec<f32>,
}

/// Counters of the audio path.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct AudioCounts {
    /// Frames decided (played or concealed).
    pub frames: u64,
    /// Frames concealed (their packet missing at play time).
    pub concealed: u64,
    /// Packets that arrived after their frame was decided.
    pub late_packets: u64,
}

/// See the module docs.
#[derive(Debug)]
pub struct AudioPath {
    playout: PlayoutBuffer,
    packet_samples: usize,
    waiting: BTreeMap<u64, Vec<f32>>,
    highest_seq: Option<u64>,
    chunk_buf: Vec<f32>,
    played_samples: u64,
    next_chunk: u64,
    to_gate: VecDeque<Played>,
    probs: BTreeMap<u64, f32>,
    next_gated_chunk: u64,
    gate: SpeechGate,
    /// The samples of the packets most recently gated, by play time, `(play, first, end)`:
    /// where an utterance lies in the microphone's stream, to find its truth.
    gated: VecDeque<(Nanos, u64, u64)>,
    gated_max: usize,
    counts: AudioCounts,
    /// Delay added per frame since the start, ms (bounded: see [`Latencies`]).
    delays: Latencies,
    /// Frames decided and their added delay summed since the last
    /// [`AudioPath::take_interval`], nanoseconds.
    interval_delays: (u64, u64),
    recorder: Option<RtpRecorder>,
    /// Where the last [`AudioPath::take_interval`] left off: the counts, and the mean
    /// delay it reported.
    interval_from: (AudioCounts, f64),
}

/// The playout buffer over one interval, for the report's plots.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlayoutInterval {
    /// Mean delay added to the frames decided in the interval, ms (the previous interval's
    /// when none was).
    pub delay_ms: f64,
    /// The controller's target delay now, ms.
    pub target_ms: f64,
    /// Packets that arrived after their frame was decided, in the interval.
    pub late: u64,
    /// Frames concealed in the interval.
    pub concealed: u64,
}

impl AudioPath {
    /// A path for packets of `packet_ms` under `policy`'s speech threshold.
    pub fn new(policy: &Policy, packet_ms: u32) -> Self {
        let packet_ms = packet_ms.clamp(1, 1000);
        let frame_nanos = u64::from(packet_ms) * 1_000_000;
        let per_20ms = |n: usize| (n * 20 / packet_ms as usize).max(1);
        // An 800 ms hangover keeps the short pauses between sentences inside one
        // utterance: Whisper reads a fixed 30 s window, so every extra call costs almost a
        // full transcription.
        // The simulator models the same gate (`mmsched_world::mic`): one set of lengths.
        let packets = |nanos: Nanos| per_20ms((nanos / 20_000_000) as usize);
        let segmenter = SegmenterConfig {
            preroll_packets: packets(mic::PREROLL_NANOS),
            hangover_packets: packets(mic::HANGOVER_NANOS),
            max_packets: packets(mic::MAX_UTTERANCE_NANOS),
        };
        Self {
            playout: PlayoutBuffer::new(PlayoutConfig {
                frame_nanos,
                capacity_frames: CAPACITY_FRAMES,
                mode: PlayoutMode::adaptive_default(),
            }),
            packet_samples: 16 * packet_ms as usize,
            waiting: BTreeMap::new(),
            highest_seq: None,
            chunk_buf: Vec::with_capacity(2 * CHUNK_SAMPLES),
            played_samples: 0,
            next_chunk: 0,
            to_gate: VecDeque::new(),
            probs: BTreeMap::new(),
            next_gated_chunk: 0,
            gated: VecDeque::new(),
            gated_max: segmenter.preroll_packets + segmenter.max_packets + 2,
            gate: SpeechGate::new(policy, segmenter),
            counts: AudioCounts::default(),
            delays: Latencies::default(),
            interval_delays: (0, 0),
            recorder: None,
            interval_from: (AudioCounts::default(), 0.0),
        }
    }

    /// Records every packet's arrival into `recorder` (`--record-rtp`).
    pub fn record_arrivals(&mut self, recorder: RtpRecorder) {
        self.recorder = Some(recorder);
    }

    /// Closes the recording, if any: `(packets, file)`, or why it could not be written.
    pub fn finish_recording(&mut self) -> Option<Result<(u64, std::path::PathBuf), RunError>> {
        let r = self.recorder.take()?;
        let packets = r.recorded();
        Some(r.finish().map(|path| (packets, path)))
    }

    /// The duration of one packet, in nanoseconds.
    pub fn frame_nanos(&self) -> u64 {
        self.packet_samples as u64 * 1_000_000 / 16
    }

    /// Keeps the playout delay at or above `floor_nanos` (0: no floor); see
    /// [`PlayoutBuffer::set_delay_floor_nanos`].
    pub fn set_delay_floor_nanos(&mut self, floor_nanos: u64) {
        self.playout.set_delay_floor_nanos(floor_nanos);
    }

    /// Switches the speech threshold (policy hot reload).
    pub fn set_policy(&mut self, policy: &Policy) {
        self.gate.set_policy(policy);
    }

    /// Takes in packet `seq` that arrived at `arrival_nanos` (`copy`: a retransmission,
    /// which does not train the playout delay). Returns the sequence numbers this arrival
    /// shows to be missing (a gap before it), oldest first.
    pub fn on_packet(
        &mut self,
        seq: u64,
        arrival_nanos: Nanos,
        samples: Vec<f32>,
        copy: bool,
    ) -> Vec<u64> {
        let gap: Vec<u64> = match self.highest_seq {
            Some(h) if seq > h + 1 => (h + 1..seq).collect(),
            _ => Vec::new(),
        };
        self.highest_seq = Some(self.highest_seq.map_or(seq, |h| h.max(seq)));
        if let Some(r) = &mut self.recorder {
            r.record(seq, arrival_nanos);
        }
        let outcome = if copy {
            self.playout.on_retransmitted_packet(seq, arrival_nanos)
        } else {
            self.playout.on_packet(seq, arrival_nanos)
        };
        match outcome {
            PacketOutcome::Buffered => {
                self.waiting.insert(seq, samples);
            }
            PacketOutcome::Late => self.counts.late_packets += 1,
            PacketOutcome::Duplicate | PacketOutcome::Overflow => {}
        }
        gap
    }

    /// Whether packet `seq` is still useful (its frame not yet decided).
    pub fn wants(&self, seq: u64) -> bool {
        self.playout.next_seq().is_none_or(|n| seq >= n) && !self.waiting.contains_key(&seq)
    }

    /// Plays every frame due at `now_nanos` and returns the VAD chunks completed.
    pub fn poll(&mut self, now_nanos: Nanos) -> Vec<VadChunk> {
        let mut out = Vec::new();
        while let Some(d) = self.playout.poll(now_nanos) {
            self.counts.frames += 1;
            self.delays.push(d.added_delay_nanos as f64 / 1e6);
            self.interval_delays.0 += 1;
            self.interval_delays.1 += d.added_delay_nanos;
            let samples = match (d.kind, self.waiting.remove(&d.seq)) {
                (FrameKind::Play, Some(s)) => s,
                _ => {
                    // Concealment: silence in place of the missing packet.
                    self.counts.concealed += 1;
                    vec![0.0; self.packet_samples]
                }
            };
            // Packets older than the play position will never play.
            self.waiting = self.waiting.split_off(&(d.seq + 1));
            self.played_samples += samples.len() as u64;
            self.chunk_buf.extend_from_slice(&samples);
            self.to_gate.push_back(Played {
                end_sample: self.played_samples,
                play_nanos: d.play_nanos,
                samples,
            });
            while self.chunk_buf.len() >= CHUNK_SAMPLES {
                let rest = self.chunk_buf.split_off(CHUNK_SAMPLES);
                let samples = std::mem::replace(&mut self.chunk_buf, rest);
                out.push(VadChunk {
                    index: self.next_chunk,
                    samples,
                    ready_nanos: d.play_nanos.max(now_nanos),
                });
                self.next_chunk += 1;
            }
        }
        out
    }

    /// Device time the next frame is due, if any.
    pub fn next_play_nanos(&self) -> Option<Nanos> {
        self.playout.next_play_nanos()
    }

    /// Takes in the speech probability of chunk `index` (0 for a chunk whose VAD job was
    /// shed or failed) and returns the utterances that closed.
    pub fn on_vad(&mut self, index: u64, prob: f32) -> Vec<Utterance> {
        self.probs.insert(index, prob);
        let mut closed = Vec::new();
        while let Some(prob) = self.probs.remove(&self.next_gated_chunk) {
            let chunk_end = (self.next_gated_chunk + 1) * CHUNK_SAMPLES as u64;
            while self
                .to_gate
                .front()
                .is_some_and(|p| p.end_sample <= chunk_end)
            {
                let Some(p) = self.to_gate.pop_front() else {
                    break;
                };
                if self.gated.len() == self.gated_max {
                    self.gated.pop_front();
                }
                let first = p.end_sample - p.samples.len() as u64;
                self.gated.push_back((p.play_nanos, first, p.end_sample));
                let o = self.gate.push(p.play_nanos, &p.samples, f64::from(prob), 0);
                closed.extend(o.utterance);
            }
            self.next_gated_chunk += 1;
        }
        closed
    }

    /// The samples `[first, end)` of the microphone's stream an utterance that just closed
    /// holds (found by its first and last packets' play times).
    pub fn sample_span(&self, u: &Utterance) -> Option<(u64, u64)> {
        let at = |t: Nanos| self.gated.iter().find(|g| g.0 == t);
        Some((at(u.start_nanos)?.1, at(u.end_nanos)?.2))
    }

    /// Closes the open utterance at the end of the run.
    pub fn flush(&mut self) -> Option<Utterance> {
        self.gate.flush().utterance
    }

    /// Playout counters.
    pub fn counts(&self) -> AudioCounts {
        self.counts
    }

    /// The speech gate's counters.
    pub fn gate_counts(&self) -> GateCounts {
        self.gate.counts()
    }

    /// The playout buffer since the previous call (since the start on the first).
    pub fn take_interval(&mut self) -> PlayoutInterval {
        let (counts, last_delay_ms) = self.interval_from;
        let (frames, summed) = std::mem::take(&mut self.interval_delays);
        let delay_ms = if frames == 0 {
            last_delay_ms
        } else {
            summed as f64 / frames as f64 / 1e6
        };
        self.interval_from = (self.counts, delay_ms);
        PlayoutInterval {
            delay_ms,
            target_ms: self.playout.target_delay_nanos() as f64 / 1e6,
            late: self.counts.late_packets - counts.late_packets,
            concealed: self.counts.concealed - counts.concealed,
        }
    }

    /// Delay added by the playout buffer per frame since the start, ms.
    pub fn added_delays(&self) -> &Latencies {
        &self.delays
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Nanos = 1_000_000;

    #[test]
    fn packets_become_chunks_in_order_and_speech_becomes_an_utterance() {
        let mut a = AudioPath::new(&Policy::default(), 20);
        let mut chunks = Vec::new();
        // 2 s of packets arriving on time, played after the buffer's initial delay.
        for seq in 0..100u64 {
            let arrival = seq * 20 * MS;
            assert!(a.on_packet(seq, arrival, vec![0.1; 320], false).is_empty());
            chunks.extend(a.poll(arrival));
        }
        // Play until well after the last packet: frames past it are concealed.
        chunks.extend(a.poll(3_000 * MS));
        let c = a.counts();
        assert_eq!(c.frames - c.concealed, 100, "{c:?}");
        assert_eq!(chunks.len() as u64, c.frames * 320 / CHUNK_SAMPLES as u64);
        assert!(chunks.windows(2).all(|w| w[1].index == w[0].index + 1));
        // Results out of order: nothing is gated until the first arrives.
        let mut utterances = Vec::new();
        for c in chunks.iter().rev() {
            utterances.extend(a.on_vad(c.index, 0.9));
        }
        utterances.extend(a.flush());
        assert_eq!(utterances.len(), 1);
        assert!(
            utterances[0].samples.len() >= 90 * 320,
            "{}",
            utterances[0].samples.len()
        );
    }

    #[test]
    fn a_gap_is_reported_and_a_missing_packet_is_concealed() {
        let mut a = AudioPath::new(&Policy::default(), 20);
        assert!(a.on_packet(0, 0, vec![0.0; 320], false).is_empty());
        assert_eq!(a.on_packet(3, 60 * MS, vec![0.0; 320], false), vec![1, 2]);
        assert!(a.wants(1));
        // Frame 0 plays after the initial 80 ms delay, then one frame per 20 ms.
        a.poll(120 * MS);
        assert!(!a.wants(1), "frame 1 was decided");
        assert_eq!(a.counts().concealed, 2);
        // A packet that comes after its frame was concealed is late.
        a.on_packet(2, 130 * MS, vec![0.0; 320], false);
        assert_eq!(a.counts().late_packets, 1);
    }

    #[test]
    fn an_interval_counts_only_what_happened_since_the_last_one() {
        let mut a = AudioPath::new(&Policy::default(), 20);
        assert!(a.on_packet(0, 0, vec![0.0; 320], false).is_empty());
        a.on_packet(3, 60 * MS, vec![0.0; 320], false);
        a.poll(120 * MS);
        a.on_packet(2, 130 * MS, vec![0.0; 320], false);
        let first = a.take_interval();
        // Frames 1 and 2 were concealed, packet 2 came late; frame 0 waited the initial
        // 80 ms.
        assert_eq!((first.concealed, first.late), (2, 1), "{first:?}");
        assert!((first.delay_ms - 80.0).abs() < 1.0, "{first:?}");
        assert!(first.target_ms > 0.0, "{first:?}");
        // Nothing since: no new counts, and the delay carries over.
        let second = a.take_interval();
        assert_eq!((second.concealed, second.late), (0, 0), "{second:?}");
        assert_eq!(second.delay_ms, first.delay_ms);
    }
}
