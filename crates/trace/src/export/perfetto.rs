//! Chrome/Perfetto trace-event JSON.
//!
//! Layout in the Perfetto UI:
//! - one process per modality holding one **async track per job** (`b`/`e` events,
//!   category = modality, id = the job id, unique in the trace) with the job's stages
//!   nested in it;
//! - a `compute` process with one thread per compute track (`cpu0`, `worker-vision`, …)
//!   holding the stage slices that ran there (`X` events) and the job's instants
//!   (deadline, miss, skip, shed);
//! - a `health` process with **counter tracks** (`C` events): LDTI, queue depth, PSI, slot
//!   occupancy;
//! - **flow arrows** (`s`/`f`) from a span to the job it caused (`attrs.caused_by`), e.g.
//!   from the ASR transcript to the LLM request;
//! - policy changes as global instants.
//!
//! Timestamps are microseconds (fractional) on the drift-corrected device timeline.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::{Map, Value, json};

use crate::format::Trace;
use crate::ids::SpanId;
use crate::record::{Record, RecordKind, stage};

const PID_COMPUTE: u32 = 1;
const PID_HEALTH: u32 = 2;
/// Modality processes are numbered from here in `Modality::ALL` order.
const PID_MODALITY_BASE: u32 = 10;

fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

/// Events sort by time; at one instant ends come before begins (a stage ending as the next
/// starts), inner ends before outer ends and outer begins before inner begins.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Key {
    ts_ns: u64,
    rank: u8,
    tie: i128,
}

struct Out {
    events: Vec<(Key, Value)>,
}

impl Out {
    fn push(&mut self, ts_ns: u64, rank: u8, tie: i128, v: Value) {
        self.events.push((Key { ts_ns, rank, tie }, v));
    }
}

fn args(r: &Record) -> Value {
    let mut m = Map::new();
    m.insert("trace_id".into(), json!(r.trace_id.to_hex()));
    m.insert("span_id".into(), json!(r.span_id.to_hex()));
    if let Some(j) = r.job {
        m.insert("job".into(), json!(j));
    }
    if let Some(model) = &r.model {
        m.insert("model".into(), json!(model));
    }
    m.insert("clock".into(), json!(r.clock));
    m.insert("sync_offset_ms".into(), json!(r.sync_offset_ms));
    for (k, v) in &r.attrs {
        m.insert(k.clone(), v.clone());
    }
    Value::Object(m)
}

/// The thread id of a compute track, numbering new tracks in order of appearance.
fn tid_of(track: &str, tids: &mut BTreeMap<String, u32>) -> u32 {
    let n = tids.len() as u32 + 1;
    *tids.entry(track.to_string()).or_insert(n)
}

fn modality_pid(r: &Record) -> u32 {
    let idx = r
        .modality
        .and_then(|m| mmsched_core::Modality::ALL.iter().position(|x| *x == m))
        .unwrap_or(mmsched_core::Modality::ALL.len());
    PID_MODALITY_BASE + idx as u32
}

/// Whether a span is drawn on its compute thread (work that ran there), not only on the
/// job's async track.
fn on_thread(r: &Record) -> bool {
    r.kind == RecordKind::Span && r.name != stage::JOB && r.name != stage::QUEUED
}

/// Flow arrows, one per (cause, caused job): from the middle of the cause's slice to the
/// first thread slice of the job it caused.
fn push_flows(
    out: &mut Out,
    trace: &Trace,
    placed: &HashMap<SpanId, (u32, u64, u64)>,
    first_thread_slice: &HashMap<u64, (u32, u64)>,
) {
    let mut flows: BTreeSet<(SpanId, u64)> = BTreeSet::new();
    for r in &trace.records {
        if let (Some(cause), Some(job)) = (r.caused_by(), r.job) {
            flows.insert((cause, job));
        }
    }
    for (flow_id, (cause, job)) in flows.iter().enumerate() {
        let (Some(&(src_tid, src_ts, src_dur)), Some(&(dst_tid, dst_ts))) =
            (placed.get(cause), first_thread_slice.get(job))
        else {
            continue;
        };
        // Bind inside the slices: the middle of the cause, the start of the effect.
        let s_ts = src_ts + src_dur / 2;
        out.push(
            s_ts,
            3,
            0,
            json!({"ph": "s", "cat": "flow", "name": "caused_by", "id": flow_id + 1,
                   "pid": PID_COMPUTE, "tid": src_tid, "ts": us(s_ts)}),
        );
        out.push(
            dst_ts,
            3,
            0,
            json!({"ph": "f", "bp": "e", "cat": "flow", "name": "caused_by", "id": flow_id + 1,
                   "pid": PID_COMPUTE, "tid": dst_tid, "ts": us(dst_ts)}),
        );
    }
}

