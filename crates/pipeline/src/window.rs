//! The outcomes of the last minutes, in fixed memory: the summary's `window` beside its
//! since-start figures. The window is a ring of steps (a tenth of its span, at most a
//! minute); each step holds per kind the outcome counts and a coarse latency histogram,
//! and the oldest step is dropped as a new one starts.

use std::collections::VecDeque;

use mmsched_core::time::Nanos;
use mmsched_report::{WindowModality, WindowSummary};

use crate::latency::LogHistogram;
use crate::stats::Kind;

/// The summary's window unless asked otherwise: the last 10 minutes.
pub const DEFAULT_WINDOW_NANOS: Nanos = 600_000_000_000;

/// The longest step of the window.
const MAX_STEP_NANOS: Nanos = 60_000_000_000;

/// Width of the window's latency buckets (5 %): a coarse figure, and about 520 counters per
/// kind and step.
const BUCKET_RATIO: f64 = 1.05;

/// An outcome, as the window counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// An input arrived.
    Offered,
    /// A result within its deadline.
    OnTime,
    /// A result after it.
    Late,
    /// Shed by admission.
    Shed,
    /// Kept from the model by the router.
    Skipped,
    /// Dropped by a health action.
    Dropped,
    /// Failed.
    Failed,
    /// Abandoned or left open.
    Unfinished,
}

#[derive(Debug, Clone, Default)]
struct Counts {
    n: [u64; 8],
    latencies: Option<LogHistogram>,
}

#[derive(Debug, Clone)]
struct Step {
    start: Nanos,
    kinds: crate::per_kind::PerKind<Counts>,
}

/// The last `span` of outcomes, per kind.
#[derive(Debug, Clone)]
pub struct Recent {
    span_nanos: Nanos,
    step_nanos: Nanos,
    steps: VecDeque<Step>,
}

impl Recent {
    /// A window over the last `span_nanos` (at least a second).
    pub fn new(span_nanos: Nanos) -> Self {
        let span_nanos = span_nanos.max(1_000_000_000);
        Self {
            span_nanos,
            step_nanos: (span_nanos / 10).clamp(1, MAX_STEP_NANOS),
            steps: VecDeque::new(),
        }
    }

    /// Moves the window to `now`: a new step when the current one is over, and the steps
    /// that ended before the window dropped (so it covers at least its span, at most a
    /// step more, once the run is that long).
    pub fn tick(&mut self, now: Nanos) {
        let next = match self.steps.back() {
            None => Some(now),
            Some(s) if now >= s.start + self.step_nanos => {
                // Steps stay aligned to the first one, over any gap.
                Some(now - (now - s.start) % self.step_nanos)
            }
            Some(_) => None,
        };
        if let Some(start) = next {
            self.steps.push_back(Step {
                start,
                kinds: Default::default(),
            });
        }
        while self
            .steps
            .front()
            .is_some_and(|s| s.start + self.step_nanos + self.span_nanos <= now)
        {
            self.steps.pop_front();
        }
    }

    fn counts(&mut self, kind: Kind) -> Option<&mut Counts> {
        self.steps.back_mut().map(|s| &mut s.kinds[kind])
    }

    /// Counts an outcome of `kind` in the current step (nothing before the first tick).
    pub fn count(&mut self, kind: Kind, outcome: Outcome, n: u64) {
        if let Some(c) = self.counts(kind) {
            c.n[outcome as usize] += n;
        }
    }

    /// Counts a result of `kind` with its latency.
    pub fn result(&mut self, kind: Kind, late: bool, latency_ms: f64) {
        if let Some(c) = self.counts(kind) {
            let outcome = if late { Outcome::Late } else { Outcome::OnTime };
            c.n[outcome as usize] += 1;
            c.latencies
                .get_or_insert_with(|| LogHistogram::new(BUCKET_RATIO))
                .record(latency_ms);
        }
    }

