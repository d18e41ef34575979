//! The microphone's timing, one model for the runtime and the simulator: a loop of talk
//! spurts, each closed by the speech gate into one utterance for speech recognition. `mmsched run`'s microphone loops
//! the recorded `beckett.wav` clip and 4 s of silence, or generated talk spurts (2 s of talk,
//! 1.5 s of silence) when the clip is not cached; [`SpeechLoop::from_samples`] finds the
//! talk spurts in a recording, [`SpeechLoop::default`] is the generated one.
//!
//! Where the runtime's voice-activity model (Silero) hears speech is not known to the
//! simulator; it uses an energy rule instead: a 32 ms chunk is speech when its RMS is
//! 10 dB above the clip's noise floor (the 10th percentile of chunk RMS). Pauses shorter
//! than the speech gate's hangover stay inside one utterance, as in the runtime.

use mmsched_core::time::Nanos;

/// Audio per voice-activity job: 512 samples at 16 kHz.
pub const VAD_CHUNK_NANOS: Nanos = 32_000_000;
/// The runtime's speech gate keeps an utterance open through this much quiet (the run's
/// segmenter: 40 packets of 20 ms)…
pub const HANGOVER_NANOS: Nanos = 800_000_000;
/// …and starts it this much before the first speech (5 packets of 20 ms).
pub const PREROLL_NANOS: Nanos = 100_000_000;
/// Longest utterance: longer speech is cut into pieces (500 packets of 20 ms).
pub const MAX_UTTERANCE_NANOS: Nanos = 10_000_000_000;
/// Shortest time budget of a transcript: Whisper reads 30 s windows, so a short utterance
/// costs nearly what a long one does (the runtime's rule).
pub const ASR_MIN_BUDGET_NANOS: Nanos = 2_000_000_000;

/// Silence after each pass of the recording in the run's microphone loop.
pub const RECORDING_PAUSE_NANOS: Nanos = 4_000_000_000;

/// How long after release a transcript of an utterance `length_nanos` long is due, before
/// the stream's SLA: the time it took to say it, at least [`ASR_MIN_BUDGET_NANOS`].
pub fn transcript_budget_nanos(length_nanos: Nanos) -> Nanos {
    length_nanos.max(ASR_MIN_BUDGET_NANOS)
}

/// Speech detected this far above the noise floor (10 dB in amplitude).
const ABOVE_FLOOR: f64 = 3.162;

/// The level above which a 32 ms chunk is speech, from the chunk levels (RMS) of the
/// room's audio sorted ascending: 10 dB above their 10th percentile, the noise floor.
pub fn speech_threshold(sorted_rms: &[f64]) -> f64 {
    let floor = sorted_rms
        .get(sorted_rms.len() / 10)
        .copied()
        .unwrap_or(0.0);
    (floor * ABOVE_FLOOR).max(1e-4)
}

/// Talk spurts of a looped microphone input, from the start of each loop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpeechLoop {
    /// Length of one loop.
    pub cycle_nanos: Nanos,
    /// First and last speech of each utterance, from the loop's start.
    pub spurts: Vec<(Nanos, Nanos)>,
}

impl Default for SpeechLoop {
    /// The runtime's generated talk spurts: 2 s of talk, 1.5 s of silence (the defaults of
    /// `mmsched_runtime::source::microphone::GeneratedSpeech`).
    fn default() -> Self {
        Self {
            cycle_nanos: 3_500_000_000,
            spurts: vec![(0, 2_000_000_000)],
        }
    }
}

