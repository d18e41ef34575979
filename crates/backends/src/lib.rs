//! # mmsched-backends
//!
//! Real inference engines behind one small trait, [`Backend`], and the uniform timing probe
//! of S8 ([`probe::run_timed`]) that measures pre-processing, execution and post-processing
//! of every inference the same way, whatever the engine.
//!
//! | module | job |
//! |---|---|
//! | [`engine`] | choosing an ONNX engine (tract / ONNX Runtime) and its threads |
//! | `tract`, `ort` | the ONNX engines (cargo features `tract` and `ort`, both default; ONNX Runtime preferred where its library loads) |
//! | [`step`] | the step-model trait every model the scheduler runs implements |
//! | [`ocr`] | PP-OCRv4 text detection + recognition |
//! | [`onnx`] | the user's own ONNX models: inputs read from the graph, images pre-processed, classes ranked |
//! | [`vad`] | Silero voice activity detection |
//! | [`gate`] | the cheap blur / darkness routing gate for frames (S4) |
//! | [`profile`] | device latency profiles (P50/P95/P99 per stage) and how to measure them |
//! | `rung_profile` | measuring a quality rung's step and job costs and its accuracy |
//! | [`frame`], [`audio`] | image and WAV inputs |
#![deny(missing_docs)]

#[cfg(feature = "candle")]
pub mod asr;
pub mod audio;
pub mod backend;
pub mod engine;
pub mod frame;
pub mod gate;
#[cfg(feature = "candle")]
pub mod llm;
pub mod ocr;
pub mod onnx;
#[cfg(feature = "ort")]
pub mod ort;
pub mod paths;
pub mod probe;
pub mod profile;
#[cfg(feature = "candle")]
pub mod rung_profile;
pub mod step;
pub mod tensor;
#[cfg(feature = "candle")]
pub mod threads;
#[cfg(feature = "tract")]
pub mod tract;
pub mod vad;

pub use backend::{Backend, BackendError, Cause};
/// The tensor library of the candle engine (Whisper, Gemma-3), for callers that drive the
/// models directly (benchmarks) without adding their own dependency on it.
#[cfg(feature = "candle")]
pub use candle_core;
pub use engine::{EngineKind, EngineOptions, OnnxSession, open_session};
pub use frame::RgbFrame;
pub use probe::{StageTiming, run_timed};
pub use step::StepModel;
pub use tensor::{DataType, TensorF32, TensorInfo};
