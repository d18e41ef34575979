//! OTLP/JSON: the protobuf-JSON mapping of `ExportTraceServiceRequest` and
//! `ExportMetricsServiceRequest`, written by hand (no network, no protobuf toolchain).
//!
//! Mapping rules of OTLP/JSON followed here: ids are lowercase hex strings, 64-bit integers
//! (`*UnixNano`, counts, `intValue`) are decimal strings, enums are integers, field names
//! are lowerCamelCase. A file holds one request per line (traces, then metrics), the shape
//! the OpenTelemetry Collector's file exporter writes and its `otlpjsonfile` receiver reads.
//!
//! Spans: every span record becomes an OTLP span (absolute time = header
//! `start_unix_nanos` + `ts_ns`); instants with a parent become span events; instants
//! without one become zero-length spans. Counters become gauges `mmsched.<name>`. LLM jobs
//! (text modality with `prefill` / `decode` stages) give the OpenTelemetry GenAI metrics
//! `gen_ai.server.time_to_first_token`, `gen_ai.server.time_per_output_token` (seconds)
//! and `gen_ai.client.token.usage` (tokens, by `gen_ai.token.type`).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Write;

use serde_json::{Value, json};

use crate::format::Trace;
use crate::ids::SpanId;
use crate::record::{Record, RecordKind, attr, stage};

/// Instrumentation scope name written into every request.
pub const SCOPE_NAME: &str = "mmsched-trace";

/// Bucket bounds the GenAI semantic conventions recommend for time to first token, s.
pub const TTFT_BOUNDS_S: [f64; 16] = [
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
];
/// Bucket bounds the GenAI semantic conventions recommend for time per output token, s.
pub const TPOT_BOUNDS_S: [f64; 13] = [
    0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5,
];
/// Bucket bounds the GenAI semantic conventions recommend for token usage.
pub const TOKEN_BOUNDS: [f64; 14] = [
    1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0, 4194304.0,
    16777216.0, 67108864.0,
];

fn any_value(v: &Value) -> Value {
    match v {
        Value::Bool(b) => json!({"boolValue": b}),
        Value::Number(n) if n.is_i64() || n.is_u64() => json!({"intValue": n.to_string()}),
        Value::Number(n) => json!({"doubleValue": n.as_f64().unwrap_or(0.0)}),
        Value::String(s) => json!({"stringValue": s}),
        other => json!({"stringValue": other.to_string()}),
    }
}

fn kv(key: &str, v: Value) -> Value {
    json!({"key": key, "value": any_value(&v)})
}

fn resource(trace: &Trace) -> Value {
    let mut attrs = vec![kv("service.name", json!("mmsched"))];
    for (k, v) in &trace.header.metadata {
        attrs.push(kv(&format!("mmsched.{k}"), v.clone()));
    }
    json!({"attributes": attrs})
}

fn scope() -> Value {
    json!({"name": SCOPE_NAME, "version": env!("CARGO_PKG_VERSION")})
}

fn record_attrs(r: &Record) -> Vec<Value> {
    let mut a = Vec::new();
    if let Some(j) = r.job {
        a.push(kv("mmsched.job", json!(j)));
    }
    if let Some(m) = r.modality {
        a.push(kv("mmsched.modality", json!(m.as_str())));
    }
    a.push(kv("mmsched.track", json!(r.track)));
    a.push(kv("mmsched.clock", json!(r.clock)));
    a.push(kv("mmsched.sync_offset_ms", json!(r.sync_offset_ms)));
    if let Some(model) = &r.model {
        a.push(kv("gen_ai.request.model", json!(model)));
    }
    for (k, v) in &r.attrs {
        a.push(kv(&format!("mmsched.{k}"), v.clone()));
    }
    a
}

