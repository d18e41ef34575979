//! The Silero VAD model file, its fixed shapes and loading.

use std::path::PathBuf;

use crate::backend::BackendError;
use crate::engine::{EngineOptions, OnnxSession, open_session};
use crate::paths;

/// New samples per chunk at 16 kHz (32 ms).
pub const CHUNK_SAMPLES: usize = 512;
/// Samples of the previous chunk prepended to each input (Silero v5+ expects them).
pub const CONTEXT_SAMPLES: usize = 64;
/// Recurrent state: `[2, 1, 128]`.
pub const STATE_SHAPE: [usize; 3] = [2, 1, 128];
/// Length of the recurrent state.
pub const STATE_LEN: usize = 2 * 128;
/// Duration of one chunk, microseconds.
pub const CHUNK_MICROS: u64 = CHUNK_SAMPLES as u64 * 1_000_000 / 16_000;

/// Settings of the VAD.
#[derive(Debug, Clone, PartialEq)]
pub struct VadConfig {
    /// The ONNX file (the fixed-shape `silero_vad_openvino_16k.onnx`: inputs `input [1, 576]`
    /// and `state [2, 1, 128]`, outputs `output [1, 1]` and `stateN [2, 1, 128]`).
    pub path: PathBuf,
    /// Engine and threads.
    pub engine: EngineOptions,
}

impl Default for VadConfig {
    fn default() -> Self {
        Self {
            path: paths::silero_vad(),
            engine: EngineOptions::default(),
        }
    }
}

/// Opens the model.
pub fn open(config: &VadConfig) -> Result<Box<dyn OnnxSession>, BackendError> {
    open_session(&config.path, &config.engine)
}
