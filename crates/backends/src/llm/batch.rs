//! Several text requests decoded together: [`BatchDecoder`] holds up to `max_seqs`
//! sequences in one llama.cpp context, each with a KV cache of its own, and decodes one
//! token of any set of them per [`step`](BatchDecoder::step), in one `llama_decode` for up
//! to [`MAX_EXACT_ROWS`] sequences.
//!
//! **Why.** Decoding Gemma-3 270M on a CPU is bound by reading the weights (about 250 MB
//! per token, the 262 144-row output matrix most of it); one call that decodes a token of
//! each of four sequences reads them once, not four times.
//!
//! **Exact.** Each sequence's tokens are those it gets alone in an [`LlmSession`] fed the
//! same prompt in the same chunks: its cache fills like a lone context's, and the kernels
//! that would round differently with the number of rows are not used (see the notes of
//! the llama.cpp module). Prompt chunks therefore run in calls of their own
//! ([`prefill`](BatchDecoder::prefill)), never mixed with other sequences' tokens: llama.cpp
//! would compute the chunk's first token together with those and the rest after them,
//! with other kernels than the lone chunk; and in calls of at most [`MAX_EXACT_ROWS`]
//! tokens, so a sequence's tokens do not depend on the chunk size its caller asks for
//! either (they equal a lone session's fed in chunks of 7 tokens or fewer). Sampled sequences draw from a sampler of their
//! own, seeded per sequence, so they also match a lone session with the same seed.
//!
//! **Budget.** Each sequence holds at most [`seq_tokens`](BatchDecoder::seq_tokens) tokens,
//! prompt and answer together (the size of its KV stream, 18 KiB a token for Gemma-3
//! 270M). A prompt longer than that is refused when added ([`BatchError::PromptTooLong`]);
//! a step that would go past it is refused before anything runs
//! ([`BatchError::SequenceFull`]), never truncated: the caller ends that request.
//!
//! **Engines.** Only llama.cpp decodes several sequences per call: candle's Gemma-3 keeps
//! one KV cache and one position per model, so on candle [`BatchDecoder::new`] returns
//! [`BatchError::Unsupported`] and callers keep one forked [`LlmSession`] per request.

use std::sync::Arc;

use candle_transformers::generation::LogitsProcessor;
use mmsched_core::time::{Clock, Nanos};

use crate::backend::BackendError;
use crate::llm::engine::LlmEngine;
#[cfg(feature = "llama")]
use crate::llm::llama::MAX_EXACT_ROWS;
#[cfg(feature = "llama")]
use crate::llm::llama_batch::{LlamaMultiSeq, SlotTokens};
use crate::llm::session::{LlmSession, StepStages, Token, pick, prompt_take};
use crate::llm::tokenizer::{GgufTokenizer, TextStream};

/// How a batch decoder is sized.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchOptions {
    /// Sequences held at once (each with its own KV cache).
    pub max_seqs: usize,
    /// Tokens each sequence holds, prompt and answer together; llama.cpp rounds it up to
    /// a multiple of 256 ([`BatchDecoder::seq_tokens`] gives the size in force).
    pub seq_tokens: usize,
    /// Threads of the decoder's calls; 0: as many as the session's.
    pub threads: usize,
}

impl Default for BatchOptions {
    /// Four sequences of 1024 tokens (72 MiB of KV cache for Gemma-3 270M).
    fn default() -> Self {
        Self {
            max_seqs: 4,
            seq_tokens: 1024,
            threads: 0,
        }
    }
}

/// How a sequence picks its tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Sampling {
    /// The highest logit (the first of equals): deterministic.
    Greedy,
    /// Drawn at `temperature` by a sampler of the sequence's own, seeded with `seed`.
    Temperature {
        /// Above 0.
        temperature: f64,
        /// Seed of the sequence's sampler.
        seed: u64,
    },
}

