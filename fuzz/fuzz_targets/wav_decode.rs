//! Arbitrary bytes as a WAV file: decoded audio (mono samples, a non-zero rate) or an error,
//! never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mmsched_backends::audio::decode_wav;

fuzz_target!(|data: &[u8]| {
    if let Ok(clip) = decode_wav(data, "fuzz.wav") {
        assert!(clip.sample_rate_hz > 0);
    }
});
