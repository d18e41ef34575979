//! The SDK against a real mmsched server on 127.0.0.1.

// Test helpers outside `#[test]` functions: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mmsched_client::{ClientError, Conditional, PolicyClient};
use mmsched_core::policy::{Policy, PolicySpec};
use mmsched_core::time::MonotonicClock;
use mmsched_server::{ApiToken, ServerConfig, ServerHandle, Shared, spawn};

const TOKEN: &str = "sdk-test-token-0123456789";
const WAIT: Duration = Duration::from_secs(15);

fn start(addr: SocketAddr, policy: Policy) -> (ServerHandle, Shared) {
    let shared = Shared::new(policy, Arc::new(MonotonicClock::new()), "test");
    let handle = spawn(
        shared.clone(),
        ServerConfig {
            addr,
            token: Some(ApiToken::new(TOKEN, "test").unwrap()),
            ..ServerConfig::default()
        },
    )
    .expect("server starts");
    (handle, shared)
}

fn any_port() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 0))
}

fn spec(name: &str) -> PolicySpec {
    PolicySpec {
        name: Some(name.to_string()),
        ..PolicySpec::default()
    }
}

fn policy(name: &str) -> Policy {
    Policy::try_from(spec(name)).unwrap()
}

type Updates = Receiver<(String, String)>;

fn watch(
    url: &str,
    long_poll: Option<u64>,
) -> (mmsched_client::Watcher, Updates, Receiver<ClientError>) {
    let (tx, rx) = mpsc::channel();
    let (etx, erx) = mpsc::channel();
    let w = PolicyClient::builder(url)
        .poll_interval(Duration::from_millis(50))
        .long_poll(long_poll)
        .backoff(Duration::from_millis(50), Duration::from_millis(400))
        .on_update(move |p: Policy, etag: &str| {
            let _ = tx.send((p.name().to_string(), etag.to_string()));
        })
        .on_error(move |e| {
            let _ = etx.send(e.clone());
        })
        .spawn()
        .unwrap();
    (w, rx, erx)
}

#[test]
fn first_policy_then_each_change_once_via_long_poll() {
    let (server, shared) = start(any_port(), policy("first"));
    let url = format!("http://{}", server.local_addr());
    let (watcher, updates, _errors) = watch(&url, Some(20));
    let (name, etag) = updates.recv_timeout(WAIT).unwrap();
    assert_eq!(name, "first");
    assert_eq!(etag, shared.store.current().etag);

    let client = PolicyClient::new(&url, Duration::from_secs(5)).unwrap();
    let out = client.put(&spec("second"), &etag, TOKEN).unwrap();
    assert!(out.changed);
    assert_eq!(out.revision, 2);
    let (name, etag2) = updates.recv_timeout(WAIT).unwrap();
    assert_eq!(
        (name.as_str(), etag2.as_str()),
        ("second", out.etag.as_str())
    );
    assert_eq!(watcher.etag().as_deref(), Some(out.etag.as_str()));

    // Re-sending the same document is not a change: no callback.
    let same = client.put(&spec("second"), &out.etag, TOKEN).unwrap();
    assert!(!same.changed);
    assert!(updates.recv_timeout(Duration::from_millis(500)).is_err());

    // After stop, nothing more is delivered.
    watcher.stop();
    client.put(&spec("third"), &out.etag, TOKEN).unwrap();
    assert!(updates.recv_timeout(Duration::from_millis(500)).is_err());
}

#[test]
fn polling_never_calls_back_for_an_unchanged_policy() {
    let (server, _shared) = start(any_port(), policy("steady"));
    let url = format!("http://{}", server.local_addr());
    let (_watcher, updates, errors) = watch(&url, None);
    assert_eq!(updates.recv_timeout(WAIT).unwrap().0, "steady");
    // 50 ms polls for 600 ms: a dozen 304s, no callback.
    assert!(updates.recv_timeout(Duration::from_millis(600)).is_err());
    assert!(errors.try_recv().is_err());
}

#[test]
fn known_etag_is_not_delivered_again() {
    let (server, shared) = start(any_port(), policy("known"));
    let url = format!("http://{}", server.local_addr());
    let (tx, rx) = mpsc::channel::<String>();
    let _w = PolicyClient::builder(&url)
        .poll_interval(Duration::from_millis(50))
        .known_etag(&shared.store.current().etag)
        .on_update(move |p: Policy, _: &str| {
            let _ = tx.send(p.name().to_string());
        })
        .spawn()
        .unwrap();
    assert!(rx.recv_timeout(Duration::from_millis(400)).is_err());
}