impl Sampling {
    /// The rule of [`LlmOptions`](crate::llm::LlmOptions): no temperature, or 0 or less,
    /// is greedy; otherwise sampling seeded with `seed`.
    pub fn new(temperature: Option<f64>, seed: u64) -> Self {
        match temperature.filter(|t| *t > 0.0) {
            Some(temperature) => Sampling::Temperature { temperature, seed },
            None => Sampling::Greedy,
        }
    }

    fn sampler(self) -> Option<LogitsProcessor> {
        match self {
            Sampling::Greedy => None,
            Sampling::Temperature { temperature, seed } => {
                Some(LogitsProcessor::new(seed, Some(temperature), None))
            }
        }
    }
}

/// A sequence of a [`BatchDecoder`]. Ids are never reused: the id of a removed sequence
/// is refused, not mistaken for a later one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SeqId(u64);

impl std::fmt::Display for SeqId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// Why a batch decoder refused a call or failed.
#[derive(Debug, thiserror::Error)]
pub enum BatchError {
    /// The session's engine cannot decode several sequences per call.
    #[error(
        "the {engine} engine decodes one sequence per call: give each request its own session (`LlmSession::fork`)"
    )]
    Unsupported {
        /// The session's engine.
        engine: LlmEngine,
    },
    /// Every sequence is in use.
    #[error(
        "all {max_seqs} sequences of the batch are in use: remove a finished one first, or size the decoder for more (`max_seqs`)"
    )]
    Full {
        /// The decoder's sequence count.
        max_seqs: usize,
    },
    /// The prompt does not fit a sequence's KV cache with room for one generated token.
    #[error(
        "the prompt has {tokens} tokens; a sequence holds {limit} tokens, prompt and answer together: shorten the prompt or size the decoder for longer sequences (`seq_tokens`)"
    )]
    PromptTooLong {
        /// Prompt tokens.
        tokens: usize,
        /// Tokens a sequence holds.
        limit: usize,
    },
    /// The sequence's KV cache is full: it cannot take another token.
    #[error(
        "sequence {seq} holds {limit} tokens, its KV-cache budget: end the request there, or size the decoder for longer sequences (`seq_tokens`)"
    )]
    SequenceFull {
        /// The sequence.
        seq: SeqId,
        /// Tokens a sequence holds.
        limit: usize,
    },
    /// No such sequence (removed, or from another decoder).
    #[error("no sequence {0} in this batch: it was removed or never added")]
    UnknownSequence(SeqId),
    /// A decode step for a sequence whose prompt is not all in its cache yet.
    #[error("sequence {seq} has {pending} prompt tokens left: prefill them before decoding")]
    PromptPending {
        /// The sequence.
        seq: SeqId,
        /// Prompt tokens not yet fed.
        pending: usize,
    },
    /// A prefill call for a sequence whose prompt is all in its cache.
    #[error("sequence {seq} has no prompt left to prefill: decode it with `step`")]
    NothingToPrefill {
        /// The sequence.
        seq: SeqId,
    },
    /// A sequence named twice in one step.
    #[error("sequence {0} is named twice in one step")]
    Duplicate(SeqId),
    /// A sequence whose last call failed in the engine: its cache is in an unknown state.
    #[error("sequence {0} failed in an earlier call and its cache is unknown: remove it")]
    Failed(SeqId),
    /// The input cannot be decoded (empty prompt, token outside the vocabulary…).
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// The engine failed.
    #[error("batched decoding failed")]
    Engine(#[source] BackendError),
}

impl BatchError {
    /// Whether the caller's request is at fault (its prompt, its budget, its sequence id),
    /// not the engine.
    pub fn is_input(&self) -> bool {
        !matches!(self, BatchError::Unsupported { .. } | BatchError::Engine(_))
    }

    /// As a [`BackendError`], for callers that report every model failure as one: an
    /// engine failure is the engine's error, `Unsupported` the engine's unavailability, a
    /// refusal invalid input with its message.
    pub fn into_backend(self) -> BackendError {
        match self {
            BatchError::Engine(e) => e,
            BatchError::Unsupported { engine } => {
                let reason = self.to_string();
                BackendError::unavailable(engine.as_str(), reason)
            }
            other => BackendError::InvalidInput(other.to_string()),
        }
    }
}

