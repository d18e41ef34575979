//! Real HTTP round-trips against a running server on 127.0.0.1 (port 0).

// Test helpers outside `#[test]` functions: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use mmsched_core::Modality;
use mmsched_core::ldti::Level;
use mmsched_core::policy::{Policy, PolicySpec};
use mmsched_core::time::MonotonicClock;
use mmsched_server::{ApiToken, ServerConfig, ServerHandle, Shared, etag, spawn};
use ureq::Agent;

const TOKEN: &str = "test-token-0123456789abcdef";

struct Running {
    handle: ServerHandle,
    shared: Shared,
    agent: Agent,
}

impl Running {
    fn start(config: ServerConfig) -> Self {
        let shared = Shared::new(Policy::default(), Arc::new(MonotonicClock::new()), "test");
        let config = ServerConfig {
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            ..config
        };
        let handle = spawn(shared.clone(), config).expect("server starts");
        Self {
            handle,
            shared,
            agent: agent(),
        }
    }

    fn with_token() -> Self {
        Self::start(ServerConfig {
            token: Some(ApiToken::new(TOKEN, "test").unwrap()),
            ..ServerConfig::default()
        })
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.handle.local_addr(), path)
    }

    fn get_policy(&self) -> (u16, String, String) {
        let mut r = self.agent.get(self.url("/api/v1/policy")).call().unwrap();
        let etag = header(&r, "etag");
        (
            r.status().as_u16(),
            etag,
            r.body_mut().read_to_string().unwrap(),
        )
    }

    fn put(&self, body: &str, if_match: Option<&str>, token: Option<&str>) -> Reply {
        let mut req = self
            .agent
            .put(self.url("/api/v1/policy"))
            .header("Content-Type", "application/json");
        if let Some(m) = if_match {
            req = req.header("If-Match", m);
        }
        if let Some(t) = token {
            req = req.header("Authorization", format!("Bearer {t}"));
        }
        Reply::from(req.send(body).unwrap())
    }
}

struct Reply {
    status: u16,
    etag: String,
    www_authenticate: String,
    body: String,
}

impl From<ureq::http::Response<ureq::Body>> for Reply {
    fn from(mut r: ureq::http::Response<ureq::Body>) -> Self {
        Self {
            status: r.status().as_u16(),
            etag: header(&r, "etag"),
            www_authenticate: header(&r, "www-authenticate"),
            body: r.body_mut().read_to_string().unwrap(),
        }
    }
}

impl Reply {
    fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }
}

fn agent() -> Agent {
    Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(30)))
        .build()
        .into()
}

fn header(r: &ureq::http::Response<ureq::Body>, name: &str) -> String {
    r.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string()
}

