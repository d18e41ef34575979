//! The `/api/v1/status` document and the shared board the runtime writes it on.
//!
//! The runtime pushes what it already computes (LDTI, level, per-modality rates) with the
//! `set_*` methods; the HTTP handler only reads. A plain mutex is enough: both sides hold it
//! for a copy of a few numbers.

use std::collections::BTreeMap;
use std::sync::Mutex;

use mmsched_core::Modality;
use mmsched_core::ldti::Level;
use mmsched_core::time::{NANOS_PER_SEC, Nanos};
use serde::Serialize;

use crate::store::{PolicyStore, SharedClock};

/// What the runtime reports about one modality.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct ModalityStatus {
    /// Completed jobs per second over the runtime's rate window.
    pub rate_hz: f64,
    /// P99 end-to-end latency over the same window, in milliseconds.
    pub p99_ms: f64,
    /// Deadline misses since start.
    pub misses: u64,
}

/// The live policy as shown in the status document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PolicyStatus {
    /// Current ETag (quoted).
    pub etag: String,
    /// Current revision.
    pub revision: u64,
    /// The policy's name.
    pub name: String,
    /// The ETag of the policy the scheduler decides with: equal to `etag` once a `PUT` has
    /// been applied between two decisions; `null` when no scheduler runs (plain `serve`) or
    /// before the runtime has reported one.
    pub applied_etag: Option<String>,
}

/// The `/api/v1/status` document.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StatusDoc {
    /// Latest LDTI, or `null` before the runtime has evaluated it (e.g. `mmsched serve`
    /// without a running scheduler).
    pub ldti: Option<f64>,
    /// Level of `ldti` (`stable`, `degraded`, `critical`), or `null` with it.
    pub level: Option<&'static str>,
    /// The live policy.
    pub policy: PolicyStatus,
    /// Per-modality figures keyed by modality name (only modalities the runtime reported).
    pub modalities: BTreeMap<&'static str, ModalityStatus>,
    /// Whole seconds since the server started, on its clock.
    pub uptime_s: u64,
}

#[derive(Debug, Default)]
struct Reported {
    ldti: Option<(f64, Level)>,
    applied_etag: Option<String>,
    modalities: BTreeMap<&'static str, ModalityStatus>,
}

/// Shared state behind `/api/v1/status`. Share it behind an `Arc`.
pub struct StatusBoard {
    reported: Mutex<Reported>,
    clock: SharedClock,
    started_nanos: Nanos,
}

impl std::fmt::Debug for StatusBoard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StatusBoard")
            .field("started_nanos", &self.started_nanos)
            .finish_non_exhaustive()
    }
}

impl StatusBoard {
    /// An empty board; uptime counts from now on `clock`.
    pub fn new(clock: SharedClock) -> Self {
        let started_nanos = clock.now_nanos();
        Self {
            reported: Mutex::new(Reported::default()),
            clock,
            started_nanos,
        }
    }

    /// Sets the latest health index and level.
    pub fn set_ldti(&self, ldti: f64, level: Level) {
        self.lock().ldti = Some((ldti, level));
    }

    /// The scheduler now decides with the policy of `etag`.
    pub fn set_applied_etag(&self, etag: &str) {
        self.lock().applied_etag = Some(etag.to_string());
    }

    /// Sets the figures of one modality.
    pub fn set_modality(&self, modality: Modality, status: ModalityStatus) {
        self.lock().modalities.insert(modality.as_str(), status);
    }

    /// The document, with the policy part read from `store`.
    pub fn document(&self, store: &PolicyStore) -> StatusDoc {
        let snap = store.current();
        let r = self.lock();
        StatusDoc {
            ldti: r.ldti.map(|(v, _)| v),
            level: r.ldti.map(|(_, l)| l.as_str()),
            policy: PolicyStatus {
                etag: snap.etag.clone(),
                revision: snap.revision,
                name: snap.policy.name().to_string(),
                applied_etag: r.applied_etag.clone(),
            },
            modalities: r.modalities.clone(),
            uptime_s: self.clock.now_nanos().saturating_sub(self.started_nanos) / NANOS_PER_SEC,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Reported> {
        // Plain numbers: a panicking writer cannot leave them inconsistent.
        self.reported.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mmsched_core::policy::Policy;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};

    #[derive(Debug, Default)]
    struct SetClock(AtomicU64);
    impl mmsched_core::Clock for SetClock {
        fn now_nanos(&self) -> Nanos {
            self.0.load(Ordering::Relaxed)
        }
    }

    #[test]
    fn document_shape() {
        let clock = Arc::new(SetClock::default());
        let store = PolicyStore::new(Policy::default(), clock.clone(), "startup");
        let board = StatusBoard::new(clock.clone());
        let doc = serde_json::to_value(board.document(&store)).unwrap();
        assert!(doc["ldti"].is_null() && doc["level"].is_null());
        assert_eq!(doc["policy"]["revision"], 1);
        assert_eq!(doc["policy"]["name"], "default");
        assert!(doc["policy"]["applied_etag"].is_null());
        board.set_applied_etag("\"abc\"");
        let doc = serde_json::to_value(board.document(&store)).unwrap();
        assert_eq!(doc["policy"]["applied_etag"], "\"abc\"");
        board.set_ldti(0.7, Level::Critical);
        board.set_modality(
            Modality::Image,
            ModalityStatus {
                rate_hz: 30.0,
                p99_ms: 24.5,
                misses: 2,
            },
        );
        clock.0.store(3_500_000_000, Ordering::Relaxed);
        let doc = serde_json::to_value(board.document(&store)).unwrap();
        assert_eq!(doc["ldti"], 0.7);
        assert_eq!(doc["level"], "critical");
        assert_eq!(doc["modalities"]["image"]["rate_hz"], 30.0);
        assert_eq!(doc["modalities"]["image"]["misses"], 2);
        assert_eq!(doc["uptime_s"], 3);
    }
}
