//! Text generation: Gemma-3 270M (GGUF, Q4_K_M) on llama.cpp or candle, one token per step.
//!
//! - [`engine`]: which engine runs the model ([`LlmEngine`]: llama.cpp by default where
//!   compiled in, candle otherwise or on request);
//! - `llama`: the llama.cpp engine (cargo feature `llama`);
//! - [`model`]: the forward pass (an adapted copy of candle-transformers'
//!   `quantized_gemma3`: 4096-token default maximum, shared rotary tables, correct chunked
//!   prefill masks, per-stage timing);
//! - [`tokenizer`]: the SentencePiece tokenizer read from the GGUF metadata;
//! - [`session`]: [`LlmSession`], the token-step API (`start`/`prefill_chunk`/`prefill`,
//!   `step`, `generate`) and the [`Backend`](crate::Backend) implementation.

pub mod engine;
#[cfg(feature = "llama")]
pub mod llama;
pub mod model;
pub mod session;
pub mod tokenizer;

pub use engine::LlmEngine;
pub use session::{Generation, LlmJob, LlmOptions, LlmSession, StepStages, Token, argmax};
pub use tokenizer::GgufTokenizer;
