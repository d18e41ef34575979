//! Why a call into llama.cpp failed: the single- and multi-sequence contexts' one error type.
//!
//! llama.cpp reports a failure as a null pointer or a return code and logs its reason; the
//! logged line (`log`, empty when it logged none) is kept beside what we asked for.

/// A llama.cpp call that could not be made or that failed.
#[derive(Debug, thiserror::Error)]
pub enum LlamaError {
    /// The model path cannot be handed to C.
    #[error("the path contains a NUL byte: rename the model file or its folder")]
    NulInPath,
    /// llama.cpp did not load the model file.
    #[error("llama.cpp could not load the model{}", logged(log))]
    LoadModel {
        /// What llama.cpp logged.
        log: String,
    },
    /// A context size that does not fit llama.cpp's 32-bit counts.
    #[error("{what} are too many for llama.cpp: ask for a smaller context")]
    TooLarge {
        /// The size asked for, in words (`max_seq_len 5000000000`).
        what: String,
    },
    /// llama.cpp did not make a context.
    #[error("llama.cpp could not create a context of {what}{}", logged(log))]
    Context {
        /// The context asked for, in words.
        what: String,
        /// What llama.cpp logged.
        log: String,
    },
    /// A batch context needs at least one sequence of at least one token.
    #[error("a batch needs at least one sequence of at least one token")]
    EmptyBatch,
    /// llama.cpp made a context of another sequence count than asked.
    #[error("llama.cpp made a context of {got} sequences, not {asked}")]
    SlotCount {
        /// Sequences asked for.
        asked: usize,
        /// Sequences made.
        got: usize,
    },
    /// One call took no tokens or more than the context's batch.
    #[error("a call takes 1 to {max} tokens, not {got}")]
    CallSize {
        /// Tokens one call takes at most.
        max: usize,
        /// Tokens given.
        got: usize,
    },
    /// A sequence move names a slot outside the context, or the same slot twice.
    #[error("cannot move slot {from} to slot {to} of {slots}")]
    BadMove {
        /// The slot moved from.
        from: usize,
        /// The slot moved to.
        to: usize,
        /// Slots of the context.
        slots: usize,
    },
    /// A sequence was moved onto a slot that holds one.
    #[error("slot {slot} is not empty")]
    SlotTaken {
        /// The slot.
        slot: usize,
    },
    /// A part of a batch names a slot outside the context, or one named before.
    #[error("slot {slot} is outside 0..{slots} or named twice")]
    BadSlot {
        /// The slot named.
        slot: usize,
        /// Slots of the context.
        slots: usize,
    },
    /// A part of a batch has no tokens.
    #[error("slot {slot}: no tokens")]
    NoTokens {
        /// The slot.
        slot: usize,
    },
    /// A part's tokens do not continue the slot's cache.
    #[error("slot {slot}: tokens at position {pos} but the cache holds {cached}")]
    Position {
        /// The slot.
        slot: usize,
        /// The position the tokens were given at.
        pos: usize,
        /// Tokens the slot's cache holds.
        cached: usize,
    },
    /// A part's tokens do not fit its slot.
    #[error("slot {slot}: {pos} + {tokens} tokens exceed its {cells} cells")]
    SlotFull {
        /// The slot.
        slot: usize,
        /// Tokens cached before the part.
        pos: usize,
        /// Tokens of the part.
        tokens: usize,
        /// Cells of the slot.
        cells: usize,
    },
    /// A batch index does not fit llama.cpp's 32-bit index.
    #[error("batch index {index} overflows llama.cpp's 32-bit index")]
    IndexOverflow {
        /// The index.
        index: usize,
    },
    /// `llama_decode` returned an error code.
    #[error("llama_decode failed ({code}){}", logged(log))]
    Decode {
        /// Its return code.
        code: i32,
        /// What llama.cpp logged.
        log: String,
    },
    /// llama.cpp gave no logits where they were asked for.
    #[error("llama.cpp returned no logits{}", token.map_or(String::new(), |i| format!(" for batch token {i}")))]
    NoLogits {
        /// The batch token whose logits were asked for (`None`: the last one).
        token: Option<i32>,
    },
}

/// `": {log}"`, or nothing when llama.cpp logged nothing.
fn logged(log: &str) -> String {
    if log.is_empty() {
        String::new()
    } else {
        format!(": {log}")
    }
}
