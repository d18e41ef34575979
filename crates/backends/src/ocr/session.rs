//! The OCR backends: detector, recogniser and the two chained (image in, lines out).

use mmsched_core::time::{Clock, MonotonicClock, Nanos};
use serde::Serialize;

use super::ctc::Alphabet;
use super::det_post::{RawBox, boxes_from_map};
use super::model::{OcrConfig, open_detector, open_recognizer, weight_bytes};
use super::pre::{DetTensor, det_tensor, rec_tensor};
use crate::backend::{Backend, BackendError};
use crate::engine::OnnxSession;
use crate::frame::RgbFrame;
use crate::tensor::TensorF32;

/// One recognised text line.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OcrLine {
    /// The text read.
    pub text: String,
    /// Mean character probability, 0..1.
    pub score: f32,
    /// Corners in frame pixels, clockwise from top-left: `[[x, y]; 4]`.
    #[serde(rename = "box")]
    pub corners: [[f32; 2]; 4],
    /// Detector confidence for the box, 0..1.
    pub box_score: f32,
}

/// A detected text box in frame pixels.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TextBox {
    /// `[x0, y0, x1, y1]`, frame pixels.
    pub rect: [f32; 4],
    /// Detector confidence, 0..1.
    pub score: f32,
}

impl TextBox {
    /// The four corners clockwise from top-left.
    pub fn corners(&self) -> [[f32; 2]; 4] {
        let [x0, y0, x1, y1] = self.rect;
        [[x0, y0], [x1, y0], [x1, y1], [x0, y1]]
    }
}

fn single_output(mut outputs: Vec<TensorF32>, what: &str) -> Result<TensorF32, BackendError> {
    if outputs.is_empty() {
        return Err(BackendError::engine(
            "PP-OCRv4",
            format!("{what} returned no output"),
        ));
    }
    Ok(outputs.swap_remove(0))
}

fn to_frame_boxes(raw: &[RawBox], det: &DetTensor) -> Vec<TextBox> {
    raw.iter()
        .map(|b| TextBox {
            rect: [
                b.x0 * det.scale_x,
                b.y0 * det.scale_y,
                b.x1 * det.scale_x,
                b.y1 * det.scale_y,
            ],
            score: b.score,
        })
        .collect()
}

/// PP-OCRv4 text detection alone: frame in, boxes out.
pub struct TextDetector {
    session: Box<dyn OnnxSession>,
    config: OcrConfig,
    bytes: u64,
}

impl std::fmt::Debug for TextDetector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TextDetector")
            .field("config", &self.config)
            .finish()
    }
}

impl TextDetector {
    /// Loads the detector named in `config`.
    pub fn new(config: OcrConfig) -> Result<Self, BackendError> {
        let session = open_detector(&config)?;
        let bytes = weight_bytes(&[&config.det_path]);
        Ok(Self {
            session,
            config,
            bytes,
        })
    }

    /// The engine session (for benchmarks comparing against direct engine calls).
    pub fn session_mut(&mut self) -> &mut dyn OnnxSession {
        self.session.as_mut()
    }
}

/// The detector's raw output: the probability map with its geometry.
#[derive(Debug, Clone)]
pub struct DetRaw {
    map: TensorF32,
    geometry: DetTensor,
}

impl Backend for TextDetector {
    type Input = RgbFrame;
    type Prepared = DetTensor;
    type Raw = DetRaw;
    type Output = Vec<TextBox>;

    fn name(&self) -> &str {
        "ppocr-v4-det"
    }

    fn prepare(&mut self, input: &RgbFrame) -> Result<DetTensor, BackendError> {
        Ok(det_tensor(input, self.config.det_size))
    }

    fn execute(&mut self, prepared: DetTensor) -> Result<DetRaw, BackendError> {
        let mut geometry = prepared;
        let tensor = std::mem::replace(
            &mut geometry.tensor,
            TensorF32 {
                shape: vec![],
                data: vec![],
            },
        );
        let map = single_output(self.session.run(vec![tensor])?, "detector")?;
        Ok(DetRaw { map, geometry })
    }

