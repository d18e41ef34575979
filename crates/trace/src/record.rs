//! The mmtrace record types: what one NDJSON line of a trace holds.
//!
//! A trace file is a header line ([`Header`]) followed by one [`Record`] per line. Every
//! record sits on the device timeline (`ts_ns`, already drift-corrected) and carries the
//! offset that was applied (`sync_offset_ms`), so a viewer can show either the corrected
//! time or the raw sensor time `ts_ns − sync_offset_ms · 10⁶`.

use std::collections::BTreeMap;

use mmsched_core::Modality;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ids::{SpanId, TraceId};

/// The format version this crate writes; readers accept this version and older.
pub const FORMAT_VERSION: u32 = 1;

/// Well-known record names (stages of a job's life and annotations).
///
/// The format does not restrict names; these are the ones the scheduler emits and the
/// viewer and exporters understand.
pub mod stage {
    /// A whole job, parent of its stages.
    pub const JOB: &str = "job";
    /// Waiting in the admission queue.
    pub const QUEUED: &str = "queued";
    /// Admitted (instant): the scheduler accepted the job.
    pub const ADMITTED: &str = "admitted";
    /// Pre-processing.
    pub const PRE: &str = "pre";
    /// Model execution.
    pub const EXEC: &str = "exec";
    /// Post-processing.
    pub const POST: &str = "post";
    /// LLM prompt processing.
    pub const PREFILL: &str = "prefill";
    /// One LLM decode step (one output token).
    pub const DECODE: &str = "decode";
    /// The router skipped a modality branch (instant).
    pub const SKIP: &str = "skip";
    /// Admission shed the job under overload (instant).
    pub const SHED: &str = "shed";
    /// A job's step failed: its model failed or its input could not be run (instant; the
    /// reason names the error).
    pub const FAIL: &str = "fail";
    /// A health action dropped an input before it became a job (instant; the args name
    /// the action).
    pub const DROP: &str = "drop";
    /// A job's deadline (instant marker at the deadline time).
    pub const DEADLINE: &str = "deadline";
    /// A job finished after its deadline (instant).
    pub const MISS: &str = "miss";
    /// A new policy took effect (instant; `attrs.etag`).
    pub const POLICY_CHANGE: &str = "policy_change";
    /// Counter: the LDTI health index in [0, 1].
    pub const LDTI: &str = "ldti";
    /// Counter: jobs waiting for admission.
    pub const QUEUE_DEPTH: &str = "queue_depth";
    /// Counter: CPU pressure stall information (`some avg10`, percent).
    pub const PSI_CPU: &str = "psi_cpu";
    /// Counter: fraction of reservation slots booked or active, in [0, 1].
    pub const SLOT_OCCUPANCY: &str = "slot_occupancy";
}

/// Well-known attribute keys.
pub mod attr {
    /// On a span: the span id (hex) of the span that caused it, e.g. the ASR transcript
    /// that triggered an LLM request. Exporters draw it as a flow arrow.
    pub const CAUSED_BY: &str = "caused_by";
    /// On a `policy_change` instant: the new policy's ETag.
    pub const ETAG: &str = "etag";
    /// On a `deadline` / `miss` instant or a job span: the absolute deadline, device ns.
    pub const DEADLINE_NS: &str = "deadline_ns";
    /// On a `prefill` span: prompt tokens.
    pub const INPUT_TOKENS: &str = "input_tokens";
    /// On a `decode` span: the token's index in the output (0 = first token).
    pub const TOKEN_INDEX: &str = "token_index";
    /// On a `skip` / `shed` / `fail` instant: why.
    pub const REASON: &str = "reason";
    /// On a job span: where its request came from, `streams` (a scenario's sensors) or
    /// `api` (an HTTP or library client).
    pub const ORIGIN: &str = "origin";
    /// On a job span: the quality rung it ran at (e.g. `det256`, `audio`).
    pub const RUNG: &str = "rung";
}

/// One clock domain that timestamps in the trace came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClockDomain {
    /// The name records refer to in `clock` (e.g. `device`, `camera0`, `mic0`).
    pub name: String,
    /// What this clock is.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
}

/// The first line of a trace file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Header {
    /// The format version (this crate writes [`FORMAT_VERSION`]). Its presence marks the
    /// header line.
    pub mmtrace: u32,
    /// The clock domains records may name; the first is the device timeline itself.
    pub clocks: Vec<ClockDomain>,
    /// Wall-clock time of device time 0, in nanoseconds since the Unix epoch (used to place
    /// spans in OTLP, which needs absolute times). Supplied by whoever starts the recording.
    pub start_unix_nanos: u64,
    /// Free-form metadata: program, version, host, scenario, policy ETag at start, …
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, Value>,
}

impl Header {
    /// A header at the current format version with a single `device` clock domain.
    pub fn new(start_unix_nanos: u64) -> Self {
        Self {
            mmtrace: FORMAT_VERSION,
            clocks: vec![ClockDomain {
                name: "device".into(),
                description: "the scheduler's monotonic device timeline".into(),
            }],
            start_unix_nanos,
            metadata: BTreeMap::new(),
        }
    }
}

