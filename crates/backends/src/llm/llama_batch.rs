//! One llama.cpp context holding several sequences, each with a KV cache of its own, and
//! one `llama_decode` for tokens of several of them: the engine under
//! [`BatchDecoder`](crate::llm::BatchDecoder).
//!
//! Why separate KV streams (`kv_unified = false`) rather than one shared cache: each
//! sequence's cells then sit in a buffer of their own, filled from cell 0 in position
//! order exactly as a context holding that sequence alone fills its cache, so attention
//! reads the same keys and values in the same order (what keeps a sequence's tokens those
//! it gets alone), and the per-sequence budget is a hard size (`llama_n_ctx_seq`) instead
//! of a share of a common pool that one long sequence could exhaust for all.
//!
//! What it costs: llama.cpp computes tokens of several streams in one graph only when
//! their sequence ids are consecutive and every sequence contributes as many tokens
//! (`split_equal`); otherwise one `llama_decode` runs several graphs. The decoder above
//! keeps the sequences it steps together in consecutive slots for that reason.
#![allow(unsafe_code)]

use std::ptr::NonNull;
use std::sync::Arc;

use llama_cpp_sys_2 as sys;

use crate::llm::llama::{LlamaError, LlamaGemma, Weights, context_params, last_error};

/// Tokens of one sequence in one decode call: `tokens` go to positions `pos..` of slot
/// `slot`, and the logits of the last one are returned.
#[derive(Debug, Clone, Copy)]
pub struct SlotTokens<'a> {
    /// The sequence's slot (its llama.cpp sequence id), below the context's slot count.
    pub slot: usize,
    /// Position of the first token (the number of tokens already in the slot's cache).
    pub pos: usize,
    /// At least one token.
    pub tokens: &'a [u32],
}

/// A llama.cpp context with `slots` sequences of up to `slot_tokens` tokens each.
#[derive(Debug)]
pub struct LlamaMultiSeq {
    ctx: NonNull<sys::llama_context>,
    /// Dropped after the context (field order): the context's weights.
    _weights: Arc<Weights>,
    n_vocab: usize,
    slots: usize,
    slot_tokens: usize,
    max_call_tokens: usize,
}

// SAFETY: as for `LlamaGemma`: the context is used by one thread at a time (`&mut self`)
// and llama.cpp does not tie a context to the thread that made it.
unsafe impl Send for LlamaMultiSeq {}

impl Drop for LlamaMultiSeq {
    fn drop(&mut self) {
        // SAFETY: the context came from llama_init_from_model and is freed once, before
        // its weights (the `Arc` field drops after this).
        unsafe { sys::llama_free(self.ctx.as_ptr()) }
    }
}

impl LlamaMultiSeq {
    /// A context on `model`'s weights for `slots` sequences of up to `slot_tokens` tokens
    /// each (llama.cpp rounds the per-sequence size up to a multiple of 256: read it back
    /// with [`slot_tokens`](Self::slot_tokens)), running on `threads` threads. Every other
    /// setting is the single-sequence context's, so the kernels are the same.
    pub fn new(
        model: &LlamaGemma,
        slots: usize,
        slot_tokens: usize,
        threads: usize,
    ) -> Result<Self, LlamaError> {
        if slots == 0 || slot_tokens == 0 {
            return Err(LlamaError::EmptyBatch);
        }
        let too_large = || LlamaError::TooLarge {
            what: format!("{slots} sequences of {slot_tokens} tokens"),
        };
        let n_seq = u32::try_from(slots).map_err(|_| too_large())?;
        let per_seq = u32::try_from(slot_tokens.next_multiple_of(256)).map_err(|_| too_large())?;
        let n_ctx = per_seq.checked_mul(n_seq).ok_or_else(too_large)?;
        // One call takes a whole prompt of one sequence, or one token of every sequence.
        let n_batch = per_seq.max(n_seq);
        let p = context_params(n_ctx, n_batch, n_seq, threads);
        let weights = Arc::clone(model.weights());
        // SAFETY: the weights pointer is valid while `weights` lives, and the context
        // keeps an `Arc` to them; the remaining calls read plain values.
        let (ctx, n_vocab) = unsafe {
            let ctx = sys::llama_init_from_model(weights.as_ptr(), p);
            let vocab = sys::llama_model_get_vocab(weights.as_ptr());
            (ctx, sys::llama_vocab_n_tokens(vocab))
        };
        let ctx = NonNull::new(ctx).ok_or_else(|| LlamaError::Context {
            what: format!("{slots} sequences × {per_seq} tokens"),
            log: last_error(),
        })?;
        // SAFETY: reads plain values of the live context.
        let (slot_tokens, got_slots) = unsafe {
            (
                sys::llama_n_ctx_seq(ctx.as_ptr()),
                sys::llama_n_seq_max(ctx.as_ptr()),
            )
        };
        let this = Self {
            ctx,
            _weights: weights,
            n_vocab: usize::try_from(n_vocab).unwrap_or(0),
            slots: got_slots as usize,
            slot_tokens: slot_tokens as usize,
            max_call_tokens: n_batch as usize,
        };
        if this.slots != slots {
            return Err(LlamaError::SlotCount {
                asked: slots,
                got: this.slots,
            });
        }
        Ok(this)
    }

