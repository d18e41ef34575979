//! Gemma-3 on llama.cpp, through the raw bindings of `llama-cpp-sys-2`.
//!
//! Why the raw bindings rather than the safe `llama-cpp-2` wrapper: a session must own its
//! model and context together (the wrapper's context borrows the model, so the pair cannot
//! live in one struct without a self-reference), and the scheduler changes the thread count
//! between calls, which needs `llama_set_n_threads` (not wrapped). The few calls used here
//! are wrapped once, in this file, with their safety conditions next to them.
//!
//! llama.cpp is built without OpenMP: its own workers are started for each graph and end
//! with it, so an idle LLM never spins on a core that the scheduler gave to another job.
//!
//! **Kernels that keep batched decoding exact.** Several sequences decoded in one call
//! ([`LlamaMultiSeq`](crate::llm::llama_batch::LlamaMultiSeq)) must get, token for token,
//! the logits each gets alone. ggml computes most matrix products one output element at a
//! time whatever the number of rows, but three of its fast paths change the arithmetic
//! with the row count, and each was seen to change the logits (by up to about 1 in 20 on
//! Gemma-3 270M, enough to change greedy tokens within 16 steps):
//! - the repacked weight layout (`CPU_REPACK`, an "extra buffer type"): Q4_K products of 4
//!   or more rows run a 4-row kernel (`gemm_q4_K_8x8`) that sums in another order than the
//!   1-row one; so every context here loads the weights without it (`use_extra_bufts =
//!   false`), and Q4_K runs the per-element `vec_dot` kernel for any row count;
//! - flash attention: a single row attending to 512 or more cached positions splits them
//!   across threads and merges the partial sums (`use_split_kv_path`), while rows of
//!   several sequences do not; so flash attention is off, and attention is two matrix
//!   products and a softmax whose padding only adds exact zeros;
//! - the tiled K-quant product (`ggml-cpu/tiled`), taken from 8 rows on: the batch decoder
//!   runs at most [`MAX_EXACT_ROWS`] sequences per graph.
//!
//! Every context is made by [`context_params`], so the single- and multi-sequence ones
//! cannot drift apart in any other setting.
#![allow(unsafe_code)]

use std::ffi::{CStr, CString, c_char, c_void};
use std::path::Path;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex, Once};

use llama_cpp_sys_2 as sys;

pub use crate::llm::llama_error::LlamaError;

/// The errors llama.cpp logged since the last call took them, for the error message of
/// the call that failed.
static LAST_ERROR: Mutex<String> = Mutex::new(String::new());
/// Bytes of logged errors kept for one failure.
const MAX_LOGGED: usize = 2000;
static INIT: Once = Once::new();

/// Keeps llama.cpp quiet (it logs every load to stderr) but remembers its errors.
unsafe extern "C" fn log_errors_only(
    level: sys::ggml_log_level,
    text: *const c_char,
    _user: *mut c_void,
) {
    if level != sys::GGML_LOG_LEVEL_ERROR || text.is_null() {
        return;
    }
    // SAFETY: llama.cpp passes a NUL-terminated string valid for the duration of the call.
    let text = unsafe { CStr::from_ptr(text) }.to_string_lossy();
    // A failed load logs its cause first and "failed to load model" last: keep them all
    // (the call that failed takes them), within a bound.
    if let Ok(mut last) = LAST_ERROR.lock()
        && last.len() < MAX_LOGGED
    {
        if !last.is_empty() {
            last.push_str("; ");
        }
        last.push_str(text.trim());
    }
}

pub(crate) fn last_error() -> String {
    LAST_ERROR
        .lock()
        .map(|mut e| std::mem::take(&mut *e))
        .unwrap_or_default()
}

/// Most rows one graph decodes with per-row results that do not depend on the row count:
/// from 8 rows on ggml's tiled K-quant product takes over (see the module notes).
pub const MAX_EXACT_ROWS: usize = 7;

/// Tokens one graph takes at most (llama.cpp's `n_ubatch`): a prompt chunk up to this long
/// is one graph in every context, so it runs the same kernels in all of them.
const UBATCH_TOKENS: u32 = 512;

