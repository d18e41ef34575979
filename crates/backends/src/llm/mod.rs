//! Text generation: Gemma-3 270M (GGUF, Q4_K_M) on candle, one token per step.
//!
//! - [`model`]: the forward pass (an adapted copy of candle-transformers'
//!   `quantized_gemma3`: 4096-token default maximum, shared rotary tables, correct chunked
//!   prefill masks, per-stage timing);
//! - [`tokenizer`]: the SentencePiece tokenizer read from the GGUF metadata;
//! - [`session`]: [`LlmSession`], the token-step API (`start`/`prefill_chunk`/`prefill`,
//!   `step`, `generate`) and the [`Backend`](crate::Backend) implementation.

pub mod model;
pub mod session;
pub mod tokenizer;

pub use session::{Generation, LlmJob, LlmOptions, LlmSession, StepStages, Token};
pub use tokenizer::GgufTokenizer;
