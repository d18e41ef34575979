//! Arbitrary bytes into the device profile parser and validation: every input must give a
//! profile or an error, never a panic; a valid profile must round-trip through its JSON.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mmsched_core::profile::DeviceProfile;

fuzz_target!(|data: &[u8]| {
    if let Ok(p) = serde_json::from_slice::<DeviceProfile>(data)
        && p.validate().is_ok()
    {
        let text = serde_json::to_string(&p).expect("a parsed profile serialises");
        let back: DeviceProfile = serde_json::from_str(&text).expect("and parses back");
        assert_eq!(back, p);
    }
});
