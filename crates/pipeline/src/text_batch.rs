//! Text requests decoded together: one [`BatchDecoder`] (one llama.cpp context, a KV cache
//! per sequence) holds every request in flight, and a request's decoding step decodes the
//! next token of the other requests that are ready too, in the same `llama_decode`.
//!
//! **How a step batches.** Each request is still its own job with its own steps, so the
//! book keeps its deadline, records, stop sequences, sampling and cancellation as for any
//! request. A request whose step finds no token waiting *leads*: it decodes its own next
//! token and that of up to `rows − 1` other ready requests (those whose prompt is in and
//! that have taken their last token), in one call. The others' tokens wait for them
//! ([`TextBatch::ahead`]); their next step takes the token at once, without touching the
//! model. Four requests in flight thus cost about one batched call per round of four steps
//! instead of four single calls: decoding Gemma-3 270M on a CPU is bound by reading its
//! weights, which one call reads once for every row.
//!
//! **Exact.** A sequence's tokens do not depend on which step decoded them or on its
//! companions: the decoder gives each sequence the tokens it gets alone (see
//! `mmsched_backends::llm::batch`), each with its own sampler.
//!
//! **Bounded.** The book tells each leading step how many rows it may take
//! ([`Work::limit_batch`](mmsched_runtime::sched::Work::limit_batch)), from the cost model's
//! price of a step of that many rows and the time the admitted frames and audio leave.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use mmsched_backends::BackendError;
use mmsched_backends::llm::{BatchDecoder, SeqId, Token};

use crate::engines::lock;
use crate::request::{Cancel, Sampling};

/// The decoder and what its sequences wait for. Two locks, always taken in this order
/// (decoder, then state) and the state's only briefly: the run loop reads the state to
/// label a step ([`BatchSeat::decoded_ahead`], [`BatchSeat::decoding`]) and must never wait behind a decoding call.
pub(crate) struct TextBatch {
    decoder: Mutex<BatchDecoder>,
    state: Mutex<State>,
    /// Signalled when a call's tokens are handed out.
    decoded: Condvar,
    max_seqs: usize,
    seq_tokens: usize,
}

/// Who waits for what.
#[derive(Default)]
struct State {
    /// Sequences whose prompt is in, with their client's flag (a request whose client has
    /// gone is not decoded for): the most rows a step could take.
    decoding: BTreeMap<SeqId, Cancel>,
    /// Of those, the ones that have taken their last token and want the next: any step
    /// may decode it.
    ready: BTreeSet<SeqId>,
    /// Sequences in a call running now for another request's step.
    in_flight: HashSet<SeqId>,
    /// Tokens decoded for a sequence by another request's step, not yet taken.
    ahead: HashMap<SeqId, Token>,
    /// Sequences held.
    held: usize,
    counts: BatchCounts,
}

impl State {
    /// Whether `seq` is decoding and its client is still there.
    fn live(&self, seq: SeqId) -> bool {
        self.decoding.get(&seq).is_some_and(|c| !c.is_cancelled())
    }
}

/// What the shared batch has decoded so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BatchCounts {
    /// Decoding calls (each a step that led).
    pub calls: u64,
    /// Tokens those calls decoded (rows summed).
    pub rows: u64,
    /// Steps that took a token another request's step had decoded.
    pub taken_ahead: u64,
}

impl std::fmt::Debug for TextBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TextBatch")
            .field("max_seqs", &self.max_seqs)
            .field("seq_tokens", &self.seq_tokens)
            .finish_non_exhaustive()
    }
}

impl TextBatch {
    pub(crate) fn new(decoder: BatchDecoder) -> Self {
        Self {
            max_seqs: decoder.max_seqs(),
            seq_tokens: decoder.seq_tokens(),
            decoder: Mutex::new(decoder),
            state: Mutex::new(State::default()),
            decoded: Condvar::new(),
        }
    }

    /// Sequences the decoder holds at most.
    pub(crate) fn max_seqs(&self) -> usize {
        self.max_seqs
    }

    /// Whether every sequence is in use.
    pub(crate) fn is_full(&self) -> bool {
        lock(&self.state).held >= self.max_seqs
    }

    /// What the batch has decoded so far.
    pub(crate) fn counts(&self) -> BatchCounts {
        lock(&self.state).counts
    }

    /// The KV caches' size, bytes (Gemma-3 270M: 18 KiB a token).
    pub(crate) fn cache_bytes(&self) -> u64 {
        const BYTES_PER_TOKEN: u64 = 18 * 1024;
        (self.max_seqs * self.seq_tokens) as u64 * BYTES_PER_TOKEN
    }

    fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }
}

/// A request's sequence in the shared batch; dropping it frees the sequence.
pub struct BatchSeat {
    batch: Arc<TextBatch>,
    seq: SeqId,
    cancel: Cancel,
}

impl std::fmt::Debug for BatchSeat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatchSeat")
            .field("seq", &self.seq)
            .finish_non_exhaustive()
    }
}

/// A decoded token and how the step got it.
#[derive(Debug)]
pub struct Decoded {
    /// The token.
    pub token: Token,
    /// Rows of the call that decoded it when this step led; 0 when another request's step
    /// had decoded it.
    pub rows: usize,
}

fn refused(e: mmsched_backends::llm::BatchError) -> BackendError {
    e.into_backend()
}

