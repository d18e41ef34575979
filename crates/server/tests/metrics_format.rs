//! `/metrics` scraped over HTTP and checked by independent parsers: the OpenMetrics
//! reference parser of the Python client (Debian `python3-prometheus-client`) and
//! `promtool check metrics` (Debian `prometheus`).

// Test helpers outside `#[test]` functions: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use mmsched_core::Modality;
use mmsched_core::ldti::Level;
use mmsched_core::policy::Policy;
use mmsched_core::time::MonotonicClock;
use mmsched_server::{ServerConfig, Shared, spawn};

const PARSE_OPENMETRICS: &str = r#"
import sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families
text = sys.stdin.read()
for f in text_string_to_metric_families(text):
    for s in f.samples:
        ex = s.exemplar.labels.get("trace_id") if s.exemplar else ""
        print(s.name, ",".join(f"{k}={v}" for k, v in sorted(s.labels.items())), s.value, ex)
"#;

fn run_with_stdin(cmd: &mut Command, input: &str, install_hint: &str) -> (bool, String) {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}: {install_hint}"));
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

fn scrape(url: &str, accept: Option<&str>) -> (String, String) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(10)))
        .build()
        .into();
    let mut req = agent.get(url);
    if let Some(a) = accept {
        req = req.header("Accept", a);
    }
    let mut r = req.call().unwrap();
    let ctype = r
        .headers()
        .get("content-type")
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    (ctype, r.body_mut().read_to_string().unwrap())
}

fn server_with_samples() -> (mmsched_server::ServerHandle, Shared) {
    let shared = Shared::new(Policy::default(), Arc::new(MonotonicClock::new()), "test");
    let m = &shared.metrics;
    m.register_class(Modality::Audio, "asr");
    m.record_job(
        Modality::Image,
        "vision",
        23_000_000,
        false,
        Some("4bf92f3577b34da6a3ce929d0e0e4736"),
    );
    m.record_job(
        Modality::Text,
        "llm",
        1_400_000_000,
        true,
        Some("00f067aa0ba902b7a3ce929d0e0e4736"),
    );
    m.record_skip(Modality::Image, "blur");
    m.record_shed(Modality::Text, "llm");
    m.set_ldti(0.27, Level::Degraded);
    let h = spawn(
        shared.clone(),
        ServerConfig {
            addr: ([127, 0, 0, 1], 0).into(),
            ..ServerConfig::default()
        },
    )
    .unwrap();
    (h, shared)
}

#[test]
fn openmetrics_output_parses_with_exemplars() {
    let (h, _shared) = server_with_samples();
    let url = format!("http://{}/metrics", h.local_addr());
    let (ctype, text) = scrape(
        &url,
        Some("application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"),
    );
    assert!(ctype.starts_with("application/openmetrics-text"), "{ctype}");
    let (ok, parsed) = run_with_stdin(
        Command::new("/usr/bin/python3").args(["-c", PARSE_OPENMETRICS]),
        &text,
        "apt-get install -y python3-prometheus-client",
    );
    assert!(
        ok,
        "the OpenMetrics parser rejected the output:\n{parsed}\n---\n{text}"
    );
    let has = |needle: &str| {
        assert!(
            parsed.lines().any(|l| l.contains(needle)),
            "{needle} missing in\n{parsed}"
        )
    };
    has(
        "mmsched_job_latency_seconds_bucket le=0.032,modality=image 1 4bf92f3577b34da6a3ce929d0e0e4736",
    );
    has("mmsched_job_latency_seconds_count modality=text 1");
    has("mmsched_deadline_misses_total class=llm,modality=text 1");
    has("mmsched_deadline_misses_total class=asr,modality=audio 0");
    has("mmsched_skips_total modality=image,reason=blur 1");
    has("mmsched_sheds_total class=llm,modality=text 1");
    has("mmsched_ldti  0.27");
    has("mmsched_ldti_level  1");
    has("mmsched_policy_revision  1");
}

#[test]
fn classic_text_output_passes_promtool() {
    let (h, _shared) = server_with_samples();
    let url = format!("http://{}/metrics", h.local_addr());
    let (ctype, text) = scrape(&url, None);
    assert!(ctype.starts_with("text/plain; version=0.0.4"), "{ctype}");
    let (ok, out) = run_with_stdin(
        Command::new("promtool").args(["check", "metrics"]),
        &text,
        "apt-get install -y prometheus",
    );
    assert!(ok, "promtool rejected the output:\n{out}\n---\n{text}");
    assert!(text.contains("mmsched_job_latency_seconds_bucket{modality=\"image\",le=\"0.032\"} 1"));
}
