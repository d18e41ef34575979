//! A long-running `mmsched run` under logrotate and a service manager: SIGHUP writes the
//! report so far (while the run goes on) and reopens the `--results` file, which logrotate
//! has moved away. Needs the models (`mmsched models fetch`); fails without them.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn lines(path: &std::path::Path) -> usize {
    std::fs::read_to_string(path).map_or(0, |t| t.lines().count())
}

fn wait_for(what: &str, until: Instant, mut done: impl FnMut() -> bool) {
    while !done() {
        assert!(Instant::now() < until, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn hup(pid: u32) {
    let ok = Command::new("kill")
        .args(["-HUP", &pid.to_string()])
        .status()
        .expect("kill runs (scripts/setup.sh installs procps)");
    assert!(ok.success());
}

#[test]
fn sighup_writes_the_report_so_far_and_reopens_the_results_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let report = dir.path().join("report");
    let results = dir.path().join("results.ndjson");
    let rotated = dir.path().join("results.ndjson.1");
    let mut child = Command::new(env!("CARGO_BIN_EXE_mmsched"))
        .args([
            "run",
            "--no-platform",
            "--duration",
            "30",
            "--scenario",
            "ar-glasses",
        ])
        .arg("--report")
        .arg(&report)
        .arg("--results")
        .arg(&results)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    let until = Instant::now() + Duration::from_secs(240);
    // Results flow once the models are loaded.
    wait_for("a first result", until, || lines(&results) > 0);
    assert!(!report.join("summary.json").exists());
    // What logrotate does: move the file, then tell the process.
    std::fs::rename(&results, &rotated).expect("rename");
    hup(child.id());
    wait_for("the report so far", until, || {
        report.join("summary.json").is_file()
    });
    let so_far = std::fs::read_to_string(report.join("summary.json")).expect("readable");
    let so_far: serde_json::Value = serde_json::from_str(&so_far).expect("complete JSON");
    assert!(
        so_far["duration"].as_f64().is_some_and(|d| d < 30.0),
        "{so_far}"
    );
    assert!(
        so_far["window"]["minutes"].as_f64() == Some(10.0),
        "{so_far}"
    );
    assert!(
        child.try_wait().expect("wait").is_none(),
        "the run goes on after SIGHUP"
    );
    // New results go to a new file at the path.
    wait_for("a result in the reopened file", until, || {
        lines(&results) > 0
    });
    let status = child.wait().expect("the run ends");
    let stderr = std::io::read_to_string(child.stderr.take().expect("stderr")).expect("text");
    assert!(status.success(), "{stderr}");
    assert!(lines(&rotated) > 0);
    let all = lines(&rotated) + lines(&results);
    assert!(
        stderr.contains(&format!("results: {all} record(s)")),
        "{all}: {stderr}"
    );
    let last: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(report.join("summary.json")).expect("x"))
            .expect("the final summary");
    assert!(
        last["duration"].as_f64().is_some_and(|d| d >= 29.0),
        "{last}"
    );
}
