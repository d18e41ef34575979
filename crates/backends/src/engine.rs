//! Engine selection: which ONNX engine runs a model, and with how many threads.
//!
//! ONNX Runtime is the default wherever it is compiled in (cargo feature `ort`, on by
//! default) and its library loads (`mmsched models fetch` installs it); otherwise tract, the
//! pure-Rust engine, runs the models, and [`EngineKind::preferred`] says so once on stderr.
//!
//! Why a tiny object-safe trait ([`OnnxSession`]) rather than generics everywhere: the engine
//! is chosen at run time (`--engine tract|ort`), the OCR and VAD code is the same for both,
//! and one virtual call per inference is negligible next to the model itself.

use std::path::Path;
use std::sync::OnceLock;

use crate::backend::BackendError;
use crate::tensor::{TensorF32, TensorInfo};

/// One loaded ONNX model, ready to run.
pub trait OnnxSession: Send {
    /// Runs the model on `inputs` (in the model's input order) and returns every output
    /// (in the model's output order).
    fn run(&mut self, inputs: Vec<TensorF32>) -> Result<Vec<TensorF32>, BackendError>;

    /// A string from the model's metadata (`metadata_props` in ONNX), if present.
    fn metadata(&self, key: &str) -> Option<String>;

    /// The engine that runs this session.
    fn engine(&self) -> EngineKind;

    /// The graph's inputs and outputs (names, element types, shapes), where the engine
    /// can tell them before a run; `None` where it cannot (tract, the default).
    fn signature(&self) -> Option<(&[TensorInfo], &[TensorInfo])> {
        None
    }
}

/// The ONNX engines mmsched can use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EngineKind {
    /// tract: pure Rust, always compiled in (cargo feature `tract`, on by default).
    Tract,
    /// ONNX Runtime, loaded at run time (cargo feature `ort`).
    Ort,
}

impl EngineKind {
    /// The engine's short name (`tract` or `ort`).
    pub fn as_str(self) -> &'static str {
        match self {
            EngineKind::Tract => "tract",
            EngineKind::Ort => "ort",
        }
    }

    /// Whether this engine was compiled into this build.
    pub fn is_compiled_in(self) -> bool {
        match self {
            EngineKind::Tract => cfg!(feature = "tract"),
            EngineKind::Ort => cfg!(feature = "ort"),
        }
    }

    /// The default ONNX engine of this process: ONNX Runtime if it is compiled in and its
    /// library loads, else tract. Decided once; the first call that falls back to tract
    /// prints a one-line note on stderr naming the reason and the fix.
    pub fn preferred() -> EngineKind {
        static CHOICE: OnceLock<EngineKind> = OnceLock::new();
        *CHOICE.get_or_init(|| match ort_unavailable() {
            None => EngineKind::Ort,
            Some(reason) => {
                eprintln!("note: ONNX models run on tract (pure Rust, slower): {reason}");
                EngineKind::Tract
            }
        })
    }
}

/// Why ONNX Runtime cannot run models in this process, or `None` if it can.
pub fn ort_unavailable() -> Option<String> {
    #[cfg(feature = "ort")]
    {
        crate::ort::environment().err().map(|e| e.chain())
    }
    #[cfg(not(feature = "ort"))]
    {
        Some("this build has no ONNX Runtime engine (cargo feature `ort`)".to_string())
    }
}

impl std::fmt::Display for EngineKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for EngineKind {
    type Err = BackendError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "tract" => Ok(EngineKind::Tract),
            "ort" => Ok(EngineKind::Ort),
            other => Err(BackendError::InvalidInput(format!(
                "unknown engine `{other}`: use `tract` or `ort`"
            ))),
        }
    }
}

/// How an engine runs a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EngineOptions {
    /// Which engine.
    pub kind: EngineKind,
    /// Threads the engine may use inside one operator (intra-op). The scheduler owns the
    /// cores, so the default is 1: tract is single-threaded in this build (no
    /// `multithread-mm`), and ONNX Runtime is told `intra_op_num_threads = 1`,
    /// `inter_op_num_threads = 1` instead of sizing its own pool to the machine.
    pub threads: usize,
}

impl Default for EngineOptions {
    /// The [preferred](EngineKind::preferred) engine with one thread.
    fn default() -> Self {
        Self {
            kind: EngineKind::preferred(),
            threads: 1,
        }
    }
}

impl EngineOptions {
    /// Options for `kind` with one thread.
    pub fn new(kind: EngineKind) -> Self {
        Self { kind, threads: 1 }
    }
}

/// Opens `path` with the engine in `options` (each engine checks a file of the model cache
/// against its pinned sha256 first: [`mmsched_models::verify::verify_file`]).
///
/// Fails with [`BackendError::ModelMissing`] if the file does not exist (the message names
/// `mmsched models fetch`), with [`BackendError::ModelFile`] if it is corrupt, and with
/// [`BackendError::EngineUnavailable`] if the engine was not compiled in or its library
/// cannot be found.
pub fn open_session(
    path: &Path,
    options: &EngineOptions,
) -> Result<Box<dyn OnnxSession>, BackendError> {
    if !path.is_file() {
        return Err(BackendError::ModelMissing {
            path: path.display().to_string(),
        });
    }
    match options.kind {
        #[cfg(feature = "tract")]
        EngineKind::Tract => Ok(Box::new(crate::tract::TractSession::open(path)?)),
        #[cfg(feature = "ort")]
        EngineKind::Ort => Ok(Box::new(crate::ort::OrtSession::open(
            path,
            options.threads,
        )?)),
        #[allow(unreachable_patterns)]
        kind => Err(BackendError::unavailable(
            kind.as_str(),
            format!(
                "it is not compiled into this build: rebuild with `cargo build -p mmsched --features {kind}`"
            ),
        )),
    }
}
