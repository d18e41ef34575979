//! `mmsched serve --models` driven by clients nobody here wrote: the `openai` Python package
//! (installed into `$MMSCHED_HOME/venv-openai` by `scripts/setup.sh`) streams a chat
//! completion and transcribes an espeak-ng sentence; `curl` posts an image for OCR; with a
//! scenario's frame folder and microphone running beside the requests, an overload of
//! concurrent chat requests gets `503` with `Retry-After` while the audio keeps its
//! deadlines. Needs the models
//! (`mmsched models fetch`), espeak-ng, ffmpeg and curl; fails when any is missing.

use std::process::{Command, Stdio};

#[path = "support/serving.rs"]
mod serving;
use serving::{Lines, render_sign, run_client, serve, speak, venv_python};

/// Runs `script` with the openai client pointed at `url`; returns its output's lines.
fn client(url: &str, script: &str, args: &[&str]) -> Lines {
    let python = venv_python("venv-openai", "the openai package");
    let mut all = vec!["-c", script, url];
    all.extend_from_slice(args);
    run_client(&python, &all)
}

const STREAM_AND_TRANSCRIBE: &str = r#"
import sys, openai
try:
    openai.OpenAI(base_url=sys.argv[1] + "/v1", api_key="sk-unknown").models.list()
    print("wrong_key accepted")
except openai.AuthenticationError as e:
    print("wrong_key refused", e.status_code)
c = openai.OpenAI(base_url=sys.argv[1] + "/v1", api_key=sys.argv[3])
models = [m.id for m in c.models.list()]
print("models", " ".join(models))
stream = c.chat.completions.create(
    model="gemma-3-270m",
    messages=[{"role": "user", "content": "Name three colours."}],
    max_tokens=8, stream=True, seed=1)
chunks = 0
text = ""
for ev in stream:
    if ev.choices and ev.choices[0].delta.content:
        chunks += 1
        text += ev.choices[0].delta.content
print("chunks", chunks)
print("chat", text.replace("\n", " "))
with open(sys.argv[2], "rb") as f:
    t = c.audio.transcriptions.create(model="whisper-tiny.en", file=f)
print("transcript", t.text)
"#;

#[test]
fn the_openai_client_streams_a_chat_and_transcribes_speech() {
    let dir = tempfile::tempdir().expect("tempdir");
    let wav = speak(dir.path(), "The red train leaves from platform seven.");
    // With API keys, the client's api_key is its key and sets its requests' importance.
    let keys = dir.path().join("keys");
    std::fs::write(&keys, "# the dashboard\nsk-dash=0.9\n").expect("keys file");
    let server = serve(&["--api-keys", keys.to_str().expect("utf-8")]);
    let lines = client(
        &server.url,
        STREAM_AND_TRANSCRIBE,
        &[wav.to_str().expect("utf-8"), "sk-dash"],
    );
    let out = &lines.0;
    let line = |key: &str| lines.get(key);
    assert_eq!(line("wrong_key"), "refused 401", "{out}");
    assert!(line("models").contains("gemma-3-270m"), "{out}");
    let chunks: usize = line("chunks").parse().expect("a count");
    assert!(
        chunks >= 2,
        "a streamed answer comes in several chunks: {out}"
    );
    let transcript = line("transcript").to_lowercase();
    for word in ["red", "train", "platform"] {
        assert!(
            transcript.contains(word),
            "{word} missing from {transcript:?}"
        );
    }
    assert!(
        transcript.contains("seven") || transcript.contains('7'),
        "{transcript:?}"
    );
}

