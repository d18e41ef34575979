//! Job cost prediction: a prior per class (from the device latency profile, S8) corrected
//! online by what jobs of the class actually took on this device.

use std::collections::VecDeque;

use mmsched_core::arbiter::ClassId;
use mmsched_core::time::Nanos;

/// Predicts what the next job of a class will cost: the 95th percentile of the last
/// `window` measured costs, or the prior until `min_samples` measurements exist.
///
/// Why a high percentile and not the mean: admission asks "does the predicted demand fit
/// before the deadlines"; predicting with the mean admits work that misses half the time.
///
/// Measurements older than `max_age_nanos` are no longer trusted. Without that, one slow
/// burst could make a class look too expensive to ever admit again: its jobs would all be
/// shed, no new measurement would come, and the prediction would never recover. Once the
/// fresh measurements are too few, the prediction is the lower of the prior and the P95
/// of the stale ones: a class never looks dearer than its prior for want of fresh
/// figures, and one measured cheaper than its prior (a profile taken under load) is not
/// priced at the prior again because it ran seldom (a transcription every few seconds
/// would otherwise be priced at a pessimistic prior most of the time).
#[derive(Debug, Clone)]
pub struct CostModel {
    window: usize,
    min_samples: usize,
    max_age_nanos: Nanos,
    classes: Vec<ClassCost>,
}

#[derive(Debug, Clone, Default)]
struct ClassCost {
    prior_nanos: Nanos,
    /// (when measured, cost).
    recent: VecDeque<(Nanos, Nanos)>,
}

impl CostModel {
    /// A model keeping the last `window` (≥ 1) costs per class for at most
    /// `max_age_nanos`, trusting them from `min_samples` (≥ 1) on.
    pub fn new(window: usize, min_samples: usize, max_age_nanos: Nanos) -> Self {
        let window = window.max(1);
        Self {
            window,
            min_samples: min_samples.clamp(1, window),
            max_age_nanos,
            classes: Vec::new(),
        }
    }

    fn entry(&mut self, class: ClassId) -> &mut ClassCost {
        let i = class.0 as usize;
        if self.classes.len() <= i {
            self.classes.resize_with(i + 1, ClassCost::default);
        }
        &mut self.classes[i]
    }

    /// Sets the prior cost of `class` (e.g. the profile's P95 for its model and input).
    pub fn set_prior(&mut self, class: ClassId, prior_nanos: Nanos) {
        self.entry(class).prior_nanos = prior_nanos;
    }

    /// Records a cost of one job (or one step) of `class` measured at `at_nanos`.
    pub fn record(&mut self, class: ClassId, cost_nanos: Nanos, at_nanos: Nanos) {
        let window = self.window;
        let e = self.entry(class);
        if e.recent.len() == window {
            e.recent.pop_front();
        }
        e.recent.push_back((at_nanos, cost_nanos));
    }

    /// The predicted cost of the next job of `class` at `now_nanos`.
    pub fn predict(&self, class: ClassId, now_nanos: Nanos) -> Nanos {
        let Some(e) = self.classes.get(class.0 as usize) else {
            return 0;
        };
        let fresh =
            |&&(at, _): &&(Nanos, Nanos)| at.saturating_add(self.max_age_nanos) >= now_nanos;
        if e.recent.iter().filter(fresh).count() >= self.min_samples {
            return p95(e.recent.iter().filter(fresh).map(|r| r.1));
        }
        if e.recent.len() >= self.min_samples {
            return e.prior_nanos.min(p95(e.recent.iter().map(|r| r.1)));
        }
        e.prior_nanos
    }
}

/// The nearest-rank 95th percentile of `costs` (0 for none).
fn p95(costs: impl Iterator<Item = Nanos>) -> Nanos {
    let mut sorted: Vec<Nanos> = costs.collect();
    if sorted.is_empty() {
        return 0;
    }
    sorted.sort_unstable();
    let rank = (sorted.len() * 95).div_ceil(100).max(1);
    sorted[rank - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prior_until_enough_samples_then_p95_of_the_window() {
        let mut m = CostModel::new(20, 5, 1_000);
        let c = ClassId(3);
        assert_eq!(m.predict(c, 0), 0, "unknown class costs nothing known");
        m.set_prior(c, 12_000_000);
        for v in 1..=4 {
            m.record(c, v, 0);
        }
        assert_eq!(m.predict(c, 0), 12_000_000);
        m.record(c, 5, 0);
        assert_eq!(m.predict(c, 0), 5);
        for v in 6..=40 {
            m.record(c, v, 10);
        }
        // Window holds 21..=40: P95 (nearest rank 19 of 20) is 39.
        assert_eq!(m.predict(c, 10), 39);
        // Long after the last measurement: the stale P95, being below the prior.
        assert_eq!(m.predict(c, 2_000), 39);
    }

    #[test]
    fn stale_measurements_never_price_a_class_above_its_prior() {
        let mut m = CostModel::new(8, 3, 1_000);
        let c = ClassId(0);
        m.set_prior(c, 100);
        for at in 0..4 {
            m.record(c, 500, at);
        }
        assert_eq!(m.predict(c, 10), 500, "fresh: what was measured");
        assert_eq!(m.predict(c, 5_000), 100, "stale and dearer: the prior");
        let mut cheap = CostModel::new(8, 3, 1_000);
        cheap.set_prior(c, 100);
        for at in 0..2 {
            cheap.record(c, 20, at);
        }
        assert_eq!(
            cheap.predict(c, 5_000),
            100,
            "too few stale figures: the prior"
        );
        cheap.record(c, 30, 2);
        assert_eq!(cheap.predict(c, 5_000), 30, "stale and cheaper: their P95");
    }
}
