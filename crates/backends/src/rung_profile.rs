//! Measuring a quality rung: the cost of its jobs and of each kind of step they run in, and
//! the accuracy of its results on inputs whose truth is known (scored by
//! [`mmsched_core::score`]), as one [`RungProfile`] of the device profile.
//!
//! A job runs the way a scheduler drives it: in steps ([`crate::ocr::steps`],
//! [`crate::asr::steps`]), each on one thread, one line or one encoder block or one token a
//! step. The first pass over the samples is scored; timed jobs cycle over the samples.

use mmsched_core::rungs::{AsrRung, VisionRung};
use mmsched_core::score::{LineScore, score_lines, transcript_correct, word_error_rate};
use mmsched_core::time::{Clock, Nanos};
use std::collections::BTreeMap;

use crate::asr::{AsrPlan, AsrSession};
use crate::audio::AudioClip;
use crate::backend::BackendError;
use crate::frame::RgbFrame;
use crate::ocr::{OcrPipeline, OcrPlan};
use crate::profile::{CostHistogram, RungAccuracy, RungProfile, StepCost};

/// A frame and the lines of text it shows.
#[derive(Debug, Clone)]
pub struct SignSample {
    /// The frame.
    pub frame: RgbFrame,
    /// Its true lines, in reading order.
    pub lines: Vec<String>,
}

/// An utterance and its words.
#[derive(Debug, Clone)]
pub struct SpeechSample {
    /// The audio.
    pub clip: AudioClip,
    /// What is said.
    pub text: String,
}

/// How many jobs to run for one rung.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RungRuns {
    /// Untimed jobs first (plans built, caches warm).
    pub warmup: u32,
    /// Timed jobs (at least one per sample: every sample is scored).
    pub jobs: u32,
}

/// Step and job costs as they are collected.
#[derive(Debug, Default)]
struct Costs {
    job: CostHistogram,
    steps: BTreeMap<&'static str, CostHistogram>,
}

impl Costs {
    fn step(&mut self, kind: &'static str, nanos: Nanos) {
        self.steps.entry(kind).or_default().record(nanos);
    }

    /// The profile of `rung` from the costs, with `units` naming what one step of each
    /// kind is.
    fn into_profile(
        self,
        (name, params): (String, String),
        engine: &str,
        units: &[(&str, &str)],
        accuracy: RungAccuracy,
    ) -> RungProfile {
        let jobs = self.job.len().max(1);
        let steps = self
            .steps
            .into_iter()
            .map(|(kind, h)| {
                let unit = units
                    .iter()
                    .find(|(k, _)| *k == kind)
                    .map_or("", |(_, u)| u);
                let cost = StepCost {
                    per_job: h.len() as f64 / jobs as f64,
                    unit: unit.to_string(),
                    stats: h.percentiles(),
                };
                (kind.to_string(), cost)
            })
            .collect();
        RungProfile {
            name,
            params,
            engine: engine.to_string(),
            threads: 1,
            jobs: u32::try_from(self.job.len()).unwrap_or(u32::MAX),
            job: self.job.percentiles(),
            steps,
            accuracy,
        }
    }
}

fn elapsed<C: Clock + ?Sized>(clock: &C, since: Nanos) -> Nanos {
    clock.now_nanos().saturating_sub(since)
}

/// What one step of each OCR step kind is.
const OCR_UNITS: [(&str, &str); 2] = [
    (
        "detect",
        "the detector at the rung's input and the boxes kept",
    ),
    ("recognize", "one line"),
];

/// What one step of each Whisper step kind is.
const ASR_UNITS: [(&str, &str); 6] = [
    ("mel", "resampling and log-mel of the whole clip"),
    ("encoder-stem", "the convolutions of one 30 s window"),
    ("encoder-layers", "one encoder block"),
    (
        "encoder-cross",
        "cross-attention keys and values of one window",
    ),
    ("encoder", "the whole encoder of one window"),
    ("decode", "one token"),
];

