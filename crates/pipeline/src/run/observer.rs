//! How a run reports as it goes: progress once a second, every job, skip, shed, health
//! evaluation and result, to an [`Observer`] (the command line's display, the metrics
//! endpoint, the `--results` stream).

use mmsched_core::ldti::Level;

use mmsched_report::{RunSeries, RunSummary};

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

/// A health evaluation and what stood at it: what a caller that cuts a run into windows
/// (the soak) reads.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Evaluation {
    /// Seconds since the inputs started.
    pub t_s: f64,
    /// The index.
    pub ldti: f64,
    /// Its level.
    pub level: Level,
    /// Whether any health remedy is in force after it.
    pub remedies_in_force: bool,
    /// Camera frames and microphone packets lost on their links so far.
    pub lost_in_transport: u64,
    /// Of those, packets recovered by retransmission so far.
    pub recovered: u64,
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
    /// A job failed (its model failed, or its input could not be run).
    fn failed(&mut self, _kind: &str, _error: &mmsched_runtime::sched::WorkError) {}
    /// A new policy now decides, with its ETag when it came from the policy API.
    fn policy_applied(&mut self, _etag: Option<&str>) {}
    /// A health evaluation.
    fn ldti(&mut self, _value: f64, _level: Level) {}
    /// A health evaluation, with the time and what stood at it.
    fn evaluation(&mut self, _e: &Evaluation) {}
    /// An input the health loop kept from its model `by` a remedy (also told as a skip);
    /// `answered`: a cached answer went out in its place.
    fn kept_from_model(&mut self, _kind: &str, _by: crate::stats::DropAction, _answered: bool) {}
    /// The platform's signals over the last second: the neighbours' CPU share, mmsched's
    /// own run-queue wait (where the machine offers them).
    fn platform(&mut self, _figures: &mmsched_runtime::platform::signals::PlatformFigures) {}
    /// A result: OCR lines, a speech segment, a transcript, an answer (see
    /// [`crate::results`]).
    fn result(&mut self, _record: &ResultRecord) {}
    /// The report so far of a run still going: every `--report-every` and on SIGHUP
    /// ([`crate::RunConfig::report_every_nanos`], [`crate::RunConfig::report_now`]).
    fn report(&mut self, _summary: &RunSummary, _series: &RunSeries) {}
    /// The resource groups exist: clean them up if the process is interrupted.
    #[cfg(target_os = "linux")]
    fn cgroups(&mut self, _handle: mmsched_runtime::platform::cgroup::CgroupHandle) {}
}

/// An observer that ignores everything.
#[derive(Debug, Default)]
pub struct Quiet;
impl Observer for Quiet {}

/// Several observers, each told everything in turn.
#[derive(Default)]
pub struct Tee(pub Vec<Box<dyn Observer + Send>>);

impl std::fmt::Debug for Tee {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Tee").field(&self.0.len()).finish()
    }
}

impl Observer for Tee {
    fn status(&mut self, line: &str) {
        self.0.iter_mut().for_each(|o| o.status(line));
    }
    fn progress(&mut self, p: &Progress) {
        self.0.iter_mut().for_each(|o| o.progress(p));
    }
    fn job(&mut self, kind: &str, latency_ms: f64, missed: bool) {
        self.0
            .iter_mut()
            .for_each(|o| o.job(kind, latency_ms, missed));
    }
    fn skip(&mut self, kind: &str) {
        self.0.iter_mut().for_each(|o| o.skip(kind));
    }
    fn shed(&mut self, kind: &str) {
        self.0.iter_mut().for_each(|o| o.shed(kind));
    }
    fn failed(&mut self, kind: &str, error: &mmsched_runtime::sched::WorkError) {
        self.0.iter_mut().for_each(|o| o.failed(kind, error));
    }
    fn policy_applied(&mut self, etag: Option<&str>) {
        self.0.iter_mut().for_each(|o| o.policy_applied(etag));
    }
    fn ldti(&mut self, value: f64, level: Level) {
        self.0.iter_mut().for_each(|o| o.ldti(value, level));
    }
    fn evaluation(&mut self, e: &Evaluation) {
        self.0.iter_mut().for_each(|o| o.evaluation(e));
    }
    fn kept_from_model(&mut self, kind: &str, by: crate::stats::DropAction, answered: bool) {
        self.0
            .iter_mut()
            .for_each(|o| o.kept_from_model(kind, by, answered));
    }
    fn platform(&mut self, figures: &mmsched_runtime::platform::signals::PlatformFigures) {
        self.0.iter_mut().for_each(|o| o.platform(figures));
    }
    fn result(&mut self, record: &ResultRecord) {
        self.0.iter_mut().for_each(|o| o.result(record));
    }
    fn report(&mut self, summary: &RunSummary, series: &RunSeries) {
        self.0.iter_mut().for_each(|o| o.report(summary, series));
    }
    #[cfg(target_os = "linux")]
    fn cgroups(&mut self, handle: mmsched_runtime::platform::cgroup::CgroupHandle) {
        self.0.iter_mut().for_each(|o| o.cgroups(handle.clone()));
    }
}
