//! The same models through ONNX Runtime, the default ONNX engine (cargo feature `ort`, on by
//! default; needs `$MMSCHED_HOME/lib/libonnxruntime.so.1.32.0`, which `mmsched models fetch`
//! installs, or `ORT_DYLIB_PATH`). A missing library fails these tests, naming the fix.
#![cfg(feature = "ort")]

mod common;

use mmsched_backends::audio::read_wav_16k;
use mmsched_backends::ocr::{DetInputSize, OcrConfig, OcrPipeline};
use mmsched_backends::vad::{SileroVad, VadConfig};
use mmsched_backends::{EngineKind, EngineOptions, RgbFrame, paths, run_timed};
use mmsched_core::time::MonotonicClock;

fn ort() -> EngineOptions {
    let lib = paths::onnxruntime_lib();
    assert!(
        lib.is_file(),
        "ONNX Runtime library {} is missing: run `mmsched models fetch` first",
        lib.display()
    );
    EngineOptions::new(EngineKind::Ort)
}

#[test]
fn ort_reads_a_rendered_line_exactly() {
    common::require_models();
    let frame = common::render_text(480, 96, &["Hello World 2026"], 36.0, 24.0, 24.0);
    let mut ocr = OcrPipeline::new(OcrConfig {
        engine: ort(),
        ..OcrConfig::default()
    })
    .expect("models load in ONNX Runtime");
    let (lines, _) = run_timed(&mut ocr, &frame, &MonotonicClock::new()).expect("runs");
    let texts: Vec<&str> = lines.iter().map(|l| l.text.as_str()).collect();
    assert_eq!(texts, vec!["Hello World 2026"]);
}

/// Reads `frame` with `engine` at detector size `det_size`.
fn read(engine: EngineOptions, det_size: DetInputSize, frame: &RgbFrame) -> Vec<String> {
    let mut ocr = OcrPipeline::new(OcrConfig {
        engine,
        det_size,
        ..OcrConfig::default()
    })
    .expect("models load");
    let (lines, _) = run_timed(&mut ocr, frame, &MonotonicClock::new()).expect("OCR runs");
    lines.into_iter().map(|l| l.text).collect()
}

#[test]
fn ort_and_tract_read_the_same_text_on_every_test_image() {
    common::require_models();
    let camera = DetInputSize::Fixed {
        width: 320,
        height: 320,
    };
    let blank = RgbFrame::new(320, 240, vec![255; 320 * 240 * 3]).expect("valid");
    // The full-pipeline images of `tests/ocr.rs`, with the text rendered into them.
    let cases: [(RgbFrame, DetInputSize, Vec<&str>); 4] = [
        (
            common::render_text(480, 96, &["Hello World 2026"], 36.0, 24.0, 24.0),
            DetInputSize::default(),
            vec!["Hello World 2026"],
        ),
        (
            common::render_text(
                640,
                200,
                &["Hello World 2026", "Edge scheduler 42"],
                32.0,
                30.0,
                30.0,
            ),
            DetInputSize::default(),
            vec!["Hello World 2026", "Edge scheduler 42"],
        ),
        (
            common::render_text(640, 480, &["Hello World 2026"], 48.0, 60.0, 200.0),
            camera,
            vec!["Hello World 2026"],
        ),
        (blank, DetInputSize::default(), vec![]),
    ];
    for (i, (frame, size, expected)) in cases.iter().enumerate() {
        let by_ort = read(ort(), *size, frame);
        let by_tract = read(EngineOptions::new(EngineKind::Tract), *size, frame);
        assert_eq!(by_ort, *expected, "image {i}: ONNX Runtime");
        assert_eq!(by_ort, by_tract, "image {i}: the engines differ");
    }
}

#[test]
fn ort_is_the_default_engine_where_its_library_loads() {
    let _ = ort();
    assert_eq!(mmsched_backends::engine::ort_unavailable(), None);
    assert_eq!(EngineKind::preferred(), EngineKind::Ort);
    assert_eq!(OcrConfig::default().engine.kind, EngineKind::Ort);
    assert_eq!(VadConfig::default().engine.kind, EngineKind::Ort);
}

#[test]
fn ort_and_tract_agree_on_vad() {
    common::require_models();
    let dir = tempfile::tempdir().expect("tempdir");
    let wav = common::espeak(dir.path(), "s", "Testing one two three");
    let audio = read_wav_16k(&wav).expect("reads");
    let mut a = SileroVad::new(VadConfig::default()).expect("tract VAD");
    let mut b = SileroVad::new(VadConfig {
        engine: ort(),
        ..VadConfig::default()
    })
    .expect("ort VAD");
    let pa = a.probabilities(&audio.samples).expect("tract runs");
    let pb = b.probabilities(&audio.samples).expect("ort runs");
    let worst = pa
        .iter()
        .zip(&pb)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0f32, f32::max);
    assert!(worst < 0.01, "engines differ by {worst}");
    assert!(pa.iter().any(|&p| p > 0.5));
}
