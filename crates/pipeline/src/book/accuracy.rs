//! How often each quality rung's answer is right, as this device knows it: from the device
//! profile (`mmsched profile` scores every rung on inputs whose truth is known) and from
//! shadow comparisons in the run (a job that ran at a cheaper rung and finished with time
//! to spare is run again at the richest rung while the device is idle, and the two answers
//! compared), combined as a beta distribution of the rung's agreement with the richest.
//!
//! Without either, a cheaper rung is taken to agree with the richest half of the time (a
//! uniform prior): a rung nobody has measured is not assumed as good as the richest, so it
//! is chosen only where the richest rung's chance to end in time is less than half of
//! its, until shadow comparisons measure it.
//!
//! A rung is *dominated* when a richer rung is right more often and gives more right
//! answers per second of device time (its cost saving is smaller than its loss of
//! correctness): under load the richer rung then serves more right answers with the same
//! time, and with room to spare it is right more often, so the cheaper one is never
//! chosen. Choosing the rung never revisits that verdict (the shadow comparisons, which
//! compare every cheaper rung, do), so it is given on evidence: the cheaper rung must be
//! dominated even at an optimistic reading of its chance ([`Estimate::p_optimistic`],
//! about the 90th percentile of its beta distribution). The uniform prior alone, 0.87 at
//! that reading, rules out only a rung that saves less than an eighth of the time; after
//! two comparisons that agreed (0.998 at best), only one that saves less than 0.2 %.

use std::collections::HashMap;

use crate::stats::Kind;

/// Shadow comparisons of one rung against the richest.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Shadow {
    /// Comparisons run.
    pub runs: u32,
    /// Of which the two answers agreed.
    pub agreed: u32,
}

/// Where a rung's accuracy estimate comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The richest rung: the reference the others are compared with.
    Reference,
    /// The device profile's scores.
    Profile,
    /// Shadow comparisons in this run (with the profile's scores, where it has them).
    Shadow,
    /// Nothing measured: the uniform prior.
    Assumed,
}

impl Source {
    /// The name in `summary.json`.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Reference => "reference",
            Source::Profile => "profile",
            Source::Shadow => "shadow",
            Source::Assumed => "assumed",
        }
    }
}

/// A rung's estimated chance to be right.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// The chance, 0..=1 (the beta distribution's mean).
    pub p_right: f64,
    /// An optimistic reading of it: the mean plus 1.28 standard deviations of the beta
    /// distribution (about its 90th percentile), at most the richest rung's.
    pub p_optimistic: f64,
    /// Where it comes from.
    pub source: Source,
}

/// Standard deviations above the mean of an optimistic reading (a normal's 90th
/// percentile).
const OPTIMISM_SD: f64 = 1.28;

/// What the profile says of a rung: its share of right answers and on how many inputs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scored {
    /// Share right, 0..=1.
    pub correct: f64,
    /// Inputs scored.
    pub samples: u32,
}

/// Every rung's shadow comparisons in the run.
#[derive(Debug, Clone, Default)]
pub struct Accuracy {
    shadows: HashMap<(Kind, String), Shadow>,
}

impl Accuracy {
    /// A comparison of `rung`'s answer with the richest rung's on the same input.
    pub fn compared(&mut self, kind: Kind, rung: &str, agreed: bool) {
        let s = self.shadows.entry((kind, rung.to_string())).or_default();
        s.runs += 1;
        s.agreed += u32::from(agreed);
    }

    /// `rung`'s comparisons so far.
    pub fn shadow(&self, kind: Kind, rung: &str) -> Shadow {
        self.shadows
            .get(&(kind, rung.to_string()))
            .copied()
            .unwrap_or_default()
    }

    /// The estimate for rung `index` of `kind` (0: the richest), given what the profile
    /// scored of it and of the richest (`scored[i]`).
    pub fn estimate(
        &self,
        kind: Kind,
        names: &[&str],
        scored: &[Option<Scored>],
        index: usize,
    ) -> Estimate {
        let richest = scored.first().copied().flatten();
        let reference = richest.map_or(1.0, |s| s.correct.clamp(0.0, 1.0));
        if index == 0 {
            return Estimate {
                p_right: reference,
                p_optimistic: reference,
                source: Source::Reference,
            };
        }
        // The agreement with the richest rung, as a beta distribution: the uniform prior,
        // the profile's inputs as observations (its share relative to the richest's), and
        // the shadow comparisons.
        let (mut agree, mut differ) = (1.0, 1.0);
        let mut source = Source::Assumed;
        if let Some(s) = scored.get(index).copied().flatten() {
            let relative = if reference > 0.0 {
                (s.correct / reference).clamp(0.0, 1.0)
            } else {
                0.0
            };
            agree += relative * f64::from(s.samples);
            differ += (1.0 - relative) * f64::from(s.samples);
            source = Source::Profile;
        }
        let shadow = names
            .get(index)
            .map_or_else(Shadow::default, |n| self.shadow(kind, n));
        if shadow.runs > 0 {
            agree += f64::from(shadow.agreed);
            differ += f64::from(shadow.runs - shadow.agreed);
            source = Source::Shadow;
        }
        let n = agree + differ;
        let mean = agree / n;
        let sd = (agree * differ / (n * n * (n + 1.0))).sqrt();
        Estimate {
            p_right: reference * mean,
            p_optimistic: reference * (mean + OPTIMISM_SD * sd).min(1.0),
            source,
        }
    }
}

