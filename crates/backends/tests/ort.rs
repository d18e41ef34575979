//! The same models through ONNX Runtime (cargo feature `ort`; needs
//! `$MMSCHED_HOME/lib/libonnxruntime.so.1.32.0` or `ORT_DYLIB_PATH`).
#![cfg(feature = "ort")]

mod common;

use mmsched_backends::audio::read_wav_16k;
use mmsched_backends::ocr::{OcrConfig, OcrPipeline};
use mmsched_backends::vad::{SileroVad, VadConfig};
use mmsched_backends::{EngineKind, EngineOptions, paths, run_timed};
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
