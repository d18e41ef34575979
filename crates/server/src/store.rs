//! The live policy: one current [`PolicySnapshot`], swapped atomically, with change
//! notification and a short change log.
//!
//! Why a `tokio::sync::watch` channel: it is exactly "one current value plus a wake-up for
//! everyone waiting on a change". Its lock is held only for a pointer swap (validation,
//! serialisation and hashing all happen before), so the scheduler reading the policy between
//! two decisions never waits on an HTTP request, and its `Receiver::has_changed` works from a
//! plain thread without an async runtime. The compare-and-swap on the ETag runs inside the
//! channel's write lock, so of two writers holding the same `If-Match` exactly one wins.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use mmsched_core::policy::Policy;
use mmsched_core::time::{Clock, Nanos};
use tokio::sync::watch;

use crate::etag;

/// How many past changes [`PolicyStore::changes`] keeps.
pub const CHANGE_LOG_CAPACITY: usize = 64;

/// A clock shared between the server's tasks and the runtime's threads.
pub type SharedClock = Arc<dyn Clock + Send + Sync>;

/// One immutable version of the live policy.
#[derive(Debug)]
pub struct PolicySnapshot {
    /// The validated policy.
    pub policy: Arc<Policy>,
    /// Its canonical JSON document (every field written out): what `GET` returns and what
    /// the ETag is computed from.
    pub json: String,
    /// Strong entity tag of `json`, quoted as it appears in the `ETag` header.
    pub etag: String,
    /// 1 for the policy the store started with, +1 for every change.
    pub revision: u64,
    /// When this version became current, on the store's clock.
    pub since_nanos: Nanos,
}

impl PolicySnapshot {
    fn new(policy: Policy, revision: u64, since_nanos: Nanos) -> Self {
        let json = canonical_json(&policy);
        let etag = etag::of(json.as_bytes());
        Self {
            policy: Arc::new(policy),
            json,
            etag,
            revision,
            since_nanos,
        }
    }
}

/// The canonical JSON of a policy: its fully written-out spec, compact. Struct fields have a
/// fixed order and maps are sorted, so equal policies give equal bytes (and equal ETags).
pub fn canonical_json(policy: &Policy) -> String {
    let mut value = serde_json::to_value(policy.to_spec())
        .unwrap_or_else(|e| unreachable!("a policy spec always serialises: {e}"));
    positive_zeros(&mut value);
    value.to_string()
}

/// `-0.0` and `0.0` are the same setting: write both as `0.0`, so they share an ETag.
fn positive_zeros(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Number(n) if n.as_f64() == Some(0.0) && n.is_f64() => {
            *v = serde_json::json!(0.0);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(positive_zeros),
        serde_json::Value::Object(map) => map.values_mut().for_each(positive_zeros),
        _ => {}
    }
}

/// One entry of the change log: enough to mark the change on the trace timeline.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PolicyChange {
    /// The revision that became current.
    pub revision: u64,
    /// Its ETag.
    pub etag: String,
    /// The policy's name.
    pub name: String,
    /// When it became current, on the store's clock.
    pub at_nanos: Nanos,
    /// Where it came from, e.g. `startup`, `file policy.toml`, `api 127.0.0.1:53422`.
    pub source: String,
}

/// Why [`PolicyStore::replace`] did not install a policy.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SwapError {
    /// The precondition named another version than the current one.
    #[error(
        "the policy has changed: If-Match {expected} does not match the current ETag {current}"
    )]
    Stale {
        /// The ETag the writer expected.
        expected: String,
        /// The current ETag (send it back so the writer can re-read and retry).
        current: String,
    },
}

/// What a write expects the current version to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precondition<'a> {
    /// Replace whatever is current (file reloads, `If-Match: *`).
    Any,
    /// Replace only if the current ETag is this one (one or more ETags from `If-Match`).
    ETag(&'a str),
}

/// The outcome of a successful [`PolicyStore::replace`].
#[derive(Debug, Clone)]
pub struct Replaced {
    /// The now-current version.
    pub snapshot: Arc<PolicySnapshot>,
    /// False when the new document equals the current one: nothing changed, nobody was woken.
    pub changed: bool,
}

/// The live policy shared by the HTTP API and the scheduler. See the module docs.
#[derive(Debug)]
pub struct PolicyStore {
    current: watch::Sender<Arc<PolicySnapshot>>,
    log: Mutex<VecDeque<PolicyChange>>,
    clock: ClockDebug,
}

/// Wrapper so the store can derive `Debug` around a `dyn Clock`.
struct ClockDebug(SharedClock);

impl std::fmt::Debug for ClockDebug {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Clock")
    }
}

