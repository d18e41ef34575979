//! `mmsched run` as users call it: a short real run writes the report directory with the
//! documented summary keys; Ctrl-C mid-run stops early, still writes the report and leaves
//! no resource group behind; bad arguments get clear errors.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn mmsched() -> Command {
    Command::new(env!("CARGO_BIN_EXE_mmsched"))
}

fn summary(dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("summary.json")).expect("summary.json written");
    serde_json::from_str(&text).expect("summary.json is JSON")
}

/// Drains a `run --serve` child's stderr (progress lines) on a thread and returns the
/// address it serves on.
fn served_address(child: &mut std::process::Child) -> String {
    use std::io::{BufRead, BufReader};
    let stderr = child.stderr.take().expect("piped");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(url) = line.split("on http://").nth(1) {
                let _ = tx.send(url.trim().to_string());
            }
        }
    });
    rx.recv_timeout(Duration::from_secs(60))
        .expect("run prints the served address")
}

#[test]
fn a_short_run_writes_summary_report_and_trace() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = mmsched()
        .args(["run", "--duration", "6", "--json", "--report"])
        .arg(dir.path())
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let printed: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("--json prints summary.json");
    let s = summary(dir.path());
    assert_eq!(printed, s);
    for m in ["vision", "vad", "asr", "llm"] {
        for k in [
            "jobs",
            "completed",
            "deadline_misses",
            "skipped",
            "shed",
            "p50_ms",
            "p99_ms",
        ] {
            assert!(s[m].get(k).is_some(), "{m}.{k} missing in {s}");
        }
    }
    assert!(s["llm"]["tokens_per_s"].is_number());
    assert!(s["ldti"]["mean"].is_number() && s["ldti"]["max"].is_number());
    assert!(s["ldti"]["seconds_by_level"].is_object());
    assert!(s["alignment"].get("residual_p99_ms").is_some());
    assert!(s["audio"]["frame_loss_pct"].is_number());
    assert!(s["scheduler_overhead_pct"].is_number());
    assert!(
        s["asr"]["sla_rule"]
            .as_str()
            .is_some_and(|r| r.contains("utterance's length")),
        "the ASR deadline rule is stated: {s}"
    );
    assert_eq!(s["scenario"], "ar-glasses");
    assert_eq!(s["scheduler"], "mmsched");
    assert!(s["duration"].as_f64().is_some_and(|d| d > 5.0));
    assert!(s["vad"]["jobs"].as_u64().is_some_and(|n| n > 100), "{s}");
    let html = std::fs::read_to_string(dir.path().join("report.html")).expect("report.html");
    assert!(html.contains("<svg"));
    let trace = dir.path().join("trace.mmtrace");
    let v = mmsched()
        .args(["trace", "validate"])
        .arg(&trace)
        .output()
        .expect("runs");
    assert!(v.status.success(), "{}", String::from_utf8_lossy(&v.stderr));
}

#[cfg(target_os = "linux")]
#[test]
fn ctrl_c_stops_early_writes_the_report_and_removes_the_groups() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut child = mmsched()
        .args(["run", "--duration", "120", "--report"])
        .arg(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("starts");
    let pid = child.id();
    // Let it load the models and run a few seconds.
    std::thread::sleep(Duration::from_secs(12));
    let ok = Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(ok.success());
    let start = Instant::now();
    let code = loop {
        if let Some(s) = child.try_wait().expect("waits") {
            break s.code().unwrap_or(-1);
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no exit after Ctrl-C"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(code, 130);
    let s = summary(dir.path());
    assert!(s["duration"].as_f64().is_some_and(|d| d < 60.0), "{s}");
    // No resource group of that process remains anywhere under the cgroup root.
    let name = format!("mmsched-{pid}");
    for entry in walk(Path::new("/sys/fs/cgroup"), 3) {
        assert!(
            !entry.to_string_lossy().contains(&name),
            "{} left behind",
            entry.display()
        );
    }
}

#[cfg(target_os = "linux")]
fn walk(dir: &Path, depth: u32) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.push(p.clone());
            if depth > 0 {
                out.extend(walk(&p, depth - 1));
            }
        }
    }
    out
}

