//! The PP-OCRv4 model files, settings and loading.

use std::path::PathBuf;

use super::ctc::Alphabet;
use super::det_post::DbParams;
use super::pre::DetInputSize;
use crate::backend::BackendError;
use crate::engine::{EngineOptions, OnnxSession, open_session};
use crate::paths;

/// Settings of the OCR pipeline.
#[derive(Debug, Clone, PartialEq)]
pub struct OcrConfig {
    /// Text detector ONNX file.
    pub det_path: PathBuf,
    /// Text recogniser ONNX file.
    pub rec_path: PathBuf,
    /// Detector input size.
    pub det_size: DetInputSize,
    /// DBNet post-processing thresholds.
    pub db: DbParams,
    /// Widest recogniser input before padding, pixels (longer lines are squeezed).
    pub rec_max_width: usize,
    /// Lines recognised per engine call at most, among lines of the same input width (so
    /// that each reads exactly as alone). 1, the default: one line per call, which was the
    /// fastest per line on this project's 2-core machine on both engines
    /// (`mmsched bench models --only ocr`, `ocr.rec_batch`).
    pub rec_batch: usize,
    /// Recognise only this many boxes, those the detector is most confident of (`None`:
    /// every box). A quality rung's line limit.
    pub max_lines: Option<usize>,
    /// Engine and threads.
    pub engine: EngineOptions,
}

impl Default for OcrConfig {
    fn default() -> Self {
        Self {
            det_path: paths::ppocr_det(),
            rec_path: paths::ppocr_rec(),
            det_size: DetInputSize::default(),
            db: DbParams::default(),
            rec_max_width: 1600,
            rec_batch: 1,
            max_lines: None,
            engine: EngineOptions::default(),
        }
    }
}

/// Opens the detector.
pub fn open_detector(config: &OcrConfig) -> Result<Box<dyn OnnxSession>, BackendError> {
    config.det_size.validate()?;
    open_session(&config.det_path, &config.engine)
}

/// Opens the recogniser and reads its alphabet from the metadata key `character`.
pub fn open_recognizer(
    config: &OcrConfig,
) -> Result<(Box<dyn OnnxSession>, Alphabet), BackendError> {
    let session = open_session(&config.rec_path, &config.engine)?;
    let characters = session.metadata("character").ok_or_else(|| {
        BackendError::load(
            config.rec_path.display(),
            "no `character` metadata: not a PP-OCR recogniser export",
        )
    })?;
    Ok((session, Alphabet::from_metadata(&characters)))
}

/// Approximate bytes held by the model weights (the file sizes).
pub fn weight_bytes(paths: &[&PathBuf]) -> u64 {
    paths
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum()
}
