//! `mmsched bench serve --peer` end to end against a stand-in for llama-server: a small
//! OpenAI-compatible server (Python's standard library) started by the benchmark exactly as
//! it starts llama-server, which streams `max_tokens` chunks and records the arguments it
//! was given. The real llama-server is measured by hand (scripts/build-llama-server.sh);
//! this checks the benchmark's own parts: starting and stopping the peer per request count,
//! the arguments it gets, the streamed client, the figures and the JSON keys. Needs the
//! models (`mmsched models fetch`) and python3.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A stand-in for `llama-server`: `--version`, `/health` and streamed `/v1/completions`;
/// appends its arguments, one run a line, to `$FAKE_PEER_ARGS`.
const FAKE_PEER: &str = r#"#!/usr/bin/env python3
import json, os, sys, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

args = sys.argv[1:]
if "--version" in args:
    print("version: 0 (fake-peer)", file=sys.stderr)
    sys.exit(0)
with open(os.environ["FAKE_PEER_ARGS"], "a") as f:
    f.write(json.dumps(args) + "\n")
port = int(args[args.index("--port") + 1])

class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a):
        pass
    def do_GET(self):
        body = b'{"status":"ok"}'
        self.send_response(200 if self.path == "/health" else 404)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_POST(self):
        req = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        ok = req.get("stream") and req.get("temperature") == 0 and req.get("cache_prompt") is False
        self.send_response(200 if ok else 400)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        if not ok:
            return
        n = req["max_tokens"]
        for i in range(n):
            time.sleep(0.005)
            ev = {"choices": [{"text": " t%d" % i, "index": 0, "finish_reason": None}]}
            self.wfile.write(("data: " + json.dumps(ev) + "\n\n").encode())
            self.wfile.flush()
        last = {"choices": [], "usage": {"completion_tokens": n}}
        self.wfile.write(("data: " + json.dumps(last) + "\n\ndata: [DONE]\n\n").encode())
        self.wfile.flush()
        self.close_connection = True

ThreadingHTTPServer(("127.0.0.1", port), H).serve_forever()
"#;

fn fake_peer(dir: &Path) -> PathBuf {
    let path = dir.join("llama-server");
    std::fs::write(&path, FAKE_PEER).expect("write the stand-in");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    path
}

