//! Text-generation sessions on one set of weights, leased one per request: a request owns
//! its session (its KV cache and sampler) from its first step to its last, so concurrent
//! requests never share or clear each other's cache. The pool's size is how many text
//! requests may run at once; the book keeps the others waiting.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use mmsched_backends::BackendError;
use mmsched_backends::llm::{GgufTokenizer, LlmSession};

use crate::engines::{Shared, lock};

/// The sessions, each with its lease flag. A clone shares them.
#[derive(Clone)]
pub struct LlmPool {
    sessions: Arc<Vec<(Shared<LlmSession>, Arc<AtomicBool>)>>,
    tokenizer: GgufTokenizer,
    max_seq_len: usize,
}

impl std::fmt::Debug for LlmPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmPool")
            .field("sessions", &self.sessions.len())
            .field("max_seq_len", &self.max_seq_len)
            .finish()
    }
}

impl LlmPool {
    /// `first` and `more` sessions forked from it on the same weights (at least one).
    pub fn new(first: LlmSession, more: usize) -> Result<Self, BackendError> {
        let tokenizer = first.tokenizer().clone();
        let max_seq_len = first.max_seq_len();
        let mut sessions = Vec::with_capacity(more + 1);
        for _ in 0..more {
            sessions.push(first.fork()?);
        }
        sessions.insert(0, first);
        Ok(Self {
            sessions: Arc::new(
                sessions
                    .into_iter()
                    .map(|s| (Arc::new(std::sync::Mutex::new(s)), Arc::default()))
                    .collect(),
            ),
            tokenizer,
            max_seq_len,
        })
    }

    /// How many requests can run at once.
    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    /// Whether the pool has no session (never: [`LlmPool::new`] makes one at least).
    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }

    /// A free session, held until the lease is dropped; `None` when all are in use.
    pub fn lease(&self) -> Option<LlmLease> {
        self.sessions.iter().find_map(|(s, busy)| {
            busy.compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
                .ok()
                .map(|_| LlmLease {
                    session: Arc::clone(s),
                    busy: Arc::clone(busy),
                })
        })
    }

    /// The tokenizer (for limits checked before a request is submitted; it never waits for
    /// a session).
    pub fn tokenizer(&self) -> &GgufTokenizer {
        &self.tokenizer
    }

    /// Longest sequence (prompt and answer) a session holds, tokens.
    pub fn max_seq_len(&self) -> usize {
        self.max_seq_len
    }

    /// Runs `f` on every session (warm-up, thread counts), one at a time.
    pub fn for_each(
        &self,
        mut f: impl FnMut(&mut LlmSession) -> Result<(), BackendError>,
    ) -> Result<(), BackendError> {
        for (s, _) in self.sessions.iter() {
            f(&mut lock(s))?;
        }
        Ok(())
    }

    /// Memory of the sessions' caches plus the weights once, bytes (best estimate).
    pub fn memory_bytes(&self) -> u64 {
        use mmsched_backends::Backend;
        self.sessions
            .iter()
            .enumerate()
            .map(|(i, (s, _))| {
                let s = lock(s);
                let all = s.memory_bytes();
                if i == 0 {
                    all
                } else {
                    all.saturating_sub(s.weight_bytes())
                }
            })
            .sum()
    }
}

/// One request's hold on a session.
pub struct LlmLease {
    session: Shared<LlmSession>,
    busy: Arc<AtomicBool>,
}

impl std::fmt::Debug for LlmLease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmLease").finish_non_exhaustive()
    }
}

impl LlmLease {
    /// The session, for one step.
    pub fn lock(&self) -> std::sync::MutexGuard<'_, LlmSession> {
        lock(&self.session)
    }
}

impl Drop for LlmLease {
    fn drop(&mut self) {
        self.busy.store(false, Ordering::Release);
    }
}