/// The processes' and threads' names and sort order.
fn metadata_events(
    track_tids: &BTreeMap<String, u32>,
    modality_pids: &BTreeMap<u32, String>,
) -> Vec<Value> {
    let mut events = Vec::with_capacity(track_tids.len() + 2 * modality_pids.len() + 4);
    let meta = |pid: u32, tid: u32, name: &str, arg: Value| json!({"ph": "M", "pid": pid, "tid": tid, "name": name, "args": arg});
    events.push(meta(
        PID_COMPUTE,
        0,
        "process_name",
        json!({"name": "compute tracks"}),
    ));
    events.push(meta(
        PID_COMPUTE,
        0,
        "process_sort_index",
        json!({"sort_index": 1}),
    ));
    events.push(meta(
        PID_HEALTH,
        0,
        "process_name",
        json!({"name": "health"}),
    ));
    events.push(meta(
        PID_HEALTH,
        0,
        "process_sort_index",
        json!({"sort_index": 0}),
    ));
    for (track, tid) in track_tids {
        events.push(meta(
            PID_COMPUTE,
            *tid,
            "thread_name",
            json!({"name": track}),
        ));
    }
    for (pid, name) in modality_pids {
        events.push(meta(
            *pid,
            *pid,
            "process_name",
            json!({"name": format!("{name} jobs")}),
        ));
        events.push(meta(
            *pid,
            *pid,
            "process_sort_index",
            json!({"sort_index": pid}),
        ));
    }
    events
}

/// Converts a trace to a Chrome trace-event JSON document (`{"traceEvents": [...]}`).
pub fn to_chrome_json(trace: &Trace) -> Value {
    let mut out = Out { events: Vec::new() };
    let mut track_tids: BTreeMap<String, u32> = BTreeMap::new();
    let mut modality_pids: BTreeMap<u32, String> = BTreeMap::new();
    // Where each span ended up on a thread, for flow arrows: span → (tid, ts, dur).
    let mut placed: HashMap<SpanId, (u32, u64, u64)> = HashMap::new();
    // First thread slice of each job: flow arrows land there.
    let mut first_thread_slice: HashMap<u64, (u32, u64)> = HashMap::new();

    for r in &trace.records {
        match r.kind {
            RecordKind::Counter => {
                let value = r.value.unwrap_or(0.0);
                out.push(
                    r.ts_ns,
                    2,
                    0,
                    json!({"ph": "C", "name": r.name, "pid": PID_HEALTH, "tid": 0,
                           "ts": us(r.ts_ns), "args": {"value": value}}),
                );
            }
            RecordKind::Span => {
                if let Some(job) = r.job {
                    let pid = modality_pid(r);
                    let cat = r.modality.map_or("job", |m| m.as_str());
                    modality_pids.insert(pid, cat.to_string());
                    let id = format!("0x{job:x}");
                    if r.dur_ns == 0 {
                        out.push(
                            r.ts_ns,
                            2,
                            0,
                            json!({"ph": "n", "cat": cat, "id": id, "name": r.name, "pid": pid,
                                   "tid": pid, "ts": us(r.ts_ns), "args": args(r)}),
                        );
                    } else {
                        let end = r.end_ns();
                        out.push(
                            r.ts_ns,
                            1,
                            -i128::from(end),
                            json!({"ph": "b", "cat": cat, "id": id, "name": r.name, "pid": pid,
                                   "tid": pid, "ts": us(r.ts_ns), "args": args(r)}),
                        );
                        out.push(
                            end,
                            0,
                            -i128::from(r.ts_ns),
                            json!({"ph": "e", "cat": cat, "id": id, "name": r.name, "pid": pid,
                                   "tid": pid, "ts": us(end)}),
                        );
                    }
                }
                if on_thread(r) || r.job.is_none() {
                    let tid = tid_of(&r.track, &mut track_tids);
                    out.push(
                        r.ts_ns,
                        2,
                        0,
                        json!({"ph": "X", "name": r.name, "cat": r.modality.map_or("span", |m| m.as_str()),
                               "pid": PID_COMPUTE, "tid": tid, "ts": us(r.ts_ns),
                               "dur": us(r.dur_ns), "args": args(r)}),
                    );
                    placed.insert(r.span_id, (tid, r.ts_ns, r.dur_ns));
                    if let Some(job) = r.job {
                        let e = first_thread_slice.entry(job).or_insert((tid, r.ts_ns));
                        if r.ts_ns < e.1 {
                            *e = (tid, r.ts_ns);
                        }
                    }
                }
            }
            RecordKind::Instant => {
                if r.name == stage::POLICY_CHANGE {
                    out.push(
                        r.ts_ns,
                        2,
                        0,
                        json!({"ph": "i", "s": "g", "name": r.name, "pid": PID_COMPUTE, "tid": 0,
                               "ts": us(r.ts_ns), "args": args(r)}),
                    );
                } else {
                    let tid = tid_of(&r.track, &mut track_tids);
                    out.push(
                        r.ts_ns,
                        2,
                        0,
                        json!({"ph": "i", "s": "t", "name": r.name, "pid": PID_COMPUTE, "tid": tid,
                               "ts": us(r.ts_ns), "args": args(r)}),
                    );
                }
            }
        }
    }

    push_flows(&mut out, trace, &placed, &first_thread_slice);
    out.events.sort_by_key(|(k, _)| *k);
    let mut events: Vec<Value> = Vec::with_capacity(out.events.len() + 16);
    events.extend(metadata_events(&track_tids, &modality_pids));
    events.extend(out.events.into_iter().map(|(_, v)| v));
    let mut meta_obj = Map::new();
    meta_obj.insert("source".into(), json!("mmsched"));
    meta_obj.insert("mmtrace_version".into(), json!(trace.header.mmtrace));
    meta_obj.insert(
        "start_unix_nanos".into(),
        json!(trace.header.start_unix_nanos),
    );
    for (k, v) in &trace.header.metadata {
        meta_obj.insert(k.clone(), v.clone());
    }
    json!({"traceEvents": events, "displayTimeUnit": "ms", "metadata": meta_obj})
}