    /// Sequences the context holds.
    pub fn slots(&self) -> usize {
        self.slots
    }

    /// Tokens each sequence's KV cache holds (prompt and generated tokens together).
    pub fn slot_tokens(&self) -> usize {
        self.slot_tokens
    }

    /// Vocabulary size: the length of each logits row.
    pub fn vocab_size(&self) -> usize {
        self.n_vocab
    }

    /// Threads the next calls use, as llama.cpp reports it.
    pub fn threads(&self) -> usize {
        // SAFETY: reads a field of a live context.
        let n = unsafe { sys::llama_n_threads(self.ctx.as_ptr()) };
        usize::try_from(n).unwrap_or(1)
    }

    /// Runs the next calls on `threads` threads.
    pub fn set_threads(&mut self, threads: usize) {
        let n = i32::try_from(threads.max(1)).unwrap_or(i32::MAX);
        // SAFETY: sets two fields of a live context; no call is running (`&mut self`).
        unsafe { sys::llama_set_n_threads(self.ctx.as_ptr(), n, n) }
    }

    fn memory(&self) -> sys::llama_memory_t {
        // SAFETY: the memory handle belongs to the live context (never null for a model
        // with a KV cache, which `new` made).
        unsafe { sys::llama_get_memory(self.ctx.as_ptr()) }
    }

    /// Tokens in `slot`'s cache (0 when empty), as llama.cpp counts them.
    pub fn cached(&self, slot: usize) -> usize {
        let Ok(id) = sys::llama_seq_id::try_from(slot) else {
            return 0;
        };
        // SAFETY: reads the cell bookkeeping of a live context; a slot beyond the
        // context's is refused by the caller (`slot < slots`).
        let max = unsafe { sys::llama_memory_seq_pos_max(self.memory(), id) };
        usize::try_from(max + 1).unwrap_or(0)
    }

    /// Empties `slot`'s cache: its cells are free for the next sequence placed there,
    /// which fills them from cell 0 like a fresh context. Only the bookkeeping is reset
    /// (freed cells are masked out of attention).
    pub fn clear(&mut self, slot: usize) {
        if slot >= self.slots {
            return;
        }
        let id = slot as sys::llama_seq_id;
        // SAFETY: removing a whole sequence of a live context never fails.
        unsafe {
            sys::llama_memory_seq_rm(self.memory(), id, -1, -1);
        }
    }

    /// Moves the sequence in slot `from` to the empty slot `to`: the cells and their
    /// layout are copied as they are (llama.cpp copies the stream's buffer at the start
    /// of the next decode), so the sequence continues exactly as it would have in `from`.
    pub fn relocate(&mut self, from: usize, to: usize) -> Result<(), LlamaError> {
        if from >= self.slots || to >= self.slots || from == to {
            return Err(LlamaError::BadMove {
                from,
                to,
                slots: self.slots,
            });
        }
        if self.cached(to) != 0 {
            return Err(LlamaError::SlotTaken { slot: to });
        }
        let (src, dst) = (from as sys::llama_seq_id, to as sys::llama_seq_id);
        // SAFETY: both ids are below the context's sequence count; whole-sequence copies
        // (-1, -1) across streams are what llama.cpp supports.
        unsafe {
            sys::llama_memory_seq_cp(self.memory(), src, dst, -1, -1);
            sys::llama_memory_seq_rm(self.memory(), src, -1, -1);
        }
        Ok(())
    }

