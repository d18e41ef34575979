//! Arbitrary text as a scenario file: a scenario or an error naming the line, never a
//! panic; a valid scenario's streams and models are all named.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mmsched_scenario::Scenario;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(s) = Scenario::from_toml(&text, "fuzz.toml") {
        assert!(s.streams().iter().all(|st| !st.name.is_empty()));
    }
});
