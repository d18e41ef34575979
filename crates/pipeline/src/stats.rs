//! Per-modality counts and latencies of a run, and the sliding windows the health loop
//! reads its P99 and throughput from.

use std::collections::VecDeque;

use mmsched_core::Modality;
use mmsched_core::time::Nanos;

use crate::per_kind::PerKind;
use crate::request::Origin;
use crate::window::{Outcome, Recent};

/// The job kinds of a run, in report order: the four built-in classes, then the classes of
/// the user's own models ([`crate::classes`]).
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
    /// A model of the user's own: its class's number in [`crate::classes`].
    Model(u16),
}

impl Kind {
    /// The four built-in kinds.
    pub const ALL: [Kind; 4] = [Kind::Vision, Kind::Vad, Kind::Asr, Kind::Llm];

    /// Every kind of this process: the built-in four, then each class of the user's models
    /// registered so far.
    pub fn all() -> Vec<Kind> {
        let mut all = Kind::ALL.to_vec();
        all.extend(crate::classes::registered());
        all
    }

    /// The class / modality name used in the policy, traces and the summary.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Vision => "vision",
            Kind::Vad => "vad",
            Kind::Asr => "asr",
            Kind::Llm => "llm",
            Kind::Model(n) => crate::classes::class_name(n),
        }
    }

    /// Position in [`Kind::all`].
    pub fn index(self) -> usize {
        match self {
            Kind::Vision => 0,
            Kind::Vad => 1,
            Kind::Asr => 2,
            Kind::Llm => 3,
            Kind::Model(n) => 4 + usize::from(n),
        }
    }

    /// The model's name in messages (`OCR`, `VAD`, `speech recognition`, `text
    /// generation`, or the name the user gave the model).
    pub fn model_name(self) -> &'static str {
        match self {
            Kind::Vision => "OCR",
            Kind::Vad => "VAD",
            Kind::Asr => "speech recognition",
            Kind::Llm => "text generation",
            Kind::Model(n) => crate::classes::model_name(n),
        }
    }

    /// Parses a class name (`vision`, `vad`, `asr`, `llm`, or a registered model's class;
    /// `text` is accepted for `llm`, the name the HTTP flags used before).
    pub fn parse(name: &str) -> Option<Kind> {
        match name {
            "vision" => Some(Kind::Vision),
            "vad" => Some(Kind::Vad),
            "asr" => Some(Kind::Asr),
            "llm" | "text" => Some(Kind::Llm),
            other => crate::classes::find(other),
        }
    }

    /// The modality of its input.
    pub fn modality(self) -> Modality {
        match self {
            Kind::Vision => Modality::Image,
            Kind::Vad | Kind::Asr => Modality::Audio,
            Kind::Llm => Modality::Text,
            Kind::Model(n) => crate::classes::modality(n),
        }
    }

    /// Whether it is a model of the user's own.
    pub fn is_user_model(self) -> bool {
        matches!(self, Kind::Model(_))
    }
}

/// A health action that drops inputs before they become jobs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DropAction {
    /// Degraded: every other camera frame is dropped.
    CameraRateHalved,
    /// Critical: the heaviest branch's inputs are not run.
    CircuitBreaker,
}

impl DropAction {
    /// The name in the summary's `dropped_by`.
    pub fn as_str(self) -> &'static str {
        match self {
            DropAction::CameraRateHalved => "camera_rate_halved",
            DropAction::CircuitBreaker => "circuit_breaker",
        }
    }
}

/// The most distinct failure reasons kept per kind: a reason names a file or a cause, and
/// a run that fails every frame of a large folder must not grow without bound.
pub const MAX_FAILURE_REASONS: usize = 16;

/// The reason the failures past [`MAX_FAILURE_REASONS`] are counted under.
pub const OTHER_REASONS: &str = "other reasons";