/// What a record describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RecordKind {
    /// Something that took time: `[ts_ns, ts_ns + dur_ns)`.
    Span,
    /// Something that happened at `ts_ns` (`dur_ns` is 0).
    Instant,
    /// A sample of a numeric series named `name` at `ts_ns`, in `value`.
    Counter,
}

impl RecordKind {
    /// The lowercase name used in the file.
    pub fn as_str(self) -> &'static str {
        match self {
            RecordKind::Span => "span",
            RecordKind::Instant => "instant",
            RecordKind::Counter => "counter",
        }
    }
}

/// One trace record: a span, an instant event or a counter sample.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Record {
    /// Span, instant or counter.
    pub kind: RecordKind,
    /// The trace this record belongs to (one per job, or one per run for counters).
    pub trace_id: TraceId,
    /// This record's own id.
    pub span_id: SpanId,
    /// The enclosing span, if any (e.g. a stage's job span).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_span_id: Option<SpanId>,
    /// The scheduler's job id, if the record belongs to a job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<u64>,
    /// The modality of the job's data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modality: Option<Modality>,
    /// The model that ran, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The compute track (worker or core) it ran on, e.g. `cpu0`, `worker-vision`,
    /// or the series group for counters (e.g. `health`).
    pub track: String,
    /// Start (or instant) on the device timeline, in nanoseconds, drift-corrected.
    pub ts_ns: u64,
    /// Duration in nanoseconds (spans only; 0 otherwise).
    #[serde(default)]
    pub dur_ns: u64,
    /// The clock domain the event was originally stamped in (declared in the header).
    pub clock: String,
    /// Alignment offset that was added to the raw timestamp to put it on the device
    /// timeline, in milliseconds: raw = `ts_ns − sync_offset_ms · 10⁶`.
    #[serde(default)]
    pub sync_offset_ms: i64,
    /// The stage or series name (see [`stage`]).
    pub name: String,
    /// The counter value (counters only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<f64>,
    /// Further attributes (see [`attr`]).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub attrs: BTreeMap<String, Value>,
}

/// One line of a trace file: the header, or a record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Line {
    /// The first line.
    Header(Header),
    /// Every other line.
    Record(Record),
}

/// A record that parses but breaks a rule the type cannot express.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    /// `name` is empty.
    #[error("`name` is empty: give the stage or series name (e.g. \"exec\")")]
    EmptyName,
    /// `track` is empty.
    #[error("`track` is empty: give the compute track (e.g. \"worker-vision\")")]
    EmptyTrack,
    /// A counter without a finite `value`.
    #[error("counter `{0}` needs a finite numeric `value`")]
    CounterValue(String),
    /// An instant or counter with a duration.
    #[error("`dur_ns` must be 0 for a {0} record (only spans have durations)")]
    Duration(&'static str),
    /// A value on a record that is not a counter.
    #[error("`value` is only allowed on counter records, not on a {0}")]
    ValueOnNonCounter(&'static str),
    /// `attrs.caused_by` is not a span id.
    #[error("`attrs.caused_by` must be a 16-hex-digit span id: {0}")]
    CausedBy(String),
    /// A span whose end overflows the timeline.
    #[error("`ts_ns + dur_ns` overflows 64 bits")]
    Overflow,
}

impl Record {
    /// End of the record on the device timeline (`ts_ns + dur_ns`).
    pub fn end_ns(&self) -> u64 {
        self.ts_ns.saturating_add(self.dur_ns)
    }

    /// The raw (uncorrected) start in the record's own clock domain, in nanoseconds:
    /// `ts_ns − sync_offset_ms · 10⁶` (may be negative near the start of the timeline).
    pub fn raw_ts_ns(&self) -> i128 {
        i128::from(self.ts_ns) - i128::from(self.sync_offset_ms) * 1_000_000
    }

    /// The span this record was caused by (`attrs.caused_by`), if present and valid.
    pub fn caused_by(&self) -> Option<SpanId> {
        self.attrs
            .get(attr::CAUSED_BY)
            .and_then(Value::as_str)
            .and_then(|s| s.parse().ok())
    }

    /// Checks the rules serde cannot: names present, values on counters only, durations on
    /// spans only, `caused_by` well-formed.
    pub fn check(&self) -> Result<(), RecordError> {
        if self.name.is_empty() {
            return Err(RecordError::EmptyName);
        }
        if self.track.is_empty() {
            return Err(RecordError::EmptyTrack);
        }
        match self.kind {
            RecordKind::Counter => {
                if !self.value.is_some_and(f64::is_finite) {
                    return Err(RecordError::CounterValue(self.name.clone()));
                }
            }
            k => {
                if self.value.is_some() {
                    return Err(RecordError::ValueOnNonCounter(k.as_str()));
                }
            }
        }
        if self.kind != RecordKind::Span && self.dur_ns != 0 {
            return Err(RecordError::Duration(self.kind.as_str()));
        }
        if self.ts_ns.checked_add(self.dur_ns).is_none() {
            return Err(RecordError::Overflow);
        }
        if let Some(v) = self.attrs.get(attr::CAUSED_BY) {
            match v.as_str() {
                Some(s) => {
                    s.parse::<SpanId>()
                        .map_err(|e| RecordError::CausedBy(e.to_string()))?;
                }
                None => return Err(RecordError::CausedBy(format!("got {v}"))),
            }
        }
        Ok(())
    }
}
