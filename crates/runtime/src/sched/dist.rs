//! What a step or job will cost, as a distribution rather than one figure: the chance that
//! it ends within a given time is what a decision weighs (a rung that ends in time nine
//! times in ten is worth nine tenths of its answer), and a single high percentile hides
//! it.
//!
//! Two shapes: the measured costs themselves, and a log-normal one — a prior from a
//! profile's percentiles, or centred on the first few measurements with the prior's
//! spread. Step costs on a shared CPU are skewed to the right (a step is seldom much
//! faster than its median and sometimes several times slower), which a log-normal follows
//! and a normal does not.

use mmsched_core::time::Nanos;

/// The standard normal quantile of 0.95: a log-normal's P95 lies this many σ above its
/// median (in logs).
const Z95: f64 = 1.644_853_626_951_472_2;

/// The narrowest spread a log-normal is given (σ of the logs): a prior whose P95 equals
/// its median would say a step never varies, and every decision near its cost would be
/// certain.
const MIN_SIGMA: f64 = 0.05;

/// A cost's distribution. See the [module docs](self).
#[derive(Debug, Clone, PartialEq)]
pub enum CostDist {
    /// Log-normal with this median (ns) and σ of the natural logarithm.
    LogNormal {
        /// The median, nanoseconds (at least 1).
        median: f64,
        /// σ of ln(cost).
        sigma: f64,
    },
    /// The measured costs, sorted (at least one).
    Measured(Vec<Nanos>),
}

impl CostDist {
    /// A log-normal with median `p50` and 95th percentile `p95` (a `p95` not above the
    /// median gets the narrowest spread).
    pub fn from_percentiles(p50: Nanos, p95: Nanos) -> Self {
        let median = (p50.max(1)) as f64;
        let sigma = ((p95.max(1) as f64) / median).ln() / Z95;
        CostDist::LogNormal {
            median,
            sigma: sigma.max(MIN_SIGMA),
        }
    }

    /// A log-normal with the spread `sigma` centred on the geometric mean of `costs` (the
    /// first measurements move a prior's centre at once; its spread stays until there are
    /// enough of them to measure one).
    pub fn centred_on(costs: &[Nanos], sigma: f64) -> Option<Self> {
        if costs.is_empty() {
            return None;
        }
        let mean_log =
            costs.iter().map(|&c| (c.max(1) as f64).ln()).sum::<f64>() / costs.len() as f64;
        Some(CostDist::LogNormal {
            median: mean_log.exp(),
            sigma: sigma.max(MIN_SIGMA),
        })
    }

    /// The measured costs `costs` (`None` for none).
    pub fn measured(mut costs: Vec<Nanos>) -> Option<Self> {
        if costs.is_empty() {
            return None;
        }
        costs.sort_unstable();
        Some(CostDist::Measured(costs))
    }

    /// σ of the logarithm: a log-normal's own, the measured costs' spread between their
    /// median and P95 read as a log-normal's.
    pub fn sigma(&self) -> f64 {
        match self {
            CostDist::LogNormal { sigma, .. } => *sigma,
            CostDist::Measured(_) => {
                let (p50, p95) = (self.quantile(0.5).max(1), self.quantile(0.95).max(1));
                ((p95 as f64 / p50 as f64).ln() / Z95).max(MIN_SIGMA)
            }
        }
    }

    /// The chance that the cost is at most `budget`. Measured costs count as a smoothed
    /// share, `(k + ½) / (n + 1)` for `k` of `n` within the budget: never certain either
    /// way on a finite sample, so a cost never measured above a budget still leaves the
    /// chance that the next one is.
    pub fn within(&self, budget: Nanos) -> f64 {
        match self {
            CostDist::LogNormal { median, sigma } => {
                if budget == 0 {
                    return 0.0;
                }
                normal_cdf(((budget as f64) / median).ln() / sigma)
            }
            CostDist::Measured(sorted) => {
                let k = sorted.partition_point(|&c| c <= budget);
                (k as f64 + 0.5) / (sorted.len() as f64 + 1.0)
            }
        }
    }

    /// The `q`-quantile (0 < q < 1; nearest rank for measured costs).
    pub fn quantile(&self, q: f64) -> Nanos {
        let q = q.clamp(1e-9, 1.0 - 1e-9);
        match self {
            CostDist::LogNormal { median, sigma } => {
                (median * (sigma * normal_quantile(q)).exp()).round() as Nanos
            }
            CostDist::Measured(sorted) => {
                let rank = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len());
                sorted[rank - 1]
            }
        }
    }

    /// The mean of what is left of a cost that has run for `elapsed`: E[X − e | X > e], from
    /// the quantiles of the tail beyond `elapsed` (a step that overran its median is not
    /// about to end: the longer it has run, the longer its tail says it may still run).
    pub fn mean_rest_after(&self, elapsed: Nanos) -> Nanos {
        const POINTS: u32 = 16;
        let from = if elapsed == 0 {
            0.0
        } else {
            self.within(elapsed)
        };
        let sum: u128 = (0..POINTS)
            .map(|i| {
                let q = from + (1.0 - from) * (f64::from(i) + 0.5) / f64::from(POINTS);
                u128::from(self.quantile(q).max(elapsed) - elapsed)
            })
            .sum();
        (sum / u128::from(POINTS)) as Nanos
    }

    /// The mean cost.
    pub fn mean(&self) -> Nanos {
        match self {
            CostDist::LogNormal { median, sigma } => {
                (median * (sigma * sigma / 2.0).exp()).round() as Nanos
            }
            CostDist::Measured(sorted) => {
                let sum: u128 = sorted.iter().map(|&c| u128::from(c)).sum();
                (sum / sorted.len() as u128) as Nanos
            }
        }
    }
}

