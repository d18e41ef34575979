//! Voice activity and Whisper as the simulator runs them.
//!
//! The VAD hears speech where a chunk's level is 10 dB above the noise floor of the audio
//! heard so far, the energy rule the microphone's model finds talk spurts with
//! ([`mmsched_world::mic::speech_threshold`]), in one step whose cost is drawn from the
//! profile's `vad` job. Whisper runs the real job's steps — `mel`, `encoder-stem`, the
//! encoder a block at a time, `encoder-cross`, a `decode` step per token — each drawn
//! from the profile's measured steps of its rung, or the utterance's cost split evenly
//! over them; its transcript is what was said where that is known, and is wrong with the
//! share of utterances the profile measured wrong at that rung.

use mmsched_backends::{BackendError, StepModel};
use mmsched_core::rungs::AsrRung;
use mmsched_core::time::Nanos;

use super::draws::{SharedDraws, lock};
use crate::stats::Kind;

/// The transcript of an utterance whose words are not known (generated talk spurts).
const UNKNOWN_SPEECH: &str = "turn left at the next sign";
/// Chunk levels kept for the noise floor: the last 64 s of audio.
const LEVELS_KEPT: usize = 2000;
/// Speech probability of a chunk heard as speech, and of one heard as silence.
const SPEECH_PROB: (f32, f32) = (0.95, 0.02);

/// The simulated voice-activity model.
#[derive(Debug)]
pub struct SimVad {
    /// The run's draws.
    pub draws: SharedDraws,
    /// The levels of the last chunks heard (digital silence left out: it is no room's
    /// noise), oldest first.
    levels: std::collections::VecDeque<f64>,
    /// The same levels in ascending order, kept sorted as chunks come and go: the floor
    /// is read every chunk (31 a second), and sorting the 2000 levels each time was a
    /// tenth of a simulated run's wall time.
    sorted: Vec<f64>,
}

impl SimVad {
    /// A voice-activity model drawing from `draws`, nothing heard yet.
    pub fn new(draws: SharedDraws) -> Self {
        Self {
            draws,
            levels: std::collections::VecDeque::new(),
            sorted: Vec::new(),
        }
    }

    /// Whether a chunk at level `rms` is speech against the floor heard so far (itself
    /// included).
    fn is_speech(&mut self, rms: f64) -> bool {
        if rms > 0.0 {
            if self.levels.len() == LEVELS_KEPT
                && let Some(old) = self.levels.pop_front()
            {
                let at = self.sorted.partition_point(|v| v.total_cmp(&old).is_lt());
                self.sorted.remove(at);
            }
            self.levels.push_back(rms);
            let at = self.sorted.partition_point(|v| v.total_cmp(&rms).is_lt());
            self.sorted.insert(at, rms);
        }
        rms > mmsched_world::mic::speech_threshold(&self.sorted)
    }
}

/// A chunk between begin and its one step: its level, and whether the step ran.
#[derive(Debug)]
pub struct SimChunk {
    rms: f64,
    ran: bool,
}

impl StepModel for SimVad {
    type Input = Vec<f32>;
    type Job = SimChunk;
    type Output = f32;

    const FIRST_STEP: &'static str = "run";

    fn begin(&mut self, chunk: Vec<f32>) -> Result<SimChunk, BackendError> {
        Ok(SimChunk {
            rms: level(&chunk),
            ran: false,
        })
    }

    fn next_step(job: &SimChunk) -> Option<&'static str> {
        (!job.ran).then_some(Self::FIRST_STEP)
    }

    fn step(&mut self, job: &mut SimChunk, _threads: usize) -> Result<(), BackendError> {
        let mut d = lock(&self.draws);
        let nanos = d.job(Kind::Vad);
        d.leave(Kind::Vad, nanos);
        job.ran = true;
        Ok(())
    }

    fn finish(&mut self, job: SimChunk) -> Result<f32, BackendError> {
        Ok(if self.is_speech(job.rms) {
            SPEECH_PROB.0
        } else {
            SPEECH_PROB.1
        })
    }
}

/// The root-mean-square level of `samples`.
fn level(samples: &[f32]) -> f64 {
    let n = samples.len().max(1) as f64;
    (samples
        .iter()
        .map(|&s| f64::from(s) * f64::from(s))
        .sum::<f64>()
        / n)
        .sqrt()
}

/// An utterance to transcribe.
#[derive(Debug)]
pub struct SimUtterance {
    /// Its length, seconds.
    pub seconds: f64,
    /// What was said in it, where known.
    pub said: Option<String>,
    /// The rung it runs at.
    pub rung: AsrRung,
}

/// A transcription between its steps: the steps left, last first.
#[derive(Debug)]
pub struct SimTranscription {
    utterance: SimUtterance,
    left: Vec<&'static str>,
    /// The utterance's cost, split over its steps, where the steps were not measured.
    even_split: Option<Nanos>,
}

/// The simulated Whisper session.
#[derive(Debug)]
pub struct SimAsr {
    /// The run's draws.
    pub draws: SharedDraws,
}

/// Encoder blocks of Whisper tiny.en, each a step.
const ENCODER_LAYERS: usize = 4;
/// Tokens decoded per second of speech, about, where the profile has no count (as the
/// real session hints its steps).
const TOKENS_PER_S: f64 = 3.0;

