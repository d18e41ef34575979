//! Exporters on the demo trace: the Perfetto JSON parses, slices balance, ids are unique,
//! flows pair up; the OTLP/JSON has the protobuf-JSON mapping's shape.

use std::collections::{HashMap, HashSet};

use mmsched_trace::demo::{DemoConfig, generate};
use mmsched_trace::export::perfetto::to_chrome_json;
use serde_json::Value;

fn demo() -> mmsched_trace::Trace {
    generate(DemoConfig {
        seed: 5,
        min_records: 8_000,
    })
}

#[test]
fn perfetto_json_is_balanced_and_complete() {
    let trace = demo();
    let text = serde_json::to_string(&to_chrome_json(&trace)).expect("serialise");
    let doc: Value = serde_json::from_str(&text).expect("the export parses as JSON");
    let events = doc["traceEvents"].as_array().expect("traceEvents array");
    let mut phases: HashMap<&str, usize> = HashMap::new();
    // B/E per thread and b/e per (cat, id) must nest like brackets, with matching names.
    let mut sync_stacks: HashMap<(u64, u64), Vec<String>> = HashMap::new();
    let mut async_stacks: HashMap<(String, String), Vec<String>> = HashMap::new();
    let mut async_ids_by_cat: HashMap<String, HashSet<String>> = HashMap::new();
    let mut flows: HashMap<u64, (usize, usize)> = HashMap::new();
    let mut last_ts = f64::MIN;
    for e in events {
        let ph = e["ph"].as_str().expect("every event has a phase");
        *phases.entry(ph).or_default() += 1;
        if ph != "M" {
            let ts = e["ts"].as_f64().expect("ts in µs");
            assert!(ts >= last_ts, "events are sorted by time");
            last_ts = ts;
        }
        let name = e["name"].as_str().unwrap_or_default().to_string();
        match ph {
            "B" => sync_stacks
                .entry((
                    e["pid"].as_u64().unwrap_or(0),
                    e["tid"].as_u64().unwrap_or(0),
                ))
                .or_default()
                .push(name),
            "E" => {
                let s = sync_stacks
                    .entry((
                        e["pid"].as_u64().unwrap_or(0),
                        e["tid"].as_u64().unwrap_or(0),
                    ))
                    .or_default();
                assert!(s.pop().is_some(), "E without B");
            }
            "b" | "e" => {
                let key = (
                    e["cat"].as_str().expect("cat").to_string(),
                    e["id"].as_str().expect("id").to_string(),
                );
                async_ids_by_cat
                    .entry(key.0.clone())
                    .or_default()
                    .insert(key.1.clone());
                let stack = async_stacks.entry(key.clone()).or_default();
                if ph == "b" {
                    stack.push(name);
                } else {
                    assert_eq!(
                        stack.pop().as_deref(),
                        Some(name.as_str()),
                        "e closes the innermost b of {key:?}"
                    );
                }
            }
            "X" => assert!(e["dur"].as_f64().expect("X has dur") >= 0.0),
            "C" => assert!(e["args"]["value"].is_number()),
            "s" => {
                flows
                    .entry(e["id"].as_u64().expect("flow id"))
                    .or_default()
                    .0 += 1
            }
            "f" => {
                flows
                    .entry(e["id"].as_u64().expect("flow id"))
                    .or_default()
                    .1 += 1
            }
            _ => {}
        }
    }
    assert!(sync_stacks.values().all(Vec::is_empty), "unclosed B");
    assert!(async_stacks.values().all(Vec::is_empty), "unclosed b");
    // One async track per job, and job ids are unique across modalities.
    let jobs: HashSet<u64> = trace
        .records
        .iter()
        .filter(|r| r.kind == mmsched_trace::RecordKind::Span)
        .filter_map(|r| r.job)
        .collect();
    let total: usize = async_ids_by_cat.values().map(HashSet::len).sum();
    assert_eq!(total, jobs.len());
    let all: HashSet<&String> = async_ids_by_cat.values().flatten().collect();
    assert_eq!(all.len(), total, "an async id is reused across categories");
    for ph in ["M", "b", "e", "X", "C", "i", "s", "f"] {
        assert!(phases.get(ph).copied().unwrap_or(0) > 0, "no {ph} events");
    }
    assert!(
        flows.values().all(|&(s, f)| s == 1 && f == 1),
        "every flow has one start and one finish"
    );
    let counter_names: HashSet<&str> = events
        .iter()
        .filter(|e| e["ph"] == "C")
        .filter_map(|e| e["name"].as_str())
        .collect();
    for c in ["ldti", "queue_depth", "psi_cpu", "slot_occupancy"] {
        assert!(counter_names.contains(c), "no {c} counter track");
    }
    let thread_names: HashSet<&str> = events
        .iter()
        .filter(|e| e["name"] == "thread_name")
        .filter_map(|e| e["args"]["name"].as_str())
        .collect();
    assert!(thread_names.contains("worker-vision") && thread_names.contains("worker-text"));
}