/// The standard normal distribution function, by the complementary error function
/// (Numerical Recipes' `erfcc`, fractional error below 1.2e-7 everywhere).
pub fn normal_cdf(z: f64) -> f64 {
    if z.is_nan() {
        return 0.5;
    }
    let x = z / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.5 * x.abs());
    let poly = -x * x - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let erfc = t * poly.exp();
    let erfc = if x >= 0.0 { erfc } else { 2.0 - erfc };
    (1.0 - erfc / 2.0).clamp(0.0, 1.0)
}

/// The standard normal quantile (Acklam's rational approximation, relative error below
/// 1.2e-9), for 0 < p < 1.
pub fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    const LOW: f64 = 0.024_25;
    let p = p.clamp(1e-300, 1.0 - 1e-16);
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < LOW {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - LOW {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn what_is_left_of_a_cost_grows_with_its_tail() {
        // Lognormal, median 100 ms, σ 0.3: mean 104.6 ms (e^{σ²/2}).
        let d = CostDist::LogNormal {
            median: 100e6,
            sigma: 0.3,
        };
        let fresh = d.mean_rest_after(0) as f64;
        assert!((fresh / 104.6e6 - 1.0).abs() < 0.03, "{fresh}");
        let half = d.mean_rest_after(50_000_000);
        assert!(half.abs_diff(55_000_000) < 4_000_000, "{half}");
        // Past its median, what is left is the tail beyond it, not nothing.
        let late = d.mean_rest_after(150_000_000);
        assert!(late > 10_000_000 && late < 60_000_000, "{late}");
        // Measured 100, 200, 300 ms: past 150 ms, 200 or 300 remain to end (100 ± 50 left).
        let m = CostDist::measured(vec![100_000_000, 200_000_000, 300_000_000]).unwrap();
        let left = m.mean_rest_after(150_000_000);
        assert!((50_000_000..=150_000_000).contains(&left), "{left}");
    }

    #[test]
    fn the_normal_functions_match_tabulated_values() {
        // Abramowitz and Stegun, table 26.1.
        for (z, p) in [
            (0.0, 0.5),
            (1.0, 0.841_344_7),
            (1.644_853_6, 0.95),
            (-2.0, 0.022_750_1),
        ] {
            assert!(
                (normal_cdf(z) - p).abs() < 1e-6,
                "Φ({z}) = {}",
                normal_cdf(z)
            );
        }
        assert!((normal_quantile(0.95) - Z95).abs() < 1e-8);
        assert!((normal_quantile(0.5)).abs() < 1e-12);
        assert!((normal_quantile(0.001) + 3.090_232_3).abs() < 1e-6);
    }

    #[test]
    fn a_prior_keeps_its_percentiles() {
        let d = CostDist::from_percentiles(40_000_000, 60_000_000);
        assert!((d.within(40_000_000) - 0.5).abs() < 1e-6);
        assert!((d.within(60_000_000) - 0.95).abs() < 1e-6);
        assert_eq!(d.quantile(0.5), 40_000_000);
        assert!(d.quantile(0.95).abs_diff(60_000_000) < 10);
        assert!(
            d.mean() > 40_000_000,
            "skewed right: the mean lies above the median"
        );
        assert_eq!(d.within(0), 0.0);
    }

    #[test]
    fn measured_costs_are_never_certain() {
        let d = CostDist::measured(vec![30, 10, 20]).expect("three costs");
        assert_eq!(d.within(5), 0.5 / 4.0);
        assert_eq!(d.within(20), 2.5 / 4.0);
        assert_eq!(d.within(1_000), 3.5 / 4.0);
        assert_eq!(d.quantile(0.5), 20);
        assert_eq!(d.quantile(0.95), 30);
        assert_eq!(d.mean(), 20);
        assert!(CostDist::measured(Vec::new()).is_none());
    }

    #[test]
    fn a_few_measurements_move_the_centre_and_keep_the_spread() {
        let d = CostDist::centred_on(&[10_000_000, 40_000_000], 0.3).expect("two costs");
        assert_eq!(d.quantile(0.5), 20_000_000);
        assert!((d.sigma() - 0.3).abs() < 1e-12);
    }

    proptest! {
        /// The chance of ending within a budget never falls as the budget grows, and stays
        /// a probability.
        #[test]
        fn within_is_a_distribution_function(
            costs in proptest::collection::vec(1u64..1_000_000, 1..40),
            // From a microsecond: a quantile is whole nanoseconds, and at a median of a
            // few nanoseconds that rounding alone moves the chance at it past 1e-3.
            p50 in 1_000u64..1_000_000,
            spread in 1.0f64..5.0,
            a in 0u64..2_000_000,
            b in 0u64..2_000_000,
        ) {
            let (lo, hi) = (a.min(b), a.max(b));
            let p95 = (p50 as f64 * spread) as u64;
            let n = costs.len() as f64;
            let measured = CostDist::measured(costs).expect("costs");
            let prior = CostDist::from_percentiles(p50, p95);
            for d in [&measured, &prior] {
                let (x, y) = (d.within(lo), d.within(hi));
                prop_assert!((0.0..=1.0).contains(&x) && (0.0..=1.0).contains(&y));
                prop_assert!(x <= y + 1e-12, "{x} > {y}");
            }
            // The quantile and the distribution function agree.
            prop_assert!((prior.within(prior.quantile(0.9)) - 0.9).abs() < 1e-3);
            let smoothed = ((0.9 * n).ceil() + 0.5) / (n + 1.0);
            prop_assert!(measured.within(measured.quantile(0.9)) >= smoothed - 1e-12);
        }
    }
}
