//! The `Backend` trait: one loaded model (or pipeline of models) that runs jobs.

/// One loaded model, ready to run jobs.
///
/// Why three steps instead of one `infer`: the scheduler predicts and accounts cost per
/// stage (S8), and pre-/post-processing often run on a different core budget than the
/// model itself. Splitting the call lets one probe ([`crate::probe::run_timed`]) time
/// every engine identically, and lets the runtime preempt between stages. Loading happens
/// once, in the engine's constructor; a `Backend` value is always ready to run.
///
/// Associated types keep each workload's inputs and outputs concrete (an image in, text
/// lines out; audio in, a transcript out) instead of a lossy "tensor" enum.
pub trait Backend {
    /// What a job hands in (an image, an audio chunk, a decode step).
    type Input;
    /// The pre-processed input, ready for the engine (tensors).
    type Prepared;
    /// What the engine returns (raw tensors).
    type Raw;
    /// The job's result after post-processing.
    type Output;

    /// A short stable name, e.g. `ppocr-v4`, `silero-vad`, `whisper-tiny.en`, `gemma3-270m`.
    fn name(&self) -> &str;

    /// Pre-processing: turn a job input into engine input.
    fn prepare(&mut self, input: &Self::Input) -> Result<Self::Prepared, BackendError>;

    /// Execution: run the model(s).
    fn execute(&mut self, prepared: Self::Prepared) -> Result<Self::Raw, BackendError>;

    /// Post-processing: turn engine output into the job's result.
    fn finish(&mut self, raw: Self::Raw) -> Result<Self::Output, BackendError>;

    /// Bytes of memory held by the loaded model(s) (weights and caches), best estimate.
    fn memory_bytes(&self) -> u64;

    /// The scheduler grants the next calls `threads` intra-op threads (1 when another
    /// job needs the other core, more when the machine is otherwise idle). Returns the
    /// count the engine will use, or `None` if it cannot change its thread count between
    /// calls (it keeps the count it was loaded with: the default).
    fn grant_threads(&mut self, threads: usize) -> Option<usize> {
        let _ = threads;
        None
    }
}

/// The underlying error of a failure, kept as a value so a caller can walk the chain
/// (`std::error::Error::source`). Our own checks give their reason in words (a `String`
/// or `&str` converts into it); an engine's error is kept as it came.
pub type Cause = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Why a backend could not load or run. Each variant says what failed; the cause (the
/// engine's own error, or the check that refused) is its [`source`](std::error::Error::source),
/// so `{:#}` with `anyhow` prints the whole chain once.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// The model file is missing: the message says which command fetches it.
    #[error(
        "model file {path} not found: run `mmsched models fetch` (or point the model entry at your own file)"
    )]
    ModelMissing {
        /// The path that was looked for.
        path: String,
    },
    /// A model file of the cache is not the pinned file (or could not be read to check).
    #[error(transparent)]
    ModelFile(#[from] mmsched_models::ModelError),
    /// The model file exists but could not be loaded.
    #[error("cannot load model {path}")]
    Load {
        /// The model file.
        path: String,
        /// What went wrong.
        #[source]
        source: Cause,
    },
    /// The requested engine is not compiled in, or its runtime library is missing.
    #[error("the {engine} engine is unavailable")]
    EngineUnavailable {
        /// The engine asked for.
        engine: &'static str,
        /// Why it is unavailable and how to get it.
        #[source]
        source: Cause,
    },
    /// The job's input is not acceptable (wrong shape, sample rate, empty prompt …): the
    /// message says what is wrong and what to send instead.
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// The engine failed while running.
    #[error("inference failed on {engine}")]
    Engine {
        /// The engine that failed (`ONNX Runtime`, `tract`, `llama.cpp`, `candle`, `ggml`,
        /// or the pipeline stage for our own code around them).
        engine: &'static str,
        /// The engine's error.
        #[source]
        source: Cause,
    },
}

impl BackendError {
    /// A load failure of the model file at `path`.
    pub fn load(path: impl std::fmt::Display, source: impl Into<Cause>) -> Self {
        BackendError::Load {
            path: path.to_string(),
            source: source.into(),
        }
    }

    /// A failure of `engine` while running.
    pub fn engine(engine: &'static str, source: impl Into<Cause>) -> Self {
        BackendError::Engine {
            engine,
            source: source.into(),
        }
    }

    /// `engine` cannot be used here, for `reason`.
    pub fn unavailable(engine: &'static str, reason: impl Into<Cause>) -> Self {
        BackendError::EngineUnavailable {
            engine,
            source: reason.into(),
        }
    }

    /// The message with its causes, `: `-joined, as `anyhow`'s `{:#}` prints it.
    pub fn chain(&self) -> String {
        let mut out = self.to_string();
        let mut next = std::error::Error::source(self);
        while let Some(e) = next {
            out.push_str(": ");
            out.push_str(&e.to_string());
            next = e.source();
        }
        out
    }

    /// Whether the failure is the input's (the caller sent something the model cannot
    /// run), not the model's or the engine's.
    pub fn is_input(&self) -> bool {
        matches!(self, BackendError::InvalidInput(_))
    }
}

/// A candle error as a [`Cause`], without the backtrace candle captures into it when
/// `RUST_BACKTRACE` is set: an error is one line, not forty.
#[cfg(feature = "candle")]
pub(crate) fn candle_cause(e: candle_core::Error) -> Cause {
    match e {
        candle_core::Error::WithBacktrace { inner, .. } => candle_cause(*inner),
        other => Box::new(other),
    }
}