    /// One `llama_decode` over every part's tokens; returns each part's last-token logits,
    /// in the order of `parts`. Parts must name distinct slots; each part's `pos` must be
    /// the slot's cached count (checked), and its tokens must fit the slot (checked).
    pub fn decode(&mut self, parts: &[SlotTokens<'_>]) -> Result<Vec<&[f32]>, LlamaError> {
        let total: usize = parts.iter().map(|p| p.tokens.len()).sum();
        if parts.is_empty() || total > self.max_call_tokens {
            return Err(LlamaError::CallSize {
                max: self.max_call_tokens,
                got: total,
            });
        }
        let mut seen = vec![false; self.slots];
        for p in parts {
            if p.slot >= self.slots || std::mem::replace(&mut seen[p.slot], true) {
                return Err(LlamaError::BadSlot {
                    slot: p.slot,
                    slots: self.slots,
                });
            }
            if p.tokens.is_empty() {
                return Err(LlamaError::NoTokens { slot: p.slot });
            }
            let cached = self.cached(p.slot);
            if p.pos != cached {
                return Err(LlamaError::Position {
                    slot: p.slot,
                    pos: p.pos,
                    cached,
                });
            }
            if p.pos + p.tokens.len() > self.slot_tokens {
                return Err(LlamaError::SlotFull {
                    slot: p.slot,
                    pos: p.pos,
                    tokens: p.tokens.len(),
                    cells: self.slot_tokens,
                });
            }
        }
        let mut batch = BatchArrays::with_capacity(total);
        let mut outputs = Vec::with_capacity(parts.len());
        for p in parts {
            for (k, &t) in p.tokens.iter().enumerate() {
                let last = k + 1 == p.tokens.len();
                if last {
                    outputs.push(batch.token.len());
                }
                batch.push(t, p.pos + k, p.slot, last);
            }
        }
        let raw = batch.as_llama();
        // SAFETY: every array of `raw` points into `batch`, which outlives the call, and
        // holds `n_tokens` entries; each `seq_id` entry points to one id in `batch.ids`.
        let rc = unsafe { sys::llama_decode(self.ctx.as_ptr(), raw) };
        if rc != 0 {
            return Err(LlamaError::Decode {
                code: rc,
                log: last_error(),
            });
        }
        let mut rows = Vec::with_capacity(outputs.len());
        for i in outputs {
            let i = i32::try_from(i).map_err(|_| LlamaError::IndexOverflow { index: i })?;
            // SAFETY: token `i` asked for logits; llama.cpp returns `n_vocab` floats owned
            // by the context, valid until the next decode (tied to `&mut self`).
            let row = unsafe {
                let p = sys::llama_get_logits_ith(self.ctx.as_ptr(), i);
                if p.is_null() {
                    return Err(LlamaError::NoLogits { token: Some(i) });
                }
                std::slice::from_raw_parts(p, self.n_vocab)
            };
            rows.push(row);
        }
        Ok(rows)
    }
}

/// The arrays a `llama_batch` points into, owned here (no `llama_batch_init`/`free`).
struct BatchArrays {
    token: Vec<sys::llama_token>,
    pos: Vec<sys::llama_pos>,
    n_seq_id: Vec<i32>,
    /// One sequence id per token; `seq_ptr` points at them.
    ids: Vec<sys::llama_seq_id>,
    seq_ptr: Vec<*mut sys::llama_seq_id>,
    logits: Vec<i8>,
}

impl BatchArrays {
    fn with_capacity(n: usize) -> Self {
        Self {
            token: Vec::with_capacity(n),
            pos: Vec::with_capacity(n),
            n_seq_id: Vec::with_capacity(n),
            ids: Vec::with_capacity(n),
            seq_ptr: Vec::with_capacity(n),
            logits: Vec::with_capacity(n),
        }
    }

    fn push(&mut self, token: u32, pos: usize, slot: usize, logits: bool) {
        self.token
            .push(sys::llama_token::try_from(token).unwrap_or(sys::llama_token::MAX));
        self.pos
            .push(sys::llama_pos::try_from(pos).unwrap_or(sys::llama_pos::MAX));
        self.n_seq_id.push(1);
        self.ids
            .push(sys::llama_seq_id::try_from(slot).unwrap_or(sys::llama_seq_id::MAX));
        self.logits.push(i8::from(logits));
    }

    /// The `llama_batch` view; `self` must not change while it is in use.
    fn as_llama(&mut self) -> sys::llama_batch {
        // `ids` is complete, so these pointers stay valid until `self` changes.
        self.seq_ptr = self.ids.iter_mut().map(std::ptr::from_mut).collect();
        sys::llama_batch {
            n_tokens: i32::try_from(self.token.len()).unwrap_or(i32::MAX),
            token: self.token.as_mut_ptr(),
            embd: std::ptr::null_mut(),
            pos: self.pos.as_mut_ptr(),
            n_seq_id: self.n_seq_id.as_mut_ptr(),
            seq_id: self.seq_ptr.as_mut_ptr(),
            logits: self.logits.as_mut_ptr(),
        }
    }
}
