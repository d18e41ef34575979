//! Speech recognition: Whisper tiny.en on ggml (default) or candle.
//!
//! - [`audio`]: WAV reading, resampling to 16 kHz, the Slaney mel filterbank;
//! - [`mel`]: the log-mel spectrogram (candle's, computed faster);
//! - [`model`]: loading weights (q8_0 GGUF by default, or the float safetensors),
//!   configuration and tokenizer; [`AsrEngine`] picks which;
//! - [`ggml`]: the q8_0 Whisper on ggml (the default where llama.cpp is compiled in), its
//!   encoder in float32 on the `gemm` crate (`encoder`, `matmul`, `vecmath`);
//! - [`quantized`]: the q8_0 Whisper with a cached decoder on candle;
//! - [`wer`]: word error rate, to judge transcripts (from [`mmsched_core::score`]);
//! - [`session`]: [`AsrSession`], the [`Backend`](crate::Backend) implementation
//!   (log-mel, encoder, greedy decoding without timestamps, detokenising);
//! - [`steps`]: the same transcription advanced one bounded step at a time
//!   ([`AsrSession::begin`], [`AsrSession::step`], [`AsrSession::transcript`]).

pub mod audio;
#[cfg(feature = "llama")]
mod encoder;
#[cfg(feature = "llama")]
pub mod ggml;
#[cfg(feature = "llama")]
mod matmul;
pub mod mel;
pub mod model;
pub mod own;
pub mod quantized;
pub mod session;
pub mod steps;
#[cfg(feature = "llama")]
mod vecmath;
pub mod wer;

pub use audio::{AudioClip, read_wav, resample};
pub use model::{AsrEngine, AudioFeatures, EncoderPart, WhisperFiles, WhisperModel, WhisperNet};
pub use own::own_whisper;
pub use session::{AsrOptions, AsrSession, EncoderSpan, EngineParts, MelWindows};
pub use steps::{AsrPlan, AsrStep, AsrStepKind, Transcription};
pub use wer::word_error_rate;
