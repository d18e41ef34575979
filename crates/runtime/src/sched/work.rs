//! The unit a worker runs: one schedulable step of a job, whatever engine is behind it.

/// What a step left to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepOutcome {
    /// The job is done.
    Finished,
    /// The job yields at a step boundary (an LLM after one decode step) and has more to do;
    /// it goes back to the scheduler, which decides what runs next.
    Yield,
}

/// The underlying error of a failed step (an engine's error, or a check's reason in
/// words: a `String` or `&str` converts into it).
pub type Cause = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Why a step failed. The variant is the class of the failure — whose fault it is and what
/// a client should do — and the cause is kept as the error's
/// [`source`](std::error::Error::source), so the message names the fix once.
#[derive(Debug, thiserror::Error)]
pub enum WorkError {
    /// The engine failed while running the model: a fault of this device, not of the input.
    #[error("the {model} model failed")]
    Engine {
        /// Which model.
        model: &'static str,
        /// The engine's error.
        #[source]
        source: Cause,
    },
    /// The input cannot be run by the model (wrong size, rate, empty or too long): the
    /// client's to fix.
    #[error("the {model} model cannot run this input")]
    Input {
        /// Which model.
        model: &'static str,
        /// What is wrong with the input and what to send instead.
        #[source]
        source: Cause,
    },
    /// The model the job needs is not loaded.
    #[error("no {model} model is loaded: load a model set that has one")]
    NoModel {
        /// Which model.
        model: &'static str,
    },
    /// The job needs more memory than its budget allows.
    #[error("the {model} job needs {needed_bytes} bytes, over its budget of {budget_bytes} bytes")]
    OutOfMemory {
        /// Which model.
        model: &'static str,
        /// What the job would need.
        needed_bytes: u64,
        /// What it may use.
        budget_bytes: u64,
    },
    /// The step panicked: a bug, caught so the worker and the other jobs go on.
    #[error("the step panicked (a bug in mmsched: please report it with this message): {message}")]
    Panicked {
        /// The panic's message.
        message: String,
    },
    /// The job was stopped before it ended: its client went away, or the runtime is
    /// stopping.
    #[error("cancelled: {why}")]
    Cancelled {
        /// Why.
        why: &'static str,
    },
}

impl WorkError {
    /// Whether the failure is the input's (a client's to fix), not the device's.
    pub fn is_input(&self) -> bool {
        matches!(self, WorkError::Input { .. })
    }

    /// The message with its causes, `: `-joined (for a log line or an HTTP error body).
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
}

/// One job's work, runnable step by step on any worker thread.
///
/// Why this shape: the scheduler never needs to know which engine runs a job, only how
/// to run its next step and whether more remain. Vision and speech jobs are one step (a
/// whole inference through a `Backend`); a text-generation job is one decode step per
/// dispatch, so it can be preempted at every token boundary by a due frame or audio chunk.
pub trait Work: Send {
    /// Runs the next step.
    fn step(&mut self) -> Result<StepOutcome, WorkError>;

    /// The scheduler grants the next step `threads` intra-op threads (at least 1). Work
    /// whose engine cannot change its thread count ignores it (the default).
    fn grant_threads(&mut self, threads: usize) {
        let _ = threads;
    }

    /// The kind of the next step (e.g. `detect`, `recognize`, `encoder-layers`, `decode`),
    /// for a cost model that predicts each kind of step apart; `None` when every step of
    /// the job is alike (the default).
    fn next_step(&self) -> Option<&'static str> {
        None
    }

    /// How many parts of its input the rest of the job would read, once a step has found
    /// them and before it reads any (an OCR job's lines after its detection); `None`
    /// otherwise (the default).
    fn parts_left(&self) -> Option<usize> {
        None
    }

    /// The scheduler lets the job read only `n` (at least 1) of the parts
    /// [`Work::parts_left`] counted, those it is surest of. Work without parts ignores it
    /// (the default).
    fn keep_parts(&mut self, n: usize) {
        let _ = n;
    }

    /// Parts each of its later steps reads (1 by default).
    fn parts_per_step(&self) -> usize {
        1
    }

    /// About how many steps the whole job takes, where the work can tell before they run
    /// (a transcription: its log-mel, encoder and decoding steps, the decoding ones
    /// estimated from the audio's length); `None` when it cannot (the default). A hint:
    /// until a kind of step has been measured, its cost is predicted as the whole job's
    /// over this count — at every step, not only the first: a later kind of step priced
    /// at the whole job waits for a gap between a camera's frames that never comes.
    fn steps_hint(&self) -> Option<u32> {
        None
    }

    /// Whether every job of this work's class runs its calls on one engine, one call at a
    /// time (a shared batch decoder): another job of the class then waits for this step's
    /// call rather than computing beside it, and does not keep the step from taking every
    /// thread ([`crate::sched::exec::thread_grant`]). `false` by default.
    fn one_call_at_a_time(&self) -> bool {
        false
    }

    /// How many requests the next step could serve at once (a text step that decodes the
    /// next token of several in-flight requests in one batch); 1 for work that does not
    /// batch (the default).
    fn batchable(&self) -> usize {
        1
    }

    /// The scheduler lets the next step serve at most `rows` requests (at least 1), so it
    /// fits the time other due work leaves. Work that does not batch ignores it (the
    /// default).
    fn limit_batch(&mut self, rows: usize) {
        let _ = rows;
    }
}

impl<F> Work for F
where
    F: FnMut() -> Result<StepOutcome, WorkError> + Send,
{
    fn step(&mut self) -> Result<StepOutcome, WorkError> {
        self()
    }
}
