//! How much slower (or faster) the device runs its steps now than when the cost model's
//! measurements were taken, whatever the model, rung or kind of step: the book reads every
//! measurement scaled by it ([`super::costs`]).
//!
//! Why one view of the whole device: each cost key learns only from its own steps — a
//! window of recent costs whose median moves only once half of it has changed — so when a
//! neighbour starts (or stops) taking CPU time, every key lags for as many of its own steps
//! (seconds for a camera's frames, far longer for a key that runs seldom), and the decisions
//! in between are made on costs the device no longer has. A neighbour slows every step
//! alike, so every step measured anywhere is evidence for every key.
//!
//! **A change** is marked by a few steps in a row ([`CHANGE_RUN`]) on the same side of
//! their keys' medians as the book predicted them, so far out that by those distributions
//! they would all lie at least as far out less often than as many steps beyond their 95th
//! percentiles (one time in eight thousand). On a quiet device that almost never happens,
//! and the keys' own figures decide as before; a step that stalled once is no change.
//!
//! **Its factor** is the median of the ratios of the steps since the change to their keys'
//! medians before it, each weighted by that median (the time the step was predicted to
//! take): by how much the device's time runs longer, so a long step, where most of the time
//! decided on lies, weighs more than a short one, and the odd stall does not move it. It is
//! worked out again as steps come, until the next change.
//!
//! **Reading**: a measurement taken before a change is read times that change's factor (and
//! the factors of any later ones); one taken since is read as it is, having been measured
//! at the device's new speed. So a key that has run once since the change is not scaled
//! twice, a key that has not is scaled whole, and a key whose window holds both is read as
//! all of one speed, not as a mix of two. The keys themselves go on learning as before: as
//! their windows fill with measurements since the change, there is less and less to scale.
//! A change is kept for the age measurements are trusted for ([`super::COST_MAX_AGE_NANOS`]);
//! then its factor still scales what was measured before it (stale by then) and the priors.
//!
//! The steps followed are the last [`super::COST_WINDOW`] measured, as a key keeps its own.

use std::collections::VecDeque;

use mmsched_core::arbiter::ClassId;
use mmsched_core::time::Nanos;
use mmsched_runtime::sched::dist::CostDist;

/// A step measured: when it ended, its cost key, what it cost, and where that lay in its
/// key's distribution as predicted when it ran.
#[derive(Debug, Clone, Copy)]
struct Seen {
    at: Nanos,
    key: ClassId,
    cost: Nanos,
    side: Side,
}

/// A change of the device's speed: when its first step ended, and how many times as long
/// the steps since take as those before.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Change {
    at: Nanos,
    factor: f64,
}

/// Where a step's cost lies in its key's distribution as it stands, and the chance, by
/// that distribution, of a cost at least as far out on its side of the median (its log).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Side {
    /// Above its key's median.
    Above(f64),
    /// Below it.
    Below(f64),
    /// At it.
    At,
}

impl Side {
    /// Where `cost` lies in `d`.
    pub(super) fn of(d: &CostDist, cost: Nanos) -> Self {
        let median = d.quantile(0.5);
        // Never certain: a cost beyond every one measured still had a chance.
        let ln = |p: f64| p.clamp(f64::MIN_POSITIVE, 1.0).ln();
        match cost.cmp(&median) {
            std::cmp::Ordering::Greater => Side::Above(ln(1.0 - d.within(cost))),
            std::cmp::Ordering::Less => Side::Below(ln(d.within(cost))),
            std::cmp::Ordering::Equal => Side::At,
        }
    }

    fn same(self, other: Side) -> bool {
        matches!(
            (self, other),
            (Side::Above(_), Side::Above(_)) | (Side::Below(_), Side::Below(_))
        )
    }

    fn ln_chance(self) -> f64 {
        match self {
            Side::Above(l) | Side::Below(l) => l,
            Side::At => 0.0,
        }
    }
}

