//! Arbitrary bytes as a `multipart/form-data` upload (`POST /v1/audio/transcriptions`):
//! parts or an error, never a panic; every part's bytes lie inside the body.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mmsched_server::multipart::parse;

fuzz_target!(|data: &[u8]| {
    if let Ok(parts) = parse(data, "XyZ") {
        let total: usize = parts.iter().map(|p| p.data.len()).sum();
        assert!(total <= data.len());
    }
});
