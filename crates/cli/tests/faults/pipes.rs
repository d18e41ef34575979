//! A reader that goes away (`mmsched … | head`, finding 6): the command ends quietly with
//! status 141, as a process stopped by SIGPIPE shows in a shell, with no panic and no
//! backtrace, whether the closed pipe is standard output or standard error.

use std::io::Read;
use std::process::Stdio;
use std::time::Duration;

use super::{exit_code, mmsched, wait_for};

/// A tiny PNG (no text on it: OCR still prints its JSON).
const IMAGE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../fuzz/corpus/image_decode/4x3.png"
);

/// Commands that print to standard output, each a different writer.
const COMMANDS: [&[&str]; 4] = [
    &["infer", "ocr", "--json", "--image", IMAGE],
    &["policy", "show"],
    &["policy", "schema"],
    &["models", "list"],
];

/// Runs `args` with standard output (`stdout` true) or standard error a pipe whose reader
/// is closed before the command starts, reading the other; returns the exit code and what
/// the other said.
///
/// The test harness starts other tests' processes on other threads, and a process forked
/// while the reader is open holds a copy of it until it executes its program: a command
/// that writes in that instant finds a reader and exits 0. Such a trial tests nothing, so
/// a 0 is tried again, up to three times; a command that ignores the closed pipe exits 0
/// every time.
fn with_closed_pipe(args: &[&str], stdout: bool) -> (i32, String) {
    let mut last = (0, String::new());
    for _ in 0..3 {
        last = closed_pipe_trial(args, stdout);
        if last.0 != 0 {
            break;
        }
    }
    last
}

fn closed_pipe_trial(args: &[&str], stdout: bool) -> (i32, String) {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    let mut cmd = mmsched();
    cmd.args(args).env("RUST_BACKTRACE", "1");
    if stdout {
        cmd.stdout(writer).stderr(Stdio::piped());
    } else {
        cmd.stderr(writer).stdout(Stdio::piped());
    }
    let mut child = cmd.spawn().expect("starts");
    let mut open: Box<dyn Read> = if stdout {
        Box::new(child.stderr.take().expect("stderr"))
    } else {
        Box::new(child.stdout.take().expect("stdout"))
    };
    let mut said = String::new();
    open.read_to_string(&mut said)
        .expect("reads the other stream");
    let status = wait_for(&mut child, Duration::from_secs(120), &format!("{args:?}"));
    (exit_code(status, &format!("{args:?}")), said)
}

#[test]
fn a_closed_stdout_ends_every_command_quietly_with_141() {
    for args in COMMANDS {
        let (code, err) = with_closed_pipe(args, true);
        assert_eq!(code, 141, "{args:?}: {err}");
        assert!(
            !err.contains("panicked") && !err.contains("backtrace"),
            "{args:?} panicked: {err}"
        );
    }
}

#[test]
fn a_closed_stderr_ends_quietly_with_141() {
    // A command whose error message meets a reader of `2>&1` that went away.
    let (code, out) = with_closed_pipe(&["policy", "check", "/nonexistent/p.toml"], false);
    assert_eq!(code, 141, "{out}");
}

/// `run --results -` whose reader goes away: the run stops as if interrupted, still
/// writes its report, and exits 141.
#[test]
fn a_run_whose_results_reader_goes_away_stops_with_its_report() {
    let dir = tempfile::tempdir().expect("tempdir");
    let report = dir.path().join("report");
    let mut child = mmsched()
        .args(["run", "--no-platform", "--duration", "60", "--results", "-"])
        .arg("--report")
        .arg(&report)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starts");
    drop(child.stdout.take());
    let mut err = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut err)
        .expect("reads stderr");
    let status = wait_for(&mut child, Duration::from_secs(180), "run --results -");
    assert_eq!(exit_code(status, "run --results -"), 141, "{err}");
    assert!(err.contains("went away"), "{err}");
    let s = super::summary(&report);
    super::assert_accounted(&s);
    assert!(
        s["duration"].as_f64().unwrap_or(60.0) < 30.0,
        "the run stopped early: {}",
        s["duration"]
    );
}