/// What marks a change of the device's speed: at least this many steps in a row on the
/// same side of their keys' medians, so far out that by the keys' own distributions they
/// would all lie at least as far out less often than this many steps in a row beyond their
/// 95th percentiles (one time in eight thousand). On a quiet device that almost never
/// happens, and the keys' own figures decide; three steps beyond their keys' every
/// measurement, or a few more each a little out, make it. As many as a key needs to move
/// off its prior ([`super::COST_MIN_SAMPLES`]).
const CHANGE_RUN: i32 = super::COST_MIN_SAMPLES as i32;

/// The log of the chance that marks a change (see [`CHANGE_RUN`]).
fn change_ln_chance() -> f64 {
    f64::from(CHANGE_RUN) * 0.05f64.ln()
}

/// How a key's measurements are read, by when each was taken: times a factor, or left out
/// (`None`) — what [`mmsched_runtime::sched::cost::CostModel::dist_scaled`] takes.
pub(super) type ReadScale<'a> = &'a dyn Fn(Nanos) -> Option<f64>;

/// See the [module docs](self).
#[derive(Debug, Clone)]
pub(super) struct Slowdown {
    window: usize,
    max_age: Nanos,
    recent: VecDeque<Seen>,
    /// The changes still within the age measurements are trusted for, oldest first.
    changes: VecDeque<Change>,
    /// The changes forgotten since: the last one's start, and all their factors together
    /// (what was measured before it — stale by now — and the priors still read as if
    /// taken now).
    forgotten: Option<Change>,
    /// When the factors were last worked out: a decision reads them many times at one
    /// instant, and they change only when a step is measured or time passes.
    refreshed: Option<Nanos>,
}

impl Slowdown {
    /// Following the last `window` (≥ 1) steps measured, and the changes of the last
    /// `max_age`.
    pub(super) fn new(window: usize, max_age: Nanos) -> Self {
        let window = window.max(1);
        Self {
            window,
            max_age,
            recent: VecDeque::with_capacity(window),
            changes: VecDeque::new(),
            forgotten: None,
            refreshed: None,
        }
    }

    /// A step of cost key `key` took `cost` and ended at `at`, lying on `side` of its key's
    /// distribution as predicted (with [`Slowdown::scale`]) when it ran.
    pub(super) fn record(&mut self, key: ClassId, cost: Nanos, at: Nanos, side: Side) {
        if self.recent.len() == self.window {
            self.recent.pop_front();
        }
        self.recent.push_back(Seen {
            at,
            key,
            cost,
            side,
        });
        self.refreshed = None;
        // The latest run, if it marks a change and started after the last one.
        let seen: Vec<Side> = self.recent.iter().map(|s| s.side).collect();
        if let Some(start) = change_start(&seen)
            && self
                .changes
                .back()
                .is_none_or(|c| self.recent[start].at > c.at)
        {
            self.changes.push_back(Change {
                at: self.recent[start].at,
                factor: 1.0,
            });
        }
        while let Some(c) = self
            .changes
            .front()
            .copied()
            .filter(|c| c.at.saturating_add(self.max_age) < at)
        {
            self.changes.pop_front();
            let before = self.forgotten.map_or(1.0, |f| f.factor);
            self.forgotten = Some(Change {
                at: c.at,
                factor: before * c.factor,
            });
        }
    }

    /// How many times its cost a measurement taken at `measured_at` is read as now: the
    /// factors of every change since (1: none).
    pub(super) fn scale(&self, measured_at: Nanos) -> f64 {
        self.scale_before(measured_at, self.changes.len())
    }

    /// [`Slowdown::scale`] as it stood before the `k`-th change kept.
    fn scale_before(&self, measured_at: Nanos, k: usize) -> f64 {
        let forgotten = self
            .forgotten
            .filter(|f| measured_at < f.at)
            .map_or(1.0, |f| f.factor);
        self.changes
            .iter()
            .take(k)
            .filter(|c| c.at > measured_at)
            .fold(forgotten, |f, c| f * c.factor)
    }

