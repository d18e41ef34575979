//! Writer → reader round trip of a realistic trace, byte for byte.

use mmsched_trace::demo::{DemoConfig, generate};
use mmsched_trace::format::{Trace, validate};

#[test]
fn demo_trace_round_trips_through_ndjson() {
    let trace = generate(DemoConfig {
        seed: 11,
        min_records: 3_000,
    });
    let mut bytes = Vec::new();
    trace.write(&mut bytes).expect("write to memory");
    let back = Trace::read(bytes.as_slice()).expect("our own output reads back");
    assert_eq!(back, trace);
    let mut again = Vec::new();
    back.write(&mut again).expect("write to memory");
    assert_eq!(again, bytes, "writing is deterministic");
    let v = validate(bytes.as_slice());
    assert!(v.errors.is_empty(), "{:?}", v.errors.first());
    assert_eq!(v.valid_records as usize, trace.records.len());
    let first = std::str::from_utf8(&bytes)
        .expect("utf-8")
        .lines()
        .next()
        .expect("header");
    assert!(first.starts_with("{\"mmtrace\":1"), "{first}");
}
