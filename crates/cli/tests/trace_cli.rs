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

/// `trace view` with a client that never finishes its request: Ctrl-C gives it the grace
/// period and exits; a second Ctrl-C exits at once.
#[test]
fn view_stops_on_ctrl_c_despite_an_open_request_and_at_once_on_a_second() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::Stdio;
    use std::time::{Duration, Instant};
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("t.ndjson");
    let out = mmsched(&[
        "trace",
        "demo",
        "--events",
        "100",
        "--out",
        file.to_str().expect("utf-8 path"),
    ]);
    assert!(out.status.success());
    for (grace, presses, code) in [("1", 1, 0), ("120", 2, 130)] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_mmsched"))
            .args(["trace", "view", "--shutdown-grace-secs", grace])
            .args(["--header-timeout-secs", "120"])
            .arg(&file)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("piped"))
            .read_line(&mut line)
            .expect("prints its URL");
        let addr = line
            .split("http://")
            .nth(1)
            .and_then(|rest| rest.split('/').next())
            .expect("a URL")
            .to_string();
        let mut open = std::net::TcpStream::connect(&addr).expect("connects");
        open.write_all(b"GET /api/v1/trace HTTP/1.1\r\nHost: ")
            .expect("writes half a head");
        std::thread::sleep(Duration::from_millis(300));
        for _ in 0..presses {
            let ok = Command::new("kill")
                .args(["-INT", &child.id().to_string()])
                .status()
                .expect("kill runs");
            assert!(ok.success());
            std::thread::sleep(Duration::from_millis(300));
        }
        let deadline = Instant::now() + Duration::from_secs(15);
        let status = loop {
            if let Some(s) = child.try_wait().expect("waits") {
                break s;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("trace view (grace {grace} s, {presses} Ctrl-C) did not exit");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        assert_eq!(
            status.code(),
            Some(code),
            "grace {grace} s, {presses} Ctrl-C"
        );
        drop(open);
    }
}
