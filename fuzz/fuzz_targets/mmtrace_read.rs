//! Arbitrary bytes as an mmtrace file: the strict reader and the validator give records or
//! line-numbered errors, never a panic, and agree on whether the file is valid.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mmsched_trace::Trace;
use mmsched_trace::format::validate;

fuzz_target!(|data: &[u8]| {
    let strict = Trace::read(data);
    let v = validate(data);
    assert_eq!(strict.is_ok(), v.errors.is_empty());
    if let Ok(t) = strict {
        assert_eq!(t.records.len() as u64, v.valid_records);
    }
});
