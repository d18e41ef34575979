//! The `policy` and `ldti` commands as a user runs them: real processes, real files.

use std::process::Command;

fn mmsched() -> Command {
    Command::new(env!("CARGO_BIN_EXE_mmsched"))
}

fn repo_file(rel: &str) -> String {
    format!("{}/../../{rel}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn shipped_default_policy_is_valid_and_equals_the_built_in_defaults() {
    let out = mmsched()
        .args(["policy", "check", &repo_file("policies/default.toml")])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let shown = mmsched()
        .args(["policy", "show", &repo_file("policies/default.toml")])
        .output()
        .unwrap();
    let builtin = mmsched().args(["policy", "show"]).output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&shown.stdout),
        String::from_utf8_lossy(&builtin.stdout)
    );
}

#[test]
fn invalid_policy_fails_with_line_field_and_allowed_values() {
    let dir = tempfile::tempdir().unwrap();
    let typo = dir.path().join("typo.toml");
    std::fs::write(
        &typo,
        "[arbiter]\nweight_deadline = 0.45\ndispatch = \"fastest\"\n",
    )
    .unwrap();
    let out = mmsched()
        .args(["policy", "check", typo.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("typo.toml:3:"), "{err}");
    assert!(err.contains("edf") && err.contains("score"), "{err}");

    let range = dir.path().join("range.json");
    std::fs::write(&range, r#"{"ldti":{"critical_at":1.5}}"#).unwrap();
    let out = mmsched()
        .args(["policy", "check", "--json", range.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["valid"], false);
    assert!(
        v["errors"][0]
            .as_str()
            .unwrap()
            .contains("ldti.critical_at = 1.5"),
        "{v}"
    );

    let missing = mmsched()
        .args(["policy", "check", "/nonexistent/p.toml"])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("cannot read policy file"));
}

#[test]
fn ldti_json_has_the_documented_keys_and_levels() {
    let run = |p99: &str| {
        let out = mmsched()
            .args([
                "ldti",
                "--latency-p99-ms",
                p99,
                "--latency-ref-ms",
                "20",
                "--drift-ppm",
                "-100",
                "--throughput",
                "90",
                "--throughput-max",
                "100",
                "--json",
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    // 0.4·0 + 0.35·0.1 + 0.25·0.1 = 0.06
    let v = run("20");
    assert!((v["ldti"].as_f64().unwrap() - 0.06).abs() < 1e-9, "{v}");
    assert_eq!(v["level"], "stable");
    // 0.4·0.5 + 0.06 = 0.26
    assert_eq!(run("30")["level"], "degraded");
    // 0.4·1 + 0.06 = 0.46 … still degraded; the latency term is capped at 1
    assert_eq!(run("200")["level"], "degraded");
}

#[test]
fn ldti_rejects_a_zero_reference_with_a_clear_message() {
    let out = mmsched()
        .args([
            "ldti",
            "--latency-p99-ms",
            "5",
            "--latency-ref-ms",
            "0",
            "--drift-ppm",
            "0",
            "--throughput",
            "1",
            "--throughput-max",
            "1",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--latency-ref-ms must be greater than 0")
    );
}
