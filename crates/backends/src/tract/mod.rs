//! The tract engine: pure-Rust ONNX inference (cargo feature `tract`, on by default).
//!
//! Threads: tract is built without its `multithread-mm` feature here, so every plan runs on
//! the calling thread only. That is deliberate: the scheduler owns the cores and pins
//! workers; an engine that spawned its own pool would fight it.
//!
//! Shapes: the PP-OCR models have dynamic height/width. tract optimises a model best for
//! concrete shapes, so a session keeps one optimised plan per input shape (built the first
//! time that shape is seen, then reused); callers bucket their shapes to keep that set small.

mod model;
mod session;

pub use model::TractModel;
pub use session::TractSession;

/// The tract crate itself, for callers that compare against calling it directly
/// (`mmsched bench models` runs `SimplePlan::run` on the same tensors).
pub use tract_onnx;
