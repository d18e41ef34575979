//! A transcription advanced one bounded step at a time, so that a scheduler can run a due
//! frame or audio chunk between two of its steps on the same worker.
//!
//! [`AsrSession::begin`] checks the clip and returns a [`Transcription`], a value the caller
//! holds; each [`AsrSession::step`] runs the next step on the threads granted to it, and
//! [`AsrSession::transcript`] turns the finished transcription into its text. The steps,
//! in order ([`AsrStepKind`]):
//!
//! 1. `mel`: resampling to 16 kHz and the log-mel spectrogram of every 30 s window;
//! 2. per window, the encoder: on the ggml engine `encoder-stem` (the convolutions), then
//!    `encoder-layers` ([`AsrPlan::layers_per_step`] blocks a step), then `encoder-cross`
//!    (the decoder's cross-attention keys and values); on the candle engines one `encoder`
//!    step;
//! 3. per window, `decode`: one greedy token a step, until end-of-text.
//!
//! The steps do exactly the work of the one-shot path ([`crate::Backend::execute`]), in the
//! same order and on the same code, so the transcript is the same (`tests/asr_steps.rs`).
//!
//! **State between steps**: the transcription holds its audio, mel windows and tokens; the
//! session's engine holds the current window's encoder activations and decoder caches.
//! A session therefore runs one transcription's window at a time: if another
//! transcription's window (or a one-shot call) ran on the session in between, the next
//! step of this one fails with an error saying so, instead of decoding from another
//! window's state. Transcriptions on different sessions are independent.

use std::sync::atomic::{AtomicU64, Ordering};

use candle_core::Tensor;
use serde::Serialize;

use crate::asr::audio::AudioClip;
use crate::asr::model::{AudioFeatures, EncoderPart, WhisperModel};
use crate::asr::session::{
    AsrSession, EncoderSpan, MAX_TOKENS_PER_WINDOW, check_clip, mel_windows, next_token, prefix,
};
use crate::backend::{Backend, BackendError};
use crate::threads::EngineThreads;

/// Transcription numbers, unique in the process (a transcription may meet any session).
static NEXT_TICKET: AtomicU64 = AtomicU64::new(1);

/// The kinds of step a transcription runs, each with its own cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum AsrStepKind {
    /// Resampling and the log-mel spectrogram of the whole clip.
    Mel,
    /// The encoder's two convolutions over one window (ggml engine).
    EncoderStem,
    /// A group of encoder blocks (ggml engine).
    EncoderLayers,
    /// The final norm and the decoder's cross-attention keys and values (ggml engine).
    EncoderCross,
    /// The whole encoder of one window (candle engines).
    Encoder,
    /// One decoded token (or the step that finds the window's end-of-text).
    Decode,
}

impl AsrStepKind {
    /// Every kind, in the order a window runs them.
    pub const ALL: [AsrStepKind; 6] = [
        AsrStepKind::Mel,
        AsrStepKind::EncoderStem,
        AsrStepKind::EncoderLayers,
        AsrStepKind::EncoderCross,
        AsrStepKind::Encoder,
        AsrStepKind::Decode,
    ];

    /// The kind's name in profiles and traces (`mel`, `encoder-stem`, `encoder-layers`,
    /// `encoder-cross`, `encoder`, `decode`).
    pub fn as_str(self) -> &'static str {
        match self {
            AsrStepKind::Mel => "mel",
            AsrStepKind::EncoderStem => "encoder-stem",
            AsrStepKind::EncoderLayers => "encoder-layers",
            AsrStepKind::EncoderCross => "encoder-cross",
            AsrStepKind::Encoder => "encoder",
            AsrStepKind::Decode => "decode",
        }
    }
}

/// How one transcription runs: its quality rung and how its encoder is cut into steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AsrPlan {
    /// What the encoder runs over (the rung).
    pub span: EncoderSpan,
    /// Encoder blocks per `encoder-layers` step, at least 1 (Whisper tiny.en has 4).
    pub layers_per_step: usize,
}

impl Default for AsrPlan {
    /// The whole window, one encoder block a step.
    fn default() -> Self {
        Self {
            span: EncoderSpan::Window,
            layers_per_step: 1,
        }
    }
}