/// Builds the `ExportTraceServiceRequest` for a trace.
pub fn traces_request(trace: &Trace) -> Value {
    let t0 = trace.header.start_unix_nanos;
    let abs = |ns: u64| t0.saturating_add(ns).to_string();
    let mut events: HashMap<SpanId, Vec<Value>> = HashMap::new();
    let mut missed: HashSet<SpanId> = HashSet::new();
    for r in &trace.records {
        if r.kind == RecordKind::Instant
            && let Some(p) = r.parent_span_id
        {
            if r.name == stage::MISS {
                missed.insert(p);
            }
            events.entry(p).or_default().push(json!({
                    "timeUnixNano": abs(r.ts_ns),
                    "name": r.name,
                    "attributes": r.attrs.iter().map(|(k, v)| kv(&format!("mmsched.{k}"), v.clone())).collect::<Vec<_>>(),
                }));
        }
    }
    let causes: HashSet<SpanId> = trace.records.iter().filter_map(Record::caused_by).collect();
    let cause_trace: HashMap<SpanId, crate::ids::TraceId> = trace
        .records
        .iter()
        .filter(|r| causes.contains(&r.span_id))
        .map(|r| (r.span_id, r.trace_id))
        .collect();
    let mut spans = Vec::new();
    for r in &trace.records {
        let is_span = r.kind == RecordKind::Span;
        let lone_instant = r.kind == RecordKind::Instant && r.parent_span_id.is_none();
        if !is_span && !lone_instant {
            continue;
        }
        let mut attributes = record_attrs(r);
        let mut name = r.name.clone();
        if is_span && r.name == stage::JOB && r.modality == Some(mmsched_core::Modality::Text) {
            // GenAI span conventions: "{operation} {model}" with usage attributes.
            name = format!("text_completion {}", r.model.as_deref().unwrap_or("llm"));
            attributes.push(kv("gen_ai.operation.name", json!("text_completion")));
            if let Some(v) = r.attrs.get(attr::INPUT_TOKENS) {
                attributes.push(kv("gen_ai.usage.input_tokens", v.clone()));
            }
            if let Some(v) = r.attrs.get("output_tokens") {
                attributes.push(kv("gen_ai.usage.output_tokens", v.clone()));
            }
        }
        let mut span = json!({
            "traceId": r.trace_id.to_hex(),
            "spanId": r.span_id.to_hex(),
            "name": name,
            "kind": 1,
            "startTimeUnixNano": abs(r.ts_ns),
            "endTimeUnixNano": abs(r.end_ns()),
            "attributes": attributes,
        });
        if let Some(p) = r.parent_span_id {
            span["parentSpanId"] = json!(p.to_hex());
        }
        if let Some(ev) = events.remove(&r.span_id) {
            span["events"] = json!(ev);
        }
        if let Some(cause) = r.caused_by() {
            // The cause usually lives in another trace (the ASR job's): a span link.
            if let Some(t) = cause_trace.get(&cause) {
                span["links"] = json!([{"traceId": t.to_hex(), "spanId": cause.to_hex()}]);
            }
        }
        if missed.contains(&r.span_id) {
            span["status"] = json!({"code": 2, "message": "deadline missed"});
        }
        spans.push(span);
    }
    json!({"resourceSpans": [{
        "resource": resource(trace),
        "scopeSpans": [{"scope": scope(), "spans": spans}],
    }]})
}

/// Time to first token, time per output token and token counts of one LLM job.
#[derive(Debug, Clone, PartialEq)]
pub struct LlmJobMetrics {
    /// The model.
    pub model: String,
    /// From the job's arrival to the end of its first decode step, ns.
    pub ttft_ns: u64,
    /// Mean decode step after the first, ns (`None` with fewer than two tokens).
    pub tpot_ns: Option<u64>,
    /// Prompt tokens (`attrs.input_tokens` on prefill), if recorded.
    pub input_tokens: Option<u64>,
    /// Output tokens (decode steps).
    pub output_tokens: u64,
}

/// Extracts per-job LLM metrics: jobs with at least one `decode` span.
pub fn llm_jobs(trace: &Trace) -> Vec<LlmJobMetrics> {
    #[derive(Default)]
    struct Acc {
        model: Option<String>,
        arrival: Option<u64>,
        decode_ends: Vec<u64>,
        input_tokens: Option<u64>,
    }
    let mut jobs: BTreeMap<u64, Acc> = BTreeMap::new();
    for r in trace.records.iter().filter(|r| r.kind == RecordKind::Span) {
        let Some(job) = r.job else { continue };
        let a = jobs.entry(job).or_default();
        a.arrival = Some(a.arrival.map_or(r.ts_ns, |t| t.min(r.ts_ns)));
        if a.model.is_none() {
            a.model.clone_from(&r.model);
        }
        if r.name == stage::DECODE {
            a.decode_ends.push(r.end_ns());
        } else if r.name == stage::PREFILL {
            a.input_tokens = r.attrs.get(attr::INPUT_TOKENS).and_then(Value::as_u64);
        }
    }
    jobs.into_values()
        .filter(|a| !a.decode_ends.is_empty())
        .map(|mut a| {
            a.decode_ends.sort_unstable();
            let first = a.decode_ends[0];
            let last = a.decode_ends[a.decode_ends.len() - 1];
            let n = a.decode_ends.len() as u64;
            LlmJobMetrics {
                model: a.model.unwrap_or_else(|| "unknown".into()),
                ttft_ns: first - a.arrival.unwrap_or(first),
                tpot_ns: (n > 1).then(|| (last - first) / (n - 1)),
                input_tokens: a.input_tokens,
                output_tokens: n,
            }
        })
        .collect()
}

