//! OCR on one frame in bounded steps, at the quality rung the book chose: detection at the
//! rung's input size, then recognition a batch of lines at a time, so a due chunk of audio
//! or another frame can run between two steps. The reading is held here between steps and
//! may continue on whichever pipeline is free.

use std::sync::mpsc::Sender;

use mmsched_backends::RgbFrame;
use mmsched_backends::ocr::{OcrPipeline, OcrPlan, OcrReading};
use mmsched_backends::probe::StageTiming;
use mmsched_core::rungs::VisionRung;
use mmsched_core::time::{Clock, MonotonicClock, Nanos};
use mmsched_runtime::sched::{StepOutcome, Work, WorkError};

use super::{Output, work_error};
use crate::engines::{Shared, lock};

/// Lines recognised per step: one engine call for a batch of crops padded to a common
/// width, which on this project's machine reads 4 lines in less than twice one line's time
/// (`mmsched bench models`, `ocr.rec_batch_*`), and keeps a step within a detection's
/// length.
pub const OCR_LINES_PER_STEP: usize = 4;

/// OCR on `frame` at `rung`, on whichever of the pipelines is free at each step; with
/// `fused`, every step in one dispatch. With `lines_later`, the rung's line limit is not
/// applied at detection: the scheduler decides how many of the lines found to read
/// ([`Work::keep_parts`]).
pub fn vision(
    pool: Vec<Shared<OcrPipeline>>,
    frame: RgbFrame,
    rung: &VisionRung,
    (fused, lines_later): (bool, bool),
    tag: u64,
    out: Sender<Output>,
) -> Box<dyn Work> {
    let mut plan = OcrPlan::for_rung(rung, frame.width(), frame.height(), OCR_LINES_PER_STEP);
    if lines_later && !fused {
        plan.max_lines = None;
    }
    Box::new(VisionWork {
        pool,
        frame: Some(frame),
        plan,
        reading: None,
        fused,
        tag,
        out,
        nanos: 0,
    })
}

struct VisionWork {
    pool: Vec<Shared<OcrPipeline>>,
    /// The frame, until the reading begins.
    frame: Option<RgbFrame>,
    plan: OcrPlan,
    reading: Option<OcrReading>,
    /// All steps in one dispatch.
    fused: bool,
    tag: u64,
    out: Sender<Output>,
    /// Time the steps took so far.
    nanos: Nanos,
}

impl Work for VisionWork {
    fn next_step(&self) -> Option<&'static str> {
        if self.fused {
            // One dispatch for the whole frame: its cost is the job's.
            return None;
        }
        Some(match &self.reading {
            None => "detect",
            Some(r) => r.next_step().map_or("detect", |k| k.as_str()),
        })
    }

    fn parts_left(&self) -> Option<usize> {
        let r = self.reading.as_ref()?;
        let detected = r.next_step() == Some(mmsched_backends::ocr::OcrStepKind::Recognize);
        (detected && r.lines_left() > 0).then(|| r.lines_left())
    }

    fn keep_parts(&mut self, n: usize) {
        if let Some(r) = &mut self.reading {
            r.keep_lines(n);
        }
    }

    fn parts_per_step(&self) -> usize {
        self.plan.lines_per_step.max(1)
    }

    fn step(&mut self) -> Result<StepOutcome, WorkError> {
        let clock = MonotonicClock::new();
        let t0 = clock.now_nanos();
        // A free pipeline; if all are busy (never while the book keeps vision jobs to the
        // pool's size), the first.
        let guard = self
            .pool
            .iter()
            .find_map(|p| p.try_lock().ok())
            .or_else(|| self.pool.first().map(|p| lock(p)));
        let Some(mut ocr) = guard else {
            return Err(WorkError::NoModel { model: "OCR" });
        };
        if let Some(frame) = self.frame.take() {
            let reading = ocr
                .begin(frame, self.plan)
                .map_err(|e| work_error("OCR", e))?;
            self.reading = Some(reading);
        }
        let Some(reading) = &mut self.reading else {
            return Err(WorkError::Cancelled {
                why: "the frame's reading ended before",
            });
        };
        let mut step = ocr.step(reading).map_err(|e| work_error("OCR", e))?;
        while self.fused && !step.finished {
            step = ocr.step(reading).map_err(|e| work_error("OCR", e))?;
        }
        drop(ocr);
        self.nanos += clock.now_nanos().saturating_sub(t0);
        if !step.finished {
            return Ok(StepOutcome::Yield);
        }
        let lines = self
            .reading
            .take()
            .map(OcrReading::into_lines)
            .transpose()
            .map_err(|e| work_error("OCR", e))?
            .unwrap_or_default();
        let timing = StageTiming {
            exec_nanos: self.nanos,
            ..StageTiming::default()
        };
        let _ = self.out.send(Output::Vision {
            tag: self.tag,
            lines,
            timing,
        });
        Ok(StepOutcome::Finished)
    }
}
