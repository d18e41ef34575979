//! `mmsched bench models --only ocr` on the real cached PP-OCRv4 models: the headline keys
//! (`ocr.det_ms_p50`, `ocr.rec_box_ms_p50`, `engines`, `layer_ratios`) on ONNX Runtime, the
//! default engine, and the automatic fall back to tract, with its one-line note, when the
//! ONNX Runtime library is missing.
//!
//! Needs the models and the ONNX Runtime library in `$MMSCHED_HOME` (`mmsched models fetch`).

use std::process::Command;

use serde_json::Value;

fn bench_ocr(ort_library: Option<&str>) -> (Value, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mmsched"));
    cmd.args([
        "bench", "models", "--only", "ocr", "--engine", "auto", "--runs", "2", "--json",
    ]);
    if let Some(lib) = ort_library {
        cmd.env("ORT_DYLIB_PATH", lib);
    }
    let out = cmd.output().expect("the binary runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    let v: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    (v, stderr)
}

fn positive(v: &Value, key: &str) -> f64 {
    let x = v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} missing or not a number: {v}"));
    assert!(x > 0.0, "{key} = {x}");
    x
}

#[test]
fn ocr_headline_keys_are_measured_on_onnx_runtime_by_default() {
    let (v, stderr) = bench_ocr(None);
    assert!(
        !stderr.contains("run on tract"),
        "the ONNX Runtime library is missing: run `mmsched models fetch` ({stderr})"
    );
    let ocr = &v["ocr"];
    assert_eq!(ocr["engine"], "ort", "{v}");
    assert_eq!(ocr["threads"], 1);
    let det = positive(ocr, "det_ms_p50");
    assert!(positive(ocr, "det_ms_p99") >= det);
    assert!(positive(ocr, "det_total_ms_p50") >= det);
    let rec = positive(ocr, "rec_box_ms_p50");
    assert!(positive(ocr, "rec_box_total_ms_p50") >= rec);
    for model in ["ppocr-v4-det", "ppocr-v4-rec"] {
        assert_eq!(v["engines"][model], "ort", "{v}");
        positive(&v["layer_ratios"], model);
    }
    assert!(v["asr"].is_null(), "Whisper was not selected: {v}");
}

#[test]
fn without_the_library_the_ocr_runs_on_tract_with_a_note() {
    let (v, stderr) = bench_ocr(Some("/nonexistent/libonnxruntime.so"));
    let notes: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("note: ONNX models run on tract"))
        .collect();
    assert_eq!(notes.len(), 1, "one note, naming the fix: {stderr}");
    assert!(notes[0].contains("mmsched models fetch"), "{stderr}");
    assert_eq!(v["ocr"]["engine"], "tract", "{v}");
    assert_eq!(v["engines"]["ppocr-v4-det"], "tract", "{v}");
    positive(&v["ocr"], "det_ms_p50");
}