/// Counts and latencies of one job kind. Every input ends in exactly one outcome:
/// `offered = on_time + late + shed + skipped + dropped + unfinished + failed`, where
/// `late = deadline_misses` and `on_time = completed − late` ([`KindStats::accounted`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KindStats {
    /// Inputs that arrived, whatever became of them.
    pub offered: u64,
    /// Jobs created (inputs admitted to the book: run, or shed by its admission).
    pub jobs: u64,
    /// Jobs finished.
    pub completed: u64,
    /// Finished after their deadline.
    pub deadline_misses: u64,
    /// Inputs the router kept from the model (nothing worth running).
    pub skipped: u64,
    /// Shed by admission (or pruned by battery saver).
    pub shed: u64,
    /// Inputs a health action dropped, by action.
    pub dropped_by: std::collections::BTreeMap<DropAction, u64>,
    /// Inputs still waiting or running when the run ended.
    pub unfinished: u64,
    /// Jobs that failed in the engine (or inputs that could not be read or decoded).
    pub failed: u64,
    /// Why they failed: each reason and how often ([`MAX_FAILURE_REASONS`] distinct ones;
    /// the rest are counted under [`OTHER_REASONS`]).
    pub failures: std::collections::BTreeMap<String, u64>,
    /// Latency of every finished job (release → end), milliseconds: each one while few,
    /// then a fixed-size histogram ([`crate::latency::Latencies`]).
    pub latencies_ms: crate::latency::Latencies,
    /// The SLA, milliseconds.
    pub sla_ms: f64,
    /// Results scored against a known truth.
    pub scored: u64,
    /// Of those, results that were wrong.
    pub wrong: u64,
    /// Of the wrong ones, those that came by their deadline.
    pub wrong_on_time: u64,
    /// The scored results' accuracies, summed (their mean is the kind's `accuracy`).
    pub accuracy_sum: f64,
}

impl KindStats {
    /// Inputs dropped by any health action.
    pub fn dropped(&self) -> u64 {
        self.dropped_by.values().sum()
    }

    /// Results within their deadline.
    pub fn on_time(&self) -> u64 {
        self.completed.saturating_sub(self.deadline_misses)
    }

    /// Results that count as right: every result but those scored wrong (a result whose
    /// truth is unknown is not held against it).
    pub fn correct(&self) -> u64 {
        self.completed.saturating_sub(self.wrong)
    }

    /// Right results within their deadline.
    pub fn correct_on_time(&self) -> u64 {
        self.on_time().saturating_sub(self.wrong_on_time)
    }

    /// The mean accuracy of the scored results; `None` when none was scored.
    pub fn accuracy(&self) -> Option<f64> {
        (self.scored > 0).then(|| self.accuracy_sum / self.scored as f64)
    }

    /// The sum of the outcomes, which equals `offered` when every input is accounted for.
    pub fn accounted(&self) -> u64 {
        self.on_time()
            + self.deadline_misses
            + self.shed
            + self.skipped
            + self.dropped()
            + self.unfinished
            + self.failed
    }
}

/// The outcomes of one kind's inputs from one origin (streams or outside clients), with
/// the same meaning as [`KindStats`]'s: `offered = on_time + late + shed + skipped +
/// dropped + unfinished + failed`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OriginCounts {
    /// Inputs that arrived.
    pub offered: u64,
    /// Finished by their deadline.
    pub on_time: u64,
    /// Finished after it.
    pub late: u64,
    /// Shed by admission (or pruned).
    pub shed: u64,
    /// Kept from the model by the router.
    pub skipped: u64,
    /// Dropped by a health action.
    pub dropped: u64,
    /// Still waiting or running at the end, or abandoned by their client.
    pub unfinished: u64,
    /// Failed in the model, or could not be decoded.
    pub failed: u64,
}

