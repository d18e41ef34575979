//! What a simulated run reports: per class, the keys of `mmsched run`'s `summary.json` with
//! their meaning there, plus what only a simulation knows (losses on the links, recovered
//! packets, stale answers, decimated frames).

use std::collections::BTreeMap;

use serde::Serialize;

/// Per job class outcome; the first keys are those of `mmsched run`'s `summary.json`,
/// with the same meaning: `offered = on_time + late + shed + skipped + dropped +
/// unfinished + failed`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ClassReport {
    /// Inputs that arrived (frames, chunks, utterances, requests; lost frames never arrive).
    pub offered: u64,
    /// Finished by their deadline.
    pub on_time: u64,
    /// Finished after it.
    pub late: u64,
    /// Kept from the model by a health action: the halved camera rate (`decimated`) or an
    /// open breaker (`broken`).
    pub dropped: u64,
    /// Still queued or running when the run (and its drain) ended.
    pub unfinished: u64,
    /// Failed: always 0 in a simulation (models do not fail here).
    pub failed: u64,
    /// On-time results per simulated second.
    pub on_time_per_s: f64,
    /// Jobs submitted to the scheduler (frames, chunks, utterances, requests).
    pub jobs: u64,
    /// Jobs finished.
    pub completed: u64,
    /// Finished after their deadline.
    pub deadline_misses: u64,
    /// Skipped by the router before submission (the image gate: nothing worth running).
    pub skipped: u64,
    /// Shed by admission (and pruned by the battery saver).
    pub shed: u64,
    /// P50 latency (release → finish), ms.
    pub p50_ms: f64,
    /// P99 latency, ms.
    pub p99_ms: f64,
    /// Mean latency, ms.
    pub mean_ms: f64,
    /// The stream's SLA, ms.
    pub sla_ms: f64,
    /// Of `shed`: pruned by the battery saver.
    pub pruned: u64,
    /// Inputs lost on the way (for audio: packets, concealed; the chunk still runs).
    pub lost: u64,
    /// Lost packets recovered by retransmission.
    pub recovered: u64,
    /// Of `dropped`: by an open breaker.
    pub broken: u64,
    /// Answers given from the cache, marked stale.
    pub stale: u64,
    /// Frames dropped by the camera-rate remedy (never submitted).
    pub decimated: u64,
    /// Nominal cost of one job on an idle device (profile median), ms.
    pub nominal_ms: f64,
}

impl ClassReport {
    /// Completed in time, over submitted jobs, percent (100 without jobs).
    pub fn on_time_pct(&self) -> f64 {
        if self.jobs == 0 {
            100.0
        } else {
            100.0 * (self.completed - self.deadline_misses) as f64 / self.jobs as f64
        }
    }

    /// Fills in the keys derived from the counts, after a run of `seconds`, and the
    /// latency figures from `latencies_ms`.
    pub(super) fn close(&mut self, seconds: f64, latencies_ms: &[f64]) {
        self.on_time = self.completed - self.deadline_misses;
        self.late = self.deadline_misses;
        self.dropped = self.decimated + self.broken;
        self.unfinished = self.jobs.saturating_sub(self.completed + self.shed);
        self.offered = self.jobs + self.skipped + self.dropped;
        self.on_time_per_s = if seconds > 0.0 {
            self.on_time as f64 / seconds
        } else {
            0.0
        };
        let mut scratch = latencies_ms.to_vec();
        self.p50_ms = mmsched_world::stats::quantile(&mut scratch, 0.5);
        self.p99_ms = mmsched_world::stats::quantile(&mut scratch, 0.99);
        self.mean_ms = mmsched_world::stats::mean(latencies_ms);
    }
}

/// Outcome of one simulated run.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct DesReport {
    /// Always true: this is a simulation.
    pub simulated: bool,
    /// Simulated time, seconds.
    pub seconds: f64,
    /// Per class (`vision`, `vad`, `asr`, `llm`).
    pub classes: BTreeMap<String, ClassReport>,
    /// Decision steps taken by the core.
    pub steps: u64,
    /// Every latency (release → finish) per class, ms, in completion order.
    #[serde(skip)]
    pub latencies_ms: BTreeMap<String, Vec<f64>>,
}

impl DesReport {
    /// Completed in time over submitted jobs, over all classes (1 when nothing was submitted).
    pub fn on_time_ratio(&self) -> f64 {
        let (j, ok) = self.classes.values().fold((0u64, 0u64), |(j, ok), r| {
            (j + r.jobs, ok + r.completed - r.deadline_misses)
        });
        if j == 0 { 1.0 } else { ok as f64 / j as f64 }
    }

    /// Inputs or jobs that produced no result (lost frames, concealed audio packets, shed
    /// or pruned jobs, breaker skips without a cached answer), and all inputs offered.
    pub fn drops(&self) -> (u64, u64) {
        self.classes.values().fold((0, 0), |(d, o), r| {
            let dropped = r.lost - r.recovered + r.shed + (r.broken - r.stale);
            let offered = r.offered + r.lost;
            (d + dropped, o + offered)
        })
    }
}
