//! `bench e2e` end to end on the real models: five columns on the same inputs, results
//! scored against what the generated frames show, and the bound on `utility_correct`.

mod common;

use common::mmsched;

#[test]
fn five_columns_are_scored_and_measured_against_the_bound() {
    let dir = tempfile::tempdir().expect("temp dir");
    let report = dir.path().to_str().expect("utf-8 path");
    let v = mmsched(&[
        "bench",
        "e2e",
        "--scenario",
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../scenarios/bench/calm-desk.toml"
        ),
        "--duration",
        "4",
        "--repeat",
        "1",
        "--platform",
        "off",
        "--bound",
        "--report",
        report,
        "--json",
    ]);
    let columns = [
        "mmsched",
        "os-threads",
        "fifo",
        "static-priority",
        "static-priority-cheapest",
    ];
    for c in columns {
        let s = &v[c];
        let u = s["utility"].as_f64().unwrap_or(f64::NAN);
        let uc = s["utility_correct"].as_f64().unwrap_or(f64::NAN);
        assert!(uc.is_finite() && uc <= u + 1e-9, "{c}: {uc} > {u}");
        let vision = &s["vision"];
        let completed = vision["completed"].as_u64().unwrap_or(0);
        assert_eq!(vision["scored"].as_u64(), Some(completed), "{c}: {vision}");
        assert!(
            vision["correct"].as_u64() <= Some(completed),
            "{c}: {vision}"
        );
        if completed > 0 {
            assert!(vision["accuracy"].as_f64().is_some(), "{c}: {vision}");
        }
        assert!(
            v["bound"]["share"][c]["median"].is_number(),
            "{c}: {}",
            v["bound"]
        );
    }
    // The degraded column runs the cheapest rung only.
    let rungs = &v["static-priority-cheapest"]["vision"]["rung_counts"];
    assert!(
        rungs.as_object().is_some_and(|r| r.len() == 1),
        "one rung: {rungs}"
    );
    let bound = v["bound"]["utility_correct"].as_f64().unwrap_or(f64::NAN);
    assert!(bound > 0.0 && bound <= 1.0 + 1e-9, "{}", v["bound"]);
}
