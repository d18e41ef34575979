//! The policy store against a simple model: for any sequence of writes with right, stale or
//! absent preconditions, the store's revision, ETag, change log and notifications agree with
//! what the model predicts.

use std::sync::Arc;

use mmsched_core::policy::{Policy, PolicySpec};
use mmsched_core::time::MonotonicClock;
use mmsched_server::etag;
use mmsched_server::store::{CHANGE_LOG_CAPACITY, PolicyStore, Precondition, canonical_json};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Cond {
    Current,
    Stale,
    Any,
}

fn policy(n: u8) -> Policy {
    Policy::try_from(PolicySpec {
        name: Some(format!("p{}", n % 4)),
        ..PolicySpec::default()
    })
    .expect("valid")
}

proptest! {
    #[test]
    fn store_matches_model(ops in prop::collection::vec((0u8..8, prop_oneof![Just(Cond::Current), Just(Cond::Stale), Just(Cond::Any)]), 1..60)) {
        let store = PolicyStore::new(policy(0), Arc::new(MonotonicClock::new()), "start");
        let mut sub = store.subscribe();
        let mut model_name = "p0".to_string();
        let mut model_rev = 1u64;
        let mut stale = String::from("\"00000000000000000000000000000000\"");
        for (n, cond) in ops {
            let before = store.current();
            let p = policy(n);
            let new_name = p.name().to_string();
            let pre = match cond {
                Cond::Current => Precondition::ETag(&before.etag),
                Cond::Stale => Precondition::ETag(&stale),
                Cond::Any => Precondition::Any,
            };
            let result = store.replace(p, pre, "op");
            match cond {
                Cond::Stale => {
                    prop_assert!(result.is_err());
                }
                _ => {
                    let r = result.expect("precondition holds");
                    let changes = new_name != model_name;
                    prop_assert_eq!(r.changed, changes);
                    if changes {
                        model_rev += 1;
                        model_name = new_name;
                        stale = before.etag.clone();
                    }
                }
            }
            let now = store.current();
            prop_assert_eq!(now.revision, model_rev);
            prop_assert_eq!(now.policy.name(), model_name.as_str());
            prop_assert_eq!(&now.etag, &etag::of(canonical_json(&now.policy).as_bytes()));
            prop_assert_eq!(&now.json, &canonical_json(&now.policy));
            let notified = sub.poll();
            prop_assert_eq!(notified.is_some(), now.revision != before.revision);
        }
        let log = store.changes();
        prop_assert_eq!(log.len() as u64, model_rev.min(CHANGE_LOG_CAPACITY as u64));
        prop_assert!(log.windows(2).all(|w| w[1].revision == w[0].revision + 1));
        prop_assert_eq!(log.last().map(|c| c.revision), Some(model_rev));
    }
}