/// One sequence's state between calls.
struct Seq {
    id: SeqId,
    /// Prompt tokens not yet fed.
    pending: Vec<u32>,
    /// Tokens in its cache.
    position: usize,
    /// The last token produced (fed by the next step).
    last: Option<u32>,
    /// `None`: greedy.
    sampler: Option<LogitsProcessor>,
    failed: bool,
    /// Its answer's text so far, for characters split over tokens.
    text: TextStream,
}

/// The engine of a batch decoder. Without llama.cpp compiled in, no decoder can be made
/// ([`BatchDecoder::new`] says why), and its one variant cannot be built.
enum Engine {
    #[cfg(feature = "llama")]
    Llama(LlamaMultiSeq),
    #[cfg(not(feature = "llama"))]
    Never(std::convert::Infallible),
}

impl Engine {
    fn slot_tokens(&self) -> usize {
        match self {
            #[cfg(feature = "llama")]
            Engine::Llama(e) => e.slot_tokens(),
            #[cfg(not(feature = "llama"))]
            Engine::Never(never) => match *never {},
        }
    }

    fn vocab_size(&self) -> usize {
        match self {
            #[cfg(feature = "llama")]
            Engine::Llama(e) => e.vocab_size(),
            #[cfg(not(feature = "llama"))]
            Engine::Never(never) => match *never {},
        }
    }

    fn threads(&self) -> usize {
        match self {
            #[cfg(feature = "llama")]
            Engine::Llama(e) => e.threads(),
            #[cfg(not(feature = "llama"))]
            Engine::Never(never) => match *never {},
        }
    }

    fn set_threads(&mut self, threads: usize) {
        match self {
            #[cfg(feature = "llama")]
            Engine::Llama(e) => e.set_threads(threads),
            #[cfg(not(feature = "llama"))]
            Engine::Never(never) => match *never {},
        }
    }

    /// Frees `slot`'s cache, then moves the sequence in slot `from` (if any) there.
    fn clear_and_fill(&mut self, slot: usize, from: Option<usize>) -> Result<(), BackendError> {
        match self {
            #[cfg(feature = "llama")]
            Engine::Llama(e) => {
                e.clear(slot);
                from.map_or(Ok(()), |from| e.relocate(from, slot))
                    .map_err(|e| BackendError::engine("llama.cpp", e))
            }
            #[cfg(not(feature = "llama"))]
            Engine::Never(never) => match *never {},
        }
    }

    /// One engine call; the logits rows copied out, in the order of `parts`.
    fn decode(&mut self, parts: &[Part<'_>]) -> Result<Vec<Vec<f32>>, BackendError> {
        match self {
            #[cfg(feature = "llama")]
            Engine::Llama(e) => {
                let parts: Vec<SlotTokens<'_>> = parts
                    .iter()
                    .map(|p| SlotTokens {
                        slot: p.slot,
                        pos: p.pos,
                        tokens: p.tokens,
                    })
                    .collect();
                e.decode(&parts)
                    .map(|rows| rows.into_iter().map(<[f32]>::to_vec).collect())
                    .map_err(|e| BackendError::engine("llama.cpp", e))
            }
            #[cfg(not(feature = "llama"))]
            Engine::Never(never) => match *never {},
        }
    }
}

/// Several sequences on one model, decoded together: see the [module notes](self).
pub struct BatchDecoder {
    engine: Engine,
    tokenizer: GgufTokenizer,
    clock: Arc<dyn Clock + Send + Sync>,
    /// By slot (the sequence's llama.cpp sequence id); occupied slots are kept at the
    /// front (`0..len`), so that stepping every sequence is one run of consecutive ids,
    /// which llama.cpp computes as one graph.
    slots: Vec<Option<Seq>>,
    next_id: u64,
}

impl std::fmt::Debug for BatchDecoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatchDecoder")
            .field("max_seqs", &self.max_seqs())
            .field("seq_tokens", &self.seq_tokens())
            .field("len", &self.len())
            .finish_non_exhaustive()
    }
}