impl OriginCounts {
    /// The sum of the outcomes (equals `offered` when every input is accounted for).
    pub fn accounted(&self) -> u64 {
        self.on_time
            + self.late
            + self.shed
            + self.skipped
            + self.dropped
            + self.unfinished
            + self.failed
    }
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
    kinds: PerKind<KindStats>,
    /// The same outcomes split by origin ([`Origin::ALL`] order).
    origins: PerKind<[OriginCounts; 2]>,
    /// Per kind: latency / SLA of recent completions (sliding P99).
    recent_ratio: PerKind<Window>,
    /// Per kind: 1 for a served job, 0 for a miss, shed or failure (throughput).
    recent_served: PerKind<Window>,
    /// The outcomes of the last minutes (the summary's `window`).
    recent: Recent,
}

impl RunStats {
    /// Empty stats with sliding windows of `window_nanos`.
    pub fn new(window_nanos: Nanos, sla_ms: [f64; 4]) -> Self {
        let w = Window {
            span_nanos: window_nanos,
            samples: VecDeque::new(),
        };
        let mut kinds = PerKind::<KindStats>::default();
        for (kind, sla) in Kind::ALL.into_iter().zip(sla_ms) {
            kinds[kind].sla_ms = sla;
        }
        Self {
            kinds,
            origins: PerKind::default(),
            recent_ratio: PerKind::new(w.clone()),
            recent_served: PerKind::new(w),
            recent: Recent::new(crate::window::DEFAULT_WINDOW_NANOS),
        }
    }

    /// The SLA of `kind` (a class of the user's models) is `sla_ms`.
    pub fn with_sla(mut self, kind: Kind, sla_ms: f64) -> Self {
        self.kinds[kind].sla_ms = sla_ms;
        self
    }

    /// The kinds counted, in report order: the built-in four, and each class of the user's
    /// models that had an input.
    pub fn kinds(&self) -> Vec<Kind> {
        self.kinds
            .iter()
            .filter(|(k, s)| !k.is_user_model() || s.offered > 0)
            .map(|(k, _)| k)
            .collect()
    }

    /// The summary's window spans the last `span_nanos` (instead of 10 minutes).
    pub fn with_summary_window(mut self, span_nanos: Nanos) -> Self {
        self.recent = Recent::new(span_nanos);
        self
    }

    /// Moves the summary's window to `now` (the loop calls it once a pass).
    pub fn tick(&mut self, now: Nanos) {
        self.recent.tick(now);
    }

    /// The outcomes of the last minutes at `now`.
    pub fn window(&self, now: Nanos) -> mmsched_report::WindowSummary {
        self.recent.summary(now)
    }

    /// The counts of `kind`.
    pub fn kind(&self, kind: Kind) -> &KindStats {
        &self.kinds[kind]
    }

    /// The counts of `kind`'s inputs from `origin`.
    pub fn origin(&self, kind: Kind, origin: Origin) -> &OriginCounts {
        &self.origins[kind][origin as usize]
    }

    fn of(&mut self, kind: Kind, origin: Origin) -> &mut OriginCounts {
        &mut self.origins[kind][origin as usize]
    }

    /// An input of `kind` arrived from `origin` (a frame, a chunk, an utterance, a
    /// request).
    pub fn offered(&mut self, kind: Kind, origin: Origin) {
        self.kinds[kind].offered += 1;
        self.of(kind, origin).offered += 1;
        self.recent.count(kind, Outcome::Offered, 1);
    }

    /// A new job of `kind`.
    pub fn job(&mut self, kind: Kind) {
        self.kinds[kind].jobs += 1;
    }

    /// An input of `kind` the router kept from its model.
    pub fn skipped(&mut self, kind: Kind) {
        self.kinds[kind].skipped += 1;
        self.of(kind, Origin::Streams).skipped += 1;
        self.recent.count(kind, Outcome::Skipped, 1);
    }

    /// An input of `kind` dropped by the health action `by`.
    pub fn dropped(&mut self, kind: Kind, by: DropAction) {
        *self.kinds[kind].dropped_by.entry(by).or_default() += 1;
        self.of(kind, Origin::Streams).dropped += 1;
        self.recent.count(kind, Outcome::Dropped, 1);
    }

