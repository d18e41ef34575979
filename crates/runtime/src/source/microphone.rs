//! A microphone: 16 kHz mono audio delivered in fixed packets (20 ms by default), from
//! recorded samples (e.g. a WAV file read by the audio backend) or a generated
//! speech-like signal with talk spurts and silences.
//!
//! A packet is captured when its last sample is: packet `k` covers samples
//! `[k·n, (k+1)·n)` and is due at `start + (k+1)·packet`.

use mmsched_core::Modality;
use mmsched_core::time::{Clock, NANOS_PER_MILLI, Nanos};

use super::{Cadence, Source, SourceClock, SourceEvent};

/// The sample rate of every microphone source.
pub const SAMPLE_RATE_HZ: u32 = 16_000;

/// Where the samples come from.
#[derive(Debug, Clone, PartialEq)]
pub enum AudioInput {
    /// Recorded 16 kHz mono samples in [-1, 1].
    Samples {
        /// The samples.
        samples: Vec<f32>,
        /// Start again from the beginning when they run out (else the source ends, the
        /// last packet padded with silence).
        looped: bool,
    },
    /// A generated speech-like signal.
    Generated(GeneratedSpeech),
}

/// A deterministic speech-like signal: voiced talk spurts (a gliding pitch with formant-
/// shaped harmonics and a syllable rhythm) separated by silence with a faint noise floor.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GeneratedSpeech {
    /// Length of a talk spurt, in milliseconds.
    pub talk_ms: u32,
    /// Length of the silence after it, in milliseconds.
    pub silence_ms: u32,
    /// Peak amplitude of speech, in (0, 1].
    pub level: f32,
    /// Seed of the noise floor.
    pub seed: u64,
}

impl Default for GeneratedSpeech {
    fn default() -> Self {
        Self {
            talk_ms: 2_000,
            silence_ms: 1_500,
            level: 0.3,
            seed: 1,
        }
    }
}

/// Settings of a [`Microphone`].
#[derive(Debug, Clone, PartialEq)]
pub struct MicrophoneConfig {
    /// The audio.
    pub input: AudioInput,
    /// Packet length in milliseconds (1 ..= 1000; 20 by default).
    pub packet_ms: u32,
    /// Device time at which the first sample is taken.
    pub start_nanos: Nanos,
    /// Stop after this many packets (`None`: when the input ends, or never).
    pub limit: Option<u64>,
    /// The microphone's own clock error.
    pub clock: SourceClock,
}

impl Default for MicrophoneConfig {
    fn default() -> Self {
        Self {
            input: AudioInput::Generated(GeneratedSpeech::default()),
            packet_ms: 20,
            start_nanos: 0,
            limit: None,
            clock: SourceClock::default(),
        }
    }
}

/// One packet of audio.
#[derive(Debug, Clone, PartialEq)]
pub struct AudioPacket {
    /// Index of the packet's first sample in the stream.
    pub first_sample: u64,
    /// The samples (16 kHz mono, [-1, 1]).
    pub samples: Vec<f32>,
    /// For generated audio: whether the packet lies in a talk spurt (ground truth for the
    /// voice-activity gate). `None` for recorded audio.
    pub speech: Option<bool>,
}

/// A microphone source.
#[derive(Debug)]
pub struct Microphone<C: Clock> {
    device: C,
    cadence: Cadence,
    clock: SourceClock,
    input: AudioInput,
    packet_samples: usize,
    phase: f64,
    noise: u64,
}

