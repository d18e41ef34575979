//! PP-OCRv4 on text rendered by the test itself, on tract (the pure-Rust fallback engine;
//! `tests/ort.rs` runs the same images through ONNX Runtime, the default, and compares).

mod common;

use mmsched_backends::ocr::{DetInputSize, OcrConfig, OcrPipeline, TextDetector, TextRecognizer};
use mmsched_backends::{Backend, BackendError, EngineKind, EngineOptions, RgbFrame, run_timed};
use mmsched_core::time::MonotonicClock;

/// The default settings on tract.
fn tract() -> OcrConfig {
    OcrConfig {
        engine: EngineOptions::new(EngineKind::Tract),
        ..OcrConfig::default()
    }
}

fn read(config: OcrConfig, frame: &RgbFrame) -> Vec<String> {
    common::require_models();
    let mut ocr = OcrPipeline::new(config).expect("models load");
    let clock = MonotonicClock::new();
    let (lines, timing) = run_timed(&mut ocr, frame, &clock).expect("OCR runs");
    assert!(timing.exec_nanos > 0);
    lines.into_iter().map(|l| l.text).collect()
}

#[test]
fn reads_a_rendered_line_exactly() {
    let frame = common::render_text(480, 96, &["Hello World 2026"], 36.0, 24.0, 24.0);
    assert_eq!(read(tract(), &frame), vec!["Hello World 2026"]);
}

#[test]
fn reads_two_lines_in_order_with_boxes_and_scores() {
    common::require_models();
    let frame = common::render_text(
        640,
        200,
        &["Hello World 2026", "Edge scheduler 42"],
        32.0,
        30.0,
        30.0,
    );
    let mut ocr = OcrPipeline::new(tract()).expect("models load");
    let (lines, _) = run_timed(&mut ocr, &frame, &MonotonicClock::new()).expect("OCR runs");
    let texts: Vec<&str> = lines.iter().map(|l| l.text.as_str()).collect();
    assert_eq!(texts, vec!["Hello World 2026", "Edge scheduler 42"]);
    for l in &lines {
        assert!(l.score > 0.9, "{l:?}");
        let [tl, _, br, _] = l.corners;
        assert!(tl[0] < 40.0 && br[0] > 250.0 && br[0] <= 640.0, "{l:?}");
    }
    assert!(lines[0].corners[2][1] <= lines[1].corners[0][1] + 5.0);
    assert_eq!(ocr.last_breakdown().boxes, 2);
}

#[test]
fn reads_a_camera_frame_at_320x320() {
    let frame = common::render_text(640, 480, &["Hello World 2026"], 48.0, 60.0, 200.0);
    let config = OcrConfig {
        det_size: DetInputSize::Fixed {
            width: 320,
            height: 320,
        },
        ..tract()
    };
    assert_eq!(read(config, &frame), vec!["Hello World 2026"]);
}

#[test]
fn blank_frame_has_no_text() {
    let frame = RgbFrame::new(320, 240, vec![255; 320 * 240 * 3]).expect("valid");
    assert!(read(tract(), &frame).is_empty());
}

#[test]
fn detector_and_recognizer_work_alone() {
    common::require_models();
    let clock = MonotonicClock::new();
    let frame = common::render_text(480, 96, &["Hello World 2026"], 36.0, 24.0, 24.0);
    let mut det = TextDetector::new(tract()).expect("detector loads");
    let (boxes, _) = run_timed(&mut det, &frame, &clock).expect("detects");
    assert_eq!(boxes.len(), 1, "{boxes:?}");
    let mut rec = TextRecognizer::new(tract()).expect("recogniser loads");
    let line = common::render_text(360, 56, &["Hello World 2026"], 36.0, 8.0, 6.0);
    let (text, _) = run_timed(&mut rec, &line, &clock).expect("recognises");
    assert_eq!(text.text, "Hello World 2026");
    assert!(det.memory_bytes() > 1_000_000 && rec.memory_bytes() > 1_000_000);
}

#[test]
fn missing_model_names_the_fetch_command() {
    let config = OcrConfig {
        det_path: "/nonexistent/det.onnx".into(),
        ..tract()
    };
    let err = OcrPipeline::new(config).expect_err("must fail");
    assert!(matches!(err, BackendError::ModelMissing { .. }));
    assert!(err.to_string().contains("mmsched models fetch"), "{err}");
}
