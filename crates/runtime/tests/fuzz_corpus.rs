//! Replays the seed corpus of the `proc_signals` fuzz target (fuzz/corpus/proc_signals)
//! with the target's own checks, so every `cargo test` runs it on stable.

use mmsched_runtime::platform::procfs::parse_any;

#[test]
fn the_proc_signals_corpus_parses_or_fails_cleanly() {
    let dir = format!(
        "{}/../../fuzz/corpus/proc_signals",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{dir}: {e}"))
        .map(|e| e.expect("listable").path())
        .collect();
    files.sort();
    assert!(files.len() >= 5, "{files:?}");
    for path in files {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let data = std::fs::read(&path).expect("readable");
        let parsed = parse_any(&data);
        let broken = ["short", "overflow", "no-usage"]
            .iter()
            .any(|b| name.contains(b));
        assert_eq!(parsed, !broken, "{name}");
    }
}