impl<C: Clock> Microphone<C> {
    /// A microphone polled against `device`.
    pub fn new(config: MicrophoneConfig, device: C) -> Self {
        let packet_ms = config.packet_ms.clamp(1, 1000);
        let packet_nanos = u64::from(packet_ms) * NANOS_PER_MILLI;
        let packet_samples = (SAMPLE_RATE_HZ * packet_ms / 1000) as usize;
        let mut cadence = Cadence::every(config.start_nanos + packet_nanos, packet_nanos);
        let natural_end = match &config.input {
            AudioInput::Samples {
                samples,
                looped: false,
            } => Some((samples.len() as u64).div_ceil(packet_samples as u64)),
            _ => None,
        };
        if let Some(l) = match (config.limit, natural_end) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        } {
            cadence = cadence.with_limit(l);
        }
        let seed = match &config.input {
            AudioInput::Generated(g) => g.seed,
            AudioInput::Samples { .. } => 0,
        };
        Self {
            device,
            cadence,
            clock: config.clock,
            input: config.input,
            packet_samples,
            phase: 0.0,
            noise: seed ^ 0x9E37_79B9_7F4A_7C15,
        }
    }

    /// Samples per packet.
    pub fn packet_samples(&self) -> usize {
        self.packet_samples
    }

    fn packet(&mut self, k: u64) -> AudioPacket {
        let n = self.packet_samples;
        let first = k * n as u64;
        match &self.input {
            AudioInput::Samples { samples, looped } => {
                let mut out = Vec::with_capacity(n);
                for i in 0..n as u64 {
                    let idx = first + i;
                    let len = samples.len() as u64;
                    let v = if len == 0 {
                        0.0
                    } else if *looped {
                        samples[usize::try_from(idx % len).unwrap_or(0)]
                    } else {
                        usize::try_from(idx)
                            .ok()
                            .and_then(|j| samples.get(j))
                            .copied()
                            .unwrap_or(0.0)
                    };
                    out.push(v);
                }
                AudioPacket {
                    first_sample: first,
                    samples: out,
                    speech: None,
                }
            }
            AudioInput::Generated(g) => {
                let g = *g;
                let mut out = Vec::with_capacity(n);
                let cycle =
                    u64::from(g.talk_ms + g.silence_ms).max(1) * u64::from(SAMPLE_RATE_HZ) / 1000;
                let talk = u64::from(g.talk_ms) * u64::from(SAMPLE_RATE_HZ) / 1000;
                let mid = first + n as u64 / 2;
                let speech = cycle > 0 && mid % cycle < talk;
                for i in 0..n as u64 {
                    let idx = first + i;
                    let in_talk = idx % cycle < talk;
                    let noise = self.next_noise() * 0.002;
                    let v = if in_talk {
                        self.voiced(idx, idx % cycle, talk, g.level)
                    } else {
                        0.0
                    };
                    out.push((v + noise).clamp(-1.0, 1.0));
                }
                AudioPacket {
                    first_sample: first,
                    samples: out,
                    speech: Some(speech),
                }
            }
        }
    }

    /// One sample of a voiced vowel-like sound.
    fn voiced(&mut self, idx: u64, in_spurt: u64, spurt_len: u64, level: f32) -> f32 {
        let t = idx as f64 / f64::from(SAMPLE_RATE_HZ);
        let f0 = 120.0 + 25.0 * (2.0 * std::f64::consts::PI * 0.7 * t).sin();
        self.phase = (self.phase + f0 / f64::from(SAMPLE_RATE_HZ)).fract();
        // Two formants that move with the syllable, shaping 12 harmonics.
        let syl = (2.0 * std::f64::consts::PI * 4.0 * t).sin();
        let (f1, f2) = (600.0 + 150.0 * syl, 1_500.0 - 300.0 * syl);
        let mut v = 0.0;
        for h in 1..=12 {
            let fh = f0 * f64::from(h);
            let a = (-((fh - f1) / 250.0).powi(2)).exp()
                + 0.6 * (-((fh - f2) / 350.0).powi(2)).exp()
                + 0.05;
            v += a * (2.0 * std::f64::consts::PI * f64::from(h) * self.phase).sin();
        }
        // Syllable envelope, with 10 ms fades at the spurt's ends.
        let env = 0.35 + 0.65 * syl.abs();
        let fade_len = u64::from(SAMPLE_RATE_HZ) / 100;
        let fade =
            (in_spurt.min(spurt_len.saturating_sub(in_spurt)) as f64 / fade_len as f64).min(1.0);
        (v / 2.0 * env * fade) as f32 * level
    }

    fn next_noise(&mut self) -> f32 {
        // splitmix64: deterministic and cheap; uniform in [-1, 1).
        self.noise = self.noise.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.noise;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    }
}

impl<C: Clock> Source for Microphone<C> {
    type Payload = AudioPacket;

    fn name(&self) -> &str {
        "microphone"
    }

    fn modality(&self) -> Modality {
        Modality::Audio
    }

