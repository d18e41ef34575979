//! Text generation on one set of weights, a place per request: a request owns its place
//! (its KV cache and sampler) from its first step to its last, so concurrent requests never
//! share or clear each other's cache. The pool's size is how many text requests may run at
//! once; the book keeps the others waiting.
//!
//! Two kinds of place: a session of its own per request ([`LlmPool::new`]: forks on the
//! same weights, each decoding one sequence per call), or a sequence of one shared batch
//! decoder ([`LlmPool::batched`], llama.cpp only: a request's decoding step decodes the
//! other ready requests' next tokens in the same call; see [`crate::text_batch`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use mmsched_backends::llm::{
    BatchDecoder, BatchOptions, ChatTemplateError, GgufTokenizer, LlmSession, Token, apply_template,
};
use mmsched_backends::{Backend, BackendError};

use crate::engines::{Shared, lock};
use crate::request::{Cancel, Sampling};
use crate::text_batch::{BatchCounts, BatchSeat, Decoded, TextBatch};

/// The sessions, each with its lease flag, or the shared batch. A clone shares them.
#[derive(Clone)]
pub struct LlmPool {
    /// Sessions leased one per request (without a batch); with a batch, the first only
    /// (its weights, tokenizer and warm-up).
    sessions: Arc<Vec<(Shared<LlmSession>, Arc<AtomicBool>)>>,
    batch: Option<Arc<TextBatch>>,
    /// Shared: a pool is cloned for every text job, and a tokenizer's vocabulary is
    /// millions of allocations to copy.
    tokenizer: Arc<GgufTokenizer>,
    max_seq_len: usize,
    /// A model of the user's own: its chats are written with its file's chat template.
    own: bool,
    /// The chat template of the model's file, read once at load (a chat request must not
    /// wait for a session that is decoding).
    chat_template: Option<Arc<str>>,
}

impl std::fmt::Debug for LlmPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmPool")
            .field("sessions", &self.sessions.len())
            .field("batched", &self.batch.is_some())
            .field("max_seq_len", &self.max_seq_len)
            .finish()
    }
}

impl LlmPool {
    /// `requests` places in one batch decoder on `first`'s weights, each sequence as long
    /// as `first`'s (prompt and answer); on an engine that cannot batch (candle), or for a
    /// single request, a session per request as [`LlmPool::new`] makes them.
    pub fn batched(first: LlmSession, requests: usize) -> Result<Self, BackendError> {
        let requests = requests.max(1);
        if requests == 1 || !BatchDecoder::supports(first.engine()) {
            return Self::new(first, requests - 1);
        }
        let options = BatchOptions {
            max_seqs: requests,
            seq_tokens: first.max_seq_len(),
            threads: first.threads(),
        };
        let decoder = BatchDecoder::new(&first, options)
            .map_err(mmsched_backends::llm::BatchError::into_backend)?;
        let mut pool = Self::new(first, 0)?;
        pool.batch = Some(Arc::new(TextBatch::new(decoder)));
        Ok(pool)
    }

    /// Whether requests share one batch decoder.
    pub fn is_batched(&self) -> bool {
        self.batch.is_some()
    }

    /// What the shared batch has decoded so far (`None` without one).
    pub fn batch_counts(&self) -> Option<BatchCounts> {
        self.batch.as_ref().map(|b| b.counts())
    }

    /// A pool of as many places as sequences of one batch decoder on this pool's weights
    /// (a fork of its first session); on an engine that cannot batch (candle), sessions as
    /// this pool has them.
    pub fn to_batched(&self) -> Result<Self, BackendError> {
        let first = lock(&self.sessions[0].0).fork()?;
        let mut batched = Self::batched(first, self.len())?;
        batched.own = self.own;
        Ok(batched)
    }

    /// Runs a short generation in every place kind the pool has (each session, and the
    /// batch's context), so the first request does not pay for building graphs.
    pub fn warm_up(&self) -> Result<(), BackendError> {
        let chunk = crate::jobs::ALONE_PREFILL_CHUNK_TOKENS;
        self.for_each(|l| {
            l.start("Hello")?;
            l.prefill_chunk(chunk)?;
            l.step().map(|_| ())
        })?;
        if let Some(batch) = &self.batch {
            let mut seat = BatchSeat::take(batch, "Hello", Sampling::default(), Cancel::new())?;
            let threads = lock(&self.sessions[0].0).threads();
            while seat.prefill(chunk, threads)?.is_none() {}
            seat.decode(threads, 1)?;
        }
        Ok(())
    }

