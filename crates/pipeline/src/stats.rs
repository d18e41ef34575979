//! Per-modality counts and latencies of a run, and the sliding windows the health loop
//! reads its P99 and throughput from.

use std::collections::VecDeque;

use mmsched_core::time::Nanos;

/// The four job kinds of a run, in report order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// OCR on a camera frame.
    Vision,
    /// Voice activity on a 32 ms chunk.
    Vad,
    /// Speech recognition of an utterance.
    Asr,
    /// A text request (all its tokens).
    Llm,
}

impl Kind {
    /// All four.
    pub const ALL: [Kind; 4] = [Kind::Vision, Kind::Vad, Kind::Asr, Kind::Llm];

    /// The class / modality name used in the policy, traces and the summary.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Vision => "vision",
            Kind::Vad => "vad",
            Kind::Asr => "asr",
            Kind::Llm => "llm",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// Counts and latencies of one job kind.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KindStats {
    /// Jobs created (inputs that reached a model).
    pub jobs: u64,
    /// Jobs finished.
    pub completed: u64,
    /// Finished after their deadline.
    pub deadline_misses: u64,
    /// Inputs the router or the health loop kept from the model.
    pub skipped: u64,
    /// Shed by admission (or pruned by battery saver).
    pub shed: u64,
    /// Steps that failed in the engine.
    pub failed: u64,
    /// Latency of every finished job (release → end), milliseconds.
    pub latencies_ms: Vec<f64>,
    /// The SLA, milliseconds.
    pub sla_ms: f64,
}

/// A window over the most recent `span_nanos` of samples.
#[derive(Debug, Clone)]
struct Window {
    span_nanos: Nanos,
    samples: VecDeque<(Nanos, f64)>,
}

impl Window {
    fn push(&mut self, at: Nanos, v: f64) {
        self.samples.push_back((at, v));
    }
    fn trim(&mut self, now: Nanos) {
        while self
            .samples
            .front()
            .is_some_and(|&(t, _)| t + self.span_nanos < now)
        {
            self.samples.pop_front();
        }
    }
}

/// Everything counted during a run.
#[derive(Debug, Clone)]
pub struct RunStats {
    kinds: [KindStats; 4],
    /// Per kind: latency / SLA of recent completions (sliding P99).
    recent_ratio: [Window; 4],
    /// Per kind: 1 for a served job, 0 for a miss, shed or failure (throughput).
    recent_served: [Window; 4],
}

impl RunStats {
    /// Empty stats with sliding windows of `window_nanos`.
    pub fn new(window_nanos: Nanos, sla_ms: [f64; 4]) -> Self {
        let w = Window {
            span_nanos: window_nanos,
            samples: VecDeque::new(),
        };
        let mut kinds: [KindStats; 4] = Default::default();
        for (k, sla) in kinds.iter_mut().zip(sla_ms) {
            k.sla_ms = sla;
        }
        Self {
            kinds,
            recent_ratio: [w.clone(), w.clone(), w.clone(), w.clone()],
            recent_served: [w.clone(), w.clone(), w.clone(), w],
        }
    }

    /// The counts of `kind`.
    pub fn kind(&self, kind: Kind) -> &KindStats {
        &self.kinds[kind.index()]
    }

    /// A new job of `kind`.
    pub fn job(&mut self, kind: Kind) {
        self.kinds[kind.index()].jobs += 1;
    }

    /// An input of `kind` kept from its model.
    pub fn skipped(&mut self, kind: Kind) {
        self.kinds[kind.index()].skipped += 1;
    }

    /// A job of `kind` shed at `now`.
    pub fn shed(&mut self, kind: Kind, now: Nanos) {
        self.kinds[kind.index()].shed += 1;
        self.recent_served[kind.index()].push(now, 0.0);
    }

    /// A job of `kind` whose engine failed at `now`.
    pub fn failed(&mut self, kind: Kind, now: Nanos) {
        self.kinds[kind.index()].failed += 1;
        self.recent_served[kind.index()].push(now, 0.0);
    }

    /// A job of `kind` released at `release` finished at `end`. Returns whether it was
    /// late (past `deadline`).
    pub fn completed(&mut self, kind: Kind, release: Nanos, deadline: Nanos, end: Nanos) -> bool {
        let k = &mut self.kinds[kind.index()];
        let latency_ms = end.saturating_sub(release) as f64 / 1e6;
        k.completed += 1;
        k.latencies_ms.push(latency_ms);
        let late = end > deadline;
        if late {
            k.deadline_misses += 1;
        }
        let sla_ms = (deadline.saturating_sub(release) as f64 / 1e6).max(1e-3);
        self.recent_ratio[kind.index()].push(end, latency_ms / sla_ms);
        self.recent_served[kind.index()].push(end, if late { 0.0 } else { 1.0 });
        late
    }

    /// Drops samples older than the window at `now`.
    pub fn trim(&mut self, now: Nanos) {
        for w in self
            .recent_ratio
            .iter_mut()
            .chain(self.recent_served.iter_mut())
        {
            w.trim(now);
        }
    }

    /// The worst sliding-window P99 of latency / SLA over the kinds with samples (1.0 =
    /// exactly at the SLA), or `None` without samples.
    pub fn worst_p99_ratio(&self) -> Option<f64> {
        self.recent_ratio
            .iter()
            .filter(|w| !w.samples.is_empty())
            .map(|w| {
                let mut v: Vec<f64> = w.samples.iter().map(|s| s.1).collect();
                quantile(&mut v, 0.99)
            })
            .reduce(f64::max)
    }

    /// Share of recent jobs served in time, over all kinds (1.0 without samples).
    pub fn served_fraction(&self) -> f64 {
        let (n, ok) = self
            .recent_served
            .iter()
            .flat_map(|w| w.samples.iter())
            .fold((0usize, 0.0), |(n, ok), s| (n + 1, ok + s.1));
        if n == 0 { 1.0 } else { ok / n as f64 }
    }
}

/// The `q` quantile (nearest rank) of `v`; NaN for an empty slice (the summary writes it
/// as `null`: no data, not 0 ms).
pub fn quantile(v: &mut [f64], q: f64) -> f64 {
    if v.is_empty() {
        f64::NAN
    } else {
        mmsched_sim::stats::quantile(v, q)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Nanos = 1_000_000;

    #[test]
    fn counts_misses_and_keeps_a_sliding_window() {
        let mut s = RunStats::new(1_000 * MS, [200.0, 60.0, 2000.0, 5000.0]);
        s.job(Kind::Vision);
        assert!(!s.completed(Kind::Vision, 0, 200 * MS, 100 * MS));
        s.job(Kind::Vision);
        assert!(s.completed(Kind::Vision, 0, 200 * MS, 300 * MS));
        assert_eq!(s.kind(Kind::Vision).deadline_misses, 1);
        assert_eq!(s.worst_p99_ratio(), Some(1.5));
        assert_eq!(s.served_fraction(), 0.5);
        s.trim(5_000 * MS);
        assert_eq!(s.worst_p99_ratio(), None);
        assert_eq!(s.served_fraction(), 1.0);
    }

    #[test]
    fn quantile_is_nearest_rank() {
        let mut v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(quantile(&mut v, 0.99), 99.0);
        assert_eq!(quantile(&mut v, 0.5), 50.0);
        assert!(quantile(&mut [], 0.5).is_nan());
    }
}
