//! The ONNX Runtime engine (cargo feature `ort`, on by default): the default ONNX engine.
//!
//! The library is not linked at build time (`load-dynamic`): it is opened at run time from
//! `$ORT_DYLIB_PATH` if set, else `$MMSCHED_HOME/lib/libonnxruntime.so.1.32.0` (taken from the
//! `onnxruntime==1.32.0` wheel by `mmsched models fetch`). Builds therefore never need it, and
//! where it is missing [`crate::engine::EngineKind::preferred`] falls back to tract.
//!
//! Threads: every session is created with `intra_op_num_threads` = the requested count
//! (default 1) and `inter_op_num_threads` = 1, sequential execution: the scheduler owns
//! the cores, so ONNX Runtime must not size a pool to the whole machine.

mod model;
mod session;

pub use model::environment;
pub use session::OrtSession;

/// The `ort` crate itself, for callers that compare against calling it directly.
pub use ::ort as runtime;
