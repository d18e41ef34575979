//! The S2 priority score, battery-saver pruning and the SLA-risk boost.

use alloc::string::{String, ToString};
use alloc::vec::Vec;

use super::job::{ClassId, Job};
use crate::policy::{DispatchRule, Policy};
use crate::time::Nanos;

/// Slack below which a job counts as due now: δ is clamped up to 1 µs, so a job at or
/// past its deadline gets the largest urgency 1/δ there is (it is never "less urgent"
/// than a job that still has time).
pub const MIN_SLACK_NANOS: Nanos = 1_000;

/// The three weights of the score. They sum to 1 (the policy checks it), so the score of
/// inputs in [0, 1] stays in [0, 1].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Weights {
    /// w_d: weight of the normalised urgency 1/δ.
    pub deadline: f64,
    /// w_i: weight of the importance γ.
    pub importance: f64,
    /// w_b: weight of the battery fraction η/η_max.
    pub battery: f64,
}

impl Weights {
    /// The weights used for a job whose SLA-violation risk is above the policy's
    /// threshold: the deadline weight becomes `deadline`, and the other two share the
    /// rest in their original proportion (equally if both were 0), so the weights still
    /// sum to 1.
    pub fn boosted(&self, deadline: f64) -> Weights {
        let rest = self.importance + self.battery;
        let left = 1.0 - deadline;
        let (importance, battery) = if rest > 0.0 {
            (left * self.importance / rest, left * self.battery / rest)
        } else {
            (left / 2.0, left / 2.0)
        };
        Weights {
            deadline,
            importance,
            battery,
        }
    }

    #[inline]
    fn combine(&self, urgency: f64, importance: f64, battery: f64) -> f64 {
        self.deadline * urgency + self.importance * importance + self.battery * battery
    }
}

/// The range of raw urgencies 1/δ over a job set, used to min-max normalise them.
///
/// Min-max keeps the most urgent job of the set at 1 and the least urgent at 0 whatever
/// the time scale (1/δ in any unit gives the same normalised values). When every job has
/// the same urgency (or the set has one job) the spread is 0 and every urgency
/// normalises to 1: with nothing to tell them apart, all are treated as the most urgent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UrgencyBounds {
    /// Smallest raw urgency (1/ns) in the set.
    pub min: f64,
    /// Largest raw urgency (1/ns) in the set.
    pub max: f64,
}

impl UrgencyBounds {
    /// Bounds of an empty set: everything normalises to 1.
    pub const EMPTY: UrgencyBounds = UrgencyBounds {
        min: f64::INFINITY,
        max: f64::NEG_INFINITY,
    };

    /// Widens the bounds to include `raw`.
    #[inline]
    pub fn include(&mut self, raw: f64) {
        self.min = self.min.min(raw);
        self.max = self.max.max(raw);
    }

    /// `raw` normalised into [0, 1] (clamped when it lies outside the bounds).
    #[inline]
    pub fn normalize(&self, raw: f64) -> f64 {
        let spread = self.max - self.min;
        if spread > 0.0 {
            ((raw - self.min) / spread).clamp(0.0, 1.0)
        } else {
            1.0
        }
    }
}

/// How one job scored.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Assessment {
    /// The priority score in [0, 1] (0 for a pruned job).
    pub score: f64,
    /// normalize(1/δ) ∈ [0, 1].
    pub urgency: f64,
    /// SLA-violation risk ∈ [0, 1]: predicted cost / remaining slack, 1 once the deadline
    /// has passed.
    pub risk: f64,
    /// Whether the risk was above the threshold, so the boosted weights applied.
    pub boosted: bool,
    /// Whether battery saver disabled the job's class.
    pub pruned: bool,
}

#[derive(Debug, Clone)]
struct Class {
    name: String,
    heavy: bool,
    importance: f64,
}

/// The S2 engine: policy weights and thresholds, and the job classes it knows.
///
/// Classes are registered by name once ([`Arbiter::class`]) and then named by a small
/// [`ClassId`]; scoring never touches strings or allocates.
#[derive(Debug, Clone)]
pub struct Arbiter {
    weights: Weights,
    boosted: Weights,
    battery_saver_below: f64,
    risk_boost_above: f64,
    dispatch: DispatchRule,
    heavy_names: Vec<String>,
    policy: Policy,
    classes: Vec<Class>,
}