impl BatchDecoder {
    /// A decoder on `session`'s weights (shared, not copied: the decoder costs its KV
    /// caches and compute buffers), its tokenizer and its clock. On an engine that cannot
    /// batch (candle) it returns [`BatchError::Unsupported`].
    pub fn new(session: &LlmSession, options: BatchOptions) -> Result<Self, BatchError> {
        if options.max_seqs == 0 || options.seq_tokens == 0 {
            return Err(BatchError::InvalidInput(
                "a batch needs at least one sequence (`max_seqs`) of at least one token (`seq_tokens`)"
                    .into(),
            ));
        }
        let engine = Self::engine(session, options)?;
        Ok(Self {
            engine,
            tokenizer: session.tokenizer().clone(),
            clock: Arc::clone(session.clock()),
            slots: (0..options.max_seqs).map(|_| None).collect(),
            next_id: 0,
        })
    }

    #[cfg(feature = "llama")]
    fn engine(session: &LlmSession, options: BatchOptions) -> Result<Engine, BatchError> {
        let Some(model) = session.llama_model() else {
            return Err(BatchError::Unsupported {
                engine: session.engine(),
            });
        };
        let threads = if options.threads == 0 {
            session.threads()
        } else {
            options.threads
        };
        LlamaMultiSeq::new(model, options.max_seqs, options.seq_tokens, threads)
            .map(Engine::Llama)
            .map_err(|e| BatchError::Engine(BackendError::engine("llama.cpp", e)))
    }

    #[cfg(not(feature = "llama"))]
    fn engine(session: &LlmSession, _options: BatchOptions) -> Result<Engine, BatchError> {
        Err(BatchError::Unsupported {
            engine: session.engine(),
        })
    }

    /// Whether `engine` can decode several sequences per call (only llama.cpp can).
    pub fn supports(engine: LlmEngine) -> bool {
        engine == LlmEngine::Llama && engine.is_compiled_in()
    }

    /// Sequences the decoder holds at most.
    pub fn max_seqs(&self) -> usize {
        self.slots.len()
    }

    /// Tokens each sequence holds, prompt and answer together.
    pub fn seq_tokens(&self) -> usize {
        self.engine.slot_tokens()
    }

    /// Sequences held now.
    pub fn len(&self) -> usize {
        self.slots.iter().filter(|s| s.is_some()).count()
    }

    /// Whether no sequence is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The sequences held, in slot order (the order in which a step of all of them runs).
    pub fn sequences(&self) -> Vec<SeqId> {
        self.slots.iter().flatten().map(|s| s.id).collect()
    }

    /// The tokenizer (the session's).
    pub fn tokenizer(&self) -> &GgufTokenizer {
        &self.tokenizer
    }

    /// Threads the next calls run on.
    pub fn threads(&self) -> usize {
        self.engine.threads()
    }

    /// Runs the next calls on `threads` threads (the tokens do not depend on it) and
    /// returns the count in force.
    pub fn grant_threads(&mut self, threads: usize) -> usize {
        self.engine.set_threads(threads);
        self.engine.threads()
    }

    /// Adds a sequence for `prompt` (tokens, beginning-of-sequence included, as
    /// [`GgufTokenizer::encode`] gives them), decoded by `sampling`. Nothing runs yet: feed
    /// the prompt with [`prefill`](Self::prefill).
    pub fn add(&mut self, prompt: Vec<u32>, sampling: Sampling) -> Result<SeqId, BatchError> {
        if prompt.is_empty() {
            return Err(BatchError::InvalidInput("no prompt tokens".into()));
        }
        let limit = self.seq_tokens();
        if prompt.len() >= limit {
            return Err(BatchError::PromptTooLong {
                tokens: prompt.len(),
                limit,
            });
        }
        let vocab = self.engine.vocab_size();
        if let Some(bad) = prompt.iter().find(|&&t| t as usize >= vocab) {
            return Err(BatchError::InvalidInput(format!(
                "token id {bad} is outside the vocabulary of {vocab}"
            )));
        }
        let Some(slot) = self.slots.iter().position(Option::is_none) else {
            return Err(BatchError::Full {
                max_seqs: self.max_seqs(),
            });
        };
        let id = SeqId(self.next_id);
        self.next_id += 1;
        self.slots[slot] = Some(Seq {
            id,
            pending: prompt,
            position: 0,
            last: None,
            sampler: sampling.sampler(),
            failed: false,
            text: TextStream::default(),
        });
        Ok(id)
    }

