//! Exporters from an mmtrace [`Trace`](crate::format::Trace) to formats other tools open.
//!
//! - [`perfetto`]: Chrome trace-event JSON, which the Perfetto UI and `chrome://tracing`
//!   open offline;
//! - [`otlp`] (feature `otlp`): OpenTelemetry OTLP/JSON for spans and GenAI metrics.

#[cfg(feature = "otlp")]
pub mod otlp;
pub mod perfetto;