    /// The window's summary at `now`.
    pub fn summary(&self, now: Nanos) -> WindowSummary {
        let modality = |kind: Kind| {
            let mut n = [0u64; 8];
            let mut hist: Option<LogHistogram> = None;
            // The steps that end inside the window at `now`.
            let inside = self
                .steps
                .iter()
                .filter(|s| s.start + self.step_nanos + self.span_nanos > now);
            for s in inside {
                let c = &s.kinds[kind];
                for (a, b) in n.iter_mut().zip(c.n) {
                    *a += b;
                }
                if let Some(h) = &c.latencies {
                    hist.get_or_insert_with(|| LogHistogram::new(BUCKET_RATIO))
                        .merge(h);
                }
            }
            let q = |p: f64| hist.as_ref().map_or(f64::NAN, |h| h.quantile(p));
            let at = |o: Outcome| n[o as usize];
            let offered = at(Outcome::Offered);
            WindowModality {
                offered,
                on_time: at(Outcome::OnTime),
                late: at(Outcome::Late),
                shed: at(Outcome::Shed),
                skipped: at(Outcome::Skipped),
                dropped: at(Outcome::Dropped),
                failed: at(Outcome::Failed),
                unfinished: at(Outcome::Unfinished),
                on_time_share: if offered == 0 {
                    f64::NAN
                } else {
                    at(Outcome::OnTime) as f64 / offered as f64
                },
                p50_ms: q(0.5),
                p99_ms: q(0.99),
            }
        };
        WindowSummary {
            minutes: self.span_nanos as f64 / 60e9,
            seconds: self
                .steps
                .iter()
                .find(|s| s.start + self.step_nanos + self.span_nanos > now)
                .map_or(0.0, |s| now.saturating_sub(s.start) as f64 / 1e9),
            vision: modality(Kind::Vision),
            vad: modality(Kind::Vad),
            asr: modality(Kind::Asr),
            llm: modality(Kind::Llm),
        }
    }

    /// Steps held (at most eleven: the memory bound).
    pub fn steps(&self) -> usize {
        self.steps.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Nanos = 1_000_000_000;

    #[test]
    fn the_window_forgets_what_is_older_than_its_span() {
        let mut w = Recent::new(600 * S);
        // Two hours of one VAD chunk a second, on time, the first hour 10 ms, then 30 ms;
        // the second hour sheds every other chunk.
        for t in 0..7200u64 {
            w.tick(t * S);
            w.count(Kind::Vad, Outcome::Offered, 1);
            if t >= 3600 && t % 2 == 0 {
                w.count(Kind::Vad, Outcome::Shed, 1);
            } else {
                w.result(Kind::Vad, false, if t < 3600 { 10.0 } else { 30.0 });
            }
            assert!(w.steps() <= 11, "{}", w.steps());
        }
        let s = w.summary(7200 * S);
        assert_eq!(s.seconds, 600.0);
        assert_eq!(s.minutes, 10.0);
        let vad = &s.vad;
        assert_eq!(vad.offered, s.seconds as u64);
        assert_eq!(vad.on_time + vad.shed, vad.offered);
        assert!(
            (vad.on_time_share - 0.5).abs() < 0.01,
            "{}",
            vad.on_time_share
        );
        assert!((vad.p50_ms - 30.0).abs() / 30.0 < 0.05, "{}", vad.p50_ms);
        assert!(s.vision.on_time_share.is_nan());
        assert!(s.vision.p99_ms.is_nan());
    }

    #[test]
    fn a_gap_leaves_an_empty_window() {
        let mut w = Recent::new(60 * S);
        w.count(Kind::Asr, Outcome::Offered, 1);
        w.tick(0);
        w.count(Kind::Asr, Outcome::Offered, 1);
        w.tick(3600 * S);
        let s = w.summary(3600 * S);
        assert_eq!(s.asr.offered, 0);
        assert_eq!(w.steps(), 1);
    }
}
