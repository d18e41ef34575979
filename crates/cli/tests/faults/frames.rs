//! A frame folder that changes under a run (finding 5): frames deleted, truncated, replaced
//! by garbage or by a FIFO while the camera replays them. Each frame the camera could not
//! read is `failed`, with its reason in its results line, the summary and the table; the
//! run never blocks on a read, ends at `--duration` and stops on one signal with its
//! report. Needs the OCR model, ffmpeg and fonts-dejavu-core (`scripts/setup.sh`).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::{assert_accounted, exit_code, mmsched, scenario, signal, summary, wait_for};

/// Real runs share the machine's cores: one at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Three sign images rendered by ffmpeg into `dir/signs` (`01.png`, `02.png`, `03.png`).
fn render_signs(dir: &Path) -> PathBuf {
    let signs = dir.join("signs");
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/examples/render-signs.sh");
    let out = Command::new("bash")
        .arg(script)
        .arg(&signs)
        .output()
        .expect("runs the renderer");
    assert!(
        out.status.success(),
        "render-signs.sh failed (scripts/setup.sh installs ffmpeg and fonts-dejavu-core): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    signs
}

/// A scenario replaying `signs` in a loop at 2 frames per second for `secs` seconds.
fn looped_camera(dir: &Path, secs: u32) -> String {
    scenario(
        dir,
        &format!(
            r#"
version = 1
name = "changing-folder"
duration_s = {secs}
[device]
workers = 2
[[models]]
name = "ocr"
kind = "vision"
[[streams]]
name = "camera"
kind = "camera"
models = ["ocr"]
fps = 2
sla_ms = 3000
importance = 0.9
source = {{ kind = "frames", path = "signs", at_end = "loop" }}
"#
        ),
    )
}

/// Starts `run` on `scenario` with its results on stdout and waits for the first result
/// (the models are loaded and the camera plays); returns the child and a reader of the
/// rest of its stdout.
fn start_run(scenario: &str, report: &Path) -> (Child, std::sync::mpsc::Receiver<String>) {
    let mut child = mmsched()
        .args(["run", "--no-platform", "--results", "-", "--scenario"])
        .arg(scenario)
        .arg("--report")
        .arg(report)
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(report.with_extension("stderr")).expect("stderr file"))
        .spawn()
        .expect("starts");
    let mut stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut text = String::new();
        let mut buf = [0u8; 4096];
        while let Ok(n) = stdout.read(&mut buf) {
            if n == 0 {
                break;
            }
            text.push_str(&String::from_utf8_lossy(&buf[..n]));
            while let Some(end) = text.find('\n') {
                let line: String = text.drain(..=end).collect();
                if tx.send(line.trim_end().to_string()).is_err() {
                    return;
                }
            }
        }
    });
    rx.recv_timeout(Duration::from_secs(300))
        .expect("a first result once the OCR model is loaded");
    (child, rx)
}

/// What the run started by [`start_run`] with `report` wrote on stderr.
fn stderr_of(report: &Path) -> String {
    std::fs::read_to_string(report.with_extension("stderr")).unwrap_or_default()
}

fn mkfifo(path: &Path) {
    let made = Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs (coreutils)");
    assert!(made.success(), "mkfifo {}", path.display());
}

