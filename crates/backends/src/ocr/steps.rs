//! One frame read in bounded steps, so that a scheduler can run other due work between
//! them: `detect` (the detector at the plan's input size, then the boxes kept), then
//! `recognize` steps of up to [`OcrPlan::lines_per_step`] lines each, in reading order.
//!
//! The reading is a value the caller holds ([`OcrReading`]); the pipeline keeps nothing
//! between steps, so readings of several frames may interleave on one pipeline, and a
//! reading may continue on another pipeline loaded with the same models. The lines are
//! those the one-shot [`OcrPipeline`](super::OcrPipeline) reads with the same detector
//! input and line limit (`tests/ocr_steps.rs`).

use mmsched_core::rungs::VisionRung;
use serde::Serialize;

use super::pipeline::{OcrPipeline, most_confident, to_line};
use super::pre::DetInputSize;
use super::session::{OcrLine, TextBox};
use crate::backend::BackendError;
use crate::frame::RgbFrame;

/// How one frame is read: its quality rung (detector input, line limit) and how many lines
/// a recognition step reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OcrPlan {
    /// The detector's input.
    pub det_size: DetInputSize,
    /// Recognise only the boxes the detector is most confident of (`None`: every box).
    pub max_lines: Option<usize>,
    /// Lines per `recognize` step, at least 1 (read in engine calls of up to
    /// [`super::OcrConfig::rec_batch`] lines of equal width).
    pub lines_per_step: usize,
}

impl OcrPlan {
    /// The plan of the vision rung `rung` for a `frame_w × frame_h` frame: the detector
    /// input with the rung's long side ([`DetInputSize::long_side`]) and its line limit,
    /// `lines_per_step` lines a recognition step.
    pub fn for_rung(rung: &VisionRung, frame_w: u32, frame_h: u32, lines_per_step: usize) -> Self {
        Self {
            det_size: DetInputSize::long_side(rung.det_long_side, frame_w, frame_h),
            max_lines: rung.max_lines.map(|n| n as usize),
            lines_per_step,
        }
    }
}

/// The kinds of step a reading runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum OcrStepKind {
    /// The detector and the boxes kept.
    Detect,
    /// Recognition of a few lines.
    Recognize,
}

impl OcrStepKind {
    /// The kind's name in profiles and traces (`detect`, `recognize`).
    pub fn as_str(self) -> &'static str {
        match self {
            OcrStepKind::Detect => "detect",
            OcrStepKind::Recognize => "recognize",
        }
    }
}

/// One frame being read in steps; see the [module documentation](self).
#[derive(Debug, Clone)]
pub struct OcrReading {
    frame: RgbFrame,
    plan: OcrPlan,
    /// The boxes to recognise, in reading order, once detected.
    boxes: Option<Vec<TextBox>>,
    /// Boxes the detector found, before the line limit.
    found: usize,
    /// Boxes recognised so far.
    next: usize,
    lines: Vec<OcrLine>,
    failed: bool,
}

impl OcrReading {
    /// The kind of the next step, or `None` when the reading is finished (or failed).
    pub fn next_step(&self) -> Option<OcrStepKind> {
        match &self.boxes {
            _ if self.failed => None,
            None => Some(OcrStepKind::Detect),
            Some(b) if self.next < b.len() => Some(OcrStepKind::Recognize),
            Some(_) => None,
        }
    }

    /// Whether every step has run.
    pub fn is_finished(&self) -> bool {
        !self.failed && self.next_step().is_none()
    }

    /// The plan it runs.
    pub fn plan(&self) -> OcrPlan {
        self.plan
    }

    /// Boxes the detector found (before the line limit; 0 before `detect`).
    pub fn boxes_found(&self) -> usize {
        self.found
    }

    /// Boxes still to recognise (0 before `detect`).
    pub fn lines_left(&self) -> usize {
        self.boxes
            .as_ref()
            .map_or(0, |b| b.len().saturating_sub(self.next))
    }

    /// Keeps, of the boxes not yet recognised, the `n` the detector is most confident of
    /// (at least one), in reading order: how many lines to read, decided once detection
    /// has said how many there are. Before `detect`, or once recognition has begun, it
    /// changes nothing.
    pub fn keep_lines(&mut self, n: usize) {
        if self.next > 0 {
            return;
        }
        if let Some(boxes) = self.boxes.take() {
            self.boxes = Some(super::pipeline::most_confident(boxes, Some(n.max(1))));
        }
    }

    /// `recognize` steps still to run (0 before `detect`).
    pub fn recognize_steps_left(&self) -> usize {
        self.lines_left().div_ceil(self.plan.lines_per_step.max(1))
    }