#[test]
fn the_peer_is_started_per_request_count_and_measured_like_mmsched() {
    let dir = std::env::temp_dir().join(format!("mmsched-peer-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let peer = fake_peer(&dir);
    let args_log = dir.join("args.jsonl");
    let out = Command::new(env!("CARGO_BIN_EXE_mmsched"))
        .args([
            "bench",
            "serve",
            "--requests",
            "1,2",
            "--tokens",
            "4",
            "--repeat",
            "2",
        ])
        .arg("--peer")
        .arg(&peer)
        .args(["--peer-threads", "2", "--json"])
        .env("FAKE_PEER_ARGS", &args_log)
        .output()
        .expect("the binary runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(v["peer"]["version"], "version: 0 (fake-peer)", "{v}");
    assert!(
        v["mmsched"]["engine"]
            .as_str()
            .is_some_and(|e| e.contains("llama-cpp-sys-2"))
    );
    let results = v["results"].as_array().expect("results");
    assert_eq!(results.len(), 2, "{v}");
    for (r, n) in results.iter().zip([1usize, 2]) {
        assert_eq!(r["requests"], n);
        // The stand-in answers every prompt with exactly max_tokens tokens.
        assert_eq!(
            r["peer"]["completion_tokens"],
            serde_json::json!(vec![4; n]),
            "{r}"
        );
        for side in ["mmsched", "peer"] {
            for key in [
                "tok_s",
                "ttft_ms_p50",
                "ttft_ms_p99",
                "tpot_ms_p50",
                "tpot_ms_p99",
            ] {
                let s = &r[side][key];
                let (min, med, max) = (s["min"].as_f64(), s["median"].as_f64(), s["max"].as_f64());
                let (min, med, max) = (min.expect(key), med.expect(key), max.expect(key));
                // An answer may end at the end-of-text token after one token: it has a
                // first-token time but no time per token.
                let floor_ok = if key.starts_with("tpot") {
                    min >= 0.0
                } else {
                    min > 0.0
                };
                assert!(floor_ok && min <= med && med <= max, "{side} {key}: {s}");
            }
        }
        let answers = r["mmsched"]["answers"].as_array().expect("answers");
        assert_eq!(answers.len(), n);
        assert_eq!(
            r["answers_match"], false,
            "the stand-in's text is not Gemma's"
        );
    }
    // One llama-server per request count, each with that many slots and the threads asked.
    let runs: Vec<Vec<String>> = std::fs::read_to_string(&args_log)
        .expect("the stand-in ran")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(runs.len(), 2, "{runs:?}");
    for (args, n) in runs.iter().zip(["1", "2"]) {
        let after = |flag: &str| {
            args.iter()
                .position(|a| a == flag)
                .map(|i| args[i + 1].as_str())
        };
        assert_eq!(after("--parallel"), Some(n), "{args:?}");
        assert_eq!(after("--threads"), Some("2"), "{args:?}");
        let gguf = after("--model").expect("--model");
        assert!(
            gguf.ends_with(".gguf") && Path::new(gguf).is_file(),
            "{gguf}"
        );
    }
    assert!(v["goals"].is_object());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_missing_peer_names_the_script_that_builds_it() {
    let out = Command::new(env!("CARGO_BIN_EXE_mmsched"))
        .args(["bench", "serve", "--peer", "/nonexistent/llama-server"])
        .output()
        .expect("the binary runs");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("scripts/build-llama-server.sh"), "{err}");
}

#[test]
fn a_list_of_request_counts_needs_the_peer() {
    let out = Command::new(env!("CARGO_BIN_EXE_mmsched"))
        .args(["bench", "serve", "--requests", "1,4"])
        .output()
        .expect("the binary runs");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--peer"), "{err}");
}

#[test]
fn beside_a_scenario_the_chats_are_measured_on_mmsched_alone() {
    let out = Command::new(env!("CARGO_BIN_EXE_mmsched"))
        .args([
            "bench",
            "serve",
            "--beside",
            "ar-glasses",
            "--peer-url",
            "http://127.0.0.1:1",
        ])
        .output()
        .expect("the binary runs");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--beside") && err.contains("--peer"), "{err}");
}

/// Needs the default models (`mmsched models fetch`); fails without them.
#[test]
fn beside_a_scenario_both_arms_offer_its_inputs_and_the_chats_are_answered() {
    let out = Command::new(env!("CARGO_BIN_EXE_mmsched"))
        .args([
            "bench",
            "serve",
            "--beside",
            "ar-glasses",
            "--duration",
            "5",
            "--repeat",
            "1",
            "--requests",
            "2",
            "--tokens",
            "4",
            "--json",
        ])
        .output()
        .expect("the binary runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    for arm in ["without_chats", "with_chats"] {
        for class in ["vision", "vad"] {
            let offered = v[arm][format!("{class}_offered")]["median"]
                .as_f64()
                .unwrap_or(0.0);
            assert!(offered > 0.0, "{arm} {class}: {v}");
            let skipped = v[arm][format!("{class}_skipped")]["median"]
                .as_f64()
                .unwrap_or(-1.0);
            assert!((0.0..=offered).contains(&skipped), "{arm} {class}: {v}");
            let share = v[arm][format!("{class}_on_time")]["median"]
                .as_f64()
                .unwrap_or(-1.0);
            assert!((0.0..=1.0).contains(&share), "{arm} {class}: {v}");
        }
    }
    // Only the arm with chats answers them.
    assert_eq!(v["without_chats"]["chat_tok_s"]["median"], 0.0, "{v}");
    assert!(
        v["with_chats"]["chat_tok_s"]["median"]
            .as_f64()
            .unwrap_or(0.0)
            > 0.0,
        "{v}"
    );
    for class in ["vision", "vad"] {
        assert!(v["within_spread"][class].is_boolean(), "{v}");
    }
}