    /// Works out each change's factor at `now`, `dist_of` giving a key's distribution with
    /// its measurements scaled or left out. A change's factor is the weighted median of the
    /// ratios of the steps since it (and before the next) to their keys' medians before it,
    /// as read then; a change whose steps have all left the window keeps its factor.
    pub(super) fn refresh(
        &mut self,
        now: Nanos,
        mut dist_of: impl FnMut(ClassId, ReadScale<'_>) -> Option<CostDist>,
    ) {
        if self.refreshed == Some(now) {
            return;
        }
        self.refreshed = Some(now);
        for k in 0..self.changes.len() {
            let from = self.changes[k].at;
            let until = self.changes.get(k + 1).map_or(Nanos::MAX, |c| c.at);
            let mut medians: Vec<(ClassId, Option<Nanos>)> = Vec::new();
            let mut pairs: Vec<(f64, f64)> = Vec::new();
            for s in self.recent.iter().filter(|s| (from..until).contains(&s.at)) {
                let median = match medians.iter().find(|(key, _)| *key == s.key) {
                    Some(&(_, m)) => m,
                    None => {
                        let before = |t: Nanos| (t < from).then(|| self.scale_before(t, k));
                        let m = dist_of(s.key, &before).map(|d| d.quantile(0.5));
                        medians.push((s.key, m));
                        m
                    }
                };
                if let Some(m) = median.filter(|&m| m > 0) {
                    pairs.push((s.cost as f64 / m as f64, m as f64));
                }
            }
            if let Some(f) = weighted_median(&pairs) {
                self.changes[k].factor = f;
            }
        }
    }
}

/// Where the device's latest change of speed starts among the steps of `sides` (oldest
/// first): the first step of the latest run of steps in a row on one side of their medians
/// that marks a change ([`marks_change`]); `None`: no such run.
fn change_start(sides: &[Side]) -> Option<usize> {
    let mut end = sides.len();
    while end > 0 {
        let side = sides[end - 1];
        let mut start = end - 1;
        if side != Side::At {
            while start > 0 && sides[start - 1].same(side) {
                start -= 1;
            }
            if marks_change(&sides[start..end]) {
                return Some(start);
            }
        }
        end = start;
    }
    None
}

/// Whether `run`, steps in a row on one side of their medians, marks a change: at least
/// [`CHANGE_RUN`] of them (a step that stalled once is no change, however far out), whose
/// joint chance is at most that of as many steps beyond their 95th percentiles.
fn marks_change(run: &[Side]) -> bool {
    let ln: f64 = run.iter().map(|s| s.ln_chance()).sum();
    run.len() >= CHANGE_RUN as usize && ln <= change_ln_chance()
}

/// The weighted median of `(value, weight)` pairs: the least value at which the weights of
/// the values up to it reach half of all the weights (`None` for no pair of positive
/// weight). Pairs of a weight or value that is not a finite number, or a weight not above
/// 0, are left out.
pub(super) fn weighted_median(pairs: &[(f64, f64)]) -> Option<f64> {
    let mut kept: Vec<(f64, f64)> = pairs
        .iter()
        .copied()
        .filter(|&(v, w)| v.is_finite() && w.is_finite() && w > 0.0)
        .collect();
    kept.sort_by(|a, b| a.0.total_cmp(&b.0));
    let total: f64 = kept.iter().map(|p| p.1).sum();
    if total <= 0.0 {
        return None;
    }
    let mut below = 0.0;
    for &(v, w) in &kept {
        below += w;
        if below * 2.0 >= total {
            return Some(v);
        }
    }
    kept.last().map(|p| p.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MS: Nanos = 1_000_000;

    /// Keys 1 and 2, measured at medians of 40 ms and 4 ms before any change, their P95 a
    /// fifth above.
    fn quiet(k: ClassId) -> Option<CostDist> {
        let m = match k.0 {
            1 => 40 * MS,
            2 => 4 * MS,
            _ => return None,
        };
        Some(CostDist::from_percentiles(m, m * 6 / 5))
    }

    /// Records a step of `key` costing `cost` at `at`, its side read from [`quiet`] scaled
    /// as the tracker reads it now (the book's prediction), and refreshes the factors.
    fn step(s: &mut Slowdown, key: u32, cost: Nanos, at: Nanos) {
        let f = s.scale(0);
        let d = quiet(ClassId(key)).expect("a known key").scaled(f);
        s.record(ClassId(key), cost, at, Side::of(&d, cost));
        s.refresh(at, |k, scale| {
            quiet(k).map(|d| d.scaled(scale(0).unwrap_or(1.0)))
        });
    }

    fn tracker() -> Slowdown {
        Slowdown::new(16, 1_000 * MS)
    }

    #[test]
    fn steps_as_predicted_are_no_change() {
        let mut s = tracker();
        for (i, c) in [40, 44, 37, 41, 39, 45, 200, 40, 300, 42]
            .into_iter()
            .enumerate()
        {
            step(&mut s, 1, c * MS, i as Nanos);
        }
        assert!(s.changes.is_empty(), "{:?}", s.changes);
        assert_eq!(s.scale(0), 1.0);
    }

    #[test]
    fn a_few_steps_in_a_row_beyond_their_keys_mark_the_slowdown() {
        let mut s = tracker();
        for i in 0..4 {
            step(&mut s, 1, 40 * MS, i);
        }
        // Two slow steps: chance, not yet a change.
        step(&mut s, 1, 72 * MS, 5);
        step(&mut s, 2, 7_200_000, 6);
        assert_eq!(s.scale(0), 1.0);
        // A third in a row: the device runs 1.8 times as long since the first of them.
        step(&mut s, 1, 72 * MS, 8);
        assert!((s.scale(0) - 1.8).abs() < 1e-9, "{}", s.scale(0));
        assert!((s.scale(4) - 1.8).abs() < 1e-9);
        assert_eq!(s.scale(5), 1.0, "measured since: as it is");
        // Further steps at that speed are as predicted now: no new change.
        step(&mut s, 1, 72 * MS, 9);
        step(&mut s, 1, 72 * MS, 10);
        step(&mut s, 1, 73 * MS, 11);
        assert_eq!(s.changes.len(), 1);
        assert!((s.scale(0) - 1.8).abs() < 1e-9);
    }

    #[test]
    fn the_long_steps_weigh_more_than_the_short_ones() {
        let mut s = tracker();
        // Steps of 4 ms 1.5 times as long, and of 40 ms twice as long: the device's time
        // runs twice as long (3 × 40 ms against 4 × 4 ms).
        for (i, (key, ms)) in [(2, 6), (2, 6), (1, 80), (1, 80), (1, 80), (2, 6), (2, 6)]
            .into_iter()
            .enumerate()
        {
            step(&mut s, key, ms * MS, i as Nanos + 1);
        }
        assert_eq!(s.changes.len(), 1, "{:?}", s.changes);
        assert_eq!(s.scale(0), 2.0);
    }

    #[test]
    fn a_speed_up_after_a_slowdown_is_a_change_of_its_own() {
        let mut s = tracker();
        for i in 1..4 {
            step(&mut s, 1, 80 * MS, i);
        }
        assert_eq!(s.scale(0), 2.0);
        // Back to the quiet speed: below the slowed prediction, three in a row.
        for i in 4..7 {
            step(&mut s, 1, 40 * MS, i);
        }
        assert_eq!(s.changes.len(), 2, "{:?}", s.changes);
        let (before, during, after) = (s.scale(0), s.scale(2), s.scale(5));
        assert!((before - 1.0).abs() < 1e-9, "{before}");
        assert!((during - 0.5).abs() < 1e-9, "{during}");
        assert_eq!(after, 1.0);
    }

    #[test]
    fn a_change_is_forgotten_after_the_age_but_still_scales_the_priors() {
        let mut s = tracker();
        for i in 1..4 {
            step(&mut s, 1, 80 * MS, i);
        }
        step(&mut s, 1, 80 * MS, 2_000 * MS);
        assert!(s.changes.is_empty());
        assert_eq!(s.scale(0), 2.0);
        assert_eq!(s.scale(1), 1.0);
    }

    #[test]
    fn weighted_medians() {
        assert_eq!(weighted_median(&[]), None);
        assert_eq!(weighted_median(&[(3.0, 0.0)]), None);
        assert_eq!(weighted_median(&[(3.0, 1.0)]), Some(3.0));
        assert_eq!(weighted_median(&[(1.0, 1.0), (2.0, 1.0)]), Some(1.0));
        assert_eq!(
            weighted_median(&[(5.0, 1.0), (1.0, 1.0), (2.0, 3.0)]),
            Some(2.0)
        );
        assert_eq!(
            weighted_median(&[(f64::NAN, 5.0), (2.0, 1.0), (9.0, f64::INFINITY)]),
            Some(2.0)
        );
    }

    proptest! {
        /// The weighted median is one of the values, lies between the least and the
        /// greatest, and scales with them (a device twice as slow everywhere reads twice
        /// the factor).
        #[test]
        fn a_weighted_median_is_a_value_in_range_and_scales_with_them(
            pairs in proptest::collection::vec((0.01f64..100.0, 0.001f64..10.0), 1..50),
            k in 0.1f64..10.0,
        ) {
            let m = weighted_median(&pairs).expect("positive weights");
            prop_assert!(pairs.iter().any(|&(v, _)| v == m));
            let lo = pairs.iter().map(|p| p.0).fold(f64::INFINITY, f64::min);
            let hi = pairs.iter().map(|p| p.0).fold(0.0, f64::max);
            prop_assert!(lo <= m && m <= hi);
            let scaled: Vec<(f64, f64)> = pairs.iter().map(|&(v, w)| (v * k, w)).collect();
            let ms = weighted_median(&scaled).expect("positive weights");
            prop_assert!((ms - m * k).abs() <= 1e-9 * ms.abs().max(1.0));
            // At least half the weight lies at or below it, and at or above it.
            let total: f64 = pairs.iter().map(|p| p.1).sum();
            let below: f64 = pairs.iter().filter(|p| p.0 <= m).map(|p| p.1).sum();
            let above: f64 = pairs.iter().filter(|p| p.0 >= m).map(|p| p.1).sum();
            prop_assert!(below * 2.0 >= total - 1e-9 && above * 2.0 >= total - 1e-9);
        }

        /// A change starts the latest maximal run of steps on one side that marks one;
        /// none is found where no run does.
        #[test]
        fn a_change_starts_the_latest_run_that_marks_one(
            steps in proptest::collection::vec((0u8..3, -12.0f64..0.0), 0..40),
        ) {
            let sides: Vec<Side> = steps
                .iter()
                .map(|&(s, ln)| [Side::Above(ln), Side::Below(ln), Side::At][usize::from(s)])
                .collect();
            // The maximal runs, as (start, end).
            let mut runs = Vec::new();
            let mut i = 0;
            while i < sides.len() {
                let mut j = i + 1;
                while j < sides.len() && sides[j].same(sides[i]) {
                    j += 1;
                }
                if sides[i] != Side::At {
                    runs.push((i, j));
                }
                i = j;
            }
            let marking: Vec<usize> = runs
                .iter()
                .filter(|&&(a, b)| marks_change(&sides[a..b]))
                .map(|&(a, _)| a)
                .collect();
            prop_assert_eq!(change_start(&sides), marking.last().copied());
        }

        /// Whatever the steps, every factor and every scale is a positive finite number.
        #[test]
        fn scales_stay_positive_and_finite(
            costs in proptest::collection::vec((1u32..3, 1u64..400), 0..60),
        ) {
            let mut s = tracker();
            for (i, &(key, ms)) in costs.iter().enumerate() {
                step(&mut s, key, ms * MS, (i as Nanos + 1) * 10 * MS);
            }
            for t in [0, 5 * MS, 100 * MS, 1_000 * MS] {
                let f = s.scale(t);
                prop_assert!(f.is_finite() && f > 0.0, "{f}");
            }
        }
    }
}
