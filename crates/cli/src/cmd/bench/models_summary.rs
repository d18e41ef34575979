//! The headline keys of `bench models --json`, read off the per-model results: `ocr.*`,
//! `asr.*`, `engines` (the engine `run` uses per model) and `layer_ratios`.
//!
//! `ocr.det_ms_p50` and `ocr.rec_box_ms_p50` are the execution stage (the engine call
//! through mmsched's session: tensors in, ONNX Runtime or tract, tensors out) of the
//! detector on a 320×320 input and of the recogniser on one 48×320 line, one thread, on the
//! default ONNX engine: the figures to set against ONNX Runtime called directly
//! (`scripts/bench-mainstream.sh`). The `*_total_ms_p50` keys add pre- and post-processing.

use mmsched_backends::EngineKind;
use serde_json::{Map, Value, json};

use super::models_asr::RtfScan;

/// The result of `model` on `engine` among `models` (the `models` array of the output).
fn find<'a>(models: &'a [Value], model: &str, engine: &str) -> Option<&'a Value> {
    models
        .iter()
        .find(|m| m["model"] == model && m["engine"] == engine)
}

/// The headline keys, to merge into the top level of the output.
pub(super) fn summary(
    output: &Value,
    rtf: Option<&RtfScan>,
    onnx: Option<EngineKind>,
) -> Map<String, Value> {
    let models = output["models"].as_array().map_or(&[][..], Vec::as_slice);
    let onnx = onnx.map_or("", EngineKind::as_str);
    let mut top = Map::new();
    let det = find(models, "ppocr-v4-det", onnx);
    let rec = find(models, "ppocr-v4-rec", onnx);
    if det.is_some() || rec.is_some() {
        let p50 =
            |m: Option<&Value>, stage: &str| m.map_or(Value::Null, |m| m[stage]["p50"].clone());
        let p99 =
            |m: Option<&Value>, stage: &str| m.map_or(Value::Null, |m| m[stage]["p99"].clone());
        let mut ocr = json!({
            "engine": onnx,
            "threads": 1,
            "det_ms_p50": p50(det, "exec_ms"),
            "det_ms_p99": p99(det, "exec_ms"),
            "det_total_ms_p50": p50(det, "total_ms"),
            "rec_box_ms_p50": p50(rec, "exec_ms"),
            "rec_box_ms_p99": p99(rec, "exec_ms"),
            "rec_box_total_ms_p50": p50(rec, "total_ms"),
        });
        // Batched recognition on the default engine: milliseconds per line by lines per
        // call (equal widths), and one line a call over four.
        let batch = output["rec_batch"]
            .as_array()
            .and_then(|b| b.iter().find(|r| r["engine"] == onnx));
        if let (Some(b), Some(o)) = (batch, ocr.as_object_mut()) {
            let by = &b["same_width_ms_per_line"];
            o.insert("rec_line_ms_by_batch".into(), by.clone());
            let speedup = match (by["1"].as_f64(), by["4"].as_f64()) {
                (Some(one), Some(four)) if four > 0.0 => json!(one / four),
                _ => Value::Null,
            };
            o.insert("rec_batch4_speedup".into(), speedup);
        }
        top.insert("ocr".into(), ocr);
    }
    if let Some(scan) = rtf {
        top.insert("asr".into(), json!(scan));
    }
    let mut engines = Map::new();
    let mut ratios = Map::new();
    for m in models {
        let (Some(name), Some(engine)) = (m["model"].as_str(), m["engine"].as_str()) else {
            continue;
        };
        // The engine `run` uses: the default ONNX engine for the ONNX models; the only (or
        // first-measured) engine for the others.
        let is_default = match name {
            "ppocr-v4-det" | "ppocr-v4-rec" | "silero-vad" => engine == onnx,
            _ => !engines.contains_key(name),
        };
        if is_default {
            engines.insert(name.to_owned(), Value::from(engine));
            ratios.insert(name.to_owned(), m["layer_ratio"].clone());
        }
    }
    let llm = &output["llm"];
    if let (Some(name), Some(engine)) = (llm["model"].as_str(), llm["engine"].as_str()) {
        engines.insert(name.to_owned(), Value::from(engine));
        ratios.insert(name.to_owned(), llm["layer_ratio"].clone());
    }
    top.insert("engines".into(), Value::Object(engines));
    top.insert("layer_ratios".into(), Value::Object(ratios));
    top
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headline_keys_come_from_the_default_engines_rows() {
        let out = json!({
            "models": [
                {"model": "ppocr-v4-det", "engine": "tract", "exec_ms": {"p50": 70.0, "p99": 80.0}, "total_ms": {"p50": 75.0}, "layer_ratio": 0.9},
                {"model": "ppocr-v4-det", "engine": "ort", "exec_ms": {"p50": 30.0, "p99": 35.0}, "total_ms": {"p50": 33.0}, "layer_ratio": 0.98},
                {"model": "ppocr-v4-rec", "engine": "ort", "exec_ms": {"p50": 12.0, "p99": 14.0}, "total_ms": {"p50": 13.0}, "layer_ratio": 0.99},
                {"model": "whisper-tiny.en", "engine": "candle-q8", "layer_ratio": 0.995},
            ],
            "llm": {"model": "gemma3-270m", "engine": "candle", "layer_ratio": 0.97},
            "rec_batch": [
                {"engine": "tract", "same_width_ms_per_line": {"1": 30.0, "4": 20.0}},
                {"engine": "ort", "same_width_ms_per_line": {"1": 12.0, "2": 12.5, "4": 15.0}},
            ],
        });
        let s = summary(&out, None, Some(EngineKind::Ort));
        assert_eq!(s["ocr"]["det_ms_p50"], 30.0);
        assert_eq!(s["ocr"]["det_ms_p99"], 35.0);
        assert_eq!(s["ocr"]["rec_box_ms_p50"], 12.0);
        assert_eq!(s["ocr"]["rec_line_ms_by_batch"]["2"], 12.5);
        assert_eq!(s["ocr"]["rec_batch4_speedup"], 0.8);
        assert_eq!(s["engines"]["ppocr-v4-det"], "ort");
        assert_eq!(s["engines"]["whisper-tiny.en"], "candle-q8");
        assert_eq!(s["engines"]["gemma3-270m"], "candle");
        assert_eq!(s["layer_ratios"]["ppocr-v4-det"], 0.98);
        assert_eq!(s["layer_ratios"]["gemma3-270m"], 0.97);
        assert!(!s.contains_key("asr"));
    }
}