    /// `n` inputs of `kind` from `origin` still waiting or running when the run ended, or
    /// abandoned by their client.
    pub fn unfinished(&mut self, kind: Kind, origin: Origin, n: u64) {
        self.kinds[kind].unfinished += n;
        self.of(kind, origin).unfinished += n;
        self.recent.count(kind, Outcome::Unfinished, n);
    }

    /// An input of `kind` that failed before it became a job (it could not be read or
    /// decoded), and why.
    pub fn failed_input(&mut self, kind: Kind, reason: &str) {
        self.kinds[kind].failed += 1;
        self.of(kind, Origin::Streams).failed += 1;
        self.recent.count(kind, Outcome::Failed, 1);
        self.note_failure(kind, reason);
    }

    fn note_failure(&mut self, kind: Kind, reason: &str) {
        let reasons = &mut self.kinds[kind].failures;
        let key = if reasons.contains_key(reason) || reasons.len() < MAX_FAILURE_REASONS {
            reason
        } else {
            OTHER_REASONS
        };
        *reasons.entry(key.to_string()).or_default() += 1;
    }

    /// A job of `kind` from `origin` shed at `now`.
    pub fn shed(&mut self, kind: Kind, origin: Origin, now: Nanos) {
        self.kinds[kind].shed += 1;
        self.of(kind, origin).shed += 1;
        self.recent.count(kind, Outcome::Shed, 1);
        self.recent_served[kind].push(now, 0.0);
    }

    /// A job of `kind` from `origin` whose model failed at `now`, and why.
    pub fn failed(&mut self, kind: Kind, origin: Origin, now: Nanos, reason: &str) {
        self.kinds[kind].failed += 1;
        self.of(kind, origin).failed += 1;
        self.recent.count(kind, Outcome::Failed, 1);
        self.recent_served[kind].push(now, 0.0);
        self.note_failure(kind, reason);
    }

    /// A job of `kind` from `origin` released at `release` finished at `end`. Returns
    /// whether it was late (past `deadline`).
    pub fn completed(
        &mut self,
        kind: Kind,
        origin: Origin,
        release: Nanos,
        deadline: Nanos,
        end: Nanos,
    ) -> bool {
        let late = end > deadline;
        let o = self.of(kind, origin);
        if late {
            o.late += 1;
        } else {
            o.on_time += 1;
        }
        let k = &mut self.kinds[kind];
        let latency_ms = end.saturating_sub(release) as f64 / 1e6;
        k.completed += 1;
        k.latencies_ms.push(latency_ms);
        if late {
            k.deadline_misses += 1;
        }
        self.recent.result(kind, late, latency_ms);
        let sla_ms = (deadline.saturating_sub(release) as f64 / 1e6).max(1e-3);
        self.recent_ratio[kind].push(end, latency_ms / sla_ms);
        self.recent_served[kind].push(end, if late { 0.0 } else { 1.0 });
        late
    }

    /// A result of `kind` (already counted by [`RunStats::completed`]) scored against its
    /// truth.
    pub fn scored(&mut self, kind: Kind, score: crate::truth::Score, on_time: bool) {
        let k = &mut self.kinds[kind];
        k.scored += 1;
        k.accuracy_sum += score.accuracy;
        if !score.correct {
            k.wrong += 1;
            if on_time {
                k.wrong_on_time += 1;
            }
        }
    }

    /// Drops samples older than the window at `now`.
    pub fn trim(&mut self, now: Nanos) {
        for w in self
            .recent_ratio
            .values_mut()
            .chain(self.recent_served.values_mut())
        {
            w.trim(now);
        }
    }

