//! Where the ONNX engines' model files live: the catalogue of `mmsched-models` decides (the
//! fixed cache layout under `$MMSCHED_HOME`, or a user's own file through
//! `MMSCHED_MODEL_<NAME>`), so every command finds a model where `models fetch` put it.

use std::path::PathBuf;

use mmsched_models::Artifact;

/// The cache root: `$MMSCHED_HOME`, else `$HOME/.cache/mmsched`.
pub fn mmsched_home() -> PathBuf {
    mmsched_models::cache_dir()
}

/// PP-OCRv4 text detector (DBNet).
pub fn ppocr_det() -> PathBuf {
    mmsched_models::path_of(Artifact::PpocrDet)
}

/// PP-OCRv4 text recogniser (SVTR, CTC head).
pub fn ppocr_rec() -> PathBuf {
    mmsched_models::path_of(Artifact::PpocrRec)
}

/// Silero VAD, the fixed-shape export without `If` nodes (the one tract runs).
pub fn silero_vad() -> PathBuf {
    mmsched_models::path_of(Artifact::SileroVadOpenvino16k)
}

/// The ONNX Runtime shared library: `$ORT_DYLIB_PATH` if set, else the cached copy.
pub fn onnxruntime_lib() -> PathBuf {
    if let Some(p) = std::env::var_os("ORT_DYLIB_PATH").filter(|v| !v.is_empty()) {
        return PathBuf::from(p);
    }
    mmsched_models::path_of(Artifact::OnnxRuntime)
}