impl BatchSeat {
    /// A sequence for `prompt` in `batch`, decoded by `sampling`.
    pub(crate) fn take(
        batch: &Arc<TextBatch>,
        prompt: &str,
        sampling: Sampling,
        cancel: Cancel,
    ) -> Result<Self, BackendError> {
        let mut decoder = lock(&batch.decoder);
        let sampling = mmsched_backends::llm::Sampling::new(sampling.temperature, sampling.seed);
        let seq = decoder.add_text(prompt, sampling).map_err(refused)?;
        batch.state().held += 1;
        Ok(Self {
            batch: Arc::clone(batch),
            seq,
            cancel,
        })
    }

    /// Feeds up to `chunk` prompt tokens on `threads` threads, in calls of their own; the
    /// first token when the prompt is all in (the sequence then decodes with the others).
    pub fn prefill(&mut self, chunk: usize, threads: usize) -> Result<Option<Token>, BackendError> {
        let mut decoder = lock(&self.batch.decoder);
        decoder.grant_threads(threads);
        let token = decoder.prefill(self.seq, chunk).map_err(refused)?;
        if token.is_some() {
            self.batch
                .state()
                .decoding
                .insert(self.seq, self.cancel.clone());
        }
        Ok(token)
    }

    /// The request has taken its last token and wants the next: from now on any step may
    /// decode it. Not called after its last token, so no step decodes a token nobody
    /// takes.
    pub fn want_next(&self) {
        let mut st = self.batch.state();
        if st.decoding.contains_key(&self.seq) {
            st.ready.insert(self.seq);
        }
    }

    /// Whether this request's next token is decoded, or being decoded, by another
    /// request's step: its next step takes it without a call of its own. Never waits for
    /// a decoding call.
    pub fn decoded_ahead(&self) -> bool {
        let st = self.batch.state();
        st.ahead.contains_key(&self.seq) || st.in_flight.contains(&self.seq)
    }

    /// The most requests a decoding step of this one could serve: this one and every
    /// other whose prompt is in and whose client is still there. Never waits for a
    /// decoding call.
    pub fn decoding(&self) -> usize {
        let st = self.batch.state();
        1 + st
            .decoding
            .iter()
            .filter(|&(&s, c)| s != self.seq && !c.is_cancelled())
            .count()
    }

    /// This request's token if another request's step decoded it, counted as taken.
    fn take_ahead(&self, st: &mut State) -> Option<Decoded> {
        let token = st.ahead.remove(&self.seq)?;
        st.counts.taken_ahead += 1;
        Some(Decoded { token, rows: 0 })
    }

    /// The next token: the one another request's step decoded for this one (waiting while
    /// that call runs), else decoded on `threads` threads together with up to `rows − 1`
    /// other ready requests (the oldest first), whose tokens then wait for them.
    pub fn decode(&mut self, threads: usize, rows: usize) -> Result<Decoded, BackendError> {
        let batch = Arc::clone(&self.batch);
        {
            let st = batch.state();
            let mut st = batch
                .decoded
                .wait_while(st, |st| st.in_flight.contains(&self.seq))
                .unwrap_or_else(PoisonError::into_inner);
            if let Some(d) = self.take_ahead(&mut st) {
                return Ok(d);
            }
        }
        let mut decoder = lock(&batch.decoder);
        let seqs = {
            let mut st = batch.state();
            // A step that held the decoder meanwhile may have decoded this one's token.
            if let Some(d) = self.take_ahead(&mut st) {
                return Ok(d);
            }
            let mut seqs = vec![self.seq];
            let others: Vec<SeqId> = st
                .ready
                .iter()
                .copied()
                .filter(|&s| s != self.seq && st.live(s))
                .take(rows.saturating_sub(1))
                .collect();
            seqs.extend(others);
            for s in &seqs {
                st.ready.remove(s);
            }
            st.in_flight.extend(seqs[1..].iter().copied());
            seqs
        };
        decoder.grant_threads(threads);
        let result = decoder.step(&seqs);
        let mut st = batch.state();
        for s in &seqs[1..] {
            st.in_flight.remove(s);
        }
        let own = result.map(|tokens| {
            st.counts.calls += 1;
            st.counts.rows += seqs.len() as u64;
            let mut own = None;
            for (&s, t) in seqs.iter().zip(tokens) {
                if s == self.seq {
                    own = Some(t);
                } else {
                    st.ahead.insert(s, t);
                }
            }
            own
        });
        drop(st);
        batch.decoded.notify_all();
        // A failed call marks its sequences failed in the decoder: each other request's own
        // next step reports it; this one reports it now.
        match own.map_err(refused)? {
            Some(token) => Ok(Decoded {
                token,
                rows: seqs.len(),
            }),
            None => Err(BackendError::InvalidInput(
                "the batched step returned no token for its own request".into(),
            )),
        }
    }
}

impl Drop for BatchSeat {
    fn drop(&mut self) {
        // The decoder first: no call that includes this sequence is running meanwhile.
        let mut decoder = lock(&self.batch.decoder);
        {
            let mut st = self.batch.state();
            st.decoding.remove(&self.seq);
            st.ready.remove(&self.seq);
            st.ahead.remove(&self.seq);
            st.held = st.held.saturating_sub(1);
        }
        // Removing a held sequence only fails when moving another into its place fails;
        // the decoder then marks that one failed, and its own next step reports it.
        let _ = decoder.remove(self.seq);
    }
}
