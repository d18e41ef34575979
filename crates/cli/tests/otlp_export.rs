//! A real run's trace exported as OTLP/JSON carries today's timestamps: every span starts
//! and ends within the wall-clock interval of the run. The file is parsed by the
//! OpenTelemetry protobuf definitions (Python `opentelemetry-proto`, installed into
//! `$MMSCHED_HOME/venv-otlp` by `scripts/setup.sh`), not by mmsched's own reader; the test
//! fails when that interpreter is missing.

use std::path::PathBuf;
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

fn unix_nanos() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_nanos()
}

fn otlp_python() -> PathBuf {
    let python = mmsched_models::cache_dir().join("venv-otlp/bin/python");
    assert!(
        python.is_file(),
        "{} is missing: run scripts/setup.sh (it installs the opentelemetry-proto package there)",
        python.display()
    );
    python
}

#[test]
fn a_runs_otlp_export_has_the_runs_wall_clock_times_and_parses_as_otlp() {
    let python = otlp_python();
    let dir = tempfile::tempdir().expect("tempdir");
    let before = unix_nanos();
    let run = Command::new(env!("CARGO_BIN_EXE_mmsched"))
        .args([
            "run",
            "--duration",
            "3",
            "--no-platform",
            "--json",
            "--report",
        ])
        .arg(dir.path())
        .output()
        .expect("runs");
    let after = unix_nanos();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let otlp = dir.path().join("trace.otlp.json");
    let export = Command::new(env!("CARGO_BIN_EXE_mmsched"))
        .args(["trace", "export"])
        .arg(dir.path().join("trace.mmtrace"))
        .arg("--otlp-json")
        .arg(&otlp)
        .output()
        .expect("runs");
    assert!(
        export.status.success(),
        "{}",
        String::from_utf8_lossy(&export.stderr)
    );
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/check-otlp.py");
    let check = Command::new(&python)
        .arg(script)
        .arg(&otlp)
        .arg(before.to_string())
        .arg(after.to_string())
        .output()
        .expect("python runs");
    let out = String::from_utf8_lossy(&check.stdout);
    assert!(
        check.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&check.stderr)
    );
    assert!(out.contains("spans checked"), "{out}");
}