#[cfg(feature = "otlp")]
#[test]
fn otlp_json_has_the_protobuf_json_shape() {
    use mmsched_trace::export::otlp;
    let trace = demo();
    let mut bytes = Vec::new();
    otlp::write_json_lines(&trace, &mut bytes).expect("write");
    let text = String::from_utf8(bytes).expect("utf-8");
    let mut lines = text.lines();
    let traces: Value = serde_json::from_str(lines.next().expect("traces line")).expect("json");
    let metrics: Value = serde_json::from_str(lines.next().expect("metrics line")).expect("json");
    let spans = traces["resourceSpans"][0]["scopeSpans"][0]["spans"]
        .as_array()
        .expect("spans");
    assert!(!spans.is_empty());
    let hex = |s: &Value, n: usize| {
        s.as_str().is_some_and(|s| {
            s.len() == n
                && s.bytes()
                    .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        })
    };
    for s in spans {
        assert!(hex(&s["traceId"], 32) && hex(&s["spanId"], 16), "{s}");
        let start: u64 = s["startTimeUnixNano"]
            .as_str()
            .expect("string")
            .parse()
            .expect("decimal");
        let end: u64 = s["endTimeUnixNano"]
            .as_str()
            .expect("string")
            .parse()
            .expect("decimal");
        assert!(end >= start && start >= trace.header.start_unix_nanos);
        assert!(s["kind"].is_u64());
        if let Some(p) = s.get("parentSpanId") {
            assert!(hex(p, 16));
        }
    }
    assert!(
        spans.iter().any(|s| s["status"]["code"] == 2),
        "deadline misses carry an error status"
    );
    assert!(
        spans.iter().any(|s| s.get("links").is_some()),
        "caused_by becomes a link"
    );
    assert!(spans.iter().any(|s| {
        s["name"]
            .as_str()
            .is_some_and(|n| n.starts_with("text_completion "))
    }));
    let ms = metrics["resourceMetrics"][0]["scopeMetrics"][0]["metrics"]
        .as_array()
        .expect("metrics");
    let by_name: HashMap<&str, &Value> = ms
        .iter()
        .map(|m| (m["name"].as_str().expect("name"), m))
        .collect();
    for n in [
        "gen_ai.server.time_to_first_token",
        "gen_ai.server.time_per_output_token",
        "gen_ai.client.token.usage",
        "mmsched.ldti",
    ] {
        assert!(by_name.contains_key(n), "missing metric {n}");
    }
    let ttft = &by_name["gen_ai.server.time_to_first_token"]["histogram"]["dataPoints"][0];
    let counts: Vec<u64> = ttft["bucketCounts"]
        .as_array()
        .expect("counts")
        .iter()
        .map(|c| c.as_str().expect("string").parse().expect("n"))
        .collect();
    assert_eq!(
        counts.len(),
        ttft["explicitBounds"].as_array().expect("bounds").len() + 1
    );
    let count: u64 = ttft["count"].as_str().expect("string").parse().expect("n");
    assert_eq!(counts.iter().sum::<u64>(), count);
    assert_eq!(count as usize, otlp::llm_jobs(&trace).len());
    let usage = by_name["gen_ai.client.token.usage"]["histogram"]["dataPoints"]
        .as_array()
        .expect("points");
    let types: HashSet<&str> = usage
        .iter()
        .flat_map(|p| p["attributes"].as_array().into_iter().flatten())
        .filter(|a| a["key"] == "gen_ai.token.type")
        .filter_map(|a| a["value"]["stringValue"].as_str())
        .collect();
    assert_eq!(types, HashSet::from(["input", "output"]));
}
