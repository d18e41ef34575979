//! Arbitrary bytes into the policy parsers (TOML and JSON) and validation: every input
//! must give a policy or an error, never a panic; a valid policy must round-trip.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mmsched_core::policy::{Policy, PolicySpec};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(spec) = toml::from_str::<PolicySpec>(&text) {
        let _ = Policy::try_from(spec);
    }
    if let Ok(spec) = serde_json::from_slice::<PolicySpec>(data)
        && let Ok(policy) = Policy::try_from(spec)
    {
        assert_eq!(Policy::try_from(policy.to_spec()).as_ref(), Ok(&policy));
    }
});
