//! `mmsched run` on real sources, with `--results`: a folder of sign images (rendered by
//! ffmpeg's drawtext, not by mmsched) read by the OCR model, each image's text printed as
//! an NDJSON line; and speech sent over RTP by ffmpeg (a sender nobody here wrote) into the
//! microphone path, voice activity and transcription, next to a prompts file's request.
//! Needs the model cache, ffmpeg,
//! fonts-dejavu-core and espeak-ng (`scripts/setup.sh`); a missing tool fails the test.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

/// Real runs share the machine's cores: one at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn mmsched() -> Command {
    Command::new(env!("CARGO_BIN_EXE_mmsched"))
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn require(tool: &str) {
    let ok = Command::new(tool)
        .arg(if tool == "ffmpeg" {
            "-version"
        } else {
            "--version"
        })
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "{tool} is not installed: run scripts/setup.sh");
}

/// Results printed on stdout, one JSON object per line.
fn records(stdout: &[u8]) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not NDJSON ({e}): {l}")))
        .collect()
}

/// Letters and digits only, upper case: OCR may space or punctuate differently.
fn squash(s: &str) -> String {
    s.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_uppercase())
        .collect()
}

#[test]
fn a_folder_of_images_prints_each_images_text() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    require("ffmpeg");
    let dir = tempfile::tempdir().expect("tempdir");
    // The shipped example, as is, next to images rendered now (never committed).
    let scenario = dir.path().join("signs-folder.toml");
    std::fs::copy(
        repo().join("scenarios/examples/signs-folder.toml"),
        &scenario,
    )
    .expect("copy the example");
    let rendered = Command::new("bash")
        .arg(repo().join("scenarios/examples/render-signs.sh"))
        .arg(dir.path().join("signs"))
        .output()
        .expect("runs the renderer");
    assert!(
        rendered.status.success(),
        "{}",
        String::from_utf8_lossy(&rendered.stderr)
    );
    let texts: Vec<String> = String::from_utf8_lossy(&rendered.stdout)
        .lines()
        .filter_map(|l| l.split_once('\t').map(|(_, t)| t.to_string()))
        .collect();
    assert_eq!(texts.len(), 3);
    let out = mmsched()
        .args(["run", "--no-platform", "--duration", "5", "--results", "-"])
        .arg("--scenario")
        .arg(&scenario)
        .arg("--report")
        .arg(dir.path().join("report"))
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("results: 3 record(s)"), "{stderr}");
    let recs = records(&out.stdout);
    assert_eq!(recs.len(), 3, "one result per image: {recs:?}");
    for (r, want) in recs.iter().zip(&texts) {
        assert_eq!(r["kind"], "vision");
        assert_eq!(r["stream"], "camera");
        assert_eq!(r["stale"], false);
        assert_eq!(r["trace_id"].as_str().map(str::len), Some(32), "{r}");
        let text = r["text"].as_str().expect("text");
        assert_eq!(squash(text), squash(want), "{r}");
        assert!(r["lines"].as_array().is_some_and(|l| l.len() == 1), "{r}");
        let (capture, done) = (r["capture_ms"].as_f64(), r["done_ms"].as_f64());
        assert!(capture.zip(done).is_some_and(|(c, d)| d > c), "{r}");
        assert!(r["latency_ms"].as_f64().is_some_and(|l| l > 0.0), "{r}");
        assert!(r["on_time"].is_boolean());
    }
    // In playing order, a second apart.
    let captures: Vec<f64> = recs
        .iter()
        .filter_map(|r| r["capture_ms"].as_f64())
        .collect();
    assert!(
        captures
            .windows(2)
            .all(|w| (w[1] - w[0] - 1000.0).abs() < 50.0),
        "{captures:?}"
    );
}

