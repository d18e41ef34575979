//! Job cost prediction: a prior per class (from the device latency profile, S8) corrected
//! online by what jobs of the class actually took on this device.

use std::collections::{HashMap, VecDeque};

use mmsched_core::arbiter::ClassId;
use mmsched_core::time::Nanos;

use super::dist::CostDist;

/// What the next job (or step) of a class will cost: a distribution ([`CostDist`]) for
/// decisions that weigh chances, and one figure, its 95th percentile, for the demand
/// tests that add costs up.
///
/// Until `min_samples` fresh measurements exist, the prior stands in — the device
/// profile's percentiles as a log-normal — but each measurement moves it at once: the
/// first ones re-centre the prior on their geometric mean, keeping its spread, so a prior
/// taken on another machine gives way within a few jobs instead of deciding until the
/// window fills (a class always shed by a pessimistic prior would never be measured).
///
/// Why a high percentile for the single figure and not the mean: admission asks "does the
/// predicted demand fit before the deadlines"; predicting with the mean admits work that
/// misses half the time.
///
/// Measurements older than `max_age_nanos` are no longer trusted. Without that, one slow
/// burst could make a class look too expensive to ever admit again: its jobs would all be
/// shed, no new measurement would come, and the prediction would never recover. Without
/// fresh measurements, the prediction is the lower (by P95) of the prior and the stale
/// ones (their own distribution, or the prior's shape around them when they are too few
/// for one): a class never looks dearer than its prior for want of fresh figures, and one
/// measured cheaper than its prior (a profile taken under load) is not priced at the
/// prior again because it ran seldom (a transcription every few seconds would otherwise
/// be priced at a pessimistic prior most of the time).
#[derive(Debug, Clone)]
pub struct CostModel {
    window: usize,
    min_samples: usize,
    max_age_nanos: Nanos,
    /// By class id: sparse (the book numbers its cost keys from a million up, and a vector
    /// indexed by id held a million empty entries, 80 MB).
    classes: HashMap<ClassId, ClassCost>,
}

/// A class's prior: its distribution until measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Prior {
    /// Median, nanoseconds.
    pub p50_nanos: Nanos,
    /// 95th percentile, nanoseconds.
    pub p95_nanos: Nanos,
}

impl Prior {
    /// A prior with these percentiles.
    pub fn new(p50_nanos: Nanos, p95_nanos: Nanos) -> Self {
        Self {
            p50_nanos,
            p95_nanos: p95_nanos.max(p50_nanos),
        }
    }

    /// A prior known by one figure only (taken as its median and P95 alike: the
    /// narrowest spread).
    pub fn point(nanos: Nanos) -> Self {
        Self::new(nanos, nanos)
    }

    fn dist(self) -> CostDist {
        CostDist::from_percentiles(self.p50_nanos, self.p95_nanos)
    }
}

