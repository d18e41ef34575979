//! The speech branch gate: voice activity decides which audio reaches the recogniser.
//!
//! Per 20 ms packet the VAD backend gives a speech probability. A packet at or above the
//! policy's `vad_speech_threshold` opens (or extends) an utterance; the utterance stays
//! open through `hangover_packets` quiet packets (speech has short pauses) and closes after
//! them, or when it reaches `max_packets`. `preroll_packets` quiet packets before the onset
//! are included so the first syllable is not clipped. Closed utterances go to speech
//! recognition; every packet that ends up in none is a counted, traced skip.

use std::collections::VecDeque;

use mmsched_core::policy::{Policy, RoutingPolicy};
use mmsched_core::time::Nanos;

use super::{GateCounts, RouteEvent, SkipReason};

/// Shape of utterances, in packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmenterConfig {
    /// Quiet packets kept before an onset (default 5 = 100 ms at 20 ms packets).
    pub preroll_packets: usize,
    /// Quiet packets that do not yet close an utterance (default 15 = 300 ms).
    pub hangover_packets: usize,
    /// Longest utterance (default 500 = 10 s); longer speech is cut into pieces.
    pub max_packets: usize,
}

impl Default for SegmenterConfig {
    fn default() -> Self {
        Self {
            preroll_packets: 5,
            hangover_packets: 15,
            max_packets: 500,
        }
    }
}

/// A stretch of speech for the recogniser.
#[derive(Debug, Clone, PartialEq)]
pub struct Utterance {
    /// Capture time of its first packet.
    pub start_nanos: Nanos,
    /// Capture time of its last packet.
    pub end_nanos: Nanos,
    /// The samples, in order.
    pub samples: Vec<f32>,
    /// Packets in it.
    pub packets: usize,
}

#[derive(Debug)]
struct Pending {
    at_nanos: Nanos,
    samples: Vec<f32>,
    speech_prob: f64,
    gate_nanos: Nanos,
}

/// Turns per-packet speech probabilities into utterances, counting every skip.
#[derive(Debug)]
pub struct SpeechGate {
    routing: RoutingPolicy,
    config: SegmenterConfig,
    preroll: VecDeque<Pending>,
    open: Option<Utterance>,
    quiet_run: usize,
    counts: GateCounts,
}

/// What one packet led to.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct GateOutput {
    /// Decisions made final by this packet (this or earlier packets), in capture order.
    pub events: Vec<RouteEvent>,
    /// An utterance that closed and goes to speech recognition.
    pub utterance: Option<Utterance>,
}

impl SpeechGate {
    /// A gate with the threshold of `policy`.
    pub fn new(policy: &Policy, config: SegmenterConfig) -> Self {
        Self {
            routing: *policy.routing(),
            config: SegmenterConfig {
                max_packets: config.max_packets.max(1),
                ..config
            },
            preroll: VecDeque::new(),
            open: None,
            quiet_run: 0,
            counts: GateCounts::default(),
        }
    }

    /// Switches to the threshold of a new policy (hot reload).
    pub fn set_policy(&mut self, policy: &Policy) {
        self.routing = *policy.routing();
    }

    /// Feeds one packet captured at `at_nanos` with its VAD speech probability.
    pub fn push(
        &mut self,
        at_nanos: Nanos,
        samples: &[f32],
        speech_prob: f64,
        gate_nanos: Nanos,
    ) -> GateOutput {
        let mut out = GateOutput::default();
        let speech = !self.routing.enabled || speech_prob >= self.routing.vad_speech_threshold;
        let packet = Pending {
            at_nanos,
            samples: samples.to_vec(),
            speech_prob,
            gate_nanos,
        };
        if let Some(u) = self.open.as_mut() {
            self.quiet_run = if speech { 0 } else { self.quiet_run + 1 };
            if self.quiet_run > self.config.hangover_packets {
                // This quiet packet ends the utterance without joining it.
                out.utterance = self.close();
                self.queue_quiet(packet, &mut out);
                return out;
            }
            u.end_nanos = at_nanos;
            u.samples.extend_from_slice(&packet.samples);
            u.packets += 1;
            Self::pass(&mut self.counts, &packet, &mut out);
            if u.packets >= self.config.max_packets {
                out.utterance = self.close();
            }
            return out;
        }
        if !speech {
            self.queue_quiet(packet, &mut out);
            return out;
        }
        // Onset: the pre-roll joins the utterance.
        let mut u = Utterance {
            start_nanos: at_nanos,
            end_nanos: at_nanos,
            samples: Vec::new(),
            packets: 0,
        };
        for p in self.preroll.drain(..).chain(std::iter::once(packet)) {
            if u.packets == 0 {
                u.start_nanos = p.at_nanos;
            }
            u.samples.extend_from_slice(&p.samples);
            u.packets += 1;
            Self::pass(&mut self.counts, &p, &mut out);
        }
        self.quiet_run = 0;
        let full = u.packets >= self.config.max_packets;
        self.open = Some(u);
        if full {
            out.utterance = self.close();
        }
        out
    }

