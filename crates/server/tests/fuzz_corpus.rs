//! Replays the seed corpora of the `policy_http_body` and `multipart_form` fuzz targets
//! (fuzz/corpus/…) with each target's own checks.

use mmsched_core::policy::Policy;
use mmsched_server::body::{PolicyBodyError, parse_policy_body};

#[test]
fn the_policy_body_corpus_gives_a_policy_or_an_error() {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fuzz/corpus/policy_http_body"
    );
    let mut accepted = 0;
    let mut files = 0;
    for entry in std::fs::read_dir(dir).expect("the corpus exists") {
        let path = entry.expect("listable").path();
        let data = std::fs::read(&path).expect("readable");
        files += 1;
        match parse_policy_body(&data) {
            Ok(policy) => {
                assert_eq!(Policy::try_from(policy.to_spec()).as_ref(), Ok(&policy));
                accepted += 1;
            }
            Err(PolicyBodyError::NotAnObject { .. }) => {
                assert!(path.ends_with("array.json"), "{}", path.display());
            }
            Err(_) => {}
        }
    }
    assert!(
        files >= 4 && accepted >= 2,
        "{files} files, {accepted} accepted"
    );
}

/// Replays fuzz/corpus/multipart_form with the `multipart_form` target's checks.
#[test]
fn the_multipart_corpus_gives_parts_inside_the_body_or_an_error() {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fuzz/corpus/multipart_form"
    );
    let (mut files, mut parsed) = (0, 0);
    for entry in std::fs::read_dir(dir).expect("the corpus exists") {
        let data = std::fs::read(entry.expect("listable").path()).expect("readable");
        files += 1;
        if let Ok(parts) = mmsched_server::multipart::parse(&data, "XyZ") {
            let total: usize = parts.iter().map(|p| p.data.len()).sum();
            assert!(total <= data.len());
            parsed += 1;
        }
    }
    assert!(files >= 4 && parsed >= 2, "{files} files, {parsed} parsed");
}