/// Where a transcription is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Mel,
    Stem,
    /// `done` blocks of the window's encoder have run.
    Layers {
        done: usize,
    },
    Cross,
    Encoder,
    Decode,
    Done,
    /// A step failed; nothing more runs.
    Failed,
}

/// One transcription advanced in steps: what it has computed so far. Held by the caller
/// between steps; see the [module documentation](self).
#[derive(Debug)]
pub struct Transcription {
    ticket: u64,
    plan: AsrPlan,
    /// The clip, until the `mel` step has read it.
    audio: Option<AudioClip>,
    windows: Vec<Tensor>,
    window: usize,
    phase: Phase,
    features: Option<AudioFeatures>,
    /// The current window's tokens, its prefix included.
    tokens: Vec<u32>,
    /// How many of them are the prefix ([`super::session::prefix`]).
    prefix: usize,
    /// The tokens of the windows already decoded.
    decoded: Vec<Vec<u32>>,
}

impl Transcription {
    /// The kind of the next step, or `None` when the transcription is finished (or failed).
    pub fn next_step(&self) -> Option<AsrStepKind> {
        match self.phase {
            Phase::Mel => Some(AsrStepKind::Mel),
            Phase::Stem => Some(AsrStepKind::EncoderStem),
            Phase::Layers { .. } => Some(AsrStepKind::EncoderLayers),
            Phase::Cross => Some(AsrStepKind::EncoderCross),
            Phase::Encoder => Some(AsrStepKind::Encoder),
            Phase::Decode => Some(AsrStepKind::Decode),
            Phase::Done | Phase::Failed => None,
        }
    }

    /// Whether every step has run ([`AsrSession::transcript`] gives the text).
    pub fn is_finished(&self) -> bool {
        self.phase == Phase::Done
    }

    /// The plan it runs.
    pub fn plan(&self) -> AsrPlan {
        self.plan
    }

    /// Its 30 s windows (0 before the `mel` step).
    pub fn windows(&self) -> usize {
        self.windows.len()
    }

    /// Tokens decoded so far, over every window.
    pub fn decoded_tokens(&self) -> usize {
        self.decoded.iter().map(Vec::len).sum::<usize>()
            + self.tokens.len().saturating_sub(self.prefix)
    }
}

/// What one step did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AsrStep {
    /// Its kind.
    pub kind: AsrStepKind,
    /// The threads it ran on: the grant on the ggml engine, the session's pool on candle's.
    pub threads: usize,
    /// Whether the transcription is now finished.
    pub finished: bool,
}

/// The engine parts one step uses.
struct Engine<'a> {
    whisper: &'a mut WhisperModel,
    suppress: &'a Tensor,
    suppress_first: &'a Tensor,
    owner: &'a mut Option<u64>,
    pool: &'a EngineThreads,
}

