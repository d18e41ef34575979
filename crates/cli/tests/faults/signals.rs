//! Signals at awkward moments: a second Ctrl-C while Gemma generates, SIGTERM while the
//! models load.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Stdio;
use std::time::Duration;

use super::{assert_accounted, exit_code, mmsched, signal, summary, wait_for, watch_lines};

/// Starts a streamed completion of `max_tokens` on the server at `addr` and returns the
/// connection once the first token has arrived. Its deadline is ten minutes, so the
/// scheduler never sheds it whatever the device profile predicts for its tokens (the
/// default 30 s is less than 1500 tokens at a measured profile's step cost).
fn streaming_completion(addr: &str, max_tokens: u32) -> TcpStream {
    let body = format!(
        r#"{{"model":"gemma-3-270m","prompt":"Tell me a long story about a lighthouse","max_tokens":{max_tokens},"stream":true}}"#
    );
    let mut s = TcpStream::connect(addr).expect("connects");
    write!(
        s,
        "POST /v1/completions HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nX-Deadline-Ms: 600000\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .expect("sends");
    s.set_read_timeout(Some(Duration::from_secs(120)))
        .expect("timeout");
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&seen).contains("\"text\"") {
        let n = s.read(&mut buf).expect("the stream answers");
        assert!(
            n > 0,
            "the stream closed: {}",
            String::from_utf8_lossy(&seen)
        );
        seen.extend_from_slice(&buf[..n]);
    }
    s
}

/// Finding 1: SIGINT, then SIGINT again 0.3 s later, while a 1500-token completion
/// streams. The second signal must end the process at once with 130; it ended with a
/// segmentation fault (139) when the C++ exit handlers ran under the generating thread.
#[test]
fn a_second_sigint_during_a_generation_exits_130_not_a_segfault() {
    for attempt in 1..=2 {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut child = mmsched()
            .args([
                "serve",
                "--models",
                "--addr",
                "127.0.0.1:0",
                "--json",
                "--report",
            ])
            .arg(dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("starts");
        let lines = watch_lines(child.stdout.take().expect("stdout"), |l| l.contains("addr"));
        let line = lines
            .recv_timeout(Duration::from_secs(300))
            .expect("the server prints its address once the models are loaded");
        let v: serde_json::Value = serde_json::from_str(&line).expect("JSON");
        let addr = v["addr"].as_str().expect("addr").to_string();
        let stream = streaming_completion(&addr, 1500);
        signal(&child, "INT");
        std::thread::sleep(Duration::from_millis(300));
        signal(&child, "INT");
        let status = wait_for(
            &mut child,
            Duration::from_secs(10),
            "serve after two SIGINTs",
        );
        drop(stream);
        assert_eq!(
            exit_code(status, &format!("attempt {attempt}")),
            130,
            "attempt {attempt}"
        );
    }
}

/// SIGTERM while `run` loads its models: the run stops as soon as they are loaded,
/// writes a report whose accounting holds (nothing was offered), and exits 130.
#[test]
fn sigterm_during_model_loading_stops_the_run_with_a_report() {
    let dir = tempfile::tempdir().expect("tempdir");
    let report = dir.path().join("report");
    let mut child = mmsched()
        .args(["run", "--no-platform", "--duration", "30", "--report"])
        .arg(&report)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starts");
    let loading = watch_lines(child.stderr.take().expect("stderr"), |l| {
        l.contains("loading Gemma")
    });
    loading
        .recv_timeout(Duration::from_secs(300))
        .expect("the run says it loads Gemma");
    signal(&child, "TERM");
    let status = wait_for(&mut child, Duration::from_secs(60), "run after SIGTERM");
    assert_eq!(exit_code(status, "run after SIGTERM"), 130);
    let s = summary(&report);
    assert_accounted(&s);
    assert!(
        s["duration"].as_f64().unwrap_or(0.0) < 5.0,
        "the run stopped at once: {}",
        s["duration"]
    );
}
