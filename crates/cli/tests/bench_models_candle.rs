//! `mmsched bench models --only asr,llm` on the real cached Whisper tiny.en and Gemma-3
//! models (Gemma-3 on both engines): every documented key is present, figures are
//! positive, and the direct engine calls produce exactly the tokens mmsched's layer
//! produced; Whisper's RTF is measured at 1 and 2 threads in child processes.
//!
//! Needs the models in `$MMSCHED_HOME` (`mmsched models fetch`).

use std::process::Command;

use serde_json::Value;

fn positive(v: &Value, key: &str) -> f64 {
    let x = v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} missing or not a number: {v}"));
    assert!(x > 0.0, "{key} = {x}");
    x
}

fn positive_stage(v: &Value, key: &str) {
    let s = &v[key];
    let p50 = positive(s, "p50");
    let p99 = positive(s, "p99");
    assert!(p99 >= p50, "{key}: p99 {p99} < p50 {p50}");
}

#[test]
fn whisper_and_gemma_are_measured_against_direct_engine_calls() {
    let out = Command::new(env!("CARGO_BIN_EXE_mmsched"))
        .args([
            "bench",
            "models",
            "--only",
            "asr,llm",
            "--runs",
            "1",
            "--llm-tokens",
            "6",
            "--asr-rounds",
            "1",
            "--json",
        ])
        .output()
        .expect("the binary runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert!(v["gate"].is_null(), "the gate was not selected: {v}");

    let models = v["models"].as_array().expect("models is an array");
    assert_eq!(
        models.len(),
        1,
        "only Whisper among the per-stage models: {v}"
    );
    let asr = &models[0];
    assert_eq!(asr["model"], "whisper-tiny.en");
    assert_eq!(asr["engine"], "ggml-q8", "the default Whisper engine");
    assert_eq!(asr["runs"], 1);
    for key in ["pre_ms", "exec_ms", "post_ms", "total_ms"] {
        positive_stage(asr, key);
    }
    for key in ["direct_p50_ms", "layer_ratio", "exec_ratio", "peak_rss_mib"] {
        positive(asr, key);
    }
    assert_eq!(asr["outputs_match"], true, "{asr}");
    let scan = &v["asr"];
    assert_eq!(scan["engine"], "ggml-q8");
    assert_eq!(scan["span"], "window", "the default encoder span");
    positive(scan, "rtf_1t");
    positive(scan, "rtf_2t");
    assert_eq!(
        scan["seconds_1t"].as_array().map(Vec::len),
        Some(1),
        "{scan}"
    );
    assert_eq!(v["engines"]["whisper-tiny.en"], "ggml-q8", "{v}");
    positive(&v["layer_ratios"], "whisper-tiny.en");

    let llm = &v["llm"];
    assert_eq!(llm["model"], "gemma3-270m");
    assert_eq!(llm["generated_tokens"], 6);
    assert_eq!(llm["runs"], 1);
    for key in ["ttft_ms", "tpot_ms", "direct_ttft_ms", "direct_tpot_ms"] {
        positive_stage(llm, key);
    }
    for key in [
        "prompt_tokens",
        "tokens_per_s",
        "mean_tokens_per_s",
        "direct_tokens_per_s",
        "direct_mean_tokens_per_s",
        "layer_ratio",
        "peak_rss_mib",
    ] {
        positive(llm, key);
    }
    // The default engine is llama.cpp, which reports a step as one stage.
    assert_eq!(llm["engine"], "llama");
    positive_stage(&llm["step_split_ms"], "rest");
    // Granted 1 and 2 threads in turn: every figure measured, the same greedy tokens.
    for key in [
        "decode_tok_s_1t",
        "decode_tok_s_2t",
        "prefill_tok_s_1t",
        "prefill_tok_s_2t",
        "prefill_prompt_tokens",
    ] {
        positive(llm, key);
    }
    positive_stage(llm, "sweep_step_ms_1t");
    positive_stage(llm, "sweep_step_ms_2t");
    assert_eq!(llm["sweep_tokens_match"], true, "{llm}");
    // Greedy decoding is deterministic: the session and the plain forward + argmax loop
    // must agree token for token.
    assert_eq!(llm["greedy_tokens_match"], true, "{llm}");
    assert!(
        !llm["text"].as_str().unwrap_or_default().trim().is_empty(),
        "{llm}"
    );
}

#[test]
fn gemma_on_candle_reports_its_stage_split_and_no_thread_figures() {
    let out = Command::new(env!("CARGO_BIN_EXE_mmsched"))
        .args([
            "bench",
            "models",
            "--only",
            "llm",
            "--llm-engine",
            "candle",
            "--runs",
            "1",
            "--llm-tokens",
            "4",
            "--json",
        ])
        .output()
        .expect("the binary runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    let llm = &v["llm"];
    assert_eq!(llm["engine"], "candle");
    for key in ["kv_cache", "attention", "rest"] {
        positive_stage(&llm["step_split_ms"], key);
    }
    // candle cannot change its thread count between calls: no figures rather than
    // figures at a thread count it did not run at.
    assert!(llm["decode_tok_s_2t"].is_null(), "{llm}");
    assert_eq!(llm["greedy_tokens_match"], true, "{llm}");
}

#[test]
fn an_unknown_llm_engine_is_a_clear_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_mmsched"))
        .args(["bench", "models", "--only", "llm", "--llm-engine", "onnx"])
        .output()
        .expect("the binary runs");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("use `llama` or `candle`"), "{err}");
}

#[test]
fn skip_candle_with_only_candle_parts_is_a_clear_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_mmsched"))
        .args(["bench", "models", "--only", "llm", "--skip-candle"])
        .output()
        .expect("the binary runs");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("nothing to measure"), "{err}");
}