impl Engine<'_> {
    /// Fails unless the engine still holds `t`'s window.
    fn check_owner(&self, t: &Transcription) -> Result<(), BackendError> {
        if *self.owner == Some(t.ticket) {
            return Ok(());
        }
        Err(BackendError::InvalidInput(
            "another transcription (or a one-shot call) ran on this Whisper session since this transcription's window started, and the engine holds only one window: run one transcription at a time per session, or begin this one again".into(),
        ))
    }

    /// The phase a window starts in.
    fn first_phase(&self) -> Phase {
        if self.whisper.net.encoder_parts().is_some() {
            Phase::Stem
        } else {
            Phase::Encoder
        }
    }

    /// Runs `t`'s next step.
    fn advance(&mut self, t: &mut Transcription) -> Result<(), BackendError> {
        match t.phase {
            Phase::Mel => {
                let clip = t.audio.take().ok_or_else(|| {
                    BackendError::InvalidInput("the transcription has no audio left".into())
                })?;
                t.windows = mel_windows(self.whisper, &clip, t.plan.span, self.pool)?;
                t.window = 0;
                t.phase = self.first_phase();
            }
            Phase::Stem => {
                *self.owner = None;
                let mel = &t.windows[t.window];
                self.whisper.net.encode_part(EncoderPart::Stem(mel))?;
                *self.owner = Some(t.ticket);
                t.phase = Phase::Layers { done: 0 };
            }
            Phase::Layers { done } => {
                self.check_owner(t)?;
                let layers = self.whisper.net.encoder_parts().unwrap_or(0);
                let count = t.plan.layers_per_step.min(layers.saturating_sub(done));
                self.whisper.net.encode_part(EncoderPart::Layers(count))?;
                let done = done + count;
                t.phase = if done >= layers {
                    Phase::Cross
                } else {
                    Phase::Layers { done }
                };
            }
            Phase::Cross => {
                self.check_owner(t)?;
                self.whisper.net.encode_part(EncoderPart::Cross)?;
                self.start_decoding(t, AudioFeatures::InEngine);
            }
            Phase::Encoder => {
                *self.owner = None;
                let features = self.whisper.net.start_window(&t.windows[t.window])?;
                *self.owner = Some(t.ticket);
                self.start_decoding(t, features);
            }
            Phase::Decode => {
                self.check_owner(t)?;
                let features = t.features.as_ref().ok_or_else(|| {
                    BackendError::InvalidInput("the window has no audio features".into())
                })?;
                let next = next_token(
                    self.whisper,
                    self.suppress,
                    self.suppress_first,
                    &t.tokens,
                    features,
                )?;
                match next {
                    Some(token) => {
                        t.tokens.push(token);
                        if t.tokens.len() - t.prefix >= MAX_TOKENS_PER_WINDOW {
                            self.end_window(t);
                        }
                    }
                    None => self.end_window(t),
                }
            }
            Phase::Done | Phase::Failed => {
                return Err(BackendError::InvalidInput(
                    "the transcription has no step left: take its text with AsrSession::transcript"
                        .into(),
                ));
            }
        }
        Ok(())
    }

    fn start_decoding(&self, t: &mut Transcription, features: AudioFeatures) {
        t.features = Some(features);
        t.tokens = prefix(self.whisper);
        t.prefix = t.tokens.len();
        t.phase = Phase::Decode;
    }

    /// Keeps the window's tokens and moves to the next window, or finishes.
    fn end_window(&self, t: &mut Transcription) {
        let tokens = std::mem::take(&mut t.tokens).split_off(t.prefix);
        t.decoded.push(tokens);
        t.features = None;
        t.window += 1;
        t.phase = if t.window < t.windows.len() {
            self.first_phase()
        } else {
            Phase::Done
        };
    }
}

impl AsrSession {
    /// Starts transcribing `clip` in steps with `plan`. Checks the clip (the same checks as
    /// the one-shot path) and the plan; computes nothing yet.
    pub fn begin(&mut self, clip: AudioClip, plan: AsrPlan) -> Result<Transcription, BackendError> {
        check_clip(&clip)?;
        if plan.layers_per_step == 0 {
            return Err(BackendError::InvalidInput(
                "layers_per_step is 0: an encoder step runs at least one block".into(),
            ));
        }
        Ok(Transcription {
            ticket: NEXT_TICKET.fetch_add(1, Ordering::Relaxed),
            plan,
            audio: Some(clip),
            windows: Vec::new(),
            window: 0,
            phase: Phase::Mel,
            features: None,
            tokens: Vec::new(),
            prefix: 0,
            decoded: Vec::new(),
        })
    }

    /// Runs `t`'s next step on `threads` threads (the ggml engine takes the grant, as
    /// [`Backend::grant_threads`]; candle's engines keep their pool). A failed step leaves
    /// the transcription failed: it runs no further step.
    pub fn step(&mut self, t: &mut Transcription, threads: usize) -> Result<AsrStep, BackendError> {
        let kind = t.next_step().ok_or_else(|| {
            BackendError::InvalidInput(if t.phase == Phase::Failed {
                "a step of this transcription failed before: begin it again".into()
            } else {
                "the transcription is finished: take its text with AsrSession::transcript".into()
            })
        })?;
        let threads = self.grant_threads(threads).unwrap_or(self.threads());
        let mut engine = Engine {
            whisper: &mut self.whisper,
            suppress: &self.suppress,
            suppress_first: &self.suppress_first,
            owner: &mut self.engine_owner,
            pool: &self.threads,
        };
        // On the session's pool, as the one-shot path runs (candle's engines compute on it).
        let result = self.threads.install(|| engine.advance(t));
        if let Err(e) = result {
            t.phase = Phase::Failed;
            return Err(e);
        }
        Ok(AsrStep {
            kind,
            threads,
            finished: t.is_finished(),
        })
    }