impl SimAsr {
    /// The steps of `u`, in order.
    fn plan(&self, u: &SimUtterance) -> Vec<&'static str> {
        let d = lock(&self.draws);
        let rung = (u.rung.name.as_str(), u.rung.params());
        let tokens = d
            .per_job(Kind::Asr, (rung.0, &rung.1), "decode")
            .unwrap_or(TOKENS_PER_S * u.seconds + 2.0)
            .round()
            .max(1.0) as usize;
        let mut steps = vec!["mel", "encoder-stem"];
        steps.extend(std::iter::repeat_n("encoder-layers", ENCODER_LAYERS));
        steps.push("encoder-cross");
        steps.extend(std::iter::repeat_n("decode", tokens));
        steps
    }
}

impl StepModel for SimAsr {
    type Input = SimUtterance;
    type Job = SimTranscription;
    type Output = String;

    const FIRST_STEP: &'static str = "mel";

    fn begin(&mut self, utterance: SimUtterance) -> Result<SimTranscription, BackendError> {
        let mut left = self.plan(&utterance);
        let params = utterance.rung.params();
        let measured = lock(&self.draws)
            .rung(Kind::Asr, &utterance.rung.name, &params)
            .is_some_and(|r| left.iter().all(|s| r.step(s).is_some()));
        let even_split = (!measured).then(|| lock(&self.draws).job(Kind::Asr) / left.len() as u64);
        left.reverse();
        Ok(SimTranscription {
            utterance,
            left,
            even_split,
        })
    }

    fn next_step(job: &SimTranscription) -> Option<&'static str> {
        job.left.last().copied()
    }

    fn step(&mut self, job: &mut SimTranscription, _threads: usize) -> Result<(), BackendError> {
        let Some(step) = job.left.pop() else {
            return Ok(());
        };
        let rung = (
            job.utterance.rung.name.as_str(),
            job.utterance.rung.params(),
        );
        let mut d = lock(&self.draws);
        let nanos = match job.even_split {
            Some(n) => n,
            None => d.step(Kind::Asr, (rung.0, &rung.1), step, 1).unwrap_or(0),
        };
        d.leave(Kind::Asr, nanos);
        Ok(())
    }

    fn finish(&mut self, job: SimTranscription) -> Result<String, BackendError> {
        let u = job.utterance;
        let said = u.said.unwrap_or_else(|| UNKNOWN_SPEECH.to_string());
        let mut d = lock(&self.draws);
        let right = d
            .correct_share(Kind::Asr, (&u.rung.name, &u.rung.params()))
            .unwrap_or(1.0);
        if d.chance(right) {
            return Ok(said);
        }
        // Misheard: every other word lost, past what the correct-transcript rule forgives.
        Ok(said
            .split_whitespace()
            .step_by(2)
            .collect::<Vec<_>>()
            .join(" "))
    }

    fn steps_hint(u: &SimUtterance) -> Option<u32> {
        let tokens = (TOKENS_PER_S * u.seconds + 2.0).round() as u32;
        Some(2 + ENCODER_LAYERS as u32 + 1 + tokens)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use mmsched_backends::step::run_to_end;
    use mmsched_core::rungs::{EncoderSpan, Rungs};
    use mmsched_scenario::Scenario;
    use mmsched_world::profile::Profile;

    use super::super::draws::Draws;
    use super::*;

    fn draws() -> SharedDraws {
        let s = Scenario::load("ar-glasses").expect("shipped");
        Arc::new(Mutex::new(
            Draws::new(&s, &Profile::reference(), 9).expect("figures"),
        ))
    }

    #[test]
    fn speech_is_heard_above_the_rooms_noise_floor_and_digital_silence_is_no_floor() {
        let mut vad = SimVad::new(draws());
        let chunk = |amp: f32| vec![amp; 512];
        // A second of faint room noise sets the floor; silence does not lower it.
        for _ in 0..30 {
            assert!(run_to_end(&mut vad, chunk(0.001)).expect("runs") < 0.5);
            assert!(run_to_end(&mut vad, chunk(0.0)).expect("runs") < 0.5);
        }
        assert!(run_to_end(&mut vad, chunk(0.05)).expect("runs") > 0.5);
        assert!(run_to_end(&mut vad, chunk(0.002)).expect("runs") < 0.5);
    }

    #[test]
    fn the_kept_levels_stay_sorted_as_the_oldest_leave() {
        let mut vad = SimVad::new(draws());
        // More chunks than are kept, at levels in no order, some repeated.
        for k in 0..(LEVELS_KEPT + 500) {
            vad.is_speech(((k * 7919) % 1013) as f64 * 1e-4 + 1e-4);
        }
        let mut expected: Vec<f64> = vad.levels.iter().copied().collect();
        expected.sort_by(f64::total_cmp);
        assert_eq!(vad.sorted, expected);
    }

    #[test]
    fn a_transcription_runs_whispers_steps_and_says_what_was_said() {
        let mut asr = SimAsr { draws: draws() };
        let rung = Rungs::default().asr()[0].clone();
        assert_eq!(rung.span, EncoderSpan::Window);
        let u = SimUtterance {
            seconds: 2.0,
            said: Some("turn right".into()),
            rung,
        };
        let hint = SimAsr::steps_hint(&u);
        let mut job = asr.begin(u).expect("begins");
        let mut labels = Vec::new();
        while let Some(step) = SimAsr::next_step(&job) {
            labels.push(step);
            asr.step(&mut job, 1).expect("steps");
            assert!(lock(&asr.draws).take().is_some_and(|(n, _)| n > 0));
        }
        assert_eq!(&labels[..3], ["mel", "encoder-stem", "encoder-layers"]);
        assert_eq!(labels.iter().filter(|&&l| l == "encoder-layers").count(), 4);
        assert_eq!(labels.last(), Some(&"decode"));
        assert_eq!(Some(labels.len() as u32), hint);
        // The reference profile measured no rung wrong.
        assert_eq!(asr.finish(job).expect("finishes"), "turn right");
    }
}