impl PolicyStore {
    /// A store holding `policy` as revision 1, stamped with `clock` and recording `source`.
    pub fn new(policy: Policy, clock: SharedClock, source: &str) -> Self {
        let now = clock.now_nanos();
        let snapshot = Arc::new(PolicySnapshot::new(policy, 1, now));
        let mut log = VecDeque::with_capacity(CHANGE_LOG_CAPACITY);
        log.push_back(change_of(&snapshot, source));
        let (current, _) = watch::channel(snapshot);
        Self {
            current,
            log: Mutex::new(log),
            clock: ClockDebug(clock),
        }
    }

    /// The current version. Never waits on a writer for longer than a pointer swap.
    pub fn current(&self) -> Arc<PolicySnapshot> {
        Arc::clone(&self.current.borrow())
    }

    /// The current policy.
    pub fn policy(&self) -> Arc<Policy> {
        Arc::clone(&self.current.borrow().policy)
    }

    /// Installs `policy` if `precondition` holds, atomically. A document equal to the current
    /// one is accepted without a new revision or a notification.
    pub fn replace(
        &self,
        policy: Policy,
        precondition: Precondition<'_>,
        source: &str,
    ) -> Result<Replaced, SwapError> {
        // Everything expensive happens before taking the lock.
        let now = self.clock.0.now_nanos();
        let mut candidate = Some(PolicySnapshot::new(policy, 0, now));
        let mut outcome: Option<Result<Replaced, SwapError>> = None;
        self.current.send_if_modified(|cur| {
            if let Precondition::ETag(expected) = precondition
                && !etag::list_matches_strong(expected, &cur.etag)
            {
                outcome = Some(Err(SwapError::Stale {
                    expected: expected.to_string(),
                    current: cur.etag.clone(),
                }));
                return false;
            }
            let Some(mut next) = candidate.take() else {
                unreachable!("the closure runs once");
            };
            if next.etag == cur.etag {
                outcome = Some(Ok(Replaced {
                    snapshot: Arc::clone(cur),
                    changed: false,
                }));
                return false;
            }
            next.revision = cur.revision + 1;
            let next = Arc::new(next);
            self.push_change(change_of(&next, source));
            *cur = Arc::clone(&next);
            outcome = Some(Ok(Replaced {
                snapshot: next,
                changed: true,
            }));
            true
        });
        outcome.unwrap_or_else(|| unreachable!("send_if_modified runs its closure"))
    }

    /// A subscription to changes, starting from the current version (seen).
    pub fn subscribe(&self) -> PolicySubscription {
        PolicySubscription {
            rx: self.current.subscribe(),
        }
    }

    /// The recent changes, oldest first (at most [`CHANGE_LOG_CAPACITY`]).
    pub fn changes(&self) -> Vec<PolicyChange> {
        self.lock_log().iter().cloned().collect()
    }

    /// The changes after `revision`, oldest first: for marking new ones on a trace.
    pub fn changes_since(&self, revision: u64) -> Vec<PolicyChange> {
        self.lock_log()
            .iter()
            .filter(|c| c.revision > revision)
            .cloned()
            .collect()
    }

    fn push_change(&self, change: PolicyChange) {
        let mut log = self.lock_log();
        if log.len() == CHANGE_LOG_CAPACITY {
            log.pop_front();
        }
        log.push_back(change);
    }

    fn lock_log(&self) -> std::sync::MutexGuard<'_, VecDeque<PolicyChange>> {
        // The log holds plain data; a panic elsewhere cannot leave it half-written.
        self.log.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn change_of(s: &PolicySnapshot, source: &str) -> PolicyChange {
    PolicyChange {
        revision: s.revision,
        etag: s.etag.clone(),
        name: s.policy.name().to_string(),
        at_nanos: s.since_nanos,
        source: source.to_string(),
    }
}

/// A view of the store that tells whether the policy changed since it last looked.
///
/// The scheduler calls [`PolicySubscription::poll`] between two decisions (no async runtime
/// needed, never blocks); async code awaits [`PolicySubscription::changed`].
#[derive(Debug, Clone)]
pub struct PolicySubscription {
    rx: watch::Receiver<Arc<PolicySnapshot>>,
}

impl PolicySubscription {
    /// The new version if the policy changed since the last `poll`/`changed`, else `None`.
    pub fn poll(&mut self) -> Option<Arc<PolicySnapshot>> {
        match self.rx.has_changed() {
            Ok(true) => Some(Arc::clone(&self.rx.borrow_and_update())),
            // Unchanged, or the store is gone (then nothing will ever change again).
            Ok(false) | Err(_) => None,
        }
    }

    /// The current version, marking it seen.
    pub fn latest(&mut self) -> Arc<PolicySnapshot> {
        Arc::clone(&self.rx.borrow_and_update())
    }