#[test]
fn curl_gets_an_images_text_and_limits_answer_with_json_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sign = dir.path().join("sign.png");
    render_sign(&sign, "EXIT 12");
    let server = serve(&[]);
    let curl = |args: &[&str]| {
        let out = Command::new("curl")
            .args(["-sS", "-i"])
            .args(args)
            .output()
            .expect("curl runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let ocr = curl(&[
        "--data-binary",
        &format!("@{}", sign.display()),
        "-H",
        "X-Deadline-Ms: 5000",
        &format!("{}/api/v1/ocr", server.url),
    ]);
    assert!(ocr.starts_with("HTTP/1.1 200"), "{ocr}");
    assert!(ocr.to_lowercase().contains("x-deadline-missed:"), "{ocr}");
    assert!(ocr.contains("EXIT 12"), "{ocr}");
    // Bad inputs: JSON errors that name the problem.
    let bad = curl(&[
        "--data-binary",
        "not an image",
        &format!("{}/api/v1/ocr", server.url),
    ]);
    assert!(bad.starts_with("HTTP/1.1 415"), "{bad}");
    assert!(bad.contains("PNG or JPEG"), "{bad}");
    let too_long = curl(&[
        "-H",
        "Content-Type: application/json",
        "-d",
        r#"{"model":"gemma-3-270m","prompt":"Hello","max_tokens":100000}"#,
        &format!("{}/v1/completions", server.url),
    ]);
    assert!(too_long.starts_with("HTTP/1.1 400"), "{too_long}");
    assert!(too_long.contains("context"), "{too_long}");
}

const CHAT_AND_OVERLOAD: &str = r#"
import sys, json, threading, urllib.request, urllib.error, openai
base = sys.argv[1]
feed = []
def listen():
    with urllib.request.urlopen(base + "/api/v1/results", timeout=60) as r:
        for raw in r:
            line = raw.decode().strip()
            if line.startswith("data: "):
                feed.append(json.loads(line[6:]))
                if len(feed) >= 5:
                    return
listener = threading.Thread(target=listen, daemon=True)
listener.start()
c = openai.OpenAI(base_url=base + "/v1", api_key="unused")
text = ""
for ev in c.chat.completions.create(model="gemma-3-270m", stream=True, max_tokens=6,
        messages=[{"role": "user", "content": "Say hello."}]):
    if ev.choices and ev.choices[0].delta.content:
        text += ev.choices[0].delta.content
print("chat", len(text) > 0)
with open(sys.argv[2], "rb") as f:
    print("transcript", c.audio.transcriptions.create(model="whisper-tiny.en", file=f).text)
