//! Where model files live: `$MMSCHED_HOME` (default `~/.cache/mmsched`), fixed layout.

use std::path::PathBuf;

/// The cache root: `$MMSCHED_HOME`, else `$HOME/.cache/mmsched`, else `.mmsched`.
pub fn mmsched_home() -> PathBuf {
    if let Some(home) = std::env::var_os("MMSCHED_HOME").filter(|v| !v.is_empty()) {
        return PathBuf::from(home);
    }
    match std::env::var_os("HOME").filter(|v| !v.is_empty()) {
        Some(home) => PathBuf::from(home).join(".cache").join("mmsched"),
        None => PathBuf::from(".mmsched"),
    }
}

/// `models/<name>` under the cache root.
pub fn model_dir(name: &str) -> PathBuf {
    mmsched_home().join("models").join(name)
}

/// PP-OCRv4 text detector (DBNet).
pub fn ppocr_det() -> PathBuf {
    model_dir("ppocr-v4").join("det.onnx")
}

/// PP-OCRv4 text recogniser (SVTR, CTC head).
pub fn ppocr_rec() -> PathBuf {
    model_dir("ppocr-v4").join("rec.onnx")
}

/// Silero VAD, the fixed-shape export without `If` nodes (the one tract runs).
pub fn silero_vad() -> PathBuf {
    model_dir("silero-vad").join("silero_vad_openvino_16k.onnx")
}

/// The ONNX Runtime shared library: `$ORT_DYLIB_PATH` if set, else the cached copy.
pub fn onnxruntime_lib() -> PathBuf {
    if let Some(p) = std::env::var_os("ORT_DYLIB_PATH").filter(|v| !v.is_empty()) {
        return PathBuf::from(p);
    }
    mmsched_home().join("lib").join("libonnxruntime.so.1.32.0")
}
