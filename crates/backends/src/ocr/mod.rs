//! Scene-text OCR with PP-OCRv4: DBNet detection, then SVTR/CTC recognition of each box.
//!
//! Runs on any ONNX engine ([`crate::engine`]); pre- and post-processing are engine-neutral.
//! Known limits: boxes are axis-aligned (rotated text is read from its upright bounding
//! box) and the orientation classifier (`cls.onnx`) is not used, so upside-down text is
//! not corrected.

mod ctc;
mod det_post;
mod model;
mod pre;
mod session;

pub use ctc::Alphabet;
pub use det_post::{DbParams, RawBox, boxes_from_map};
pub use model::OcrConfig;
pub use pre::{DetInputSize, DetTensor, REC_HEIGHT, det_tensor, rec_tensor};
pub use session::{
    DetRaw, OcrBreakdown, OcrLine, OcrPipeline, OcrPrepared, OcrRaw, RecognizedText, TextBox,
    TextDetector, TextRecognizer,
};