#[test]
fn speech_over_rtp_from_ffmpeg_is_heard_and_transcribed() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    require("ffmpeg");
    require("espeak-ng");
    let dir = tempfile::tempdir().expect("tempdir");
    let clip = dir.path().join("clip.wav");
    let spoken = Command::new("espeak-ng")
        .args(["-v", "en-us", "-s", "150", "-w"])
        .arg(&clip)
        .arg("The red train leaves from platform seven.")
        .status()
        .expect("espeak-ng runs");
    assert!(spoken.success());
    // A free loopback port (bound, read, released).
    let port = std::net::UdpSocket::bind("127.0.0.1:0")
        .and_then(|s| s.local_addr())
        .expect("a free port")
        .port();
    std::fs::write(
        dir.path().join("prompts.jsonl"),
        "{\"prompt\": \"Name one colour.\", \"max_tokens\": 6}\n",
    )
    .expect("write prompts");
    let scenario = dir.path().join("rtp.toml");
    std::fs::write(
        &scenario,
        format!(
            r#"
name = "rtp-mic"
duration_s = 14

[[models]]
name = "vad"
kind = "vad"

[[models]]
name = "asr"
kind = "asr"

[[models]]
name = "llm"
kind = "llm"

[[streams]]
name = "chat"
kind = "text"
models = ["llm"]
requests_per_min = 6
sla_ms = 20000
importance = 0.3
source = {{ kind = "prompts", path = "prompts.jsonl", at_end = "stop" }}

[[streams]]
name = "mic"
kind = "audio"
models = ["vad", "asr"]
packet_ms = 20
sla_ms = 8000
importance = 0.8
source = {{ kind = "rtp", port = {port}, payload_type = 97, sample_rate_hz = 16000 }}
"#
        ),
    )
    .expect("write scenario");
    let results = dir.path().join("results.ndjson");
    let mut run = mmsched()
        .args(["run", "--no-platform", "--json", "--results"])
        .arg(&results)
        .arg("--scenario")
        .arg(&scenario)
        .arg("--report")
        .arg(dir.path().join("report"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starts");
    // Send once the run says it is listening (after the models have loaded).
    let stderr = run.stderr.take().expect("stderr");
    let mut lines = BufReader::new(stderr).lines();
    let mut seen = Vec::new();
    for line in lines.by_ref() {
        let line = line.expect("utf-8");
        let ready = line.contains("receiving RTP");
        seen.push(line);
        if ready {
            break;
        }
    }
    assert!(
        seen.iter()
            .any(|l| l.contains(&format!("udp://127.0.0.1:{port}"))),
        "{seen:?}"
    );
    let sent = Command::new("ffmpeg")
        .args(["-hide_banner", "-loglevel", "error", "-re", "-i"])
        .arg(&clip)
        .args(["-ar", "16000", "-ac", "1", "-acodec", "pcm_s16be"])
        .args(["-payload_type", "97", "-f", "rtp"])
        .arg(format!("rtp://127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .output()
        .expect("ffmpeg runs");
    assert!(
        sent.status.success(),
        "{}",
        String::from_utf8_lossy(&sent.stderr)
    );
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let out = run.wait_with_output().expect("finishes");
    let stderr = [seen, rest].concat().join("\n");
    assert!(out.status.success(), "{stderr}");
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).expect("summary");
    assert!(
        summary["audio"]["frames"].as_u64().is_some_and(|n| n > 100),
        "{summary}"
    );
    let recs = records(&std::fs::read(&results).expect("results written"));
    let segments: Vec<_> = recs.iter().filter(|r| r["kind"] == "vad").collect();
    assert!(!segments.is_empty(), "a speech segment: {recs:?}");
    assert!(
        segments[0]["segment_ms"]
            .as_array()
            .is_some_and(|s| s.len() == 2)
    );
    let transcript = recs
        .iter()
        .filter(|r| r["kind"] == "asr")
        .filter_map(|r| r["text"].as_str())
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase();
    for word in ["train", "platform"] {
        assert!(
            transcript.contains(word),
            "`{word}` not in {transcript:?}\n{stderr}"
        );
    }
    // The prompts file's one request, answered with its own token budget.
    let answers: Vec<_> = recs.iter().filter(|r| r["kind"] == "llm").collect();
    assert_eq!(answers.len(), 1, "{recs:?}");
    let a = answers[0];
    assert_eq!(a["stream"], "chat");
    assert!(
        a["tokens"].as_u64().is_some_and(|t| (1..=6).contains(&t)),
        "{a}"
    );
    assert!(a["text"].as_str().is_some_and(|t| !t.is_empty()), "{a}");
}