results = []
def ask():
    body = json.dumps({"model": "gemma-3-270m", "max_tokens": 16,
                       "messages": [{"role": "user", "content": "Tell me a story."}]}).encode()
    req = urllib.request.Request(base + "/v1/chat/completions", body,
                                 {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            results.append((r.status, None))
    except urllib.error.HTTPError as e:
        results.append((e.code, e.headers.get("Retry-After")))
threads = [threading.Thread(target=ask) for _ in range(8)]
for t in threads: t.start()
for t in threads: t.join()
print("served", sum(1 for s, _ in results if s == 200))
print("refused", sum(1 for s, r in results if s == 503 and r == "1"))
listener.join(timeout=30)
print("feed", len(feed))
print("feed_kinds", " ".join(sorted(set(r["kind"] for r in feed))))
"#;

#[test]
fn requests_share_the_device_with_a_scenarios_frames_and_microphone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let frames = dir.path().join("frames");
    std::fs::create_dir_all(&frames).expect("mkdir");
    for (i, text) in ["EXIT 12", "GATE B7"].iter().enumerate() {
        render_sign(&frames.join(format!("{i:02}.png")), text);
    }
    let wav = speak(dir.path(), "The red train leaves from platform seven.");
    let scenario = dir.path().join("sensors.toml");
    std::fs::write(
        &scenario,
        r#"
name = "sensors"
duration_s = 60

[[models]]
name = "ocr"
kind = "vision"

[[models]]
name = "vad"
kind = "vad"

[[streams]]
name = "camera"
kind = "camera"
models = ["ocr"]
fps = 2
sla_ms = 1500
importance = 0.9
source = { kind = "frames", path = "frames", at_end = "loop" }

[[streams]]
name = "mic"
kind = "audio"
models = ["vad"]
packet_ms = 20
sla_ms = 200
importance = 1.0
source = { kind = "wav", path = "speech.wav", at_end = "loop" }
"#,
    )
    .expect("write scenario");
    let report = dir.path().join("report");
    let server = serve(&[
        "--scenario",
        scenario.to_str().expect("utf-8"),
        "--report",
        report.to_str().expect("utf-8"),
        "--max-concurrent",
        "text=2",
    ]);
    let lines = client(
        &server.url,
        CHAT_AND_OVERLOAD,
        &[wav.to_str().expect("utf-8")],
    );
    let out = &lines.0;
    assert!(out.contains("chat True"), "{out}");
    assert!(out.to_lowercase().contains("platform"), "{out}");
    let count = |key: &str| -> usize {
        let n = lines.get(key);
        n.trim()
            .parse()
            .unwrap_or_else(|_| panic!("{key} is not a count: {n:?} in {out}"))
    };
    assert!(count("served") >= 1, "{out}");
    assert!(count("refused") >= 1, "{out}");
    // GET /api/v1/results streamed the scenario's results and the requests' answers.
    assert!(count("feed") >= 5, "{out}");
    // Ctrl-C: the server stops and the scenario's report is written.
    let mut server = server;
    let pid = server.child.id().to_string();
    let ok = Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .expect("kill runs");
    assert!(ok.success());
    let _ = server.child.wait();
    let summary: serde_json::Value = serde_json::from_slice(
        &std::fs::read(report.join("summary.json")).expect("the report is written"),
    )
    .expect("summary.json is JSON");
    // Every chunk of the audio stream and every frame is accounted for once while the
    // chat requests pile up. How many are on time depends on how fast this machine runs
    // the models: that the audio keeps its deadlines under load is asserted in virtual
    // time (crates/pipeline/src/run/tests.rs).
    for modality in ["vad", "vision"] {
        let m = &summary[modality];
        let n = |k: &str| m[k].as_u64().unwrap_or(0);
        let outcomes = [
            "on_time",
            "late",
            "shed",
            "skipped",
            "dropped",
            "unfinished",
            "failed",
        ];
        assert_eq!(
            outcomes.iter().map(|k| n(k)).sum::<u64>(),
            n("offered"),
            "{modality} {m}"
        );
    }
    assert!(
        summary["vad"]["offered"].as_u64().unwrap_or(0) > 100,
        "{summary}"
    );
    assert!(
        summary["vision"]["offered"].as_u64().unwrap_or(0) > 0,
        "{summary}"
    );
    // Every HTTP chat is in the same report as the streams: the streamed one and the
    // eight at once, served or refused at the cap (counted as shed).
    let api = &summary["llm"]["origin"]["api"];
    assert_eq!(api["offered"], 9, "{summary}");
    let n = |k: &str| api[k].as_u64().unwrap_or(0);
    assert_eq!(
        n("on_time") + n("late") + n("shed") + n("unfinished") + n("failed"),
        9,
        "{summary}"
    );
    assert!(n("shed") >= count("refused") as u64, "{summary}");
    assert!(
        summary["vision"]["origin"]["streams"]["offered"]
            .as_u64()
            .unwrap_or(0)
            > 0
    );
}

/// `curl -sS` with `args`; the body (with `-i`, the head too).
fn curl(args: &[&str]) -> String {
    let out = Command::new("curl")
        .arg("-sS")
        .args(args)
        .output()
        .expect("curl runs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A greedy completion of `prompt` (8 tokens) over HTTP, due in 5 minutes (so that a
/// machine busy with other tests' builds does not make the scheduler shed it): its text.
fn complete(url: &str, prompt: &str) -> std::process::Child {
    let body = serde_json::json!({"model": "gemma-3-270m", "prompt": prompt, "max_tokens": 8});
    Command::new("curl")
        .args(["-sS", "-H", "Content-Type: application/json"])
        .args(["-H", "X-Deadline-Ms: 300000", "-d"])
        .arg(body.to_string())
        .arg(format!("{url}/v1/completions"))
        .stdout(Stdio::piped())
        .spawn()
        .expect("curl runs")
}

fn completion_text(child: std::process::Child) -> String {
    let out = child.wait_with_output().expect("curl ends");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)));
    v["choices"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text: {v}"))
        .to_string()
}

#[test]
fn chats_are_in_the_report_trace_and_metrics_and_a_policy_put_applies_at_once() {
    use mmsched_client::PolicyClient;
    use std::time::{Duration, Instant};
    let dir = tempfile::tempdir().expect("tempdir");
    let report = dir.path().join("report");
    let token = dir.path().join("token");
    let secret = "serve-models-token-0123456789";
    std::fs::write(&token, format!("{secret}\n")).expect("token file");
    let server = serve(&[
        "--report",
        report.to_str().expect("utf-8"),
        "--token-file",
        token.to_str().expect("utf-8"),
    ]);
    // Four greedy requests at once each get the answer the prompt gets alone.
    let prompt = "The three primary colours are";
    let alone = completion_text(complete(&server.url, prompt));
    assert!(!alone.trim().is_empty(), "an answer: {alone:?}");
    let together: Vec<String> = (0..4)
        .map(|_| complete(&server.url, prompt))
        .collect::<Vec<_>>()
        .into_iter()
        .map(completion_text)
        .collect();
    for t in &together {
        assert_eq!(t, &alone, "concurrent greedy answers equal the lone one");
    }
    // /metrics counts the requests as text-generation jobs.
    let metrics = curl(&[&format!("{}/metrics", server.url)]);
    assert!(
        metrics.contains(r#"mmsched_jobs_total{modality="text",class="llm"} 5"#),
        "{metrics}"
    );
    // A PUT is what the scheduler decides with within a second.
    let client = PolicyClient::new(&server.url, Duration::from_secs(5)).expect("client");
    let current = client.fetch().expect("the policy");
    let mut spec = current.policy.to_spec();
    spec.importance.insert("llm".into(), 0.95);
    let put = client.put(&spec, &current.etag, secret).expect("the PUT");
    let sent = Instant::now();
    let applied = loop {
        let status: serde_json::Value =
            serde_json::from_str(&curl(&[&format!("{}/api/v1/status", server.url)]))
                .expect("status is JSON");
        if status["policy"]["applied_etag"] == put.etag.as_str() {
            break sent.elapsed();
        }
        assert!(
            sent.elapsed() < Duration::from_secs(5),
            "not applied: {status}"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(
        applied < Duration::from_secs(1),
        "applied after {applied:?}"
    );
    // Ctrl-C: the report of everything served is written.
    let mut server = server;
    let ok = Command::new("kill")
        .args(["-INT", &server.child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(ok.success());
    let _ = server.child.wait();
    let summary: serde_json::Value = serde_json::from_slice(
        &std::fs::read(report.join("summary.json")).expect("the report is written"),
    )
    .expect("JSON");
    let api = &summary["llm"]["origin"]["api"];
    assert_eq!(api["offered"], 5, "{summary}");
    assert_eq!(
        api["on_time"].as_u64().unwrap_or(0) + api["late"].as_u64().unwrap_or(0),
        5,
        "{summary}"
    );
    assert_eq!(summary["llm"]["tokens"], 40, "{summary}");
    let trace = std::fs::read_to_string(report.join("trace.mmtrace")).expect("the trace");
    assert!(
        trace
            .lines()
            .any(|l| l.contains(r#""origin":"api""#) && l.contains(r#""model":"llm""#)),
        "a text job from the API in the trace"
    );
}