#[test]
fn recovers_with_backoff_when_the_server_restarts_mid_poll() {
    let (server, _shared) = start(any_port(), policy("before"));
    let addr = server.local_addr();
    let url = format!("http://{addr}");
    let (watcher, updates, errors) = watch(&url, Some(30));
    assert_eq!(updates.recv_timeout(WAIT).unwrap().0, "before");
    // Let the long-poll be in flight, then take the server away.
    std::thread::sleep(Duration::from_millis(300));
    server.stop();
    let first_error = errors.recv_timeout(WAIT).expect("the outage is reported");
    assert!(
        matches!(
            first_error,
            ClientError::Http { status: 503, .. } | ClientError::Transport { .. }
        ),
        "{first_error}"
    );
    std::thread::sleep(Duration::from_millis(600));
    assert!(watcher.consecutive_errors() >= 1);

    // A new server on the same port with another policy.
    let (_server2, shared2) = start(addr, policy("after-restart"));
    let (name, etag) = updates.recv_timeout(WAIT).unwrap();
    assert_eq!(name, "after-restart");
    assert_eq!(etag, shared2.store.current().etag);
    assert_eq!(watcher.consecutive_errors(), 0);
}

#[test]
fn one_shot_fetch_conditional_and_put_errors() {
    let (server, _shared) = start(any_port(), policy("one"));
    let client = PolicyClient::new(
        &format!("http://{}", server.local_addr()),
        Duration::from_secs(5),
    )
    .unwrap();
    let f = client.fetch().unwrap();
    assert_eq!(f.policy.name(), "one");
    assert_eq!(
        client.fetch_if_none_match(&[&f.etag], None).unwrap(),
        Conditional::NotModified
    );

    let stale = client.put(&spec("x"), "\"0123\"", TOKEN).unwrap_err();
    assert_eq!(
        stale,
        ClientError::Stale {
            current_etag: f.etag.clone()
        }
    );
    let bad = PolicySpec {
        ldti: mmsched_core::policy::LdtiSpec {
            evaluate_hz: Some(0),
            ..Default::default()
        },
        ..PolicySpec::default()
    };
    let ClientError::Rejected(errs) = client.put(&bad, &f.etag, TOKEN).unwrap_err() else {
        panic!("expected a rejection");
    };
    assert_eq!(errs[0].field, "ldti.evaluate_hz");
    assert_eq!(errs[0].value, "0");
    let e = client
        .put(&spec("x"), &f.etag, "not-the-token-000000")
        .unwrap_err();
    assert!(matches!(e, ClientError::Http { status: 401, .. }), "{e}");

    server.stop();
    let e = client.fetch().unwrap_err();
    assert!(matches!(e, ClientError::Transport { .. }), "{e}");
    assert!(e.to_string().contains("cannot reach"), "{e}");
}

/// A server of a newer mmsched build serving a policy version this build cannot read: the
/// document is reported once and never applied, and later polls ask for it conditionally.
#[test]
fn a_document_that_fails_validation_is_reported_once_and_not_applied() {
    let listener = TcpListener::bind(any_port()).unwrap();
    let addr = listener.local_addr().unwrap();
    let seen_if_none_match = Arc::new(Mutex::new(Vec::<String>::new()));
    let seen = Arc::clone(&seen_if_none_match);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut inm = String::new();
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("if-none-match:") {
                    inm = v.trim().to_string();
                }
            }
            seen.lock().unwrap().push(inm.clone());
            let resp = if inm.contains("\"v2\"") {
                "HTTP/1.1 304 Not Modified\r\nETag: \"v2\"\r\nConnection: close\r\n\r\n".to_string()
            } else {
                let body = r#"{"version":2}"#;
                format!(
                    "HTTP/1.1 200 OK\r\nETag: \"v2\"\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                )
            };
            let _ = stream.write_all(resp.as_bytes());
        }
    });
    let (watcher, updates, errors) = watch(&format!("http://{addr}"), None);
    let e = errors.recv_timeout(WAIT).unwrap();
    assert!(
        matches!(&e, ClientError::Invalid { etag, message } if etag == "\"v2\"" && message.contains("version")),
        "{e}"
    );
    std::thread::sleep(Duration::from_millis(500));
    assert!(errors.try_recv().is_err(), "reported once");
    assert!(updates.try_recv().is_err(), "never applied");
    drop(watcher);
    let seen = seen_if_none_match.lock().unwrap();
    assert!(seen.len() >= 3, "{seen:?}");
    assert_eq!(seen[0], "");
    assert!(seen[1..].iter().all(|s| s == "\"v2\""), "{seen:?}");
}
