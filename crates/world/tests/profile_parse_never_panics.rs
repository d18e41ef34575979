//! The stable-toolchain stand-in for the `fuzz/` target `profile_parse`: arbitrary text and
//! mutations of the shipped reference profile fed to the profile parser must give a
//! profile or an error naming the source, never a panic.

use mmsched_world::profile::{Profile, REFERENCE_PROFILE};
use proptest::prelude::*;

fn parse(text: &str) {
    match Profile::parse(text, "fuzz.json") {
        Ok(p) => {
            for kind in p.doc.jobs.keys() {
                let l = p.latency(kind).expect("a listed kind has a latency");
                assert!(l.p50_ms > 0.0 && l.p50_ms <= l.p95_ms && l.p95_ms <= l.p99_ms);
            }
        }
        Err(e) => assert!(e.to_string().contains("fuzz.json"), "{e}"),
    }
}

proptest! {
    #[test]
    fn arbitrary_text_never_panics(text in ".{0,400}") {
        parse(&text);
    }

    #[test]
    fn mutated_reference_never_panics(at in 0usize..2000, cut in 0usize..40, insert in "[0-9a-z\"{}:,. -]{0,12}") {
        let mut s = REFERENCE_PROFILE.to_string();
        let at = at.min(s.len());
        let at = (0..=at).rev().find(|i| s.is_char_boundary(*i)).unwrap_or(0);
        let end = (at + cut).min(s.len());
        let end = (end..=s.len()).find(|i| s.is_char_boundary(*i)).unwrap_or(s.len());
        s.replace_range(at..end, &insert);
        parse(&s);
    }
}