    /// The worst sliding-window P99 of latency / SLA over the kinds with samples (1.0 =
    /// exactly at the SLA), or `None` without samples.
    pub fn worst_p99_ratio(&self) -> Option<f64> {
        self.recent_ratio
            .values()
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
            .values()
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
        mmsched_world::stats::quantile(v, q)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Nanos = 1_000_000;

    #[test]
    fn counts_misses_and_keeps_a_sliding_window() {
        let mut s = RunStats::new(1_000 * MS, [200.0, 60.0, 2000.0, 5000.0]);
        let o = Origin::Streams;
        s.job(Kind::Vision);
        assert!(!s.completed(Kind::Vision, o, 0, 200 * MS, 100 * MS));
        s.job(Kind::Vision);
        assert!(s.completed(Kind::Vision, o, 0, 200 * MS, 300 * MS));
        assert_eq!(s.kind(Kind::Vision).deadline_misses, 1);
        assert_eq!(s.worst_p99_ratio(), Some(1.5));
        assert_eq!(s.served_fraction(), 0.5);
        s.trim(5_000 * MS);
        assert_eq!(s.worst_p99_ratio(), None);
        assert_eq!(s.served_fraction(), 1.0);
    }

    #[test]
    fn every_outcome_is_counted_once() {
        let mut s = RunStats::new(1_000 * MS, [200.0, 60.0, 2000.0, 5000.0]);
        let k = Kind::Vision;
        let (o, api) = (Origin::Streams, Origin::Api);
        for _ in 0..7 {
            s.offered(k, o);
        }
        s.offered(k, api);
        s.offered(k, api);
        // Two jobs: on time (from a client) and late.
        s.job(k);
        s.completed(k, api, 0, 200 * MS, 100 * MS);
        s.job(k);
        s.completed(k, o, 0, 200 * MS, 300 * MS);
        // One shed (a client's), one failed in the model, one still running at the end.
        s.job(k);
        s.shed(k, api, 0);
        s.job(k);
        s.failed(k, o, 0, "the engine failed");
        s.job(k);
        s.unfinished(k, o, 1);
        // Four never became jobs: skipped, dropped twice, undecodable.
        s.skipped(k);
        s.dropped(k, DropAction::CameraRateHalved);
        s.dropped(k, DropAction::CircuitBreaker);
        s.failed_input(k, "cannot read frame 7");
        let v = s.kind(k);
        assert_eq!((v.on_time(), v.deadline_misses, v.dropped()), (1, 1, 2));
        assert_eq!(v.accounted(), v.offered);
        assert_eq!(v.jobs, 5);
        for origin in Origin::ALL {
            let c = s.origin(k, origin);
            assert_eq!(c.accounted(), c.offered, "{origin:?}");
        }
        assert_eq!(s.origin(k, api).offered, 2);
        assert_eq!(s.origin(k, api).on_time, 1);
        // An input not yet accounted for shows as a difference.
        s.offered(k, o);
        assert_eq!(s.kind(k).accounted() + 1, s.kind(k).offered);
        assert_eq!(DropAction::CameraRateHalved.as_str(), "camera_rate_halved");
        let reasons: Vec<(&str, u64)> = s
            .kind(k)
            .failures
            .iter()
            .map(|(r, n)| (r.as_str(), *n))
            .collect();
        assert_eq!(
            reasons,
            [("cannot read frame 7", 1), ("the engine failed", 1)]
        );
    }

    #[test]
    fn failure_reasons_are_kept_up_to_a_bound() {
        let mut s = RunStats::new(1_000 * MS, [200.0, 60.0, 2000.0, 5000.0]);
        for i in 0..40 {
            s.failed_input(Kind::Vision, &format!("frame {i} is gone"));
        }
        s.failed_input(Kind::Vision, "frame 0 is gone");
        let f = &s.kind(Kind::Vision).failures;
        assert_eq!(f.len(), MAX_FAILURE_REASONS + 1);
        assert_eq!(
            f["frame 0 is gone"], 2,
            "a reason already kept keeps counting"
        );
        assert_eq!(f[OTHER_REASONS], 40 - MAX_FAILURE_REASONS as u64);
        assert_eq!(f.values().sum::<u64>(), s.kind(Kind::Vision).failed);
    }

    #[test]
    fn quantile_is_nearest_rank() {
        let mut v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(quantile(&mut v, 0.99), 99.0);
        assert_eq!(quantile(&mut v, 0.5), 50.0);
        assert!(quantile(&mut [], 0.5).is_nan());
    }
}
