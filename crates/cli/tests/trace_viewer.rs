//! The mmTracer viewer in headless Chromium: `mmsched trace view` serves a demo trace, the
//! page loads it, and the rendered DOM holds the swimlane labels and the percentile table.
//! A screenshot is kept under `target/test-artifacts/mmtracer.png`.
//!
//! Needs Debian's `chromium` (`apt-get install -y chromium`); `MMSCHED_CHROMIUM` overrides
//! the binary. Without it this test fails and says so: it never passes silently.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn chromium() -> PathBuf {
    if let Some(p) = std::env::var_os("MMSCHED_CHROMIUM") {
        return PathBuf::from(p);
    }
    for dir in std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()) {
        for name in ["chromium", "chromium-browser"] {
            let p = dir.join(name);
            if p.is_file() {
                return p;
            }
        }
    }
    panic!(
        "chromium is not installed: this test drives the viewer in headless Chromium. \
         Install it with `apt-get install -y chromium` (CI installs it) or set MMSCHED_CHROMIUM"
    );
}

fn artifacts_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    let dir = target.join("test-artifacts");
    std::fs::create_dir_all(&dir).expect("create target/test-artifacts");
    dir
}

/// Kills the server even when an assertion fails.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn run_chromium(args: &[&str], url: &str) -> String {
    let profile = tempfile::tempdir().expect("profile dir");
    let mut child = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(args)
        .arg(url)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start chromium");
    let mut stdout = child.stdout.take().expect("piped stdout");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut s).expect("read chromium output");
        s
    });
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if child.try_wait().expect("wait chromium").is_some() {
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("chromium did not finish within 120 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    reader.join().expect("reader thread")
}

#[test]
fn viewer_renders_swimlanes_and_percentiles_in_headless_chromium() {
    let browser = chromium();
    assert!(browser.exists());
    let dir = tempfile::tempdir().expect("temp dir");
    let trace = dir.path().join("demo.ndjson");
    let status = Command::new(env!("CARGO_BIN_EXE_mmsched"))
        .args(["trace", "demo", "--events", "100000", "--out"])
        .arg(&trace)
        .stdout(Stdio::null())
        .status()
        .expect("run mmsched trace demo");
    assert!(status.success());

    let mut child = Command::new(env!("CARGO_BIN_EXE_mmsched"))
        .args(["trace", "view", "--addr", "127.0.0.1:0"])
        .arg(&trace)
        .stdout(Stdio::piped())
        .spawn()
        .expect("start mmsched trace view");
    let stdout = child.stdout.take().expect("piped stdout");
    let server = Server(child);
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("read the URL line");
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://127.0.0.1:"))
        .unwrap_or_else(|| panic!("no URL in {line:?}"))
        .to_string();

    let dom = run_chromium(&["--dump-dom", "--virtual-time-budget=10000"], &url);
    assert!(
        dom.contains("data-loaded=\"true\""),
        "the page did not load the trace:\n{}",
        &dom[..dom.len().min(3000)]
    );
    for lane in [
        "data-lane=\"image\"",
        "data-lane=\"audio\"",
        "data-lane=\"text\"",
        "data-lane=\"ldti\"",
        "data-lane=\"worker-vision\"",
        "data-lane=\"worker-text\"",
    ] {
        assert!(dom.contains(lane), "no swimlane {lane} in the DOM");
    }
    assert!(dom.contains("class=\"lane-label lane-modality\""));
    assert!(dom.contains("class=\"lane-label lane-track\""));
    assert!(dom.contains("class=\"lane-label lane-counter\""));
    assert!(
        dom.contains("image jobs"),
        "modality lane labels are rendered as text"
    );
    // The percentile table has a row per modality with numbers in it.
    let stats_at = dom.find("id=\"stats\"").expect("percentile table");
    let stats = &dom[stats_at..];
    assert!(stats.contains("P99") && stats.contains("P95") && stats.contains("P50"));
    for m in ["image", "audio", "text", "imu"] {
        let row = format!("<tr data-modality=\"{m}\">");
        let at = stats
            .find(&row)
            .unwrap_or_else(|| panic!("no {m} row in the percentile table"));
        let cells = &stats[at..at + stats[at..].find("</tr>").expect("row end")];
        assert!(cells.matches("<td").count() == 9, "{cells}");
        assert!(!cells.contains(">–<"), "{m} has no percentiles: {cells}");
    }
    assert!(
        dom.contains("DEMO"),
        "the status line says the trace is a demo"
    );
    assert!(dom.contains("ETag"), "policy changes are listed");

    // Search by trace_id through the URL hash: the selection panel shows that job.
    let trace_text = std::fs::read_to_string(&trace).expect("read trace");
    let job_line = trace_text
        .lines()
        .find(|l| l.contains("\"name\":\"job\"") && l.contains("\"modality\":\"text\""))
        .expect("an LLM job");
    let rec: serde_json::Value = serde_json::from_str(job_line).expect("json");
    let tid = rec["trace_id"].as_str().expect("trace id");
    let dom = run_chromium(
        &["--dump-dom", "--virtual-time-budget=10000"],
        &format!("{url}#raw=1&trace={}", &tid[..12]),
    );
    let details_at = dom.find("id=\"details\"").expect("details panel");
    assert!(
        dom[details_at..].contains(tid),
        "search by trace_id prefix selects the job"
    );
    assert!(dom.contains("found job #"));
    // The time-base switch: raw sensor time is selected and named on the axis.
    assert!(
        dom.contains("raw sensor time ·"),
        "raw time base not applied"
    );
    let raw_at = dom.find("data-mode=\"raw\"").expect("raw button");
    let tag_start = dom[..raw_at].rfind('<').expect("tag start");
    let tag_end = raw_at + dom[raw_at..].find('>').expect("tag end");
    assert!(
        dom[tag_start..tag_end].contains("class=\"on\""),
        "raw button not active"
    );

    let shot = artifacts_dir().join("mmtracer.png");
    let _ = std::fs::remove_file(&shot);
    run_chromium(
        &[
            "--screenshot=".to_string() + &shot.display().to_string(),
            "--window-size=1600,1000".into(),
            "--virtual-time-budget=10000".into(),
        ]
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>(),
        &url,
    );
    let size = std::fs::metadata(&shot).map(|m| m.len()).unwrap_or(0);
    assert!(
        size > 20_000,
        "screenshot {} missing or blank ({size} bytes)",
        shot.display()
    );
    drop(server);
}
