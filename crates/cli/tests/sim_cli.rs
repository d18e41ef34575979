//! `mmsched sim …` end to end: the JSON keys scripts rely on, and the files a soak writes.

use std::process::Command;

fn mmsched(args: &[&str]) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_mmsched"))
        .args(args)
        .output()
        .expect("run mmsched");
    assert!(
        out.status.success(),
        "mmsched {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("valid JSON on stdout")
}

#[test]
fn soak_json_round_trips_and_writes_curves() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().to_str().expect("utf-8 path");
    let soak = [
        "sim",
        "soak",
        "--scenario",
        "inspection",
        "--hours",
        "1",
        "--window-secs",
        "600",
        "--sample-secs",
        "2",
        "--seed",
        "3",
        "--json",
        "--out",
        out,
    ];
    let v = mmsched(&soak);
    assert_eq!(v["scenario"], "inspection");
    assert_eq!(v["hours"], 1.0);
    assert_eq!(v["simulated"], true);
    for run in ["compensated", "uncompensated"] {
        for key in ["start_score", "end_score", "decay_pct"] {
            let x = v[run][key]
                .as_f64()
                .unwrap_or_else(|| panic!("{run}.{key} missing: {v}"));
            assert!(x.is_finite());
        }
        let s = v[run]["start_score"].as_f64().expect("number");
        assert!((0.0..=100.0).contains(&s));
    }
    // Round trip: what was printed is what was written.
    let written: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("soak.json")).expect("soak.json written"),
    )
    .expect("valid JSON file");
    assert_eq!(written, v);
    let csv = std::fs::read_to_string(dir.path().join("soak.csv")).expect("csv written");
    assert!(csv.starts_with("hour,ldti_compensated,score_compensated"));
    assert_eq!(csv.lines().count(), 1 + 6, "one row per 10-minute window");
    let svg = std::fs::read_to_string(dir.path().join("soak.svg")).expect("svg written");
    assert!(svg.starts_with("<svg") && svg.contains("simulated soak"));
    // Same seed, same numbers.
    let w = mmsched(&soak);
    assert_eq!(w["compensated"], v["compensated"]);
}

#[test]
fn jitter_and_drift_json_keys() {
    let v = mmsched(&[
        "sim", "jitter", "--calls", "1", "--frames", "3000", "--json",
    ]);
    let rows = v["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 3);
    let p99: Vec<f64> = rows
        .iter()
        .map(|r| r["p99_ms"].as_f64().expect("p99_ms"))
        .collect();
    assert_eq!(p99, [0.0, 28.0, 42.0]);
    for r in rows {
        for k in ["loss_pct", "mos"] {
            assert!(
                r["fixed"][k].is_number() && r["adaptive"][k].is_number(),
                "{r}"
            );
        }
        assert!(r["adaptive"]["added_delay_ms"].is_number());
    }
    let v = mmsched(&["sim", "drift", "--secs", "120", "--json"]);
    let pairs = v["pairs"].as_array().expect("pairs");
    assert_eq!(pairs.len(), 2);
    for p in pairs {
        for k in ["raw_p_over_50ms", "aligned_p_over_50ms", "residual_p99_ms"] {
            assert!(p[k].is_number(), "{p}");
        }
        assert!(p["pair"].is_string());
    }
}

#[test]
fn jitter_replays_a_trace_and_rejects_a_bad_one() {
    let dir = tempfile::tempdir().expect("temp dir");
    let good = dir.path().join("trace.csv");
    let mut text = String::from("seq,send_ms,arrival_ms\n");
    for i in 0..500u32 {
        let jitter = if i % 50 == 7 { 45.0 } else { f64::from(i % 5) };
        let arrival = if i % 97 == 3 {
            String::new()
        } else {
            format!("{}", f64::from(i) * 20.0 + 30.0 + jitter)
        };
        text.push_str(&format!("{i},{},{arrival}\n", f64::from(i) * 20.0));
    }
    std::fs::write(&good, text).expect("write trace");
    let v = mmsched(&[
        "sim",
        "jitter",
        "--trace",
        good.to_str().expect("utf-8"),
        "--json",
    ]);
    let row = &v["rows"][0];
    assert!(
        row["fixed"]["loss_pct"].as_f64().expect("number")
            > row["adaptive"]["loss_pct"].as_f64().expect("number")
    );
    let bad = dir.path().join("bad.csv");
    std::fs::write(&bad, "seq,send_ms,arrival_ms\n0,0,1\n1,twenty,2\n").expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_mmsched"))
        .args(["sim", "jitter", "--trace", bad.to_str().expect("utf-8")])
        .output()
        .expect("run");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("line 3") && err.contains("send_ms"), "{err}");
}