impl Arbiter {
    /// An arbiter following `policy` (weights, thresholds, heavy classes, importance per
    /// class, dispatch rule).
    pub fn new(policy: &Policy) -> Self {
        let mut a = Arbiter {
            weights: Weights {
                deadline: 0.0,
                importance: 0.0,
                battery: 0.0,
            },
            boosted: Weights {
                deadline: 0.0,
                importance: 0.0,
                battery: 0.0,
            },
            battery_saver_below: 0.0,
            risk_boost_above: 1.0,
            dispatch: DispatchRule::Edf,
            heavy_names: Vec::new(),
            policy: policy.clone(),
            classes: Vec::new(),
        };
        a.set_policy(policy);
        a
    }

    /// Switches to a new policy (hot reload). Registered classes keep their ids; their
    /// heavy flag and importance follow the new policy.
    pub fn set_policy(&mut self, policy: &Policy) {
        let p = policy.arbiter();
        self.weights = Weights {
            deadline: p.weight_deadline,
            importance: p.weight_importance,
            battery: p.weight_battery,
        };
        self.boosted = self.weights.boosted(p.risk_boost_deadline_weight);
        self.battery_saver_below = p.battery_saver_below;
        self.risk_boost_above = p.risk_boost_above;
        self.dispatch = p.dispatch;
        self.heavy_names = p.heavy_classes.clone();
        self.policy = policy.clone();
        for c in &mut self.classes {
            c.heavy = self.heavy_names.contains(&c.name);
            c.importance = self.policy.importance(&c.name);
        }
    }

    /// The id of class `name`, registering it on first use (set-up time: this allocates).
    pub fn class(&mut self, name: &str) -> ClassId {
        if let Some(i) = self.classes.iter().position(|c| c.name == name) {
            return ClassId(i as u32);
        }
        self.classes.push(Class {
            name: name.to_string(),
            heavy: self.heavy_names.iter().any(|h| h == name),
            importance: self.policy.importance(name),
        });
        ClassId(self.classes.len() as u32 - 1)
    }

    /// The name of a registered class (`None` for an id this arbiter did not hand out).
    pub fn class_name(&self, class: ClassId) -> Option<&str> {
        self.classes.get(class.0 as usize).map(|c| c.name.as_str())
    }

    /// The policy's importance γ for a class (0.5, or the policy's `default`, when the
    /// class is not listed or unknown).
    pub fn class_importance(&self, class: ClassId) -> f64 {
        match self.classes.get(class.0 as usize) {
            Some(c) => c.importance,
            None => self.policy.importance(""),
        }
    }

    /// Whether battery saver disables `class` at battery fraction `battery_fraction`
    /// (η/η_max): the class is heavy and the battery is below the policy threshold.
    #[inline]
    pub fn is_pruned(&self, class: ClassId, battery_fraction: f64) -> bool {
        battery_fraction < self.battery_saver_below
            && self.classes.get(class.0 as usize).is_some_and(|c| c.heavy)
    }

    /// Whether battery saver prunes any class at `battery_fraction`.
    pub fn prunes_any(&self, battery_fraction: f64) -> bool {
        battery_fraction < self.battery_saver_below && self.classes.iter().any(|c| c.heavy)
    }

    /// The policy's dispatch order for admitted jobs.
    pub fn dispatch_rule(&self) -> DispatchRule {
        self.dispatch
    }

    /// The normal weights.
    pub fn weights(&self) -> Weights {
        self.weights
    }

    /// The weights for jobs above the risk threshold.
    pub fn boosted_weights(&self) -> Weights {
        self.boosted
    }

