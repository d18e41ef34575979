//! Whisper on one utterance in bounded steps, at the quality rung the book chose: the
//! log-mel spectrogram, the encoder a block at a time, the decoder a token at a time, each
//! step on the threads the scheduler granted it. The session holds one transcription's
//! window at a time (the book runs one transcription at a time per session).

use std::sync::mpsc::Sender;

use mmsched_backends::asr::{AsrPlan, AsrSession, Transcription};
use mmsched_backends::audio::AudioClip;
use mmsched_backends::probe::StageTiming;
use mmsched_core::rungs::AsrRung;
use mmsched_core::time::{Clock, MonotonicClock, Nanos};
use mmsched_runtime::sched::{StepOutcome, Work, WorkError};

use super::{Output, work_error};
use crate::engines::{Shared, lock};

/// Encoder blocks per step: one, so an encoder step of a 30 s window stays within a few
/// frames' time (tiny.en has four blocks).
pub const ASR_LAYERS_PER_STEP: usize = 1;

/// Encoder blocks of Whisper tiny.en, for [`Work::steps_hint`] (a hint: another model's
/// count only moves the first prediction, which measurements replace).
const TINY_ENCODER_LAYERS: usize = 4;

/// Tokens Whisper decodes per second of speech, about (for [`Work::steps_hint`]).
const SPOKEN_TOKENS_PER_S: u64 = 3;

/// Whisper on `samples` (16 kHz mono) at `rung`.
pub fn asr(
    model: Shared<AsrSession>,
    samples: Vec<f32>,
    rung: &AsrRung,
    tag: u64,
    out: Sender<Output>,
) -> Box<dyn Work> {
    let plan = AsrPlan {
        span: rung.span,
        layers_per_step: ASR_LAYERS_PER_STEP,
    };
    let steps = steps_of(samples.len(), plan);
    Box::new(AsrWork {
        model,
        clip: Some(AudioClip {
            samples,
            sample_rate_hz: 16_000,
        }),
        plan,
        steps,
        transcription: None,
        tag,
        out,
        granted: 1,
        nanos: 0,
    })
}

/// About how many steps a transcription of `samples` (16 kHz) takes under `plan`: the
/// log-mel and encoder stem, the encoder's blocks, its cross step and a decoding step per
/// token spoken, and two more.
fn steps_of(samples: usize, plan: AsrPlan) -> u32 {
    let seconds = samples as u64 / 16_000;
    let encoder = TINY_ENCODER_LAYERS.div_ceil(plan.layers_per_step.max(1)) as u64;
    let tokens = SPOKEN_TOKENS_PER_S * seconds + 2;
    u32::try_from(2 + encoder + 1 + tokens).unwrap_or(u32::MAX)
}

struct AsrWork {
    model: Shared<AsrSession>,
    /// The audio, until the transcription begins.
    clip: Option<AudioClip>,
    plan: AsrPlan,
    /// About how many steps the whole transcription takes ([`steps_of`]).
    steps: u32,
    transcription: Option<Transcription>,
    tag: u64,
    out: Sender<Output>,
    /// Intra-op threads granted for the next step.
    granted: usize,
    /// Time the steps took so far.
    nanos: Nanos,
}

impl Work for AsrWork {
    fn grant_threads(&mut self, threads: usize) {
        self.granted = threads.max(1);
    }

    fn next_step(&self) -> Option<&'static str> {
        Some(
            self.transcription
                .as_ref()
                .and_then(Transcription::next_step)
                .map_or("mel", |k| k.as_str()),
        )
    }

    fn steps_hint(&self) -> Option<u32> {
        Some(self.steps)
    }

    fn step(&mut self) -> Result<StepOutcome, WorkError> {
        let clock = MonotonicClock::new();
        let t0 = clock.now_nanos();
        let fail = |e| work_error("speech recognition", e);
        let mut session = lock(&self.model);
        if let Some(clip) = self.clip.take() {
            self.transcription = Some(session.begin(clip, self.plan).map_err(fail)?);
        }
        let Some(t) = &mut self.transcription else {
            return Err(WorkError::Cancelled {
                why: "the utterance's transcription ended before",
            });
        };
        let step = session.step(t, self.granted).map_err(fail)?;
        self.nanos += clock.now_nanos().saturating_sub(t0);
        if !step.finished {
            return Ok(StepOutcome::Yield);
        }
        let Some(t) = self.transcription.take() else {
            return Ok(StepOutcome::Finished);
        };
        let text = session.transcript(t).map_err(fail)?;
        let timing = StageTiming {
            exec_nanos: self.nanos,
            ..StageTiming::default()
        };
        let _ = self.out.send(Output::Asr {
            tag: self.tag,
            text: text.trim().to_string(),
            timing,
        });
        Ok(StepOutcome::Finished)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mmsched_backends::asr::EncoderSpan;

    #[test]
    fn a_transcription_hints_its_steps_from_its_length() {
        let plan = AsrPlan {
            span: EncoderSpan::Window,
            layers_per_step: 1,
        };
        // 3 s: log-mel and stem, four blocks, the cross step, 3 × 3 + 2 tokens.
        assert_eq!(steps_of(3 * 16_000, plan), 2 + 4 + 1 + 11);
        // Two blocks a step halve the encoder's steps; silence still decodes two tokens.
        let two = AsrPlan {
            layers_per_step: 2,
            ..plan
        };
        assert_eq!(steps_of(0, two), 2 + 2 + 1 + 2);
    }
}