    /// Waits until the policy changes after the last seen version and returns the new one;
    /// `None` once the store has been dropped.
    pub async fn changed(&mut self) -> Option<Arc<PolicySnapshot>> {
        self.rx.changed().await.ok()?;
        Some(Arc::clone(&self.rx.borrow_and_update()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mmsched_core::policy::PolicySpec;
    use std::sync::atomic::{AtomicU64, Ordering};

    #[derive(Debug, Default)]
    struct StepClock(AtomicU64);
    impl Clock for StepClock {
        fn now_nanos(&self) -> Nanos {
            self.0.fetch_add(10, Ordering::Relaxed)
        }
    }

    fn named(name: &str) -> Policy {
        Policy::try_from(PolicySpec {
            name: Some(name.to_string()),
            ..PolicySpec::default()
        })
        .unwrap()
    }

    fn store() -> PolicyStore {
        PolicyStore::new(Policy::default(), Arc::new(StepClock::default()), "startup")
    }

    #[test]
    fn negative_and_positive_zero_give_one_etag() {
        let with = |zero: f64| {
            let mut spec = PolicySpec::default();
            spec.arbiter.battery_saver_below = Some(zero);
            PolicySnapshot::new(Policy::try_from(spec).unwrap(), 1, 0).etag
        };
        assert_eq!(with(-0.0), with(0.0));
        assert_ne!(with(0.0), with(0.1));
    }

    #[test]
    fn etag_depends_only_on_content() {
        let a = store();
        let b = store();
        assert_eq!(a.current().etag, b.current().etag);
        let e = a.current().etag.clone();
        assert!(e.starts_with('"') && e.ends_with('"'), "{e}");
        let r = a.replace(named("x"), Precondition::Any, "t").unwrap();
        assert_ne!(r.snapshot.etag, e);
    }

    #[test]
    fn stale_precondition_is_refused_and_policy_untouched() {
        let s = store();
        let old = s.current();
        s.replace(named("a"), Precondition::Any, "t").unwrap();
        let err = s
            .replace(named("b"), Precondition::ETag(&old.etag), "t")
            .unwrap_err();
        let SwapError::Stale { current, .. } = err;
        assert_eq!(current, s.current().etag);
        assert_eq!(s.policy().name(), "a");
        assert_eq!(s.current().revision, 2);
    }

    #[test]
    fn equal_document_is_not_a_change() {
        let s = store();
        let mut sub = s.subscribe();
        let e = s.current().etag.clone();
        let r = s
            .replace(Policy::default(), Precondition::ETag(&e), "t")
            .unwrap();
        assert!(!r.changed);
        assert_eq!(r.snapshot.revision, 1);
        assert!(sub.poll().is_none());
        assert_eq!(s.changes().len(), 1);
    }

    #[test]
    fn subscription_sees_each_change_once_and_log_records_it() {
        let s = store();
        let mut sub = s.subscribe();
        assert!(sub.poll().is_none());
        s.replace(named("a"), Precondition::Any, "api 1").unwrap();
        let seen = sub.poll().expect("changed");
        assert_eq!(seen.policy.name(), "a");
        assert_eq!(seen.revision, 2);
        assert!(sub.poll().is_none());
        let log = s.changes_since(1);
        assert_eq!(log.len(), 1);
        assert_eq!(log[0].source, "api 1");
        assert_eq!(log[0].etag, seen.etag);
        assert!(log[0].at_nanos > s.changes()[0].at_nanos);
    }

    #[test]
    fn change_log_is_bounded() {
        let s = store();
        for i in 0..(CHANGE_LOG_CAPACITY + 5) {
            s.replace(named(&format!("p{i}")), Precondition::Any, "t")
                .unwrap();
        }
        let log = s.changes();
        assert_eq!(log.len(), CHANGE_LOG_CAPACITY);
        assert_eq!(
            log.last().unwrap().revision,
            (CHANGE_LOG_CAPACITY + 6) as u64
        );
    }

    #[test]
    fn racing_writers_with_the_same_precondition_one_wins() {
        let s = Arc::new(store());
        let e = s.current().etag.clone();
        for round in 0..50 {
            let e = if round == 0 {
                e.clone()
            } else {
                s.current().etag.clone()
            };
            let barrier = Arc::new(std::sync::Barrier::new(2));
            let handles: Vec<_> = (0..2)
                .map(|w| {
                    let s = Arc::clone(&s);
                    let e = e.clone();
                    let b = Arc::clone(&barrier);
                    std::thread::spawn(move || {
                        let p = named(&format!("r{round}w{w}"));
                        b.wait();
                        s.replace(p, Precondition::ETag(&e), "t").is_ok()
                    })
                })
                .collect();
            let wins = handles
                .into_iter()
                .map(|h| h.join().unwrap())
                .filter(|&ok| ok)
                .count();
            assert_eq!(wins, 1, "round {round}");
        }
    }
}