    /// Raw urgency 1/δ (δ in ns, clamped to at least [`MIN_SLACK_NANOS`]) and the
    /// SLA-violation risk of `job` at `now_nanos`.
    #[inline]
    pub fn urgency_and_risk(job: &Job, now_nanos: Nanos) -> (f64, f64) {
        let slack = job.deadline_nanos.saturating_sub(now_nanos);
        let urgency = 1.0 / slack.max(MIN_SLACK_NANOS) as f64;
        let risk = if slack == 0 {
            1.0
        } else {
            (job.predicted_cost_nanos as f64 / slack as f64).min(1.0)
        };
        (urgency, risk)
    }

    /// The urgency bounds of a job set at `now_nanos`.
    ///
    /// Pruned jobs count too: the bounds then do not depend on the battery, so a battery
    /// change never reshuffles the urgency of the jobs that still run (and each score
    /// stays monotone in the battery fraction).
    pub fn bounds<'a>(
        &self,
        jobs: impl IntoIterator<Item = &'a Job>,
        now_nanos: Nanos,
    ) -> UrgencyBounds {
        let mut b = UrgencyBounds::EMPTY;
        for job in jobs {
            b.include(Self::urgency_and_risk(job, now_nanos).0);
        }
        b
    }

    /// Scores one job against the bounds of its set (from [`Arbiter::bounds`] or the
    /// last [`Arbiter::reevaluate`]); a job outside the bounds is clamped into them.
    #[inline]
    pub fn assess(
        &self,
        job: &Job,
        now_nanos: Nanos,
        battery_fraction: f64,
        bounds: &UrgencyBounds,
    ) -> Assessment {
        let (raw, risk) = Self::urgency_and_risk(job, now_nanos);
        self.finish(job, raw, risk, battery_fraction, bounds)
    }

    /// Full re-evaluation: scores every job of the set at `now_nanos`, normalising
    /// urgency over the whole set, into `out` (cleared first; `out[i]` belongs to
    /// `jobs[i]`). Allocates only if `out` has less capacity than `jobs.len()`. Returns
    /// the set's bounds, for scoring arrivals until the next re-evaluation.
    pub fn reevaluate(
        &self,
        jobs: &[Job],
        now_nanos: Nanos,
        battery_fraction: f64,
        out: &mut Vec<Assessment>,
    ) -> UrgencyBounds {
        out.clear();
        out.reserve(jobs.len());
        let mut bounds = UrgencyBounds::EMPTY;
        // Pass 1: raw urgency and risk, and their bounds over the whole set.
        for job in jobs {
            let (raw, risk) = Self::urgency_and_risk(job, now_nanos);
            bounds.include(raw);
            out.push(Assessment {
                score: 0.0,
                urgency: raw,
                risk,
                boosted: false,
                pruned: false,
            });
        }
        // Pass 2: normalise and combine.
        for (job, a) in jobs.iter().zip(out.iter_mut()) {
            *a = self.finish(job, a.urgency, a.risk, battery_fraction, &bounds);
        }
        bounds
    }

    #[inline]
    fn finish(
        &self,
        job: &Job,
        raw_urgency: f64,
        risk: f64,
        battery_fraction: f64,
        bounds: &UrgencyBounds,
    ) -> Assessment {
        let urgency = bounds.normalize(raw_urgency);
        if self.is_pruned(job.class, battery_fraction) {
            return Assessment {
                score: 0.0,
                urgency,
                risk,
                boosted: false,
                pruned: true,
            };
        }
        let importance = unit(job.importance);
        let battery = unit(battery_fraction);
        let plain = self.weights.combine(urgency, importance, battery);
        let boosted = risk > self.risk_boost_above;
        // The boost raises the deadline weight; it never lowers a job's score (with a
        // low urgency and a high importance the boosted mix could come out lower, which
        // would make a tighter deadline lower the score). Taking the larger of the two
        // keeps the score monotone in every input and inside [0, 1].
        let score = if boosted {
            plain.max(self.boosted.combine(urgency, importance, battery))
        } else {
            plain
        };
        Assessment {
            score,
            urgency,
            risk,
            boosted,
            pruned: false,
        }
    }
}

/// Clamps into [0, 1]; NaN counts as 0.
#[inline]
fn unit(x: f64) -> f64 {
    if x.is_nan() { 0.0 } else { x.clamp(0.0, 1.0) }
}