    fn finish(&mut self, raw: DetRaw) -> Result<Vec<TextBox>, BackendError> {
        let shape = &raw.map.shape;
        if shape.len() != 4 {
            return Err(BackendError::engine(
                "PP-OCRv4",
                format!("detector output has shape {shape:?}, expected [1, 1, H, W]"),
            ));
        }
        let (h, w) = (shape[2], shape[3]);
        let boxes = boxes_from_map(
            &raw.map.data,
            w,
            h,
            raw.geometry.valid_w,
            raw.geometry.valid_h,
            &self.config.db,
        );
        Ok(to_frame_boxes(&boxes, &raw.geometry))
    }

    fn memory_bytes(&self) -> u64 {
        self.bytes
    }
}

/// PP-OCRv4 text recognition alone: an image of one text line in, its text out.
pub struct TextRecognizer {
    session: Box<dyn OnnxSession>,
    alphabet: Alphabet,
    config: OcrConfig,
    bytes: u64,
}

impl std::fmt::Debug for TextRecognizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TextRecognizer")
            .field("classes", &self.alphabet.len())
            .field("config", &self.config)
            .finish()
    }
}

impl TextRecognizer {
    /// Loads the recogniser named in `config`.
    pub fn new(config: OcrConfig) -> Result<Self, BackendError> {
        let (session, alphabet) = open_recognizer(&config)?;
        let bytes = weight_bytes(&[&config.rec_path]);
        Ok(Self {
            session,
            alphabet,
            config,
            bytes,
        })
    }

    /// The engine session (for benchmarks comparing against direct engine calls).
    pub fn session_mut(&mut self) -> &mut dyn OnnxSession {
        self.session.as_mut()
    }

    fn decode(&self, out: &TensorF32) -> Result<(String, f32), BackendError> {
        let classes = *out.shape.last().unwrap_or(&0);
        if classes != self.alphabet.len() {
            return Err(BackendError::engine(
                "PP-OCRv4",
                format!(
                    "recogniser outputs {classes} classes but its alphabet has {}",
                    self.alphabet.len()
                ),
            ));
        }
        Ok(self.alphabet.decode(&out.data, classes))
    }
}

/// Recognised text and its score.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecognizedText {
    /// The text read.
    pub text: String,
    /// Mean character probability, 0..1.
    pub score: f32,
}

impl Backend for TextRecognizer {
    type Input = RgbFrame;
    type Prepared = TensorF32;
    type Raw = TensorF32;
    type Output = RecognizedText;

    fn name(&self) -> &str {
        "ppocr-v4-rec"
    }

    fn prepare(&mut self, input: &RgbFrame) -> Result<TensorF32, BackendError> {
        let rect = [0.0, 0.0, input.width() as f32, input.height() as f32];
        Ok(rec_tensor(input, rect, self.config.rec_max_width))
    }

    fn execute(&mut self, prepared: TensorF32) -> Result<TensorF32, BackendError> {
        single_output(self.session.run(vec![prepared])?, "recogniser")
    }

    fn finish(&mut self, raw: TensorF32) -> Result<RecognizedText, BackendError> {
        let (text, score) = self.decode(&raw)?;
        Ok(RecognizedText { text, score })
    }

    fn memory_bytes(&self) -> u64 {
        self.bytes
    }
}

/// Time spent inside one OCR job, per model and stage, in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct OcrBreakdown {
    /// Detector pre-processing (resize, normalise).
    pub det_pre_nanos: Nanos,
    /// Detector model.
    pub det_exec_nanos: Nanos,
    /// Probability map → boxes.
    pub det_post_nanos: Nanos,
    /// Cropping and resizing every box for the recogniser.
    pub rec_pre_nanos: Nanos,
    /// Recogniser model, all boxes.
    pub rec_exec_nanos: Nanos,
    /// CTC decoding, all boxes.
    pub rec_post_nanos: Nanos,
    /// Boxes recognised.
    pub boxes: u32,
}

/// The whole OCR job: detection then recognition of every box.
///
/// Stages as the probe sees them: `prepare` = detector pre-processing; `execute` = detector,
/// box extraction, cropping and recogniser (the model-bound part, one unit for the
/// scheduler); `finish` = CTC decoding. The split per model is kept in
/// [`OcrPipeline::last_breakdown`], measured with the clock given at construction.
pub struct OcrPipeline {
    det: TextDetector,
    rec: TextRecognizer,
    clock: Box<dyn Clock + Send>,
    breakdown: OcrBreakdown,
}

