//! Scene-text OCR with PP-OCRv4: DBNet detection, then SVTR/CTC recognition of each box.
//!
//! Runs on any ONNX engine ([`crate::engine`]); pre- and post-processing are engine-neutral.
//! A frame is read in one call ([`OcrPipeline`], a [`crate::Backend`]) or in bounded steps
//! ([`steps`]: detection, then a few lines per step), at a quality rung's detector input
//! and line limit. Known limits: boxes are axis-aligned (rotated text is read from its
//! upright bounding box) and the orientation classifier (`cls.onnx`) is not used, so
//! upside-down text is not corrected.

mod ctc;
mod det_post;
mod model;
mod pipeline;
mod pre;
mod session;
pub mod steps;

pub use ctc::Alphabet;
pub use det_post::{DbParams, RawBox, boxes_from_map};
pub use model::OcrConfig;
pub use pipeline::{OcrBreakdown, OcrPipeline, OcrPrepared, OcrRaw};
pub use pre::{
    DetInputSize, DetTensor, REC_HEIGHT, det_tensor, rec_batch_tensor, rec_input_width, rec_tensor,
};
pub use session::{
    DetRaw, OcrLine, RecognizedText, TextBox, TextDetector, TextRecognizer, batch_groups,
};
pub use steps::{OcrPlan, OcrReading, OcrStep, OcrStepKind};