    /// Like [`add`](Self::add) with text, tokenised as [`LlmSession::start`] does.
    pub fn add_text(&mut self, prompt: &str, sampling: Sampling) -> Result<SeqId, BatchError> {
        if prompt.trim().is_empty() {
            return Err(BatchError::InvalidInput(
                "the prompt is empty: give some text to continue".into(),
            ));
        }
        let tokens = self.tokenizer.encode(prompt);
        self.add(tokens, sampling)
    }

    fn slot_of(&self, seq: SeqId) -> Result<usize, BatchError> {
        let slot = self
            .slots
            .iter()
            .position(|s| s.as_ref().is_some_and(|s| s.id == seq))
            .ok_or(BatchError::UnknownSequence(seq))?;
        if self.slots[slot].as_ref().is_some_and(|s| s.failed) {
            return Err(BatchError::Failed(seq));
        }
        Ok(slot)
    }

    fn seq(&self, seq: SeqId) -> Result<&Seq, BatchError> {
        let slot = self.slot_of(seq)?;
        self.slots[slot]
            .as_ref()
            .ok_or(BatchError::UnknownSequence(seq))
    }

    /// Prompt tokens of `seq` not yet fed.
    pub fn pending_prompt(&self, seq: SeqId) -> Result<usize, BatchError> {
        Ok(self.seq(seq)?.pending.len())
    }

    /// Tokens in `seq`'s cache.
    pub fn position(&self, seq: SeqId) -> Result<usize, BatchError> {
        Ok(self.seq(seq)?.position)
    }

    /// Tokens `seq` can still take before its budget is full (its queued prompt counted).
    pub fn remaining(&self, seq: SeqId) -> Result<usize, BatchError> {
        let s = self.seq(seq)?;
        Ok(self
            .seq_tokens()
            .saturating_sub(s.position + s.pending.len()))
    }

    /// Feeds about `chunk` of `seq`'s queued prompt tokens (see `prompt_take`), in calls of
    /// their own of two to [`MAX_EXACT_ROWS`] tokens each (`prompt_calls`): from 8 rows on
    /// llama.cpp takes another matrix product and a single row another attention
    /// product, so a prompt fed in other calls would fill the cache with slightly
    /// different values and its answer could depend on the chunk size asked for (the
    /// runtime asks for 4 tokens while the device is shared and 64 when a request has it
    /// alone). When the prompt is exhausted, picks and returns the first generated token;
    /// until then `None`.
    pub fn prefill(&mut self, seq: SeqId, chunk: usize) -> Result<Option<Token>, BatchError> {
        let slot = self.slot_of(seq)?;
        let (ids, pos) = {
            let s = self.slots[slot]
                .as_mut()
                .ok_or(BatchError::UnknownSequence(seq))?;
            if s.pending.is_empty() {
                return Err(BatchError::NothingToPrefill { seq });
            }
            let n = prompt_take(s.pending.len(), chunk);
            (s.pending[..n].to_vec(), s.position)
        };
        let t0 = self.clock.now_nanos();
        let mut logits = Vec::new();
        let mut at = 0;
        for n in prompt_calls(ids.len()) {
            let tokens = &ids[at..at + n];
            let part = Part {
                slot,
                pos: pos + at,
                tokens,
            };
            at += n;
            logits = match self.engine.decode(&[part]) {
                Ok(mut rows) => rows.pop().unwrap_or_default(),
                Err(e) => return Err(self.fail(&[slot], e)),
            };
            // The cache holds what was fed so far, whatever comes next.
            if let Some(s) = self.slots[slot].as_mut() {
                s.pending.drain(..tokens.len());
                s.position += tokens.len();
            }
        }
        let nanos = self.clock.now_nanos().saturating_sub(t0);
        let s = self.slots[slot]
            .as_mut()
            .ok_or(BatchError::UnknownSequence(seq))?;
        if !s.pending.is_empty() {
            return Ok(None);
        }
        self.finish_token(slot, &logits, nanos).map(Some)
    }

