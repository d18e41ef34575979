//! OCR on one frame in bounded steps, at the quality rung the book chose: detection at the
//! rung's input size, then recognition a batch of lines at a time, so a due chunk of audio
//! or another frame can run between two steps. The reading is held between steps by the
//! generic [`StepJob`] and may continue on whichever pipeline is free.

use std::sync::mpsc::Sender;

use mmsched_backends::RgbFrame;
use mmsched_backends::ocr::{OcrPipeline, OcrPlan};
use mmsched_core::rungs::VisionRung;
use mmsched_runtime::sched::Work;

use super::Output;
use super::step::StepJob;
use crate::engines::Shared;

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
    Box::new(StepJob::new(
        pool,
        "OCR",
        (frame, plan),
        fused,
        Box::new(move |lines, timing| Output::Vision { tag, lines, timing }),
        out,
    ))
}
