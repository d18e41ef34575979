//! `mmsched trace demo | validate | export` end to end through the binary.

use std::process::Command;

fn mmsched(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_mmsched"))
        .args(args)
        .output()
        .expect("run mmsched")
}

#[test]
fn demo_validates_and_exports() {
    let dir = tempfile::tempdir().expect("temp dir");
    let p = |n: &str| dir.path().join(n).display().to_string();
    let out = mmsched(&[
        "trace",
        "demo",
        "--events",
        "4000",
        "--out",
        &p("t.ndjson"),
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json summary");
    assert!(summary["records"].as_u64().expect("records") >= 4000);

    let out = mmsched(&["trace", "validate", &p("t.ndjson"), "--json"]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["error_count"], 0);

    let out = mmsched(&[
        "trace",
        "export",
        &p("t.ndjson"),
        "--perfetto",
        &p("t.json"),
        "--otlp-json",
        &p("t.otlp.json"),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(p("t.json")).expect("perfetto file"))
            .expect("json");
    assert!(
        doc["traceEvents"]
            .as_array()
            .is_some_and(|a| a.len() > 4000)
    );
    let otlp = std::fs::read_to_string(p("t.otlp.json")).expect("otlp file");
    assert_eq!(otlp.lines().count(), 2);

    let out = mmsched(&["trace", "export", &p("t.ndjson")]);
    assert!(!out.status.success(), "export without a format is refused");
}

#[test]
fn validate_names_bad_lines() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("bad.ndjson");
    let good = r#"{"kind":"span","trace_id":"0af7651916cd43dd8448eb211c80319c","span_id":"b7ad6b7169203331","track":"cpu0","ts_ns":5,"dur_ns":10,"clock":"device","name":"exec"}"#;
    let text = format!(
        "{{\"mmtrace\":1,\"clocks\":[{{\"name\":\"device\"}}],\"start_unix_nanos\":0}}\n{good}\n{}\nnot json\n",
        good.replace("\"cpu0\"", "\"\"")
    );
    std::fs::write(&file, text).expect("write");
    let out = mmsched(&["trace", "validate", file.to_str().expect("utf-8 path")]);
    assert!(!out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("bad.ndjson:3: `track` is empty"),
        "{stdout}"
    );
    assert!(stdout.contains("bad.ndjson:4:"), "{stdout}");
    assert!(stdout.contains("2 bad lines, 1 valid records"), "{stdout}");

    let out = mmsched(&["trace", "view", file.to_str().expect("utf-8 path")]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("line 3"));
}