#[test]
fn bad_arguments_get_clear_errors() {
    let out = mmsched()
        .args(["run", "--scenario", "no-such-scenario", "--duration", "1"])
        .output()
        .expect("runs");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("unknown scenario") && err.contains("ar-glasses"),
        "{err}"
    );
    let out = mmsched()
        .args(["run", "--duration", "-3"])
        .output()
        .expect("runs");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("SECS"));
    let out = mmsched()
        .args(["run", "--scheduler", "round-robin"])
        .output()
        .expect("runs");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("static-priority"));
}

/// `GET path` on a local server; the body, or `None` while it does not answer.
fn http_get(addr: &str, path: &str) -> Option<String> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    text.split_once("\r\n\r\n")
        .map(|(_, body)| body.to_string())
}

/// The sum of every sample of `metric` in a Prometheus text page.
fn metric_sum(page: &str, metric: &str) -> f64 {
    page.lines()
        .filter(|l| l.starts_with(metric) && !l.starts_with('#'))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

#[test]
fn serve_during_a_run_exports_metrics_and_applies_a_policy_put() {
    const TOKEN: &str = "run-serve-token-0123456789";
    let dir = tempfile::tempdir().expect("tempdir");
    let mut child = mmsched()
        .args([
            "run",
            "--duration",
            "20",
            "--no-platform",
            "--serve",
            "127.0.0.1:0",
            "--report",
        ])
        .arg(dir.path())
        .env("MMSCHED_API_TOKEN", TOKEN)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starts");
    let addr = served_address(&mut child);

    // Jobs show up in /metrics while the run goes on.
    let start = Instant::now();
    loop {
        let page = http_get(&addr, "/metrics").unwrap_or_default();
        if metric_sum(&page, "mmsched_jobs_total{") > 0.0 {
            assert!(page.contains("mmsched_ldti "), "{page}");
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no job counted in /metrics: {page}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }

    // A policy PUT is accepted and reaches the run.
    let client =
        mmsched_client::PolicyClient::new(&format!("http://{addr}"), Duration::from_secs(5))
            .expect("client");
    let current = client.fetch().expect("GET policy");
    let mut spec = mmsched_core::policy::PolicySpec {
        name: Some("no-routing".into()),
        ..mmsched_core::policy::PolicySpec::default()
    };
    spec.routing.enabled = Some(false);
    let put = client.put(&spec, &current.etag, TOKEN).expect("PUT policy");
    assert_eq!(put.revision, 2, "the run's first policy is revision 1");

    let status = child.wait().expect("waits");
    assert!(status.success(), "{status:?}");
    let trace = std::fs::read_to_string(dir.path().join("trace.mmtrace")).expect("trace");
    assert!(
        trace
            .lines()
            .any(|l| l.contains("policy_change") && l.contains("no-routing")),
        "the policy change is not in the trace"
    );
}

/// A short `run --serve` with a client that never finishes its request exits a few seconds
/// after writing its report (46 s were observed before the shutdown deadline).
#[test]
fn run_serve_exits_soon_after_its_report_despite_an_open_request() {
    use std::io::{BufRead, BufReader, Write};
    let dir = tempfile::tempdir().expect("tempdir");
    let mut child = mmsched()
        .args([
            "run",
            "--duration",
            "3",
            "--no-platform",
            "--serve",
            "127.0.0.1:0",
            "--header-timeout-secs",
            "120",
            "--report",
        ])
        .arg(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starts");
    let addr = served_address(&mut child);
    let mut open = std::net::TcpStream::connect(&addr).expect("connects");
    // Half a request head: the server waits for the rest (--header-timeout-secs 120).
    write!(open, "GET /api/v1/status HTTP/1.1\r\nHost: {addr}\r\n").expect("writes");
    let stdout = child.stdout.take().expect("piped");
    let mut reported = None;
    for line in BufReader::new(stdout).lines().map_while(Result::ok) {
        if line.starts_with("report:") {
            reported = Some(Instant::now());
        }
    }
    let reported = reported.expect("the run writes its report");
    let status = child.wait().expect("waits");
    let after = reported.elapsed();
    assert!(status.success(), "{status:?}");
    // The deadline is 3 s; the margin is for a loaded machine, far below the 46 s seen.
    assert!(
        after < Duration::from_secs(15),
        "exited {after:?} after the report"
    );
    drop(open);
}
