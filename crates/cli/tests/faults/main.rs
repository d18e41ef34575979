//! The fault suite: one test per fault a device meets in the field, each asserting what the
//! user sees — the exit status, the message, and for a run its accounting (every input
//! `offered` ends in exactly one outcome). docs/faults.md lists the faults and the test
//! that shows each.
//!
//! Tests that start models need them in the cache (`scripts/setup.sh` fetches them) and
//! fail, naming the fix, when they are missing.

mod audio;
mod disk;
mod frames;
mod pipes;
mod rtp;
mod signals;

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Output};
use std::time::{Duration, Instant};

/// The binary under test.
fn mmsched() -> Command {
    Command::new(env!("CARGO_BIN_EXE_mmsched"))
}

/// Runs `mmsched ARGS` to the end.
fn output(args: &[&str]) -> Output {
    mmsched().args(args).output().expect("the binary runs")
}

/// Sends `signal` (`INT`, `TERM`) to `child` with `kill` (procps, installed by setup).
fn signal(child: &Child, signal: &str) {
    let ok = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(child.id().to_string())
        .status()
        .expect("kill runs (scripts/setup.sh installs procps)");
    assert!(ok.success(), "kill -{signal} failed");
}

/// Waits up to `limit` for `child` to end; kills it and fails the test if it does not.
fn wait_for(child: &mut Child, limit: Duration, what: &str) -> ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("waits") {
            return status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The exit code of a process that ended by itself; fails if a signal ended it (a
/// segfault, an abort).
fn exit_code(status: ExitStatus, what: &str) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    if let Some(sig) = status.signal() {
        panic!("{what}: ended by signal {sig} (11 is a segfault, 6 an abort)");
    }
    status.code().expect("an exit code")
}

/// Reads `stream`'s lines on a thread, passing each to `seen` until it returns true; the
/// rest is drained, so the child never blocks on a full pipe. Returns what was read.
fn watch_lines(
    stream: impl Read + Send + 'static,
    mut seen: impl FnMut(&str) -> bool + Send + 'static,
) -> std::sync::mpsc::Receiver<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut found = false;
        for line in BufReader::new(stream).lines().map_while(Result::ok) {
            if !found && seen(&line) {
                found = true;
                let _ = tx.send(line.clone());
            }
        }
    });
    rx
}

/// A scenario file in `dir` with the given TOML text; returns its path.
fn scenario(dir: &Path, text: &str) -> String {
    let path = dir.join("scenario.toml");
    std::fs::write(&path, text).expect("write the scenario");
    path.to_str().expect("utf-8").to_string()
}

/// `summary.json` of a report directory.
fn summary(report: &Path) -> serde_json::Value {
    let path = report.join("summary.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{} was not written: {e}", path.display()));
    serde_json::from_str(&text).expect("summary.json is JSON")
}

/// Checks that every input of every kind in `summary` ended in exactly one outcome.
fn assert_accounted(summary: &serde_json::Value) {
    for kind in ["vision", "vad", "asr", "llm"] {
        let k = &summary[kind];
        let n = |f: &str| k[f].as_u64().unwrap_or(0);
        let outcomes = n("on_time")
            + n("late")
            + n("shed")
            + n("skipped")
            + n("dropped")
            + n("unfinished")
            + n("failed");
        assert_eq!(
            n("offered"),
            outcomes,
            "{kind}: offered must be the sum of the outcomes: {k}"
        );
    }
}