    /// `first` and `more` sessions forked from it on the same weights (at least one).
    pub fn new(first: LlmSession, more: usize) -> Result<Self, BackendError> {
        let tokenizer = Arc::new(first.tokenizer().clone());
        let max_seq_len = first.max_seq_len();
        let chat_template = first.chat_template().map(Arc::from);
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
            batch: None,
            tokenizer,
            max_seq_len,
            own: false,
            chat_template,
        })
    }

    /// Marks the model as one of the user's own: its chats are written with its file's
    /// chat template ([`LlmPool::format_chat`]).
    pub fn set_own(&mut self, own: bool) {
        self.own = own;
    }

    /// `messages` (role, content) written as the model reads a chat: with its file's chat
    /// template, for a model of the user's own that carries one; `None` otherwise (the
    /// default Gemma-3 is a base model, and reads a plain transcript).
    pub fn format_chat(
        &self,
        messages: &[(String, String)],
    ) -> Option<Result<String, ChatTemplateError>> {
        let template = self.chat_template.as_deref().filter(|_| self.own)?;
        Some(apply_template(template, messages))
    }

    /// How many requests can run at once.
    pub fn len(&self) -> usize {
        match &self.batch {
            Some(b) => b.max_seqs(),
            None => self.sessions.len(),
        }
    }

    /// Whether the pool has no session (never: [`LlmPool::new`] makes one at least).
    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }

    /// A free place for `prompt`, sampled by `sampling`, held until the lease is dropped;
    /// `Ok(None)` when every place is in use; an error when the prompt cannot run (empty,
    /// too long for a sequence).
    pub fn lease(
        &self,
        prompt: &str,
        sampling: Sampling,
        cancel: &Cancel,
    ) -> Result<Option<LlmLease>, BackendError> {
        if let Some(batch) = &self.batch {
            if batch.is_full() {
                return Ok(None);
            }
            let seat = BatchSeat::take(batch, prompt, sampling, cancel.clone())?;
            return Ok(Some(LlmLease::Seat(seat)));
        }
        let Some(lease) = self.sessions.iter().find_map(|(s, busy)| {
            busy.compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
                .ok()
                .map(|_| SessionLease {
                    session: Arc::clone(s),
                    busy: Arc::clone(busy),
                })
        }) else {
            return Ok(None);
        };
        {
            let mut s = lease.lock();
            s.set_sampling(sampling.temperature, sampling.seed);
            s.start(prompt)?;
        }
        Ok(Some(LlmLease::Session(lease)))
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

    /// Memory of the sessions' caches (and the batch's) plus the weights once, bytes (best
    /// estimate).
    pub fn memory_bytes(&self) -> u64 {
        let batch = self.batch.as_ref().map_or(0, |b| b.cache_bytes());
        batch
            + self
                .sessions
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
                .sum::<u64>()
    }
}

/// One request's place: a session of its own, or a sequence of the shared batch.
#[derive(Debug)]
pub enum LlmLease {
    /// A session of its own.
    Session(SessionLease),
    /// A sequence of the shared batch decoder.
    Seat(BatchSeat),
}

impl LlmLease {
    /// Feeds up to `chunk` prompt tokens on `threads` threads; the first token when the
    /// prompt is all in.
    pub fn prefill(&mut self, chunk: usize, threads: usize) -> Result<Option<Token>, BackendError> {
        match self {
            LlmLease::Session(l) => {
                let mut s = l.lock();
                // An engine with a fixed thread count ignores the grant.
                let _ = s.grant_threads(threads);
                s.prefill_chunk(chunk)
            }
            LlmLease::Seat(seat) => seat.prefill(chunk, threads),
        }
    }

    /// Decodes the next token on `threads` threads (in a batch, with up to `rows − 1` other
    /// requests' next tokens).
    pub fn decode(&mut self, threads: usize, rows: usize) -> Result<Decoded, BackendError> {
        match self {
            LlmLease::Session(l) => {
                let mut s = l.lock();
                let _ = s.grant_threads(threads);
                s.step().map(|token| Decoded { token, rows: 1 })
            }
            LlmLease::Seat(seat) => seat.decode(threads, rows),
        }
    }

    /// Whether another request's step has decoded (or is decoding) this one's next token
    /// (never in a session of its own).
    pub fn decoded_ahead(&self) -> bool {
        match self {
            LlmLease::Session(_) => false,
            LlmLease::Seat(seat) => seat.decoded_ahead(),
        }
    }

    /// The most requests a decoding step of this one could serve: 1 in a session of its
    /// own; in a batch, see [`BatchSeat::decoding`].
    pub fn decoding(&self) -> usize {
        match self {
            LlmLease::Session(_) => 1,
            LlmLease::Seat(seat) => seat.decoding(),
        }
    }

    /// The request took its token and wants the next (in a batch, other requests' steps
    /// may now decode it).
    pub fn want_next(&self) {
        if let LlmLease::Seat(seat) = self {
            seat.want_next();
        }
    }
}

/// One request's hold on a session.
pub struct SessionLease {
    session: Shared<LlmSession>,
    busy: Arc<AtomicBool>,
}

impl std::fmt::Debug for SessionLease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionLease").finish_non_exhaustive()
    }
}

impl SessionLease {
    /// The session, for one step.
    pub fn lock(&self) -> std::sync::MutexGuard<'_, LlmSession> {
        lock(&self.session)
    }
}

impl Drop for SessionLease {
    fn drop(&mut self) {
        self.busy.store(false, Ordering::Release);
    }
}
