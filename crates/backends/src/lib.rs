//! # mmsched-backends
//!
//! Real inference engines behind one small trait, [`Backend`], and the uniform timing probe
//! of S8 ([`probe::run_timed`]) that measures pre-processing, execution and post-processing
//! of every inference the same way, whatever the engine.
#![deny(missing_docs)]

#[cfg(feature = "candle")]
pub mod asr;
pub mod backend;
#[cfg(feature = "candle")]
pub mod llm;
pub mod probe;
#[cfg(feature = "candle")]
pub mod threads;

pub use backend::{Backend, BackendError};
pub use probe::{StageTiming, run_timed};
