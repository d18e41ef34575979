//! Voice activity detection with Silero VAD (the cheap always-on audio stream, S4 gate for
//! speech recognition).
//!
//! The fixed-shape export (`silero_vad_openvino_16k.onnx`, no `If` node) runs on tract and
//! ONNX Runtime alike: 512 new samples (32 ms at 16 kHz) plus the previous chunk's last 64
//! samples per call, with a `[2, 1, 128]` recurrent state carried between calls.

mod model;
mod segments;
mod session;

pub use model::{CHUNK_MICROS, CHUNK_SAMPLES, CONTEXT_SAMPLES, STATE_LEN, VadConfig};
pub use segments::{SegmentParams, SpeechSegment, speech_segments};
pub use session::{SileroVad, VadPrepared, VadRaw};
