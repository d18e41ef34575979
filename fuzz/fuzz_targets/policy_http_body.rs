//! Arbitrary bytes as the body of `PUT /api/v1/policy`: a policy or an error (400 or 422),
//! never a panic; an accepted policy round-trips through its document.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mmsched_core::policy::Policy;
use mmsched_server::body::parse_policy_body;

fuzz_target!(|data: &[u8]| {
    if let Ok(policy) = parse_policy_body(data) {
        assert_eq!(Policy::try_from(policy.to_spec()).as_ref(), Ok(&policy));
    }
});
