//! Careless and hostile inputs to every file-reading command get a short, clear error at
//! once: endless files (/dev/zero), huge strings, JSON of the wrong shape, a 0 Hz WAV,
//! missing files (the OS error said once), scenario errors without Rust debug output.

use std::process::{Command, Output};

fn mmsched(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mmsched"))
        .args(args)
        .output()
        .expect("runs")
}

fn failure(args: &[&str]) -> String {
    let out = mmsched(args);
    // Problems go to stderr, except `trace validate`'s list, which is its output.
    let err = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(!out.status.success(), "{args:?} succeeded: {err}");
    err
}

#[test]
fn dev_zero_fails_at_once_everywhere() {
    for (args, says) in [
        (&["policy", "check", "/dev/zero"][..], "larger than 1 MiB"),
        (&["trace", "validate", "/dev/zero"][..], "longer than 1 MiB"),
        (&["trace", "view", "/dev/zero"][..], "longer than 1 MiB"),
        (
            &["run", "--scenario", "/dev/zero", "--no-platform"][..],
            "larger than 1 MiB",
        ),
        (
            &["infer", "vad", "--wav", "/dev/zero"][..],
            "not a readable WAV",
        ),
        (
            &["infer", "ocr", "--image", "/dev/zero"][..],
            "larger than 64 MiB",
        ),
    ] {
        let err = failure(args);
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

#[test]
fn a_huge_policy_name_is_refused_and_not_printed_whole() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = dir.path().join("p.json");
    std::fs::write(&f, format!(r#"{{"name":"{}"}}"#, "n".repeat(500_000))).expect("write");
    let err = failure(&["policy", "check", f.to_str().expect("utf-8")]);
    assert!(
        err.contains("at most 128 characters"),
        "{}",
        &err[..err.len().min(500)]
    );
    assert!(err.len() < 2000, "{} bytes of error", err.len());
}

#[test]
fn a_top_level_json_array_is_not_a_policy() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = dir.path().join("p.json");
    std::fs::write(&f, r#"["edge"]"#).expect("write");
    let err = failure(&["policy", "check", f.to_str().expect("utf-8")]);
    assert!(err.contains("a policy document is a JSON object"), "{err}");
}

#[test]
fn a_missing_file_states_the_os_error_once() {
    for args in [
        &["policy", "check", "/nonexistent/p.toml"][..],
        &["trace", "validate", "/nonexistent/t.mmtrace"][..],
        &["run", "--scenario", "/nonexistent/s.toml", "--no-platform"][..],
        &["serve", "--token-file", "/nonexistent/token"][..],
    ] {
        let err = failure(args);
        assert!(err.contains("/nonexistent/"), "{args:?}: {err}");
        assert!(
            err.matches("os error").count() <= 1,
            "{args:?} repeats the OS error: {err}"
        );
    }
}

#[test]
fn infer_vad_refuses_a_zero_hz_wav_like_infer_asr() {
    let wav = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fuzz/corpus/wav_decode/zero-hz.wav"
    );
    for cmd in ["vad", "asr"] {
        let err = failure(&["infer", cmd, "--wav", wav]);
        assert!(err.contains("0 Hz"), "infer {cmd}: {err}");
    }
}

#[test]
fn a_scenario_error_reads_as_text_not_as_rust_debug_output() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = dir.path().join("s.toml");
    let base = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scenarios/inspection.toml"
    ))
    .expect("built-in scenario file");
    let bad = base.replacen(
        "jitter = { shape = 2, scale_ms = 6 }",
        "jitter = { shape = 2, scale_ms = 6, p99_ms = 20 }",
        1,
    );
    std::fs::write(&f, bad).expect("write");
    let err = failure(&[
        "run",
        "--scenario",
        f.to_str().expect("utf-8"),
        "--no-platform",
    ]);
    assert!(err.contains("exactly one of scale_ms or p99_ms"), "{err}");
    assert!(
        !err.contains("JitterSettings") && !err.contains("Some("),
        "{err}"
    );
}

#[test]
fn bench_e2e_names_the_neighbours_it_knows() {
    let err = failure(&["bench", "e2e", "--neighbour", "loud"]);
    assert!(err.contains("--neighbour"), "{err}");
    for kind in ["none", "niced", "busy", "build"] {
        assert!(err.contains(kind), "{kind} missing from: {err}");
    }
}