#[derive(Debug, Clone, Default)]
struct ClassCost {
    prior: Option<Prior>,
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
            classes: HashMap::new(),
        }
    }

    fn entry(&mut self, class: ClassId) -> &mut ClassCost {
        self.classes.entry(class).or_default()
    }

    /// Sets the prior of `class` (e.g. the profile's percentiles for its model and input).
    pub fn set_prior(&mut self, class: ClassId, prior: Prior) {
        self.entry(class).prior = Some(prior);
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

    /// Fresh measurements of `class` at `now_nanos` (how many decide whether they are
    /// trusted alone).
    pub fn fresh(&self, class: ClassId, now_nanos: Nanos) -> usize {
        self.classes.get(&class).map_or(0, |e| {
            e.recent
                .iter()
                .filter(|&&(at, _)| at.saturating_add(self.max_age_nanos) >= now_nanos)
                .count()
        })
    }

    /// Measurements of `class` kept, fresh or not.
    pub fn measured(&self, class: ClassId) -> usize {
        self.classes.get(&class).map_or(0, |e| e.recent.len())
    }

    /// The distribution of the next cost of `class` at `now_nanos` (`None`: nothing is
    /// known of it, neither a prior nor a measurement).
    pub fn dist(&self, class: ClassId, now_nanos: Nanos) -> Option<CostDist> {
        let e = self.classes.get(&class)?;
        let fresh: Vec<Nanos> = e
            .recent
            .iter()
            .filter(|&&(at, _)| at.saturating_add(self.max_age_nanos) >= now_nanos)
            .map(|r| r.1)
            .collect();
        let prior = e.prior.map(Prior::dist);
        if fresh.len() >= self.min_samples {
            return CostDist::measured(fresh);
        }
        if !fresh.is_empty() {
            let sigma = prior.as_ref().map_or(0.0, CostDist::sigma);
            return CostDist::centred_on(&fresh, sigma);
        }
        let all: Vec<Nanos> = e.recent.iter().map(|r| r.1).collect();
        let stale = if all.len() >= self.min_samples {
            CostDist::measured(all)
        } else {
            let sigma = prior.as_ref().map_or(0.0, CostDist::sigma);
            CostDist::centred_on(&all, sigma)
        };
        match (stale, prior) {
            (Some(s), Some(p)) if s.quantile(0.95) < p.quantile(0.95) => Some(s),
            (_, Some(p)) => Some(p),
            (s, None) => s,
        }
    }

    /// The predicted cost of the next job of `class` at `now_nanos`: its distribution's
    /// 95th percentile (0 for a class nothing is known of).
    pub fn predict(&self, class: ClassId, now_nanos: Nanos) -> Nanos {
        self.dist(class, now_nanos).map_or(0, |d| d.quantile(0.95))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prior_moves_with_the_first_measurements_then_the_window_decides() {
        let mut m = CostModel::new(20, 5, 1_000);
        let c = ClassId(3);
        assert_eq!(m.predict(c, 0), 0, "unknown class costs nothing known");
        assert!(m.dist(c, 0).is_none());
        m.set_prior(c, Prior::new(10_000_000, 12_000_000));
        assert!(m.predict(c, 0).abs_diff(12_000_000) < 10, "the prior's P95");
        // One measurement of a tenth of the prior: the prior's shape around it.
        m.record(c, 1_000_000, 0);
        let d = m.dist(c, 0).expect("known");
        assert_eq!(d.quantile(0.5), 1_000_000);
        assert!(m.predict(c, 0).abs_diff(1_200_000) < 10);
        for v in 2..=4 {
            m.record(c, v * 1_000_000, 0);
        }
        assert_eq!(m.fresh(c, 0), 4);
        m.record(c, 5_000_000, 0);
        assert_eq!(m.predict(c, 0), 5_000_000, "enough: the measured P95");
        for v in 6..=40 {
            m.record(c, v, 10);
        }
        // Window holds 21..=40: P95 (nearest rank 19 of 20) is 39.
        assert_eq!(m.predict(c, 10), 39);
        // Long after the last measurement: the stale P95, being below the prior.
        assert_eq!(m.predict(c, 2_000), 39);
        assert_eq!(m.fresh(c, 2_000), 0);
    }

    #[test]
    fn stale_measurements_never_price_a_class_above_its_prior() {
        let mut m = CostModel::new(8, 3, 1_000);
        let c = ClassId(0);
        m.set_prior(c, Prior::point(100));
        for at in 0..4 {
            m.record(c, 500, at);
        }
        // A point prior has the narrowest spread: its P95 lies just above it.
        let prior_p95 = CostDist::from_percentiles(100, 100).quantile(0.95);
        assert!((100..110).contains(&prior_p95), "{prior_p95}");
        assert_eq!(m.predict(c, 10), 500, "fresh: what was measured");
        assert_eq!(
            m.predict(c, 5_000),
            prior_p95,
            "stale and dearer: the prior"
        );
        let mut cheap = CostModel::new(8, 3, 1_000);
        cheap.set_prior(c, Prior::point(100));
        for at in 0..2 {
            cheap.record(c, 20, at);
        }
        // Too few stale figures for a distribution of their own: the prior's shape around
        // them, being cheaper.
        let around = cheap.predict(c, 5_000);
        assert!((21..23).contains(&around), "{around}");
        cheap.record(c, 30, 2);
        assert_eq!(cheap.predict(c, 5_000), 30, "stale and cheaper: their P95");
    }
}