    /// Closes the open utterance (end of stream) and skips the pre-roll left over.
    pub fn flush(&mut self) -> GateOutput {
        let mut out = GateOutput {
            utterance: self.close(),
            ..GateOutput::default()
        };
        while let Some(p) = self.preroll.pop_front() {
            Self::skip(&mut self.counts, &p, &mut out);
        }
        out
    }

    fn close(&mut self) -> Option<Utterance> {
        self.quiet_run = 0;
        self.open.take()
    }

    fn queue_quiet(&mut self, packet: Pending, out: &mut GateOutput) {
        self.preroll.push_back(packet);
        while self.preroll.len() > self.config.preroll_packets {
            if let Some(p) = self.preroll.pop_front() {
                Self::skip(&mut self.counts, &p, out);
            }
        }
    }

    fn pass(counts: &mut GateCounts, p: &Pending, out: &mut GateOutput) {
        let e = RouteEvent {
            branch: "asr",
            at_nanos: p.at_nanos,
            skipped: None,
            gate_nanos: p.gate_nanos,
        };
        counts.count(&e);
        out.events.push(e);
    }

    fn skip(counts: &mut GateCounts, p: &Pending, out: &mut GateOutput) {
        let e = RouteEvent {
            branch: "asr",
            at_nanos: p.at_nanos,
            skipped: Some(SkipReason::Silence {
                speech_prob: p.speech_prob,
            }),
            gate_nanos: p.gate_nanos,
        };
        counts.count(&e);
        out.events.push(e);
    }

    /// Counts of decided packets so far (packets still held as pre-roll are not counted yet).
    pub fn counts(&self) -> GateCounts {
        self.counts
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mmsched_core::policy::PolicySpec;

    const PKT: Nanos = 20_000_000;

    /// Feeds probabilities, returns the utterances' (start packet, packets) and the gate.
    fn run(
        probs: &[f64],
        config: SegmenterConfig,
        policy: &Policy,
    ) -> (Vec<(u64, usize)>, SpeechGate, usize) {
        let mut g = SpeechGate::new(policy, config);
        let mut utts = Vec::new();
        let mut events = 0;
        for (i, &p) in probs.iter().enumerate() {
            let out = g.push(i as u64 * PKT, &[i as f32; 4], p, 10);
            events += out.events.len();
            if let Some(u) = out.utterance {
                assert_eq!(u.samples.len(), u.packets * 4);
                utts.push((u.start_nanos / PKT, u.packets));
            }
        }
        let out = g.flush();
        events += out.events.len();
        if let Some(u) = out.utterance {
            utts.push((u.start_nanos / PKT, u.packets));
        }
        (utts, g, events)
    }

    #[test]
    fn speech_becomes_utterances_with_preroll_and_hangover() {
        let config = SegmenterConfig {
            preroll_packets: 2,
            hangover_packets: 3,
            max_packets: 100,
        };
        // 5 quiet, 4 speech, 2 quiet (pause), 3 speech, 10 quiet.
        let mut probs = vec![0.1; 5];
        probs.extend([0.9; 4]);
        probs.extend([0.2; 2]);
        probs.extend([0.8; 3]);
        probs.extend([0.0; 10]);
        let (utts, g, events) = run(&probs, config, &Policy::default());
        // Pre-roll packets 3–4, speech 5–13 (the pause is bridged), hangover 14–16.
        assert_eq!(utts, vec![(3, 2 + 4 + 2 + 3 + 3)]);
        let c = g.counts();
        assert_eq!(c.seen, probs.len() as u64, "every packet decided once");
        assert_eq!(events, probs.len());
        assert_eq!(c.passed, 14);
        assert_eq!(c.skipped_silence, probs.len() as u64 - 14);
        assert_eq!(c.gate_nanos, 10 * probs.len() as u64);
    }

    #[test]
    fn long_speech_is_cut_and_silence_never_reaches_asr() {
        let config = SegmenterConfig {
            preroll_packets: 0,
            hangover_packets: 0,
            max_packets: 4,
        };
        let (utts, _, _) = run(&[0.9; 10], config, &Policy::default());
        assert_eq!(utts, vec![(0, 4), (4, 4), (8, 2)]);
        let (utts, g, _) = run(&[0.1; 50], SegmenterConfig::default(), &Policy::default());
        assert!(utts.is_empty());
        assert_eq!(g.counts().skipped_silence, 50);
    }

    #[test]
    fn threshold_comes_from_the_policy_and_routing_can_be_off() {
        let mut spec = PolicySpec::default();
        spec.routing.vad_speech_threshold = Some(0.05);
        let eager = Policy::try_from(spec).expect("valid");
        let (utts, _, _) = run(&[0.1; 3], SegmenterConfig::default(), &eager);
        assert_eq!(utts, vec![(0, 3)]);
        let mut off = PolicySpec::default();
        off.routing.enabled = Some(false);
        let (utts, g, _) = run(
            &[0.0; 3],
            SegmenterConfig::default(),
            &Policy::try_from(off).expect("valid"),
        );
        assert_eq!(utts, vec![(0, 3)]);
        assert_eq!(g.counts().skipped(), 0);
    }
}
