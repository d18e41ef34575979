//! # mmsched-trace
//!
//! What happened on the device, frame by frame, on one timeline.
//!
//! - [`record`]: the mmtrace record types (one NDJSON line each) and their JSON Schema;
//! - [`format`]: the reader (with line numbers for bad records) and writer;
//! - [`ids`]: W3C trace and span ids and a lock-free generator;
//! - [`recorder`]: the worker-side recorder over a bounded lock-free [`ring`] that never
//!   blocks and counts what it drops;
//! - [`export`]: Chrome/Perfetto trace JSON and (feature `otlp`) OTLP/JSON;
//! - [`viewer`]: the mmTracer web viewer's embedded static assets;
//! - [`demo`]: a seeded synthetic trace for trying the viewer and exporters.
//!
//! The ring's orderings are model-checked with loom:
//! `RUSTFLAGS="--cfg loom" cargo test -p mmsched-trace --test loom --release`.
#![deny(missing_docs)]

pub mod demo;
pub mod export;
pub mod format;
pub mod ids;
pub mod record;
pub mod recorder;
pub mod ring;
pub mod schema;
mod sync;
pub mod viewer;

pub use format::{MAX_LINE_BYTES, ReadError, Reader, TRACE_FILE_CAP, Trace, Writer};
pub use ids::{IdGen, SpanId, TraceId};
pub use record::{Header, Record, RecordKind};
pub use recorder::{Drain, Event, Recorder, recorder};
