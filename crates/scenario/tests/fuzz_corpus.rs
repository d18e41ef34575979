//! Replays the seed corpus of the `scenario_toml` fuzz target (fuzz/corpus/scenario_toml)
//! with the target's own checks, so every `cargo test` runs the fuzzed path on stable.

use mmsched_scenario::Scenario;

#[test]
fn the_scenario_toml_corpus_parses_or_fails_cleanly() {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fuzz/corpus/scenario_toml"
    );
    let mut valid = 0;
    let mut files = 0;
    for entry in std::fs::read_dir(dir).expect("the corpus exists") {
        let path = entry.expect("listable").path();
        let bytes = std::fs::read(&path).expect("readable");
        let text = String::from_utf8_lossy(&bytes);
        files += 1;
        match Scenario::from_toml(&text, "fuzz.toml") {
            Ok(s) => {
                assert!(s.streams().iter().all(|st| !st.name.is_empty()));
                valid += 1;
            }
            Err(e) => assert!(e.to_string().starts_with("fuzz.toml:"), "{e}"),
        }
    }
    assert!(files >= 3 && valid >= 1, "{files} files, {valid} valid");
}
