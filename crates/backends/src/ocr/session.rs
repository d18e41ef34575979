//! The OCR models alone: the text detector (frame in, boxes out) and the recogniser (lines
//! in, text out, one at a time or in batches).

use serde::Serialize;

use super::ctc::Alphabet;
use super::det_post::{RawBox, boxes_from_map};
use super::model::{OcrConfig, open_detector, open_recognizer, weight_bytes};
use super::pre::{
    DetInputSize, DetTensor, det_tensor, rec_batch_tensor, rec_input_width, rec_tensor,
};
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

    /// Detects the text boxes of `frame` through a detector input of `size` (instead of the
    /// configured one), in reading order.
    pub fn detect_at(
        &mut self,
        frame: &RgbFrame,
        size: DetInputSize,
    ) -> Result<Vec<TextBox>, BackendError> {
        size.validate()?;
        let raw = self.execute(det_tensor(frame, size))?;
        self.finish(raw)
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
        let mut rows = self.decode_rows(out)?;
        if rows.len() != 1 {
            return Err(BackendError::engine(
                "PP-OCRv4",
                format!("recogniser returned {} lines for one", rows.len()),
            ));
        }
        Ok(rows.swap_remove(0))
    }

    /// The text and score of each line of a recogniser output `lines × steps × classes`.
    fn decode_rows(&self, out: &TensorF32) -> Result<Vec<(String, f32)>, BackendError> {
        let classes = *out.shape.last().unwrap_or(&0);
        if classes != self.alphabet.len() || out.shape.len() != 3 {
            return Err(BackendError::engine(
                "PP-OCRv4",
                format!(
                    "recogniser output has shape {:?}; expected [lines, steps, {}] (its alphabet)",
                    out.shape,
                    self.alphabet.len()
                ),
            ));
        }
        let per_line = out.shape[1] * classes;
        Ok(out
            .data
            .chunks_exact(per_line.max(1))
            .take(out.shape[0])
            .map(|row| self.alphabet.decode(row, classes))
            .collect())
    }

    /// Reads the lines at `rects` (frame pixels) of `frame` in one engine call, their crops
    /// padded to the widest one's width ([`rec_batch_tensor`]); one result per rect, in
    /// order. A line padded wider than it is alone may read differently (see
    /// [`batch_groups`]); [`TextRecognizer::recognize_lines`] batches only equal widths.
    pub fn recognize_batch(
        &mut self,
        frame: &RgbFrame,
        rects: &[[f32; 4]],
    ) -> Result<Vec<RecognizedText>, BackendError> {
        if rects.is_empty() {
            return Ok(Vec::new());
        }
        let tensor = rec_batch_tensor(frame, rects, self.config.rec_max_width);
        let out = self.run_batch(tensor)?;
        self.decode_batch(&out, rects.len())
    }

    /// Reads the lines at `rects` of `frame`, in engine calls of up to
    /// [`OcrConfig::rec_batch`] lines whose inputs have the same width ([`batch_groups`]):
    /// each line reads exactly as it reads alone. One result per rect, in order.
    pub fn recognize_lines(
        &mut self,
        frame: &RgbFrame,
        rects: &[[f32; 4]],
    ) -> Result<Vec<RecognizedText>, BackendError> {
        let mut out: Vec<Option<RecognizedText>> = vec![None; rects.len()];
        for group in batch_groups(rects, self.config.rec_max_width, self.config.rec_batch) {
            let picked: Vec<[f32; 4]> = group.iter().map(|&i| rects[i]).collect();
            for (&i, read) in group.iter().zip(self.recognize_batch(frame, &picked)?) {
                out[i] = Some(read);
            }
        }
        Ok(out.into_iter().flatten().collect())
    }

    /// The recogniser's settings.
    pub fn config(&self) -> &OcrConfig {
        &self.config
    }

    /// Runs a prepared batch (`lines × 3 × 48 × width`) through the engine.
    pub(super) fn run_batch(&mut self, tensor: TensorF32) -> Result<TensorF32, BackendError> {
        single_output(self.session.run(vec![tensor])?, "recogniser")
    }

    /// Decodes a batch's output into one result per line, checking it holds `lines`.
    pub(super) fn decode_batch(
        &self,
        out: &TensorF32,
        lines: usize,
    ) -> Result<Vec<RecognizedText>, BackendError> {
        let rows = self.decode_rows(out)?;
        if rows.len() != lines {
            return Err(BackendError::engine(
                "PP-OCRv4",
                format!("recogniser returned {} lines for {lines}", rows.len()),
            ));
        }
        Ok(rows
            .into_iter()
            .map(|(text, score)| RecognizedText { text, score })
            .collect())
    }
}

/// Groups lines for batched recognition: the indices of `rects` whose recogniser inputs
/// have the same width ([`rec_input_width`]), in groups of at most `max_batch` (at least
/// 1), each group placed where its first line is. Lines padded to another line's width
/// read differently: of 60 lines on generated signs, 2 came out different when padded to
/// the widest of their frame (a space lost or gained) and every score moved; at equal
/// widths batched lines read exactly as alone.
pub fn batch_groups(rects: &[[f32; 4]], max_width: usize, max_batch: usize) -> Vec<Vec<usize>> {
    let mut groups: Vec<(usize, Vec<usize>)> = Vec::new();
    for (i, &r) in rects.iter().enumerate() {
        let width = rec_input_width(r, max_width);
        match groups
            .iter_mut()
            .find(|(w, g)| *w == width && g.len() < max_batch.max(1))
        {
            Some((_, g)) => g.push(i),
            None => groups.push((width, vec![i])),
        }
    }
    groups.into_iter().map(|(_, g)| g).collect()
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