/// Measures the vision rung `rung` on `ocr` (its engine, one thread): `runs` jobs over
/// `samples` (frames of `width × height`), one line per recognition step; `inputs` says
/// what the samples are. `on_job` is called after every job.
pub fn measure_vision_rung<C: Clock + ?Sized>(
    ocr: &mut OcrPipeline,
    rung: &VisionRung,
    samples: &[SignSample],
    runs: RungRuns,
    clock: &C,
    (inputs, mut on_job): (&str, impl FnMut()),
) -> Result<RungProfile, BackendError> {
    if samples.is_empty() {
        return Err(BackendError::InvalidInput(
            "no signs to measure the vision rungs on".into(),
        ));
    }
    let engine = ocr.parts_mut().0.session_mut().engine().as_str();
    let mut costs = Costs::default();
    let mut score = LineScore::default();
    let mut correct = 0u32;
    let jobs = runs
        .jobs
        .max(u32::try_from(samples.len()).unwrap_or(u32::MAX));
    for k in 0..runs.warmup + jobs {
        let sample = &samples[k as usize % samples.len()];
        let plan = OcrPlan::for_rung(rung, sample.frame.width(), sample.frame.height(), 1);
        let timed = k >= runs.warmup;
        let t0 = clock.now_nanos();
        let mut reading = ocr.begin(sample.frame.clone(), plan)?;
        while let Some(kind) = reading.next_step() {
            let s0 = clock.now_nanos();
            ocr.step(&mut reading)?;
            if timed {
                costs.step(kind.as_str(), elapsed(clock, s0));
            }
        }
        let lines = reading.into_lines()?;
        if timed {
            costs.job.record(elapsed(clock, t0));
        }
        if k >= runs.warmup && ((k - runs.warmup) as usize) < samples.len() {
            let read: Vec<&str> = lines.iter().map(|l| l.text.as_str()).collect();
            let s = score_lines(&sample.lines, &read);
            correct += u32::from(s.correct());
            score = score.combined(s);
        }
        on_job();
    }
    let n = samples.len();
    let accuracy = RungAccuracy {
        inputs: format!("{inputs}: {n} frames, {} lines", score.truth_lines),
        samples: u32::try_from(n).unwrap_or(u32::MAX),
        correct: f64::from(correct) / n as f64,
        accuracy: score.line_accuracy(),
        cer: Some(score.cer()),
        wer: None,
    };
    Ok(costs.into_profile(
        (rung.name.clone(), rung.params()),
        engine,
        &OCR_UNITS,
        accuracy,
    ))
}

/// Measures the speech rung `rung` on `asr`, each step granted one thread, one encoder
/// block per encoder step: `runs` jobs over `samples`; `inputs` says what they are.
pub fn measure_asr_rung<C: Clock + ?Sized>(
    asr: &mut AsrSession,
    rung: &AsrRung,
    samples: &[SpeechSample],
    runs: RungRuns,
    clock: &C,
    (inputs, mut on_job): (&str, impl FnMut()),
) -> Result<RungProfile, BackendError> {
    if samples.is_empty() {
        return Err(BackendError::InvalidInput(
            "no utterances to measure the speech rungs on".into(),
        ));
    }
    let plan = AsrPlan {
        span: rung.span,
        layers_per_step: 1,
    };
    let mut costs = Costs::default();
    let (mut correct, mut accuracy, mut wer) = (0u32, 0.0, 0.0);
    let jobs = runs
        .jobs
        .max(u32::try_from(samples.len()).unwrap_or(u32::MAX));
    for k in 0..runs.warmup + jobs {
        let sample = &samples[k as usize % samples.len()];
        let timed = k >= runs.warmup;
        let t0 = clock.now_nanos();
        let mut t = asr.begin(sample.clip.clone(), plan)?;
        while let Some(kind) = t.next_step() {
            let s0 = clock.now_nanos();
            asr.step(&mut t, 1)?;
            if timed {
                costs.step(kind.as_str(), elapsed(clock, s0));
            }
        }
        let text = asr.transcript(t)?;
        if timed {
            costs.job.record(elapsed(clock, t0));
        }
        if k >= runs.warmup && ((k - runs.warmup) as usize) < samples.len() {
            let w = word_error_rate(&sample.text, &text);
            correct += u32::from(transcript_correct(w));
            accuracy += (1.0 - w).max(0.0);
            wer += w;
        }
        on_job();
    }
    let n = samples.len() as f64;
    let scored = RungAccuracy {
        inputs: format!("{inputs}: {} utterances", samples.len()),
        samples: u32::try_from(samples.len()).unwrap_or(u32::MAX),
        correct: f64::from(correct) / n,
        accuracy: accuracy / n,
        cer: None,
        wer: Some(wer / n),
    };
    Ok(costs.into_profile(
        (rung.name.clone(), rung.params()),
        asr.engine().label(),
        &ASR_UNITS,
        scored,
    ))
}