/// The settings of every context made here: `n_ctx` cells for `n_seq` sequences (each in a
/// KV stream of its own), calls of up to `n_batch` tokens, `threads` threads. Only what
/// the caller passes differs between contexts; everything that decides which kernels run
/// is here once.
pub(crate) fn context_params(
    n_ctx: u32,
    n_batch: u32,
    n_seq: u32,
    threads: usize,
) -> sys::llama_context_params {
    let threads = i32::try_from(threads.max(1)).unwrap_or(i32::MAX);
    // SAFETY: returns a plain struct of defaults.
    let mut p = unsafe { sys::llama_context_default_params() };
    p.n_ctx = n_ctx;
    p.n_batch = n_batch;
    p.n_ubatch = n_batch.min(UBATCH_TOKENS);
    p.n_seq_max = n_seq;
    // Logits of at most one token per sequence per call.
    p.n_outputs_max = n_seq;
    p.kv_unified = false;
    p.flash_attn_type = sys::LLAMA_FLASH_ATTN_TYPE_DISABLED;
    p.n_threads = threads;
    p.n_threads_batch = threads;
    p.no_perf = true;
    p
}

pub(crate) fn init_backend() {
    INIT.call_once(|| {
        // SAFETY: called once per process, before any other llama.cpp call; the callback
        // is a plain function that lives for the whole program.
        unsafe {
            sys::llama_log_set(Some(log_errors_only), std::ptr::null_mut());
            sys::llama_backend_init();
        }
    });
}

/// Loaded weights, shared by every context made from them.
#[derive(Debug)]
pub(crate) struct Weights(NonNull<sys::llama_model>);

impl Weights {
    /// The model, valid while `self` lives.
    pub(crate) fn as_ptr(&self) -> *mut sys::llama_model {
        self.0.as_ptr()
    }
}

// SAFETY: a llama_model is immutable after loading and llama.cpp allows using one model
// from several contexts on different threads.
unsafe impl Send for Weights {}
// SAFETY: as above: no call made here mutates the model.
unsafe impl Sync for Weights {}

impl Drop for Weights {
    fn drop(&mut self) {
        // SAFETY: the pointer came from llama_model_load_from_file and every context made
        // from it holds an `Arc<Weights>`, so none is alive any more.
        unsafe { sys::llama_model_free(self.0.as_ptr()) }
    }
}

/// A Gemma-3 GGUF model on llama.cpp with its own KV cache.
#[derive(Debug)]
pub struct LlamaGemma {
    ctx: NonNull<sys::llama_context>,
    weights: Arc<Weights>,
    n_vocab: usize,
    max_seq_len: usize,
    max_batch: usize,
    weight_bytes: u64,
}

// SAFETY: the context is used by one thread at a time (every method takes `&mut self` or
// only reads plain fields) and llama.cpp does not tie a context to the thread that made it.
unsafe impl Send for LlamaGemma {}

impl Drop for LlamaGemma {
    fn drop(&mut self) {
        // SAFETY: the context came from llama_init_from_model and is freed once, before
        // its weights (the `Arc` field drops after this).
        unsafe { sys::llama_free(self.ctx.as_ptr()) }
    }
}

impl LlamaGemma {
    /// Loads `path` with room for `max_seq_len` tokens, running on `threads` threads.
    pub fn load(path: &Path, max_seq_len: usize, threads: usize) -> Result<Self, LlamaError> {
        init_backend();
        let c_path =
            CString::new(path.to_string_lossy().as_bytes()).map_err(|_| LlamaError::NulInPath)?;
        // SAFETY: plain value-returning calls; the path is a valid C string for the call.
        let model = unsafe {
            let mut params = sys::llama_model_default_params();
            // No repacked layout: its 4-row Q4_K kernel would make batched tokens differ
            // from lone ones (module notes).
            params.use_extra_bufts = false;
            sys::llama_model_load_from_file(c_path.as_ptr(), params)
        };
        let model =
            NonNull::new(model).ok_or_else(|| LlamaError::LoadModel { log: last_error() })?;
        let weights = Arc::new(Weights(model));
        Self::with_weights(weights, max_seq_len, threads)
    }

    /// A second context on the same weights (its own KV cache), like the first one.
    pub fn fork(&self) -> Result<Self, LlamaError> {
        Self::with_weights(self.weights.clone(), self.max_seq_len, self.threads())
    }

