//! Replays the seed corpus of the `mmtrace_read` fuzz target (fuzz/corpus/mmtrace_read)
//! with the target's own checks: the strict reader and the validator agree.

use mmsched_trace::Trace;
use mmsched_trace::format::validate;

#[test]
fn the_mmtrace_corpus_reads_or_fails_cleanly_and_reader_and_validator_agree() {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fuzz/corpus/mmtrace_read"
    );
    let mut outcomes = Vec::new();
    for entry in std::fs::read_dir(dir).expect("the corpus exists") {
        let data = std::fs::read(entry.expect("listable").path()).expect("readable");
        let strict = Trace::read(data.as_slice());
        let v = validate(data.as_slice());
        assert_eq!(strict.is_ok(), v.errors.is_empty());
        if let Ok(t) = &strict {
            assert_eq!(t.records.len() as u64, v.valid_records);
        }
        outcomes.push(strict.is_ok());
    }
    assert!(
        outcomes.contains(&true) && outcomes.contains(&false),
        "{outcomes:?}"
    );
}