impl SpeechLoop {
    /// The talk spurts of a 16 kHz recording followed by `pause_nanos` of silence, looped.
    pub fn from_samples(samples: &[f32], pause_nanos: Nanos) -> Self {
        const CHUNK: usize = 512;
        let rms: Vec<f64> = samples
            .chunks(CHUNK)
            .map(|c| {
                (c.iter().map(|&s| f64::from(s) * f64::from(s)).sum::<f64>() / c.len() as f64)
                    .sqrt()
            })
            .collect();
        let mut sorted = rms.clone();
        sorted.sort_by(f64::total_cmp);
        let threshold = speech_threshold(&sorted);
        let at = |i: usize| i as Nanos * VAD_CHUNK_NANOS;
        let mut spurts = Vec::new();
        let mut open: Option<(usize, usize)> = None;
        for (i, &r) in rms.iter().enumerate() {
            let speech = r > threshold;
            open = match (open, speech) {
                (None, true) => Some((i, i)),
                (Some((s, _)), true) => Some((s, i)),
                (Some((s, e)), false) if at(i - e) > HANGOVER_NANOS => {
                    spurts.push((at(s), at(e + 1)));
                    None
                }
                (o, _) => o,
            };
        }
        if let Some((s, e)) = open {
            spurts.push((at(s), at(e + 1)));
        }
        Self {
            cycle_nanos: at(rms.len()) + pause_nanos,
            spurts,
        }
    }

    /// Utterances the speech gate closes in the audio between `from` and `to` (time from
    /// the first loop's start): for each, its length as the runtime measures it (preroll
    /// and hangover included, at most the longest utterance).
    pub fn closed_between(&self, from: Nanos, to: Nanos) -> Vec<Nanos> {
        let mut out = Vec::new();
        if self.cycle_nanos == 0 || to <= from {
            return out;
        }
        let first_cycle = from.saturating_sub(self.cycle_nanos) / self.cycle_nanos;
        for k in first_cycle..=to / self.cycle_nanos {
            for &(s, e) in &self.spurts {
                let close = k * self.cycle_nanos + e + HANGOVER_NANOS;
                if close > from && close <= to {
                    let length = (e - s + PREROLL_NANOS + HANGOVER_NANOS).min(MAX_UTTERANCE_NANOS);
                    out.push(length);
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn talk_spurts_are_found_and_short_pauses_stay_inside() {
        let sr = 16_000;
        // 1 s speech, 0.3 s pause, 1 s speech, 2 s pause, 0.5 s speech, over a faint floor.
        let mut s = Vec::new();
        let mut add = |secs: f64, amp: f32| {
            for i in 0..(secs * sr as f64) as usize {
                s.push(amp * ((i as f32) * 0.3).sin() + 0.001 * ((i * 7 % 13) as f32 - 6.0) / 6.0);
            }
        };
        add(0.5, 0.0);
        add(1.0, 0.3);
        add(0.3, 0.0);
        add(1.0, 0.3);
        add(2.0, 0.0);
        add(0.5, 0.3);
        add(1.0, 0.0);
        let l = SpeechLoop::from_samples(&s, 4_000_000_000);
        assert_eq!(l.spurts.len(), 2, "{l:?}");
        let ms = |n: Nanos| n / 1_000_000;
        assert!(ms(l.spurts[0].0).abs_diff(500) <= 32, "{l:?}");
        assert!(ms(l.spurts[0].1).abs_diff(2800) <= 64, "{l:?}");
        assert!(ms(l.cycle_nanos).abs_diff(6_300 + 4_000) <= 32, "{l:?}");
        // The first utterance closes a hangover after its end; lengths include preroll and
        // hangover.
        let closed = l.closed_between(0, l.spurts[0].1 + HANGOVER_NANOS);
        assert_eq!(closed.len(), 1);
        assert_eq!(
            closed[0],
            l.spurts[0].1 - l.spurts[0].0 + PREROLL_NANOS + HANGOVER_NANOS
        );
        // Two loops close four utterances.
        assert_eq!(l.closed_between(0, 2 * l.cycle_nanos).len(), 4);
    }

    #[test]
    fn the_default_is_the_generated_talk_spurts() {
        let l = SpeechLoop::default();
        assert_eq!(l.closed_between(0, 35_000_000_000).len(), 10);
    }
}