    /// One decode step for each sequence of `seqs` (each once, each with its prompt all
    /// fed): returns each one's next token, in the order of `seqs`. Up to
    /// [`MAX_EXACT_ROWS`] sequences run in one `llama_decode` (one graph when their slots
    /// are consecutive, as they are for every sequence held); more run in as few calls of
    /// near-equal size. Every check runs before any call, so a refused step changes
    /// nothing. If the engine fails, every sequence of the step is marked failed (later
    /// calls naming it return [`BatchError::Failed`]): remove them.
    pub fn step(&mut self, seqs: &[SeqId]) -> Result<Vec<Token>, BatchError> {
        let mut order = Vec::with_capacity(seqs.len());
        let limit = self.seq_tokens();
        for (i, &seq) in seqs.iter().enumerate() {
            if seqs[..i].contains(&seq) {
                return Err(BatchError::Duplicate(seq));
            }
            let slot = self.slot_of(seq)?;
            let s = self.seq(seq)?;
            let Some(last) = s.last else {
                return Err(BatchError::PromptPending {
                    seq,
                    pending: s.pending.len(),
                });
            };
            if s.position + 1 > limit {
                return Err(BatchError::SequenceFull { seq, limit });
            }
            order.push((slot, s.position, last, i));
        }
        if order.is_empty() {
            return Ok(Vec::new());
        }
        // Consecutive slots in increasing order make one graph per call.
        order.sort_unstable();
        let calls = order.len().div_ceil(MAX_ROWS);
        let per_call = order.len().div_ceil(calls);
        let mut out: Vec<Option<Token>> = (0..seqs.len()).map(|_| None).collect();
        for group in order.chunks(per_call) {
            let t0 = self.clock.now_nanos();
            let lasts: Vec<u32> = group.iter().map(|g| g.2).collect();
            let parts: Vec<Part<'_>> = group
                .iter()
                .zip(&lasts)
                .map(|(&(slot, pos, _, _), last)| Part {
                    slot,
                    pos,
                    tokens: std::slice::from_ref(last),
                })
                .collect();
            let rows = match self.engine.decode(&parts) {
                Ok(rows) => rows,
                Err(e) => {
                    let slots: Vec<usize> = order.iter().map(|g| g.0).collect();
                    return Err(self.fail(&slots, e));
                }
            };
            let nanos = self.clock.now_nanos().saturating_sub(t0);
            for (&(slot, _, _, i), logits) in group.iter().zip(&rows) {
                if let Some(s) = self.slots[slot].as_mut() {
                    s.position += 1;
                }
                out[i] = Some(self.finish_token(slot, logits, nanos)?);
            }
        }
        Ok(out.into_iter().flatten().collect())
    }

    /// Removes `seq` and frees its cache. The last-placed sequence moves into the freed
    /// slot (its cache copied as it is), so the sequences held stay in consecutive slots.
    pub fn remove(&mut self, seq: SeqId) -> Result<(), BatchError> {
        let slot = self
            .slots
            .iter()
            .position(|s| s.as_ref().is_some_and(|s| s.id == seq))
            .ok_or(BatchError::UnknownSequence(seq))?;
        self.slots[slot] = None;
        let last = self.slots.iter().rposition(Option::is_some);
        let moved = match last {
            Some(last) if last > slot => Some(last),
            _ => None,
        };
        let result = self.engine.clear_and_fill(slot, moved);
        if let Some(from) = moved {
            self.slots.swap(from, slot);
            if let Err(e) = result {
                // The moved sequence's cache is not where the decoder looks for it.
                let moved_id = self.slots[slot].as_ref().map(|s| s.id);
                return Err(match moved_id {
                    Some(id) => self.fail_ids(&[id], e),
                    None => BatchError::Engine(e),
                });
            }
        }
        Ok(())
    }

