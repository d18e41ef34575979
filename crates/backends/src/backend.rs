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

/// Why a backend could not load or run.
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
    /// The model file exists but could not be loaded.
    #[error("cannot load model {path}: {reason}")]
    Load {
        /// The model file.
        path: String,
        /// What went wrong.
        reason: String,
    },
    /// The requested engine is not compiled in, or its runtime library is missing.
    #[error("engine unavailable: {0}")]
    EngineUnavailable(String),
    /// The job's input is not acceptable (wrong shape, sample rate, empty prompt …).
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// The engine failed while running.
    #[error("inference failed: {0}")]
    Engine(String),
}
