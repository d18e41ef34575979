//! PP-OCRv4 read in steps and in batches gives what the one-shot path gives, line for line
//! (text, score, box), on ONNX Runtime (the default engine) and tract: at every detector
//! size and line limit of the default quality rungs, with other readings between the steps,
//! and with lines of equal width recognised 2, 4 or 8 per engine call. The rendered text is
//! the truth the full rung must read.

mod common;

use mmsched_backends::ocr::{
    DetInputSize, OcrConfig, OcrLine, OcrPipeline, OcrPlan, OcrReading, OcrStepKind,
    TextRecognizer, batch_groups,
};
use mmsched_backends::{EngineKind, EngineOptions, RgbFrame, run_timed};
use mmsched_core::rungs::Rungs;
use mmsched_core::score::score_lines;
use mmsched_core::time::MonotonicClock;

/// Signs of 3 to 5 lines of different lengths, 640×360, as a camera sees them.
fn signs() -> Vec<(RgbFrame, Vec<&'static str>)> {
    let texts: [&[&str]; 3] = [
        &["Gate B7 closes 14:35", "Boarding", "Seats 1-20 first"],
        &[
            "Platform 3",
            "Trains to Airport",
            "Every 10 min",
            "Next 09:12",
            "Delay 5",
        ],
        &[
            "Valve V-204",
            "pressure 3.2 bar",
            "Room 118",
            "Meeting at 10:00",
        ],
    ];
    texts
        .iter()
        .map(|lines| {
            (
                common::render_text(640, 360, lines, 40.0, 30.0, 20.0),
                lines.to_vec(),
            )
        })
        .collect()
}

fn config(kind: EngineKind) -> OcrConfig {
    common::require_models();
    OcrConfig {
        engine: EngineOptions::new(kind),
        ..OcrConfig::default()
    }
}

/// The one-shot pipeline reading as `plan` does.
fn one_shot_pipeline(config: OcrConfig, plan: OcrPlan) -> OcrPipeline {
    OcrPipeline::new(OcrConfig {
        det_size: plan.det_size,
        max_lines: plan.max_lines,
        ..config
    })
    .expect("models load")
}

fn one_shot(ocr: &mut OcrPipeline, frame: &RgbFrame) -> Vec<OcrLine> {
    run_timed(ocr, frame, &MonotonicClock::new())
        .expect("OCR runs")
        .0
}

fn finish(ocr: &mut OcrPipeline, mut r: OcrReading) -> Vec<OcrLine> {
    while r.next_step().is_some() {
        ocr.step(&mut r).expect("step");
    }
    r.into_lines().expect("finished")
}

fn texts(lines: &[OcrLine]) -> Vec<&str> {
    lines.iter().map(|l| l.text.as_str()).collect()
}

fn every_rung_stepwise_equals_one_shot(kind: EngineKind) {
    let signs = signs();
    let mut ocr = OcrPipeline::new(config(kind)).expect("models load");
    for rung in Rungs::default().vision() {
        let mut whole_frame = one_shot_pipeline(config(kind), OcrPlan::for_rung(rung, 640, 360, 1));
        for (frame, truth) in &signs {
            let whole = one_shot(&mut whole_frame, frame);
            for lines_per_step in [1, 2, 4] {
                let plan = OcrPlan::for_rung(rung, 640, 360, lines_per_step);
                let mut r = ocr.begin(frame.clone(), plan).expect("begins");
                let first = ocr.step(&mut r).expect("detects");
                assert_eq!(first.kind, OcrStepKind::Detect);
                let kept = first.lines;
                assert!(kept <= rung.max_lines.map_or(usize::MAX, |n| n as usize));
                assert_eq!(r.recognize_steps_left(), kept.div_ceil(lines_per_step));
                let mut steps = 0;
                while let Some(next) = r.next_step() {
                    assert_eq!(next, OcrStepKind::Recognize);
                    let s = ocr.step(&mut r).expect("recognises");
                    assert!(s.lines <= lines_per_step && s.lines > 0);
                    steps += 1;
                }
                assert_eq!(steps, kept.div_ceil(lines_per_step));
                let lines = r.into_lines().expect("finished");
                assert_eq!(lines, whole, "{kind} {} {truth:?}", rung.name);
            }
            if rung.name == "det320" {
                // The full rung reads every rendered line (the truth, not the code's output).
                let score = score_lines(truth, &texts(&whole));
                assert!(
                    score.correct(),
                    "{kind}: {truth:?} read as {:?}",
                    texts(&whole)
                );
            }
        }
    }
}

#[test]
fn every_rung_read_in_steps_equals_one_shot_on_onnx_runtime() {
    every_rung_stepwise_equals_one_shot(EngineKind::Ort);
}

