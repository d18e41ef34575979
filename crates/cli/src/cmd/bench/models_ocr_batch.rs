//! `bench models --only ocr`: PP-OCRv4 recognition one line per engine call against
//! batches of 2, 4 and 8 lines, on the lines of generated signs (the camera's signs and
//! signs of 3 to 5 lines, 640×360, boxes from the detector at the 320 rung).
//!
//! Two ways to batch: lines of equal input width only (`same_width`, what
//! `OcrConfig::rec_batch` does: each line reads exactly as alone), and the lines of a frame
//! in order, padded to the widest of the batch (`padded`: the text of some lines changes,
//! counted in `padded_lines_changed`). Sizes are timed in turn within each repetition, so
//! they see the same machine load; the figure is the median over repetitions of the time
//! per line.

use std::collections::BTreeMap;

use anyhow::Result;
use mmsched_backends::EngineOptions;
use mmsched_backends::ocr::{
    DetInputSize, OcrConfig, RecognizedText, TextDetector, TextRecognizer,
};
use mmsched_backends::rung_profile::SignSample;
use mmsched_core::time::{Clock, MonotonicClock};
use serde::Serialize;

use crate::cmd::engine_arg::ms;

/// Lines per engine call compared.
const SIZES: [usize; 4] = [1, 2, 4, 8];

/// The comparison on one engine.
#[derive(Debug, Serialize)]
pub(super) struct RecBatchResult {
    pub(super) engine: &'static str,
    frames: usize,
    lines: usize,
    repetitions: u32,
    /// Median milliseconds per line, by lines per call, equal widths only.
    pub(super) same_width_ms_per_line: BTreeMap<usize, f64>,
    /// Engine calls the equal-width batches took, by lines per call.
    same_width_calls: BTreeMap<usize, usize>,
    /// Median milliseconds per line, by lines per call, padded to the widest.
    padded_ms_per_line: BTreeMap<usize, f64>,
    /// Lines whose text differs from one line per call, by lines per call, padded.
    padded_lines_changed: BTreeMap<usize, usize>,
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// Runs the comparison on `engine` over `signs`, `repetitions` times.
pub(super) fn measure(
    engine: EngineOptions,
    signs: &[SignSample],
    repetitions: u32,
) -> Result<RecBatchResult> {
    let config = OcrConfig {
        engine,
        ..OcrConfig::default()
    };
    let mut det = TextDetector::new(config.clone())?;
    let frames: Vec<(&SignSample, Vec<[f32; 4]>)> = signs
        .iter()
        .map(|s| {
            let size = DetInputSize::long_side(320, s.frame.width(), s.frame.height());
            let boxes = det.detect_at(&s.frame, size)?;
            Ok((s, boxes.iter().map(|b| b.rect).collect()))
        })
        .collect::<Result<_>>()?;
    let lines: usize = frames.iter().map(|(_, r)| r.len()).sum();
    let mut recs: Vec<TextRecognizer> = SIZES
        .iter()
        .map(|&rec_batch| {
            TextRecognizer::new(OcrConfig {
                rec_batch,
                ..config.clone()
            })
        })
        .collect::<Result<_, _>>()?;
    let clock = MonotonicClock::new();
    let mut same: Vec<Vec<f64>> = vec![Vec::new(); SIZES.len()];
    let mut padded: Vec<Vec<f64>> = vec![Vec::new(); SIZES.len()];
    let mut alone: Vec<Vec<RecognizedText>> = Vec::new();
    let mut changed = vec![0; SIZES.len()];
    // One untimed round first (plans built).
    for rep in 0..=repetitions {
        for (i, &size) in SIZES.iter().enumerate() {
            let t0 = clock.now_nanos();
            for (sample, rects) in &frames {
                let read = recs[i].recognize_lines(&sample.frame, rects)?;
                if size == 1 && rep == 0 {
                    alone.push(read);
                }
            }
            let t1 = clock.now_nanos();
            for (f, (sample, rects)) in frames.iter().enumerate() {
                let mut read = Vec::with_capacity(rects.len());
                for chunk in rects.chunks(size) {
                    read.extend(recs[0].recognize_batch(&sample.frame, chunk)?);
                }
                if rep == 0 {
                    changed[i] += read
                        .iter()
                        .zip(&alone[f])
                        .filter(|(a, b)| a.text != b.text)
                        .count();
                }
            }
            let t2 = clock.now_nanos();
            if rep > 0 {
                same[i].push(ms(t1 - t0) / lines.max(1) as f64);
                padded[i].push(ms(t2 - t1) / lines.max(1) as f64);
            }
        }
    }
    let by_size = |v: Vec<f64>, i: usize| (SIZES[i], v);
    let rec_max_width = config.rec_max_width;
    Ok(RecBatchResult {
        engine: engine.kind.as_str(),
        frames: frames.len(),
        lines,
        repetitions,
        same_width_ms_per_line: same
            .into_iter()
            .enumerate()
            .map(|(i, v)| by_size(v, i))
            .map(|(n, mut v)| (n, median(&mut v)))
            .collect(),
        same_width_calls: SIZES
            .iter()
            .map(|&n| {
                let calls = frames
                    .iter()
                    .map(|(_, r)| mmsched_backends::ocr::batch_groups(r, rec_max_width, n).len())
                    .sum();
                (n, calls)
            })
            .collect(),
        padded_ms_per_line: padded
            .into_iter()
            .enumerate()
            .map(|(i, v)| by_size(v, i))
            .map(|(n, mut v)| (n, median(&mut v)))
            .collect(),
        padded_lines_changed: SIZES.iter().copied().zip(changed).collect(),
    })
}

/// Prints one engine's comparison.
pub(super) fn print(r: &RecBatchResult) {
    outln!(
        "PP-OCRv4 rec [{}], {} lines of {} signs, ms per line (median of {}): lines per call {}",
        r.engine,
        r.lines,
        r.frames,
        r.repetitions,
        SIZES.map(|n| n.to_string()).join(" / ")
    );
    let row = |m: &BTreeMap<usize, f64>| {
        m.values()
            .map(|v| format!("{v:.2}"))
            .collect::<Vec<_>>()
            .join(" / ")
    };
    outln!(
        "  equal widths (exact):  {}",
        row(&r.same_width_ms_per_line)
    );
    outln!(
        "  padded to the widest:  {}  (lines read differently: {})",
        row(&r.padded_ms_per_line),
        r.padded_lines_changed
            .values()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(" / ")
    );
}
