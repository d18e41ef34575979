//! `mmsched bench core --quick --json` runs end to end and prints every documented key.

use std::process::Command;

#[test]
fn bench_core_json_has_every_key() {
    let out = Command::new(env!("CARGO_BIN_EXE_mmsched"))
        .args(["bench", "core", "--quick", "--json"])
        .output()
        .expect("the binary runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    for key in [
        "arbitrate_p99_ns_1k",
        "arbitrate_p99_ns_10k",
        "reevaluate_10k_us",
        "reserve_ops_per_s_1e3",
        "reserve_ops_per_s_1e6",
        "ldti_ns",
    ] {
        let x = v[key]
            .as_f64()
            .unwrap_or_else(|| panic!("{key} missing: {v}"));
        assert!(x > 0.0, "{key} = {x}");
    }
    // EDF never misses at utilisation ≤ 1, whatever the machine speed.
    assert_eq!(v["edf_missed_jobs"], 0, "{v}");
    assert!(v["dispatch_jobs"].as_u64().unwrap() > 0);
}
