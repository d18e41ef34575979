//! One device profile end to end: `mmsched profile` writes it, `sim soak` and `sim run` draw
//! job costs from it, and `run` takes its cost priors from it.

mod common;

use std::process::Command;

use common::mmsched;

#[test]
fn profile_then_sim_soak_then_run_read_the_same_profile() {
    let dir = tempfile::tempdir().expect("temp dir");
    let profile = dir.path().join("profile.json");
    let p = profile.to_str().expect("utf-8 path");
    let measured = mmsched(&[
        "profile", "--runs", "2", "--warmup", "1", "--engine", "tract", "--out", p, "--json",
    ]);
    for kind in ["vision", "vad", "asr", "llm"] {
        let j = &measured["jobs"][kind];
        let p50 = j["p50_nanos"].as_u64().unwrap_or(0);
        assert!(p50 > 0, "jobs.{kind} measured: {measured}");
        assert!(j["from"].is_string());
    }
    let soak = mmsched(&[
        "sim",
        "soak",
        "--scenario",
        "car",
        "--hours",
        "0.5",
        "--window-secs",
        "600",
        "--sample-secs",
        "2",
        "--profile",
        p,
        "--json",
        "--out",
        dir.path().join("soak").to_str().expect("utf-8"),
    ]);
    assert_eq!(soak["profile"], p, "{soak}");
    assert!(soak["arms"]["mmsched"]["on_time_pct"].is_number());
    let predicted = mmsched(&[
        "sim",
        "run",
        "--scenario",
        "car",
        "--duration",
        "5",
        "--profile",
        p,
        "--json",
    ]);
    assert_eq!(predicted["profile"], p);
    let report = dir.path().join("report");
    let run = mmsched(&[
        "run",
        "--scenario",
        "car",
        "--duration",
        "3",
        "--profile",
        p,
        "--json",
        "--report",
        report.to_str().expect("utf-8"),
    ]);
    let notes = run["platform"].as_array().expect("platform notes");
    assert!(
        notes.iter().any(|n| n
            .as_str()
            .is_some_and(|s| s == format!("cost priors from {p}"))),
        "{notes:?}"
    );
}

#[test]
fn an_old_or_broken_profile_is_a_clear_error() {
    let dir = tempfile::tempdir().expect("temp dir");
    let old = dir.path().join("old.json");
    std::fs::write(
        &old,
        r#"{"label":"x","models":{"vad":{"p50_ms":2,"p99_ms":3}}}"#,
    )
    .expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_mmsched"))
        .args(["sim", "run", "--profile", old.to_str().expect("utf-8")])
        .output()
        .expect("run");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("old.json") && err.contains("mmsched profile"),
        "{err}"
    );
}
