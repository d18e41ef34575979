//! The concurrency shim: every atomic the recorder uses comes from here, so that building
//! with `RUSTFLAGS="--cfg loom"` swaps in loom's model-checked atomics without touching
//! the ring's code.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

#[cfg(loom)]
pub(crate) use loom::sync::Arc;

#[cfg(not(loom))]
pub(crate) use std::sync::Arc;
