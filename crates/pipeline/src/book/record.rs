//! One record per job that ended, whatever its end: what the bound on a run (and any
//! later analysis) needs to know of it without the run's trace.

use mmsched_core::time::Nanos;
use serde::Serialize;

use crate::request::Origin;
use crate::stats::Kind;

/// How a job ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum JobEnd {
    /// Its last step finished by its deadline.
    OnTime,
    /// Its last step finished after its deadline.
    Late,
    /// Shed (or pruned) by the scheduler.
    Shed,
    /// A step failed.
    Failed,
    /// Still waiting or running when the runtime stopped, or abandoned by its client.
    Unfinished,
}

/// One job of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JobRecord {
    /// Its kind (`vision`, `vad`, `asr`, `llm`).
    pub kind: Kind,
    /// Streams or an outside client.
    pub origin: Origin,
    /// When it was released, device nanoseconds.
    pub release_nanos: Nanos,
    /// When it was due.
    pub deadline_nanos: Nanos,
    /// The importance it was scheduled with (its last step's).
    pub importance: f64,
    /// The quality rung it ran at (none for a kind without rungs).
    pub rung: Option<String>,
    /// Steps it ran.
    pub steps: u32,
    /// Time its steps took on their workers, summed, nanoseconds.
    pub work_nanos: Nanos,
    /// Tokens a text request made.
    pub tokens: u32,
    /// How it ended.
    pub end: JobEnd,
    /// Whether its result was right, where its truth was known.
    pub correct: Option<bool>,
}

impl serde::Serialize for Kind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl serde::Serialize for Origin {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}