    /// Marks the sequences of `slots` failed (their caches are unknown after an engine
    /// error) and returns the error.
    fn fail(&mut self, slots: &[usize], e: BackendError) -> BatchError {
        for &slot in slots {
            if let Some(s) = self.slots[slot].as_mut() {
                s.failed = true;
            }
        }
        BatchError::Engine(e)
    }

    fn fail_ids(&mut self, ids: &[SeqId], e: BackendError) -> BatchError {
        let slots: Vec<usize> = self
            .slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.as_ref().is_some_and(|s| ids.contains(&s.id)))
            .map(|(i, _)| i)
            .collect();
        self.fail(&slots, e)
    }

    /// Picks the sequence's next token from `logits` and records it as its last.
    fn finish_token(
        &mut self,
        slot: usize,
        logits: &[f32],
        call_nanos: Nanos,
    ) -> Result<Token, BatchError> {
        let t0 = self.clock.now_nanos();
        let s = self.slots[slot]
            .as_mut()
            .ok_or_else(|| BatchError::InvalidInput(format!("slot {slot} is empty")))?;
        let id = pick(logits, s.sampler.as_mut()).map_err(BatchError::Engine)?;
        s.last = Some(id);
        let nanos = call_nanos + self.clock.now_nanos().saturating_sub(t0);
        Ok(Token {
            id,
            text: s.text.push(&self.tokenizer.piece(id)),
            stop: self.tokenizer.is_stop(id),
            stages: StepStages {
                rest_nanos: nanos,
                ..StepStages::default()
            },
            nanos,
        })
    }
}

/// The sizes of the calls that feed `n` prompt tokens of one sequence: at most
/// [`MAX_ROWS`] each, and none of one row unless `n` is one. A row's results do not
/// depend on how many other rows of its sequence share its call from two rows to
/// [`MAX_ROWS`], but a call of one row attends with another product (a vector, not a
/// matrix), so a prompt fed as 7 + 1 tokens fills the cache with other values than one fed
/// as 4 + 4 ("Write a haiku about the sea." answers differently).
pub(crate) fn prompt_calls(n: usize) -> Vec<usize> {
    let mut calls = vec![MAX_ROWS; n / MAX_ROWS];
    match n % MAX_ROWS {
        0 => {}
        1 if !calls.is_empty() => {
            calls.pop();
            calls.extend([MAX_ROWS - 1, 2]);
        }
        rest => calls.push(rest),
    }
    calls
}

/// Rows one graph decodes at most, where llama.cpp is compiled in; also the most tokens one
/// call of a prompt takes, alone or in a batch ([`prompt_calls`]).
#[cfg(feature = "llama")]
pub const MAX_ROWS: usize = MAX_EXACT_ROWS;
/// Rows one graph decodes at most (one: no batching engine is compiled in).
#[cfg(not(feature = "llama"))]
pub const MAX_ROWS: usize = 1;

/// Tokens of one sequence in one call.
struct Part<'a> {
    slot: usize,
    pos: usize,
    tokens: &'a [u32],
}

#[cfg(all(test, feature = "llama"))]
mod prompt_call_tests {
    use super::*;

    #[test]
    fn prompt_calls_cover_the_prompt_within_the_exact_rows_and_never_in_one_row() {
        for n in 1..=60 {
            let calls = prompt_calls(n);
            assert_eq!(calls.iter().sum::<usize>(), n, "{n}: {calls:?}");
            assert!(calls.iter().all(|&c| c <= MAX_ROWS), "{n}: {calls:?}");
            assert!(n == 1 || calls.iter().all(|&c| c >= 2), "{n}: {calls:?}");
        }
        assert_eq!(prompt_calls(8), [6, 2]);
        assert_eq!(prompt_calls(14), [7, 7]);
    }
}