/// Which rungs are dominated (see the [module docs](self)), given each rung's estimate and
/// its mean cost, richest first: a richer rung's expected chance beats the rung's
/// optimistic one, per answer and per second of device time. A cost of NaN is unknown,
/// and a rung of unknown cost neither dominates nor is dominated.
pub fn dominated(estimates: &[Estimate], mean_cost: &[f64]) -> Vec<bool> {
    let per_second = |p: f64, k: usize| p / mean_cost[k].max(1.0);
    (0..estimates.len())
        .map(|i| {
            let at_best = estimates[i].p_optimistic;
            !mean_cost[i].is_nan()
                && (0..i).any(|q| {
                    let p = estimates[q].p_right;
                    !mean_cost[q].is_nan()
                        && p > at_best
                        && per_second(p, q) >= per_second(at_best, i)
                })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Estimates known exactly (no spread).
    fn exact(p: &[f64]) -> Vec<Estimate> {
        p.iter()
            .map(|&p| Estimate {
                p_right: p,
                p_optimistic: p,
                source: Source::Profile,
            })
            .collect()
    }

    #[test]
    fn a_rung_ten_percent_cheaper_and_a_third_less_right_is_dominated() {
        // det320 at 45.6 ms and right on every frame; det192-top3 at 41.2 ms, 0.667.
        let d = dominated(&exact(&[1.0, 0.95, 0.667]), &[45.6, 30.0, 41.2]);
        assert_eq!(d, [false, false, true]);
        // Half the cost for a fifth less right is worth choosing.
        assert_eq!(
            dominated(&exact(&[1.0, 0.8]), &[40.0, 20.0]),
            [false, false]
        );
        // As right and cheaper: never dominated.
        assert_eq!(
            dominated(&exact(&[1.0, 1.0]), &[40.0, 39.0]),
            [false, false]
        );
        // A cost not known: no verdict either way.
        let half = exact(&[1.0, 0.5]);
        assert_eq!(dominated(&half, &[f64::NAN, 41.0]), [false, false]);
        assert_eq!(dominated(&half, &[40.0, f64::NAN]), [false, false]);
    }

    #[test]
    fn a_rung_is_ruled_out_on_evidence_not_on_the_prior() {
        let names = ["det320", "det192"];
        let mut a = Accuracy::default();
        let none = [None, None];
        let estimates = |a: &Accuracy| {
            (0..2)
                .map(|i| a.estimate(Kind::Vision, &names, &none, i))
                .collect::<Vec<_>>()
        };
        // With the uniform prior (0.5 expected, 0.87 at best) a rung a quarter cheaper is
        // worth trying; one 5 % cheaper is not, until comparisons say it is as right.
        assert!(!dominated(&estimates(&a), &[40.0, 30.0])[1]);
        assert!(dominated(&estimates(&a), &[40.0, 38.0])[1]);
        // After two comparisons that agreed (0.75 expected) it could be as right.
        a.compared(Kind::Vision, "det192", true);
        a.compared(Kind::Vision, "det192", true);
        let e = estimates(&a);
        assert!((e[1].p_right - 0.75).abs() < 1e-12 && e[1].p_optimistic > 0.95);
        assert!(!dominated(&e, &[40.0, 38.0])[1]);
        // Twenty more, half of them wrong: it is.
        for i in 0..20 {
            a.compared(Kind::Vision, "det192", i % 2 == 0);
        }
        let e = estimates(&a);
        assert!(e[1].p_optimistic < 0.75, "{e:?}");
        assert!(dominated(&e, &[40.0, 38.0])[1]);
    }

    #[test]
    fn estimates_start_uniform_and_learn_from_the_profile_and_shadows() {
        let names = ["det320", "det192"];
        let mut a = Accuracy::default();
        let none = [None, None];
        let e = a.estimate(Kind::Vision, &names, &none, 1);
        assert_eq!((e.p_right, e.source), (0.5, Source::Assumed));
        assert_eq!(
            a.estimate(Kind::Vision, &names, &none, 0).source,
            Source::Reference
        );
        let scored = [
            Some(Scored {
                correct: 1.0,
                samples: 24,
            }),
            Some(Scored {
                correct: 0.75,
                samples: 24,
            }),
        ];
        let e = a.estimate(Kind::Vision, &names, &scored, 1);
        assert_eq!(e.source, Source::Profile);
        assert!((e.p_right - 19.0 / 26.0).abs() < 1e-12, "{}", e.p_right);
        for _ in 0..20 {
            a.compared(Kind::Vision, "det192", true);
        }
        let e = a.estimate(Kind::Vision, &names, &none, 1);
        assert_eq!(e.source, Source::Shadow);
        assert!((e.p_right - 21.0 / 22.0).abs() < 1e-12);
        assert_eq!(
            a.shadow(Kind::Vision, "det192"),
            Shadow {
                runs: 20,
                agreed: 20
            }
        );
    }
}
