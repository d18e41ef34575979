//! `mmsched serve --models` under a service manager: systemd stops a service with SIGTERM,
//! which must stop the server the way Ctrl-C does (open requests get their grace period,
//! the process exits 0), not kill it mid-answer. Needs the models (`mmsched models fetch`)
//! and curl; fails when either is missing.

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn serve_models_stops_on_sigterm_as_on_ctrl_c() {
    let dir = tempfile::tempdir().expect("tempdir");
    let report = dir.path().join("report");
    let mut child = Command::new(env!("CARGO_BIN_EXE_mmsched"))
        .args([
            "serve",
            "--models",
            "--addr",
            "127.0.0.1:0",
            "--json",
            "--report",
        ])
        .arg(&report)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("a startup line");
    let v: serde_json::Value = serde_json::from_str(&line)
        .unwrap_or_else(|e| panic!("startup line is not JSON ({e}): {line:?}"));
    let url = v["url"].as_str().expect("url");
    // The models are loaded and answering before the signal.
    let models = Command::new("curl")
        .args(["-fsS", &format!("{url}/v1/models")])
        .output()
        .expect("curl runs (scripts/setup.sh installs it)");
    assert!(models.status.success(), "{models:?}");
    assert!(String::from_utf8_lossy(&models.stdout).contains("gemma-3-270m"));

    let ok = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(ok.success());
    let deadline = Instant::now() + Duration::from_secs(15);
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        assert!(Instant::now() < deadline, "serve --models ignored SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut stderr)
        .expect("stderr is text");
    // Exit 0 after the Ctrl-C path's own messages, not death by the signal (no code),
    // and the report of what was served written as on Ctrl-C.
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("stopping: open requests"), "{stderr}");
    assert!(report.join("summary.json").is_file(), "{stderr}");
}
