//! The JSON Schema of one mmtrace line, generated from the Rust types.
//!
//! The checked-in copy is `crates/trace/schema/mmtrace.schema.json`; a test fails when it
//! is stale, and `MMSCHED_BLESS=1 cargo test -p mmsched-trace` rewrites it.

use crate::record::Line;

/// The schema of one line of a trace (the header or a record), as pretty JSON with a
/// trailing newline.
pub fn line_schema_json() -> String {
    let schema = schemars::schema_for!(Line);
    let mut s = serde_json::to_string_pretty(&schema).expect("a schema always serialises");
    s.push('\n');
    s
}