    /// The text of a finished transcription (post-processing: detokenising).
    pub fn transcript(&mut self, t: Transcription) -> Result<String, BackendError> {
        if !t.is_finished() {
            return Err(BackendError::InvalidInput(format!(
                "the transcription is not finished (next step: {}): run its steps first",
                t.next_step().map_or("none, it failed", AsrStepKind::as_str)
            )));
        }
        self.detokenize(&t.decoded)
    }

    /// Encoder blocks of the loaded model (each `encoder-layers` step runs
    /// [`AsrPlan::layers_per_step`] of them on the ggml engine).
    pub fn encoder_layers(&self) -> usize {
        self.whisper.config.encoder_layers
    }
}

/// Encoder blocks of Whisper tiny.en, for [`StepModel::steps_hint`] (a hint: another
/// model's count only moves the first prediction, which measurements replace).
const TINY_ENCODER_LAYERS: usize = 4;

/// Tokens Whisper decodes per second of speech, about (for [`StepModel::steps_hint`]).
const SPOKEN_TOKENS_PER_S: u64 = 3;

/// Whisper as a step model: an utterance and its plan in; the log-mel, the encoder a block
/// at a time and the decoder a token at a time, each on the threads granted; the text out.
impl crate::step::StepModel for AsrSession {
    type Input = (AudioClip, AsrPlan);
    type Job = Transcription;
    type Output = String;

    const FIRST_STEP: &'static str = "mel";

    fn begin(&mut self, (clip, plan): Self::Input) -> Result<Transcription, BackendError> {
        AsrSession::begin(self, clip, plan)
    }

    fn next_step(job: &Transcription) -> Option<&'static str> {
        job.next_step().map(AsrStepKind::as_str)
    }

    fn step(&mut self, job: &mut Transcription, threads: usize) -> Result<(), BackendError> {
        AsrSession::step(self, job, threads).map(|_| ())
    }

    fn finish(&mut self, job: Transcription) -> Result<String, BackendError> {
        self.transcript(job)
    }

    /// The log-mel and encoder stem, the encoder's blocks, its cross step and a decoding
    /// step per token spoken, and two more.
    fn steps_hint((clip, plan): &Self::Input) -> Option<u32> {
        let seconds = clip.samples.len() as u64 / u64::from(clip.sample_rate_hz.max(1));
        let encoder = TINY_ENCODER_LAYERS.div_ceil(plan.layers_per_step.max(1)) as u64;
        let tokens = SPOKEN_TOKENS_PER_S * seconds + 2;
        Some(u32::try_from(2 + encoder + 1 + tokens).unwrap_or(u32::MAX))
    }
}

#[cfg(test)]
mod step_hint_tests {
    use super::*;
    use crate::asr::EncoderSpan;
    use crate::step::StepModel;

    fn clip(seconds: usize) -> AudioClip {
        AudioClip {
            samples: vec![0.0; seconds * 16_000],
            sample_rate_hz: 16_000,
        }
    }

    #[test]
    fn a_transcription_hints_its_steps_from_its_length() {
        let plan = AsrPlan {
            span: EncoderSpan::Window,
            layers_per_step: 1,
        };
        // 3 s: log-mel and stem, four blocks, the cross step, 3 × 3 + 2 tokens.
        assert_eq!(
            AsrSession::steps_hint(&(clip(3), plan)),
            Some(2 + 4 + 1 + 11)
        );
        // Two blocks a step halve the encoder's steps; silence still decodes two tokens.
        let two = AsrPlan {
            layers_per_step: 2,
            ..plan
        };
        assert_eq!(AsrSession::steps_hint(&(clip(0), two)), Some(2 + 2 + 1 + 2));
    }
}