#[test]
fn every_rung_read_in_steps_equals_one_shot_on_tract() {
    every_rung_stepwise_equals_one_shot(EngineKind::Tract);
}

#[test]
fn readings_interleaved_on_one_pipeline_equal_each_alone() {
    let signs = signs();
    let mut ocr = OcrPipeline::new(config(EngineKind::Ort)).expect("models load");
    let plan = OcrPlan {
        det_size: DetInputSize::long_side(320, 640, 360),
        max_lines: None,
        lines_per_step: 1,
    };
    let alone: Vec<Vec<OcrLine>> = signs
        .iter()
        .map(|(f, _)| {
            let r = ocr.begin(f.clone(), plan).expect("begins");
            finish(&mut ocr, r)
        })
        .collect();
    let mut readings: Vec<OcrReading> = signs
        .iter()
        .map(|(f, _)| ocr.begin(f.clone(), plan).expect("begins"))
        .collect();
    // One step of each in turn until all are done.
    while readings.iter().any(|r| r.next_step().is_some()) {
        for r in readings.iter_mut().filter(|r| r.next_step().is_some()) {
            ocr.step(r).expect("step");
        }
    }
    for (r, want) in readings.into_iter().zip(alone) {
        assert_eq!(r.into_lines().expect("finished"), want);
    }
}

fn batches_read_exactly_as_one_by_one(kind: EngineKind) {
    let (mut lines, mut calls) = (0, 0);
    for (frame, _) in signs() {
        let mut ocr = OcrPipeline::new(config(kind)).expect("models load");
        let plan = OcrPlan {
            det_size: DetInputSize::MaxSide(640),
            max_lines: None,
            lines_per_step: 8,
        };
        let r = ocr.begin(frame.clone(), plan).expect("begins");
        let alone = finish(&mut ocr, r);
        let rects: Vec<[f32; 4]> = alone
            .iter()
            .map(|l| {
                [
                    l.corners[0][0],
                    l.corners[0][1],
                    l.corners[2][0],
                    l.corners[2][1],
                ]
            })
            .collect();
        let mut one = TextRecognizer::new(config(kind)).expect("loads");
        let single = one.recognize_lines(&frame, &rects).expect("reads");
        for batch in [2, 4, 8] {
            let mut rec = TextRecognizer::new(OcrConfig {
                rec_batch: batch,
                ..config(kind)
            })
            .expect("loads");
            let read = rec.recognize_lines(&frame, &rects).expect("reads");
            assert_eq!(read, single, "{kind}, {batch} lines a call");
            // The one-shot pipeline batching the same way reads the same lines.
            let mut batched = OcrPipeline::new(OcrConfig {
                det_size: DetInputSize::MaxSide(640),
                rec_batch: batch,
                ..config(kind)
            })
            .expect("loads");
            let (lines, _) =
                run_timed(&mut batched, &frame, &MonotonicClock::new()).expect("OCR runs");
            assert_eq!(lines, alone, "{kind}, {batch} lines a call");
        }
        lines += rects.len();
        calls += batch_groups(&rects, OcrConfig::default().rec_max_width, 8).len();
    }
    // Lines of equal width did share calls.
    assert!(calls < lines, "{calls} calls for {lines} lines");
}

#[test]
fn batched_recognition_reads_exactly_as_one_by_one_on_onnx_runtime() {
    batches_read_exactly_as_one_by_one(EngineKind::Ort);
}

#[test]
fn batched_recognition_reads_exactly_as_one_by_one_on_tract() {
    batches_read_exactly_as_one_by_one(EngineKind::Tract);
}

#[test]
fn bad_plans_are_refused_and_unfinished_readings_have_no_lines() {
    let ocr = OcrPipeline::new(config(EngineKind::Ort)).expect("models load");
    let frame = signs().remove(0).0;
    let plan = OcrPlan {
        det_size: DetInputSize::long_side(320, 640, 360),
        max_lines: None,
        lines_per_step: 0,
    };
    let err = ocr
        .begin(frame.clone(), plan)
        .expect_err("no lines per step");
    assert!(err.to_string().contains("lines_per_step"), "{err}");
    let bad_size = OcrPlan {
        det_size: DetInputSize::Fixed {
            width: 300,
            height: 200,
        },
        lines_per_step: 1,
        ..plan
    };
    assert!(ocr.begin(frame.clone(), bad_size).is_err());
    let r = ocr
        .begin(
            frame,
            OcrPlan {
                lines_per_step: 1,
                ..plan
            },
        )
        .expect("begins");
    let err = r.into_lines().expect_err("nothing ran");
    assert!(err.to_string().contains("detect"), "{err}");
    let err = OcrPipeline::new(OcrConfig {
        rec_batch: 0,
        ..config(EngineKind::Ort)
    })
    .expect_err("no batch of 0");
    assert!(err.to_string().contains("rec_batch"), "{err}");
}