    fn next_due_nanos(&self) -> Option<Nanos> {
        self.cadence.next_due_nanos()
    }

    fn poll(&mut self) -> Option<SourceEvent<AudioPacket>> {
        let (seq, at) = self.cadence.take_due(self.device.now_nanos())?;
        Some(SourceEvent {
            seq,
            capture_device_nanos: at,
            stamp_nanos: self.clock.stamp(at),
            payload: self.packet(seq),
            received_nanos: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mmsched_core::time::ManualClock;

    fn rms(x: &[f32]) -> f32 {
        (x.iter().map(|v| v * v).sum::<f32>() / x.len() as f32).sqrt()
    }

    #[test]
    fn recorded_samples_come_in_20_ms_packets_and_end() {
        let device = ManualClock::new(0);
        let samples: Vec<f32> = (0..700).map(|i| i as f32 / 1000.0).collect();
        let config = MicrophoneConfig {
            input: AudioInput::Samples {
                samples,
                looped: false,
            },
            clock: SourceClock::new(500, 2_000),
            ..MicrophoneConfig::default()
        };
        let mut mic = Microphone::new(config, &device);
        assert_eq!(mic.packet_samples(), 320);
        assert_eq!(mic.next_due_nanos(), Some(20 * NANOS_PER_MILLI));
        device.set(19 * NANOS_PER_MILLI);
        assert!(
            mic.poll().is_none(),
            "a packet is due only when its last sample is taken"
        );
        device.set(NANOS_PER_MILLI * 1000);
        let packets: Vec<_> = std::iter::from_fn(|| mic.poll()).collect();
        assert_eq!(packets.len(), 3, "700 samples → 3 packets, the last padded");
        assert_eq!(packets[1].payload.first_sample, 320);
        assert_eq!(packets[1].payload.samples[0], 0.32);
        assert_eq!(packets[2].payload.samples[319], 0.0);
        assert_eq!(packets[2].capture_device_nanos, 60 * NANOS_PER_MILLI);
        assert_eq!(packets[2].stamp_nanos, 60 * NANOS_PER_MILLI + 500 + 120);
        assert_eq!(mic.next_due_nanos(), None);
    }

    #[test]
    fn looped_samples_wrap_around() {
        let device = ManualClock::new(40 * NANOS_PER_MILLI);
        let config = MicrophoneConfig {
            input: AudioInput::Samples {
                samples: vec![0.5; 100],
                looped: true,
            },
            limit: Some(2),
            ..MicrophoneConfig::default()
        };
        let mut mic = Microphone::new(config, &device);
        let p: Vec<_> = std::iter::from_fn(|| mic.poll()).collect();
        assert_eq!(p.len(), 2);
        assert!(p[1].payload.samples.iter().all(|&v| v == 0.5));
    }

    #[test]
    fn generated_speech_alternates_talk_and_silence_deterministically() {
        let run = || {
            let device = ManualClock::new(0);
            let mut mic = Microphone::new(MicrophoneConfig::default(), &device);
            device.set(7 * 1_000 * NANOS_PER_MILLI);
            std::iter::from_fn(|| mic.poll()).collect::<Vec<_>>()
        };
        let packets = run();
        assert_eq!(packets.len(), 350);
        let talk: Vec<f32> = packets
            .iter()
            .filter(|p| p.payload.speech == Some(true))
            .map(|p| rms(&p.payload.samples))
            .collect();
        let quiet: Vec<f32> = packets
            .iter()
            .filter(|p| p.payload.speech == Some(false))
            .map(|p| rms(&p.payload.samples))
            .collect();
        assert!(
            talk.len() > 150 && quiet.len() > 100,
            "{} {}",
            talk.len(),
            quiet.len()
        );
        let mean = |v: &[f32]| v.iter().sum::<f32>() / v.len() as f32;
        assert!(
            mean(&talk) > 20.0 * mean(&quiet),
            "{} vs {}",
            mean(&talk),
            mean(&quiet)
        );
        assert!(
            packets
                .iter()
                .all(|p| p.payload.samples.iter().all(|v| v.abs() <= 1.0))
        );
        assert_eq!(packets, run(), "same seed, same audio");
    }
}
