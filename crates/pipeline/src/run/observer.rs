//! How a run reports as it goes: progress once a second, every job, skip, shed, health
//! evaluation and result, to an [`Observer`] (the command line's display, the metrics
//! endpoint, the `--results` stream).

use mmsched_core::ldti::Level;

use crate::results::ResultRecord;

/// What the loop reports as it goes.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// Seconds since the inputs started.
    pub t_s: f64,
    /// Seconds the inputs run for.
    pub duration_s: f64,
    /// Per kind (vision, vad, asr, llm): completed, deadline misses, skipped, shed.
    pub counts: [(u64, u64, u64, u64); 4],
    /// Per kind: completions per second over the last second.
    pub rates_hz: [f64; 4],
    /// Current LDTI and level.
    pub ldti: f64,
    /// Its level.
    pub level: Level,
}

/// Who watches a run: the command line's progress display, the metrics endpoint.
pub trait Observer {
    /// A status line (loading models, platform notes).
    fn status(&mut self, _line: &str) {}
    /// Once a second.
    fn progress(&mut self, _p: &Progress) {}
    /// A job finished (`kind` as in the summary: vision, vad, asr, llm).
    fn job(&mut self, _kind: &str, _latency_ms: f64, _missed: bool) {}
    /// An input was skipped by the router or the health loop.
    fn skip(&mut self, _kind: &str) {}
    /// A job was shed by admission.
    fn shed(&mut self, _kind: &str) {}
    /// A health evaluation.
    fn ldti(&mut self, _value: f64, _level: Level) {}
    /// A result: OCR lines, a speech segment, a transcript, an answer (see
    /// [`crate::results`]).
    fn result(&mut self, _record: &ResultRecord) {}
    /// The resource groups exist: clean them up if the process is interrupted.
    #[cfg(target_os = "linux")]
    fn cgroups(&mut self, _handle: mmsched_runtime::platform::cgroup::CgroupHandle) {}
}

/// An observer that ignores everything.
#[derive(Debug, Default)]
pub struct Quiet;
impl Observer for Quiet {}