fn named(name: &str) -> String {
    format!(r#"{{"name":"{name}","arbiter":{{"dispatch":"score"}}}}"#)
}

#[test]
fn get_returns_the_policy_with_a_content_etag_and_304_when_unchanged() {
    let s = Running::with_token();
    let (status, tag, body) = s.get_policy();
    assert_eq!(status, 200);
    assert_eq!(tag, etag::of(body.as_bytes()));
    let spec: PolicySpec = serde_json::from_str(&body).unwrap();
    assert_eq!(Policy::try_from(spec).unwrap(), Policy::default());

    let mut r = s
        .agent
        .get(s.url("/api/v1/policy"))
        .header("If-None-Match", &tag)
        .call()
        .unwrap();
    assert_eq!(r.status().as_u16(), 304);
    assert_eq!(header(&r, "etag"), tag);
    assert_eq!(r.body_mut().read_to_string().unwrap(), "");

    let r = s
        .agent
        .get(s.url("/api/v1/policy"))
        .header("If-None-Match", "\"0000\"")
        .call()
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
}

#[test]
fn put_installs_a_valid_policy_and_the_scheduler_side_sees_it() {
    let s = Running::with_token();
    let mut sub = s.shared.store.subscribe();
    let (_, tag, _) = s.get_policy();
    let r = s.put(&named("night"), Some(&tag), Some(TOKEN));
    assert_eq!(r.status, 200, "{}", r.body);
    assert_ne!(r.etag, tag);
    assert_eq!(r.json()["revision"], 2);
    assert_eq!(r.json()["changed"], true);
    let seen = sub.poll().expect("the subscription sees the change");
    assert_eq!(seen.policy.name(), "night");
    assert_eq!(seen.etag, r.etag);
    let (_, tag2, body) = s.get_policy();
    assert_eq!(tag2, r.etag);
    assert!(body.contains("\"night\""));

    // The change log names the writer.
    let mut resp = s.agent.get(s.url("/api/v1/policy/changes")).call().unwrap();
    let log: serde_json::Value =
        serde_json::from_str(&resp.body_mut().read_to_string().unwrap()).unwrap();
    let last = &log["changes"][1];
    assert_eq!(last["revision"], 2);
    assert_eq!(last["name"], "night");
    assert!(
        last["source"]
            .as_str()
            .unwrap()
            .starts_with("api 127.0.0.1:"),
        "{last}"
    );

    // If-Match: * overwrites whatever is current.
    let r = s.put(&named("any"), Some("*"), Some(TOKEN));
    assert_eq!(r.status, 200);
    assert_eq!(s.shared.store.policy().name(), "any");
}

#[test]
fn long_poll_is_woken_by_a_put() {
    let s = Arc::new(Running::with_token());
    let (_, tag, _) = s.get_policy();
    let waiter = {
        let s = Arc::clone(&s);
        let tag = tag.clone();
        std::thread::spawn(move || {
            let started = Instant::now();
            let mut r = s
                .agent
                .get(s.url("/api/v1/policy?wait=20"))
                .header("If-None-Match", &tag)
                .call()
                .unwrap();
            let status = r.status().as_u16();
            let body = r.body_mut().read_to_string().unwrap();
            (status, header(&r, "etag"), body, started.elapsed())
        })
    };
    std::thread::sleep(Duration::from_millis(300));
    let put = s.put(&named("woken"), Some(&tag), Some(TOKEN));
    assert_eq!(put.status, 200);
    let (status, new_tag, body, elapsed) = waiter.join().unwrap();
    assert_eq!(status, 200);
    assert_eq!(new_tag, put.etag);
    assert!(body.contains("woken"));
    // Woken by the change, not by the end of the 20 s wait.
    assert!(elapsed < Duration::from_secs(10), "{elapsed:?}");
}

#[test]
fn long_poll_without_change_ends_in_304_and_wait_is_bounded() {
    let s = Running::with_token();
    let (_, tag, _) = s.get_policy();
    let started = Instant::now();
    let r = s
        .agent
        .get(s.url("/api/v1/policy?wait=1"))
        .header("If-None-Match", &tag)
        .call()
        .unwrap();
    assert_eq!(r.status().as_u16(), 304);
    assert!(started.elapsed() >= Duration::from_millis(900));

    let mut r = s.agent.get(s.url("/api/v1/policy?wait=61")).call().unwrap();
    assert_eq!(r.status().as_u16(), 400);
    assert!(r.body_mut().read_to_string().unwrap().contains("0 to 60"));
}

#[test]
fn stale_if_match_gets_412_with_the_current_etag() {
    let s = Running::with_token();
    let (_, old, _) = s.get_policy();
    assert_eq!(s.put(&named("a"), Some(&old), Some(TOKEN)).status, 200);
    let (_, current, _) = s.get_policy();
    let r = s.put(&named("b"), Some(&old), Some(TOKEN));
    assert_eq!(r.status, 412, "{}", r.body);
    assert_eq!(r.etag, current);
    assert_eq!(r.json()["current_etag"], current.as_str());
    assert_eq!(s.shared.store.policy().name(), "a");
}

#[test]
fn invalid_policy_gets_422_with_field_errors_and_the_old_policy_stays() {
    let s = Running::with_token();
    let (_, tag, before) = s.get_policy();
    let r = s.put(
        r#"{"arbiter":{"weight_deadline":1.5},"slots":{"slot_len_micros":5}}"#,
        Some(&tag),
        Some(TOKEN),
    );
    assert_eq!(r.status, 422, "{}", r.body);
    let errors = r.json()["errors"].as_array().unwrap().clone();
    let e = errors
        .iter()
        .find(|e| e["field"] == "arbiter.weight_deadline")
        .unwrap();
    assert_eq!(e["value"], "1.5");
    assert!(e["reason"].as_str().unwrap().contains("from 0 to 1"));
    assert!(
        errors
            .iter()
            .any(|e| e["field"] == "slots.slot_len_micros" && e["value"] == "5")
    );
    let (_, tag_after, after) = s.get_policy();
    assert_eq!((tag_after, after), (tag, before));
    assert_eq!(s.shared.store.current().revision, 1);
}

#[test]
fn malformed_or_unknown_fields_get_400_naming_the_problem() {
    let s = Running::with_token();
    let (_, tag, _) = s.get_policy();
    let r = s.put("{not json", Some(&tag), Some(TOKEN));
    assert_eq!(r.status, 400);
    assert!(r.json()["error"].as_str().unwrap().contains("line 1"));
    let r = s.put(
        r#"{"arbiter":{"weigth_deadline":0.4}}"#,
        Some(&tag),
        Some(TOKEN),
    );
    assert_eq!(r.status, 400);
    let msg = r.json()["error"].as_str().unwrap().to_string();
    assert!(
        msg.contains("weigth_deadline") && msg.contains("weight_deadline"),
        "{msg}"
    );
    let r = Reply::from(
        s.agent
            .put(s.url("/api/v1/policy"))
            .header("Content-Type", "text/plain")
            .header("If-Match", &tag)
            .header("Authorization", format!("Bearer {TOKEN}"))
            .send("name = 'x'")
            .unwrap(),
    );
    assert_eq!(r.status, 415);
}

#[test]
fn missing_or_wrong_token_gets_401_with_a_bearer_challenge() {
    let s = Running::with_token();
    let (_, tag, _) = s.get_policy();
    let r = s.put(&named("x"), Some(&tag), None);
    assert_eq!(r.status, 401);
    assert!(
        r.www_authenticate.starts_with("Bearer"),
        "{r:?}",
        r = r.body
    );
    let r = s.put(&named("x"), Some(&tag), Some("wrong-token-0123456789"));
    assert_eq!(r.status, 401);
    assert!(r.www_authenticate.contains("invalid_token"));
    assert_eq!(s.shared.store.current().revision, 1);
}

#[test]
fn no_configured_token_refuses_every_write_with_403_and_says_how_to_configure() {
    let s = Running::start(ServerConfig::default());
    let (_, tag, _) = s.get_policy();
    let r = s.put(&named("x"), Some(&tag), Some(TOKEN));
    assert_eq!(r.status, 403);
    let msg = r.json()["error"].as_str().unwrap().to_string();
    assert!(
        msg.contains("--token-file") && msg.contains("MMSCHED_API_TOKEN"),
        "{msg}"
    );
}

#[test]
fn missing_if_match_gets_428() {
    let s = Running::with_token();
    let r = s.put(&named("x"), None, Some(TOKEN));
    assert_eq!(r.status, 428);
    assert!(r.json()["error"].as_str().unwrap().contains("If-Match"));
}

#[test]
fn oversized_body_gets_413() {
    let s = Running::with_token();
    let (_, tag, _) = s.get_policy();
    let big = format!(r#"{{"name":"{}"}}"#, "x".repeat(70 * 1024));
    let r = s.put(&big, Some(&tag), Some(TOKEN));
    assert_eq!(r.status, 413, "{}", r.body);
    assert!(r.json()["error"].as_str().unwrap().contains("65536"));
}

#[test]
fn of_two_racing_writers_with_the_same_if_match_exactly_one_wins() {
    let s = Arc::new(Running::with_token());
    for round in 0..10 {
        let (_, tag, _) = s.get_policy();
        let barrier = Arc::new(Barrier::new(2));
        let writers: Vec<_> = (0..2)
            .map(|w| {
                let s = Arc::clone(&s);
                let tag = tag.clone();
                let barrier = Arc::clone(&barrier);
                std::thread::spawn(move || {
                    let a = agent();
                    let body = named(&format!("r{round}-w{w}"));
                    barrier.wait();
                    let r = a
                        .put(s.url("/api/v1/policy"))
                        .header("Content-Type", "application/json")
                        .header("If-Match", &tag)
                        .header("Authorization", format!("Bearer {TOKEN}"))
                        .send(&body)
                        .unwrap();
                    r.status().as_u16()
                })
            })
            .collect();
        let mut codes: Vec<u16> = writers.into_iter().map(|w| w.join().unwrap()).collect();
        codes.sort_unstable();
        assert_eq!(codes, vec![200, 412], "round {round}");
        assert_eq!(s.shared.store.current().revision, round + 2);
    }
}

#[test]
fn status_reports_policy_and_what_the_runtime_pushed() {
    let s = Running::with_token();
    let mut r = s.agent.get(s.url("/api/v1/status")).call().unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let doc: serde_json::Value =
        serde_json::from_str(&r.body_mut().read_to_string().unwrap()).unwrap();
    assert!(doc["ldti"].is_null());
    assert_eq!(doc["policy"]["revision"], 1);
    assert_eq!(
        doc["policy"]["etag"],
        s.shared.store.current().etag.as_str()
    );
    s.shared.status.set_ldti(0.31, Level::Degraded);
    s.shared.status.set_modality(
        Modality::Audio,
        mmsched_server::ModalityStatus {
            rate_hz: 50.0,
            p99_ms: 9.5,
            misses: 1,
        },
    );
    let mut r = s.agent.get(s.url("/api/v1/status")).call().unwrap();
    let doc: serde_json::Value =
        serde_json::from_str(&r.body_mut().read_to_string().unwrap()).unwrap();
    assert_eq!(doc["ldti"], 0.31);
    assert_eq!(doc["level"], "degraded");
    assert_eq!(doc["modalities"]["audio"]["rate_hz"], 50.0);
    assert_eq!(doc["modalities"]["audio"]["p99_ms"], 9.5);
    assert!(doc["uptime_s"].is_u64());
}

fn test_asset(path: &str) -> Option<(&'static str, &'static [u8])> {
    match path {
        "index.html" => Some(("text/html; charset=utf-8", b"<html>viewer</html>")),
        "assets/app.js" => Some(("text/javascript", b"console.log(1)")),
        _ => None,
    }
}

#[test]
fn viewer_assets_and_trace_come_from_the_configured_sources() {
    let s = Running::start(ServerConfig {
        assets: Some(test_asset),
        trace: Some(Arc::new(|| b"{\"v\":1}\n{\"v\":2}\n".to_vec())),
        ..ServerConfig::default()
    });
    let get = |p: &str| {
        let mut r = s.agent.get(s.url(p)).call().unwrap();
        (
            r.status().as_u16(),
            header(&r, "content-type"),
            r.body_mut().read_to_string().unwrap(),
        )
    };
    assert_eq!(
        get("/"),
        (
            200,
            "text/html; charset=utf-8".into(),
            "<html>viewer</html>".into()
        )
    );
    assert_eq!(get("/assets/app.js").2, "console.log(1)");
    assert_eq!(get("/assets/nope.css").0, 404);
    let (code, ctype, body) = get("/api/v1/trace");
    assert_eq!((code, ctype.as_str()), (200, "application/x-ndjson"));
    assert_eq!(body.lines().count(), 2);
    assert_eq!(get("/nowhere").0, 404);

    // Without sources: a plain index, and a 404 explaining the missing trace.
    let bare = Running::start(ServerConfig::default());
    let mut r = bare.agent.get(bare.url("/")).call().unwrap();
    assert!(
        r.body_mut()
            .read_to_string()
            .unwrap()
            .contains("/api/v1/policy")
    );
    let r = bare.agent.get(bare.url("/api/v1/trace")).call().unwrap();
    assert_eq!(r.status().as_u16(), 404);
}

#[test]
fn stopping_answers_open_long_polls_and_frees_the_port() {
    let s = Running::with_token();
    let addr = s.handle.local_addr();
    let tag = s.get_policy().1;
    let url = s.url("/api/v1/policy?wait=30");
    let waiter = std::thread::spawn(move || {
        let started = Instant::now();
        let r = agent()
            .get(url)
            .header("If-None-Match", &tag)
            .call()
            .unwrap();
        (r.status().as_u16(), started.elapsed())
    });
    std::thread::sleep(Duration::from_millis(300));
    let Running { handle, .. } = s;
    handle.stop();
    let (status, elapsed) = waiter.join().unwrap();
    assert_eq!(status, 503);
    assert!(elapsed < Duration::from_secs(10), "{elapsed:?}");
    // The port can be bound again at once.
    let again = spawn(
        Shared::new(Policy::default(), Arc::new(MonotonicClock::new()), "t"),
        ServerConfig {
            addr,
            ..ServerConfig::default()
        },
    )
    .expect("port released");
    assert_eq!(again.local_addr(), addr);
}