    fn with_weights(
        weights: Arc<Weights>,
        max_seq_len: usize,
        threads: usize,
    ) -> Result<Self, LlamaError> {
        let n_ctx = u32::try_from(max_seq_len).map_err(|_| LlamaError::TooLarge {
            what: format!("{max_seq_len} tokens"),
        })?;
        // Prompts are fed in chunks no larger than the whole sequence.
        let max_batch = max_seq_len;
        let p = context_params(n_ctx, n_ctx, 1, threads);
        // SAFETY: the weights pointer is valid while `weights` lives, and the context
        // keeps an `Arc` to them; the remaining calls read plain values.
        let (ctx, n_vocab, weight_bytes) = unsafe {
            let ctx = sys::llama_init_from_model(weights.0.as_ptr(), p);
            let vocab = sys::llama_model_get_vocab(weights.0.as_ptr());
            (
                ctx,
                sys::llama_vocab_n_tokens(vocab),
                sys::llama_model_size(weights.0.as_ptr()),
            )
        };
        let ctx = NonNull::new(ctx).ok_or_else(|| LlamaError::Context {
            what: format!("{max_seq_len} tokens"),
            log: last_error(),
        })?;
        Ok(Self {
            ctx,
            weights,
            n_vocab: usize::try_from(n_vocab).unwrap_or(0),
            max_seq_len,
            max_batch,
            weight_bytes,
        })
    }

    /// The weights, shared with every context made from them.
    pub(crate) fn weights(&self) -> &Arc<Weights> {
        &self.weights
    }

    /// Vocabulary size.
    pub fn vocab_size(&self) -> usize {
        self.n_vocab
    }

    /// Maximum sequence length of the KV cache.
    pub fn max_seq_len(&self) -> usize {
        self.max_seq_len
    }

    /// Bytes of the weights as loaded.
    pub fn weight_bytes(&self) -> u64 {
        self.weight_bytes
    }

    /// Threads the next calls use, as llama.cpp reports it.
    pub fn threads(&self) -> usize {
        // SAFETY: reads a field of a live context.
        let n = unsafe { sys::llama_n_threads(self.ctx.as_ptr()) };
        usize::try_from(n).unwrap_or(1)
    }

    /// Runs the next calls (single tokens and prompt chunks alike) on `threads` threads.
    pub fn set_threads(&mut self, threads: usize) {
        let n = i32::try_from(threads.max(1)).unwrap_or(i32::MAX);
        // SAFETY: sets two fields of a live context; no call is running (`&mut self`).
        unsafe { sys::llama_set_n_threads(self.ctx.as_ptr(), n, n) }
    }

    /// Empties the KV cache: the next call starts a new sequence at position 0. Only the
    /// cells' bookkeeping is reset: freed cells are masked out of attention, so their old
    /// values are never read, and zeroing the whole cache cost a pass over every layer's
    /// keys and values at the start of each request.
    pub fn clear(&mut self) {
        // SAFETY: the memory handle belongs to the live context.
        unsafe {
            let mem = sys::llama_get_memory(self.ctx.as_ptr());
            if !mem.is_null() {
                sys::llama_memory_clear(mem, false);
            }
        }
    }

    /// Appends `ids` to the sequence (positions follow the cache) and returns the logits
    /// of the last one.
    pub fn forward(&mut self, ids: &[u32]) -> Result<&[f32], LlamaError> {
        if ids.is_empty() || ids.len() > self.max_batch {
            return Err(LlamaError::CallSize {
                max: self.max_batch,
                got: ids.len(),
            });
        }
        let mut tokens: Vec<sys::llama_token> = ids
            .iter()
            .map(|&t| sys::llama_token::try_from(t).unwrap_or(sys::llama_token::MAX))
            .collect();
        let n = i32::try_from(tokens.len()).unwrap_or(i32::MAX);
        // SAFETY: `tokens` outlives the decode call that reads it through the batch (the
        // batch only borrows the pointer); llama_batch_get_one asks for the last token's
        // logits, which llama_get_logits_ith(-1) returns as `n_vocab` floats owned by the
        // context and valid until the next decode (tied to `&self` by the return type).
        unsafe {
            let batch = sys::llama_batch_get_one(tokens.as_mut_ptr(), n);
            let rc = sys::llama_decode(self.ctx.as_ptr(), batch);
            if rc != 0 {
                return Err(LlamaError::Decode {
                    code: rc,
                    log: last_error(),
                });
            }
            let logits = sys::llama_get_logits_ith(self.ctx.as_ptr(), -1);
            if logits.is_null() {
                return Err(LlamaError::NoLogits { token: None });
            }
            Ok(std::slice::from_raw_parts(logits, self.n_vocab))
        }
    }

    /// Bytes of the context: KV cache and compute buffers, as llama.cpp sizes its state.
    pub fn state_bytes(&self) -> u64 {
        // SAFETY: reads the state size of a live context.
        let n = unsafe { sys::llama_state_get_size(self.ctx.as_ptr()) };
        n as u64
    }
}