/// Explicit-bucket histogram data point.
fn histogram_point(
    values: &[f64],
    bounds: &[f64],
    attrs: Vec<Value>,
    start: u64,
    end: u64,
) -> Value {
    let mut counts = vec![0u64; bounds.len() + 1];
    for v in values {
        let i = bounds.iter().position(|b| v <= b).unwrap_or(bounds.len());
        counts[i] += 1;
    }
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    json!({
        "attributes": attrs,
        "startTimeUnixNano": start.to_string(),
        "timeUnixNano": end.to_string(),
        "count": values.len().to_string(),
        "sum": values.iter().sum::<f64>(),
        "bucketCounts": counts.iter().map(u64::to_string).collect::<Vec<_>>(),
        "explicitBounds": bounds,
        "min": min,
        "max": max,
    })
}

/// Builds the `ExportMetricsServiceRequest` for a trace: counter gauges and GenAI metrics.
pub fn metrics_request(trace: &Trace) -> Value {
    let t0 = trace.header.start_unix_nanos;
    let t_end = t0.saturating_add(trace.records.iter().map(Record::end_ns).max().unwrap_or(0));
    let mut metrics = Vec::new();

    let mut gauges: BTreeMap<&str, Vec<Value>> = BTreeMap::new();
    for r in trace
        .records
        .iter()
        .filter(|r| r.kind == RecordKind::Counter)
    {
        gauges.entry(&r.name).or_default().push(json!({
            "timeUnixNano": t0.saturating_add(r.ts_ns).to_string(),
            "asDouble": r.value.unwrap_or(0.0),
            "attributes": [kv("mmsched.track", json!(r.track))],
        }));
    }
    for (name, points) in gauges {
        metrics.push(json!({"name": format!("mmsched.{name}"), "unit": "1", "gauge": {"dataPoints": points}}));
    }

    let jobs = llm_jobs(trace);
    let mut by_model: BTreeMap<&str, Vec<&LlmJobMetrics>> = BTreeMap::new();
    for j in &jobs {
        by_model.entry(&j.model).or_default().push(j);
    }
    let base = |model: &str| {
        vec![
            kv("gen_ai.operation.name", json!("text_completion")),
            kv("gen_ai.request.model", json!(model)),
        ]
    };
    let (mut ttft, mut tpot, mut usage) = (Vec::new(), Vec::new(), Vec::new());
    for (model, js) in &by_model {
        let v: Vec<f64> = js.iter().map(|j| j.ttft_ns as f64 / 1e9).collect();
        ttft.push(histogram_point(&v, &TTFT_BOUNDS_S, base(model), t0, t_end));
        let v: Vec<f64> = js
            .iter()
            .filter_map(|j| j.tpot_ns)
            .map(|n| n as f64 / 1e9)
            .collect();
        if !v.is_empty() {
            tpot.push(histogram_point(&v, &TPOT_BOUNDS_S, base(model), t0, t_end));
        }
        let input: Vec<f64> = js
            .iter()
            .filter_map(|j| j.input_tokens)
            .map(|n| n as f64)
            .collect();
        if !input.is_empty() {
            let mut a = base(model);
            a.push(kv("gen_ai.token.type", json!("input")));
            usage.push(histogram_point(&input, &TOKEN_BOUNDS, a, t0, t_end));
        }
        let output: Vec<f64> = js.iter().map(|j| j.output_tokens as f64).collect();
        let mut a = base(model);
        a.push(kv("gen_ai.token.type", json!("output")));
        usage.push(histogram_point(&output, &TOKEN_BOUNDS, a, t0, t_end));
    }
    // aggregationTemporality 2 = CUMULATIVE: the whole trace is one interval.
    for (name, unit, points, desc) in [
        (
            "gen_ai.server.time_to_first_token",
            "s",
            ttft,
            "Time to generate first token for successful responses",
        ),
        (
            "gen_ai.server.time_per_output_token",
            "s",
            tpot,
            "Time per output token generated after the first token",
        ),
        (
            "gen_ai.client.token.usage",
            "{token}",
            usage,
            "Number of input and output tokens used",
        ),
    ] {
        if !points.is_empty() {
            metrics.push(json!({"name": name, "unit": unit, "description": desc,
                "histogram": {"dataPoints": points, "aggregationTemporality": 2}}));
        }
    }
    json!({"resourceMetrics": [{
        "resource": resource(trace),
        "scopeMetrics": [{"scope": scope(), "metrics": metrics}],
    }]})
}

/// Writes the traces request and the metrics request, one JSON document per line.
pub fn write_json_lines(trace: &Trace, mut out: impl Write) -> std::io::Result<()> {
    serde_json::to_writer(&mut out, &traces_request(trace))?;
    out.write_all(b"\n")?;
    serde_json::to_writer(&mut out, &metrics_request(trace))?;
    out.write_all(b"\n")?;
    out.flush()
}
