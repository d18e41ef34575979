//! The whole OCR job in one call: detection, then recognition of the boxes kept.

use mmsched_core::time::{Clock, MonotonicClock, Nanos};
use serde::Serialize;

use super::model::OcrConfig;
use super::pre::{DetTensor, rec_batch_tensor};
use super::session::{
    OcrLine, RecognizedText, TextBox, TextDetector, TextRecognizer, batch_groups,
};
use crate::backend::{Backend, BackendError};
use crate::frame::RgbFrame;
use crate::tensor::TensorF32;

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

/// The boxes to recognise: all of them, or the `max_lines` the detector is most confident
/// of (ties to the earlier box), kept in reading order.
pub(super) fn most_confident(boxes: Vec<TextBox>, max_lines: Option<usize>) -> Vec<TextBox> {
    let Some(n) = max_lines.filter(|&n| n < boxes.len()) else {
        return boxes;
    };
    let mut order: Vec<usize> = (0..boxes.len()).collect();
    order.sort_by(|&a, &b| boxes[b].score.total_cmp(&boxes[a].score).then(a.cmp(&b)));
    let mut keep = order[..n].to_vec();
    keep.sort_unstable();
    keep.into_iter().map(|i| boxes[i]).collect()
}

/// A recognised box as a result line, or `None` when nothing legible was read in it.
pub(super) fn to_line(b: &TextBox, read: RecognizedText) -> Option<OcrLine> {
    (!read.text.trim().is_empty()).then(|| OcrLine {
        text: read.text,
        score: read.score,
        corners: b.corners(),
        box_score: b.score,
    })
}

/// The whole OCR job: detection then recognition of every box (or of the
/// [`OcrConfig::max_lines`] most confident), lines of equal input width batched up to
/// [`OcrConfig::rec_batch`] per engine call.
///
/// Stages as the probe sees them: `prepare` = detector pre-processing; `execute` = detector,
/// box extraction, cropping and recogniser (the model-bound part, one unit for the
/// scheduler); `finish` = CTC decoding. The split per model is kept in
/// [`OcrPipeline::last_breakdown`], measured with the clock given at construction. The same
/// job advanced in steps is [`crate::ocr::steps`].
pub struct OcrPipeline {
    pub(super) det: TextDetector,
    pub(super) rec: TextRecognizer,
    clock: Box<dyn Clock + Send>,
    breakdown: OcrBreakdown,
    max_lines: Option<usize>,
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

/// What the pipeline's `execute` hands to `finish`: the boxes, and each recogniser call's
/// output with the boxes it read.
#[derive(Debug, Clone)]
pub struct OcrRaw {
    boxes: Vec<TextBox>,
    calls: Vec<(Vec<usize>, TensorF32)>,
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
        if config.rec_batch == 0 || config.max_lines == Some(0) {
            return Err(BackendError::InvalidInput(format!(
                "rec_batch {} and max_lines {:?}: both are at least 1 (max_lines None reads every line)",
                config.rec_batch, config.max_lines
            )));
        }
        Ok(Self {
            max_lines: config.max_lines,
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
        let boxes = most_confident(self.det.finish(raw)?, self.max_lines);
        let t2 = self.clock.now_nanos();
        let rects: Vec<[f32; 4]> = boxes.iter().map(|b| b.rect).collect();
        let config = self.rec.config();
        let groups = batch_groups(&rects, config.rec_max_width, config.rec_batch);
        let max_width = config.rec_max_width;
        let mut calls = Vec::with_capacity(groups.len());
        let (mut pre, mut exec) = (0, 0);
        for group in groups {
            let s0 = self.clock.now_nanos();
            let picked: Vec<[f32; 4]> = group.iter().map(|&i| rects[i]).collect();
            let tensor = rec_batch_tensor(&prepared.frame, &picked, max_width);
            let s1 = self.clock.now_nanos();
            let out = self.rec.run_batch(tensor)?;
            let s2 = self.clock.now_nanos();
            pre += s1.saturating_sub(s0);
            exec += s2.saturating_sub(s1);
            calls.push((group, out));
        }
        let bd = &mut self.breakdown;
        bd.det_exec_nanos = t1.saturating_sub(t0);
        bd.det_post_nanos = t2.saturating_sub(t1);
        bd.rec_pre_nanos = pre;
        bd.rec_exec_nanos = exec;
        bd.boxes = u32::try_from(boxes.len()).unwrap_or(u32::MAX);
        Ok(OcrRaw { boxes, calls })
    }

    fn finish(&mut self, raw: OcrRaw) -> Result<Vec<OcrLine>, BackendError> {
        let t0 = self.clock.now_nanos();
        let mut read: Vec<Option<RecognizedText>> = vec![None; raw.boxes.len()];
        for (group, out) in &raw.calls {
            for (&i, r) in group.iter().zip(self.rec.decode_batch(out, group.len())?) {
                read[i] = Some(r);
            }
        }
        let lines = raw
            .boxes
            .iter()
            .zip(read)
            .filter_map(|(b, r)| r.and_then(|r| to_line(b, r)))
            .collect();
        self.breakdown.rec_post_nanos = self.clock.now_nanos().saturating_sub(t0);
        Ok(lines)
    }

    fn memory_bytes(&self) -> u64 {
        self.det.memory_bytes() + self.rec.memory_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn boxes(scores: &[f32]) -> Vec<TextBox> {
        scores
            .iter()
            .enumerate()
            .map(|(i, &score)| TextBox {
                rect: [0.0, i as f32 * 10.0, 50.0, i as f32 * 10.0 + 8.0],
                score,
            })
            .collect()
    }

    #[test]
    fn the_most_confident_boxes_are_kept_in_reading_order() {
        let kept = most_confident(boxes(&[0.7, 0.9, 0.65, 0.95, 0.9]), Some(3));
        let scores: Vec<f32> = kept.iter().map(|b| b.score).collect();
        // 0.95, then the two 0.9 (ties keep the earlier box), in reading order.
        assert_eq!(scores, [0.9, 0.95, 0.9]);
        assert_eq!(most_confident(boxes(&[0.7, 0.8]), Some(3)).len(), 2);
        assert_eq!(most_confident(boxes(&[0.7, 0.8]), None).len(), 2);
    }

    #[test]
    fn a_blank_reading_is_no_line() {
        let b = boxes(&[0.8])[0];
        let read = |text: &str| RecognizedText {
            text: text.into(),
            score: 0.5,
        };
        assert!(to_line(&b, read("  ")).is_none());
        let line = to_line(&b, read("EXIT")).expect("a line");
        assert_eq!((line.text.as_str(), line.box_score), ("EXIT", 0.8));
    }
}