/// Finding 5: a frame deleted, one truncated and one replaced by garbage under a looped
/// run. Before, they vanished (`failed` 0, no message); now every tick whose frame could
/// not be read is a `failed` result naming the file, the summary counts each reason, and
/// the run ends at its duration with exit 0.
#[test]
fn frames_deleted_truncated_or_garbage_under_a_run_are_failed_with_their_reason() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().expect("tempdir");
    let signs = render_signs(dir.path());
    let file = looped_camera(dir.path(), 8);
    let report = dir.path().join("report");
    let started = Instant::now();
    let (mut child, lines) = start_run(&file, &report);
    std::fs::remove_file(signs.join("01.png")).expect("delete");
    let png = std::fs::read(signs.join("02.png")).expect("read");
    std::fs::write(signs.join("02.png"), &png[..png.len() / 3]).expect("truncate");
    std::fs::write(signs.join("03.png"), b"not an image").expect("garbage");
    let status = wait_for(&mut child, Duration::from_secs(120), "run");
    let err = stderr_of(&report);
    assert_eq!(exit_code(status, "run"), 0, "{err}");
    let failed: Vec<serde_json::Value> = lines
        .try_iter()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(&l).ok())
        .filter(|r| r.get("error").is_some())
        .collect();
    assert!(
        failed.len() >= 3,
        "every pass after the change fails three frames: {failed:?}"
    );
    for r in &failed {
        assert_eq!(
            (&r["kind"], &r["on_time"]),
            (&"vision".into(), &false.into())
        );
        assert_eq!(r["text"], "", "{r}");
    }
    let reasons: Vec<&str> = failed.iter().filter_map(|r| r["error"].as_str()).collect();
    for (name, says) in [
        ("01.png", "No such file"),
        ("02.png", "not a readable PNG"),
        ("03.png", "not a readable PNG"),
    ] {
        assert!(
            reasons.iter().any(|r| r.contains(name) && r.contains(says)),
            "{name}: {reasons:?}"
        );
    }
    let s = summary(&report);
    assert_accounted(&s);
    let v = &s["vision"];
    let by_reason: u64 = v["failures"]
        .as_object()
        .expect("failures by reason")
        .values()
        .filter_map(serde_json::Value::as_u64)
        .sum();
    assert_eq!(by_reason, v["failed"].as_u64().expect("failed"), "{v}");
    assert!(by_reason >= failed.len() as u64, "{v}");
    assert!(
        err.contains("vision   failed"),
        "the table names the reasons: {err}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(100),
        "the run ended at its duration"
    );
}

/// Finding 5: every frame deleted and one replaced by a FIFO nobody writes to. Before,
/// the run hung past `--duration`, a signal printed `stopping…` and nothing more, and a
/// second left no `summary.json`. Now the run goes on failing each tick with its reason,
/// and one SIGTERM stops it with its report (exit 130).
#[test]
fn a_folder_emptied_or_holding_a_fifo_never_hangs_the_run_and_sigterm_writes_the_report() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().expect("tempdir");
    let signs = render_signs(dir.path());
    let file = looped_camera(dir.path(), 600);
    let report = dir.path().join("report");
    let (mut child, _lines) = start_run(&file, &report);
    for name in ["01.png", "02.png", "03.png"] {
        std::fs::remove_file(signs.join(name)).expect("delete");
    }
    mkfifo(&signs.join("02.png"));
    // Long enough for the camera to show the frames it read ahead (up to four, two
    // seconds) and reach the FIFO and the deleted files again.
    std::thread::sleep(Duration::from_secs(6));
    signal(&child, "TERM");
    let status = wait_for(&mut child, Duration::from_secs(30), "run after SIGTERM");
    let err = stderr_of(&report);
    assert_eq!(exit_code(status, "run after SIGTERM"), 130, "{err}");
    let s = summary(&report);
    assert_accounted(&s);
    let failures = s["vision"]["failures"]
        .as_object()
        .unwrap_or_else(|| panic!("failures: {}", s["vision"]));
    let names = |file: &str| failures.keys().any(|r| r.contains(file));
    assert!(names("01.png") && names("03.png"), "{failures:?}");
    assert!(
        failures
            .keys()
            .any(|r| r.contains("02.png") && r.contains("no longer a regular file")),
        "the FIFO is named: {failures:?}"
    );
}

/// Finding 5: every frame deleted, and the run must still end at its `--duration`
/// (before, it hung in the camera's read loop).
#[test]
fn a_folder_emptied_under_a_run_ends_at_its_duration_with_a_report() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().expect("tempdir");
    let signs = render_signs(dir.path());
    let file = looped_camera(dir.path(), 6);
    let report = dir.path().join("report");
    let (mut child, _lines) = start_run(&file, &report);
    let emptied = Instant::now();
    for name in ["01.png", "02.png", "03.png"] {
        std::fs::remove_file(signs.join(name)).expect("delete");
    }
    let status = wait_for(&mut child, Duration::from_secs(60), "run");
    let err = stderr_of(&report);
    assert_eq!(exit_code(status, "run"), 0, "{err}");
    assert!(
        emptied.elapsed() < Duration::from_secs(30),
        "the run ended at its duration, not later"
    );
    let s = summary(&report);
    assert_accounted(&s);
    assert!(
        s["vision"]["failed"].as_u64().is_some_and(|n| n >= 3),
        "{}",
        s["vision"]
    );
}
