//! OCR as the simulator runs it: the real job's steps (`detect`, then `recognize` a batch of
//! lines at a time) with costs drawn from the profile, reading the lines the frame is
//! known to show.
//!
//! What makes a reading wrong is the same mechanism as on the device: a line not read
//! (the rung's line limit, or the scheduler keeping fewer after detection) leaves the
//! frame wrong. What the model itself gets wrong is drawn: a frame is misread with the
//! probability the profile measured for a rung of that detector size without a line limit
//! (`mmsched profile` reads known signs at every rung), or never where not measured.

use mmsched_backends::ocr::OcrLine;
use mmsched_backends::{BackendError, StepModel};
use mmsched_core::rungs::VisionRung;
use mmsched_core::time::Nanos;

use super::draws::{SharedDraws, lock};
use crate::jobs::OCR_LINES_PER_STEP;
use crate::stats::Kind;

const DETECT: &str = "detect";
const RECOGNIZE: &str = "recognize";

/// A frame to read: the lines it shows, the rung, and whether the line limit waits for the
/// scheduler.
#[derive(Debug)]
pub struct SimFrame {
    /// The lines the frame shows, top to bottom (a frame of unknown text: one line).
    pub lines: Vec<String>,
    /// The rung it runs at.
    pub rung: VisionRung,
    /// The rung's line limit is not applied at detection (the scheduler decides).
    pub lines_later: bool,
}

/// A frame between its steps.
#[derive(Debug)]
pub struct SimOcrJob {
    frame: SimFrame,
    detected: bool,
    /// Lines found and still to read, in reading order.
    to_read: Vec<String>,
    read: Vec<OcrLine>,
    /// The detector misread one line of this frame (drawn at detection).
    misread: bool,
    /// The whole job's cost, split over its steps, where the steps were not measured.
    even_split: Option<Nanos>,
}

/// The simulated OCR pipeline (one per worker, as a real run loads).
#[derive(Debug)]
pub struct SimOcr {
    /// The run's draws.
    pub draws: SharedDraws,
}

fn line(text: String) -> OcrLine {
    OcrLine {
        text,
        score: 0.9,
        corners: [[0.0, 0.0], [8.0, 0.0], [8.0, 8.0], [0.0, 8.0]],
        box_score: 0.9,
    }
}

impl SimOcr {
    /// The share of frames the detector at `rung`'s size reads right, as measured at the
    /// richest rung of that size without a line limit.
    fn detector_correct(&self, rung: &VisionRung) -> f64 {
        let uncapped = VisionRung {
            max_lines: None,
            ..rung.clone()
        };
        let d = lock(&self.draws);
        let same_size = d
            .rung_with_params(Kind::Vision, &uncapped.params())
            .map(|r| r.accuracy.correct);
        same_size
            .or_else(|| {
                (rung.max_lines.is_none())
                    .then(|| d.correct_share(Kind::Vision, (&rung.name, &rung.params())))
                    .flatten()
            })
            .unwrap_or(1.0)
    }

    /// Draws `units` of `step` for `job` and leaves the cost for the lanes.
    fn spend(&self, job: &SimOcrJob, step: &str, units: usize) {
        let rung = (job.frame.rung.name.as_str(), job.frame.rung.params());
        let mut d = lock(&self.draws);
        let units = u32::try_from(units).unwrap_or(u32::MAX);
        let nanos = match job.even_split {
            Some(per_unit) => per_unit.saturating_mul(u64::from(units.max(1))),
            None => d
                .step(Kind::Vision, (rung.0, &rung.1), step, units.max(1))
                .unwrap_or(0),
        };
        d.leave(Kind::Vision, nanos);
    }
}

impl StepModel for SimOcr {
    type Input = SimFrame;
    type Job = SimOcrJob;
    type Output = Vec<OcrLine>;

    const FIRST_STEP: &'static str = DETECT;

