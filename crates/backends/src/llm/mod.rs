//! Text generation: Gemma-3 270M (GGUF, Q4_K_M) on llama.cpp or candle, one token per step.
//!
//! - [`engine`]: which engine runs the model ([`LlmEngine`]: llama.cpp by default where
//!   compiled in, candle otherwise or on request);
//! - `llama`: the llama.cpp engine (cargo feature `llama`), and `llama_batch`, one
//!   llama.cpp context holding several sequences, with `llama_error` their one error type;
//! - [`model`]: the forward pass (an adapted copy of candle-transformers'
//!   `quantized_gemma3`: 4096-token default maximum, shared rotary tables, correct chunked
//!   prefill masks, per-stage timing);
//! - [`tokenizer`]: the SentencePiece tokenizer read from the GGUF metadata, or llama.cpp's
//!   (`llama_vocab`, with the file's chat template) for any other vocabulary;
//! - [`session`]: [`LlmSession`], the token-step API (`start`/`prefill_chunk`/`prefill`,
//!   `step`, `generate`) and the [`Backend`](crate::Backend) implementation;
//! - [`chat`]: a chat written with the model file's chat template;
//! - [`batch`]: [`BatchDecoder`], several requests decoded together (one `llama_decode`
//!   per token step), each one's tokens those it gets alone.

pub mod batch;
pub mod chat;
pub mod engine;
#[cfg(feature = "llama")]
pub mod llama;
#[cfg(feature = "llama")]
pub mod llama_batch;
#[cfg(feature = "llama")]
pub mod llama_error;
#[cfg(feature = "llama")]
pub mod llama_vocab;
pub mod model;
pub mod session;
pub mod tokenizer;

pub use batch::{BatchDecoder, BatchError, BatchOptions, MAX_ROWS as EXACT_CHUNK, Sampling, SeqId};
pub use chat::{ChatTemplateError, apply_template};
pub use engine::LlmEngine;
pub use session::{
    Generation, LlmJob, LlmOptions, LlmSession, StepStages, Token, TopTwo, argmax, top_two,
};
pub use tokenizer::{GgufTokenizer, TextStream};
