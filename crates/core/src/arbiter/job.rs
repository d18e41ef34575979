//! What the arbiter knows about one job.

use core::fmt;

use crate::Modality;
use crate::time::Nanos;

/// Names one job (unique among the jobs a scheduler has in flight).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct JobId(pub u64);

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "job #{}", self.0)
    }
}

/// A job class (`vision`, `vad`, `asr`, `llm`, …) registered with an
/// [`super::Arbiter`]: a small number so that the hot path never compares strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ClassId(pub u32);

/// One runnable job as the arbiter sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Job {
    /// Its id.
    pub id: JobId,
    /// Its class (from [`super::Arbiter::class`]): decides battery-saver pruning.
    pub class: ClassId,
    /// Its modality: recorded for traces, never used in any decision.
    pub modality: Modality,
    /// Absolute deadline on the device timeline.
    pub deadline_nanos: Nanos,
    /// Predicted execution cost (from the latency model, S8).
    pub predicted_cost_nanos: Nanos,
    /// Semantic importance γ ∈ [0, 1] (values outside are clamped, NaN counts as 0).
    pub importance: f64,
    /// A later step of work already under way (a text request past its first step).
    /// Shedding it would throw away the steps before it along with the result they were
    /// for, so admission never sheds it: it sheds uncommitted jobs in its place.
    pub committed: bool,
}