    fn begin(&mut self, frame: SimFrame) -> Result<SimOcrJob, BackendError> {
        let params = frame.rung.params();
        let measured = lock(&self.draws)
            .rung(Kind::Vision, &frame.rung.name, &params)
            .is_some_and(|r| r.step(DETECT).is_some() && r.step(RECOGNIZE).is_some());
        // Not measured by step: the frame's cost split over detection and its lines.
        let even_split = (!measured).then(|| {
            let units = frame.lines.len().max(1) as u64 + 1;
            lock(&self.draws).job(Kind::Vision) / units
        });
        Ok(SimOcrJob {
            frame,
            detected: false,
            to_read: Vec::new(),
            read: Vec::new(),
            misread: false,
            even_split,
        })
    }

    fn next_step(job: &SimOcrJob) -> Option<&'static str> {
        match (job.detected, job.to_read.is_empty()) {
            (false, _) => Some(DETECT),
            (true, false) => Some(RECOGNIZE),
            (true, true) => None,
        }
    }

    fn step(&mut self, job: &mut SimOcrJob, _threads: usize) -> Result<(), BackendError> {
        if !job.detected {
            self.spend(job, DETECT, 1);
            job.detected = true;
            job.to_read = job.frame.lines.clone();
            if let (Some(cap), false) = (job.frame.rung.max_lines, job.frame.lines_later) {
                job.to_read.truncate(cap as usize);
            }
            let right = self.detector_correct(&job.frame.rung);
            job.misread = !lock(&self.draws).chance(right);
            return Ok(());
        }
        let n = job.to_read.len().min(OCR_LINES_PER_STEP);
        self.spend(job, RECOGNIZE, n);
        job.read.extend(job.to_read.drain(..n).map(line));
        Ok(())
    }

    fn finish(&mut self, mut job: SimOcrJob) -> Result<Vec<OcrLine>, BackendError> {
        if job.misread
            && let Some(last) = job.read.last_mut()
        {
            // One character read wrong is a wrong line, as the score counts it.
            last.text.push('~');
        }
        Ok(job.read)
    }

    fn parts_left(job: &SimOcrJob) -> Option<usize> {
        (job.detected && job.read.is_empty()).then_some(job.to_read.len())
    }

    fn keep_parts(job: &mut SimOcrJob, n: usize) {
        job.to_read.truncate(n.max(1));
    }

    fn parts_per_step(_job: &SimOcrJob) -> usize {
        OCR_LINES_PER_STEP
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use mmsched_backends::step::run_to_end;
    use mmsched_scenario::Scenario;
    use mmsched_world::profile::Profile;

    use super::super::draws::Draws;
    use super::*;

    fn ocr() -> SimOcr {
        let s = Scenario::load("ar-glasses").expect("shipped");
        let d = Draws::new(&s, &Profile::reference(), 3).expect("figures");
        SimOcr {
            draws: Arc::new(Mutex::new(d)),
        }
    }

    fn frame(lines: usize, max_lines: Option<u32>, lines_later: bool) -> SimFrame {
        SimFrame {
            lines: (0..lines).map(|i| format!("LINE {i}")).collect(),
            rung: VisionRung {
                name: "r".into(),
                det_long_side: 320,
                max_lines,
            },
            lines_later,
        }
    }

    #[test]
    fn a_line_limit_leaves_lines_unread_unless_the_scheduler_decides_later() {
        let mut m = ocr();
        let read = run_to_end(&mut m, frame(5, Some(3), false)).expect("read");
        assert_eq!(read.len(), 3);
        let read = run_to_end(&mut m, frame(5, Some(3), true)).expect("read");
        assert_eq!(read.len(), 5);
        assert_eq!(read[4].text, "LINE 4");
    }

    #[test]
    fn detection_then_batches_of_lines_each_leave_a_cost() {
        let mut m = ocr();
        let mut job = m.begin(frame(6, None, false)).expect("begins");
        let mut labels = Vec::new();
        while let Some(step) = SimOcr::next_step(&job) {
            labels.push(step);
            m.step(&mut job, 1).expect("steps");
            assert!(lock(&m.draws).take().is_some_and(|(n, _)| n > 0));
            if step == DETECT {
                assert_eq!(SimOcr::parts_left(&job), Some(6));
            }
        }
        assert_eq!(labels, [DETECT, RECOGNIZE, RECOGNIZE]);
        assert_eq!(m.finish(job).expect("finishes").len(), 6);
    }
}