    /// The lines of a finished reading, in reading order (boxes read as blank left out).
    pub fn into_lines(self) -> Result<Vec<OcrLine>, BackendError> {
        if !self.is_finished() {
            return Err(BackendError::InvalidInput(format!(
                "the reading is not finished (next step: {}): run its steps first",
                self.next_step()
                    .map_or("none, it failed", OcrStepKind::as_str)
            )));
        }
        Ok(self.lines)
    }
}

/// What one step did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OcrStep {
    /// Its kind.
    pub kind: OcrStepKind,
    /// `detect`: the boxes kept for recognition; `recognize`: the lines it read.
    pub lines: usize,
    /// Whether the reading is now finished.
    pub finished: bool,
}

impl OcrPipeline {
    /// Starts reading `frame` in steps with `plan`. Checks the plan; computes nothing yet.
    pub fn begin(&self, frame: RgbFrame, plan: OcrPlan) -> Result<OcrReading, BackendError> {
        plan.det_size.validate()?;
        if plan.lines_per_step == 0 || plan.max_lines == Some(0) {
            return Err(BackendError::InvalidInput(format!(
                "lines_per_step {} and max_lines {:?}: a step reads at least one line, and a line limit is at least 1",
                plan.lines_per_step, plan.max_lines
            )));
        }
        Ok(OcrReading {
            frame,
            plan,
            boxes: None,
            found: 0,
            next: 0,
            lines: Vec::new(),
            failed: false,
        })
    }

    /// Runs `reading`'s next step (on the thread calling it: the ONNX engines run on the
    /// threads they were opened with). A failed step leaves the reading failed.
    pub fn step(&mut self, reading: &mut OcrReading) -> Result<OcrStep, BackendError> {
        let kind = reading.next_step().ok_or_else(|| {
            BackendError::InvalidInput(if reading.failed {
                "a step of this reading failed before: begin it again".into()
            } else {
                "the reading is finished: take its lines with OcrReading::into_lines".into()
            })
        })?;
        let done = match kind {
            OcrStepKind::Detect => self.detect_step(reading),
            OcrStepKind::Recognize => self.recognize_step(reading),
        };
        match done {
            Ok(lines) => Ok(OcrStep {
                kind,
                lines,
                finished: reading.is_finished(),
            }),
            Err(e) => {
                reading.failed = true;
                Err(e)
            }
        }
    }

    fn detect_step(&mut self, r: &mut OcrReading) -> Result<usize, BackendError> {
        let found = self.det.detect_at(&r.frame, r.plan.det_size)?;
        r.found = found.len();
        let kept = most_confident(found, r.plan.max_lines);
        let n = kept.len();
        r.boxes = Some(kept);
        Ok(n)
    }

    fn recognize_step(&mut self, r: &mut OcrReading) -> Result<usize, BackendError> {
        let boxes = r.boxes.as_deref().unwrap_or_default();
        let end = (r.next + r.plan.lines_per_step).min(boxes.len());
        let batch = &boxes[r.next..end];
        let rects: Vec<[f32; 4]> = batch.iter().map(|b| b.rect).collect();
        let read = self.rec.recognize_lines(&r.frame, &rects)?;
        r.lines.extend(
            batch
                .iter()
                .zip(read)
                .filter_map(|(b, text)| to_line(b, text)),
        );
        r.next = end;
        Ok(batch.len())
    }
}

/// OCR as a step model: a frame and its plan in, detection then recognition a batch of
/// lines at a time, its lines out; after detection the scheduler may keep fewer lines.
impl crate::step::StepModel for OcrPipeline {
    type Input = (RgbFrame, OcrPlan);
    type Job = OcrReading;
    type Output = Vec<OcrLine>;

    const FIRST_STEP: &'static str = "detect";

    fn begin(&mut self, (frame, plan): Self::Input) -> Result<OcrReading, BackendError> {
        OcrPipeline::begin(self, frame, plan)
    }

    fn next_step(job: &OcrReading) -> Option<&'static str> {
        job.next_step().map(OcrStepKind::as_str)
    }

    fn step(&mut self, job: &mut OcrReading, _threads: usize) -> Result<(), BackendError> {
        OcrPipeline::step(self, job).map(|_| ())
    }

    fn finish(&mut self, job: OcrReading) -> Result<Vec<OcrLine>, BackendError> {
        job.into_lines()
    }

    fn parts_left(job: &OcrReading) -> Option<usize> {
        let detected = job.next_step() == Some(OcrStepKind::Recognize);
        (detected && job.lines_left() > 0).then(|| job.lines_left())
    }

    fn keep_parts(job: &mut OcrReading, n: usize) {
        job.keep_lines(n);
    }

    fn parts_per_step(job: &OcrReading) -> usize {
        job.plan.lines_per_step.max(1)
    }
}