impl std::fmt::Debug for OcrPipeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OcrPipeline")
            .field("det", &self.det)
            .field("rec", &self.rec)
            .finish()
    }
}

/// What the pipeline's `prepare` hands to `execute`: the detector tensor and the frame
/// (needed again to crop the boxes).
#[derive(Debug, Clone)]
pub struct OcrPrepared {
    det: DetTensor,
    frame: RgbFrame,
}

/// What the pipeline's `execute` hands to `finish`: each box with its recogniser output.
#[derive(Debug, Clone)]
pub struct OcrRaw {
    items: Vec<(TextBox, TensorF32)>,
}

impl OcrPipeline {
    /// Loads both models, timing sub-stages with a monotonic clock.
    pub fn new(config: OcrConfig) -> Result<Self, BackendError> {
        Self::with_clock(config, Box::new(MonotonicClock::new()))
    }

    /// Loads both models, timing sub-stages with `clock`.
    pub fn with_clock(
        config: OcrConfig,
        clock: Box<dyn Clock + Send>,
    ) -> Result<Self, BackendError> {
        Ok(Self {
            det: TextDetector::new(config.clone())?,
            rec: TextRecognizer::new(config)?,
            clock,
            breakdown: OcrBreakdown::default(),
        })
    }

    /// Per-model timing of the last job.
    pub fn last_breakdown(&self) -> OcrBreakdown {
        self.breakdown
    }

    /// The detector and recogniser, for per-model measurements.
    pub fn parts_mut(&mut self) -> (&mut TextDetector, &mut TextRecognizer) {
        (&mut self.det, &mut self.rec)
    }
}

impl Backend for OcrPipeline {
    type Input = RgbFrame;
    type Prepared = OcrPrepared;
    type Raw = OcrRaw;
    type Output = Vec<OcrLine>;

    fn name(&self) -> &str {
        "ppocr-v4"
    }

    fn prepare(&mut self, input: &RgbFrame) -> Result<OcrPrepared, BackendError> {
        let t0 = self.clock.now_nanos();
        let det = self.det.prepare(input)?;
        self.breakdown = OcrBreakdown {
            det_pre_nanos: self.clock.now_nanos().saturating_sub(t0),
            ..OcrBreakdown::default()
        };
        Ok(OcrPrepared {
            det,
            frame: input.clone(),
        })
    }

    fn execute(&mut self, prepared: OcrPrepared) -> Result<OcrRaw, BackendError> {
        let t0 = self.clock.now_nanos();
        let raw = self.det.execute(prepared.det)?;
        let t1 = self.clock.now_nanos();
        let boxes = self.det.finish(raw)?;
        let t2 = self.clock.now_nanos();
        let mut items = Vec::with_capacity(boxes.len());
        let (mut pre, mut exec) = (0, 0);
        for b in boxes {
            let s0 = self.clock.now_nanos();
            let tensor = rec_tensor(&prepared.frame, b.rect, self.rec.config.rec_max_width);
            let s1 = self.clock.now_nanos();
            let out = self.rec.execute(tensor)?;
            let s2 = self.clock.now_nanos();
            pre += s1.saturating_sub(s0);
            exec += s2.saturating_sub(s1);
            items.push((b, out));
        }
        let bd = &mut self.breakdown;
        bd.det_exec_nanos = t1.saturating_sub(t0);
        bd.det_post_nanos = t2.saturating_sub(t1);
        bd.rec_pre_nanos = pre;
        bd.rec_exec_nanos = exec;
        bd.boxes = u32::try_from(items.len()).unwrap_or(u32::MAX);
        Ok(OcrRaw { items })
    }

    fn finish(&mut self, raw: OcrRaw) -> Result<Vec<OcrLine>, BackendError> {
        let t0 = self.clock.now_nanos();
        let mut lines = Vec::with_capacity(raw.items.len());
        for (b, out) in raw.items {
            let (text, score) = self.rec.decode(&out)?;
            if text.trim().is_empty() {
                continue;
            }
            lines.push(OcrLine {
                text,
                score,
                corners: b.corners(),
                box_score: b.score,
            });
        }
        self.breakdown.rec_post_nanos = self.clock.now_nanos().saturating_sub(t0);
        Ok(lines)
    }

    fn memory_bytes(&self) -> u64 {
        self.det.memory_bytes() + self.rec.memory_bytes()
    }
}
