//! Whisper on one utterance in bounded steps, at the quality rung the book chose: the
//! log-mel spectrogram, the encoder a block at a time, the decoder a token at a time, each
//! step on the threads the scheduler granted it — the generic [`StepJob`] over Whisper's
//! [`mmsched_backends::StepModel`]. The session holds one transcription's window at a time
//! (the book runs one transcription at a time per session).

use std::sync::mpsc::Sender;

use mmsched_backends::asr::{AsrPlan, AsrSession};
use mmsched_backends::audio::AudioClip;
use mmsched_core::rungs::AsrRung;
use mmsched_runtime::sched::Work;

use super::Output;
use super::step::StepJob;
use crate::engines::Shared;

/// Encoder blocks per step: one, so an encoder step of a 30 s window stays within a few
/// frames' time (tiny.en has four blocks).
pub const ASR_LAYERS_PER_STEP: usize = 1;

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
    let clip = AudioClip {
        samples,
        sample_rate_hz: 16_000,
    };
    Box::new(StepJob::new(
        vec![model],
        "speech recognition",
        (clip, plan),
        false,
        Box::new(move |text: String, timing| Output::Asr {
            tag,
            text: text.trim().to_string(),
            timing,
        }),
        out,
    ))
}
