//! Arbitrary bytes as a PNG or JPEG image: an RGB frame whose buffer matches its size, or
//! an error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mmsched_backends::RgbFrame;

fuzz_target!(|data: &[u8]| {
    if let Ok(f) = RgbFrame::decode(data, "fuzz image") {
        assert_eq!(f.data().len(), f.width() as usize * f.height() as usize * 3);
    }
});
