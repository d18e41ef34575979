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

/// Why a step failed.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct WorkError(pub String);

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
}

impl<F> Work for F
where
    F: FnMut() -> Result<StepOutcome, WorkError> + Send,
{
    fn step(&mut self) -> Result<StepOutcome, WorkError> {
        self()
    }
}
