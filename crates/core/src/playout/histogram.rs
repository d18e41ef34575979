//! The forgetting histogram of relative packet delay, and the target delay that maximises
//! the listener's quality over it.

use alloc::vec;
use alloc::vec::Vec;

use crate::emodel::{self, LossRobustness};

/// Width of one histogram bucket: 1 ms.
pub(super) const BUCKET_NANOS: u64 = 1_000_000;

/// What the listener's quality depends on besides the buffer: the codec's loss robustness
/// and the mouth-to-ear delay outside the buffer (where the E-model's delay knee sits).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QualityModel {
    /// The codec's E-model loss robustness.
    pub codec: LossRobustness,
    /// Mouth-to-ear delay outside the playout buffer (codec plus network), in nanoseconds.
    pub other_delay_nanos: u64,
}

impl QualityModel {
    /// G.711 with packet-loss concealment (20 ms packetisation and 5 ms processing) over a
    /// 30 ms network path: 55 ms outside the buffer.
    pub const G711_PLC: Self = Self {
        codec: LossRobustness::G711_PLC,
        other_delay_nanos: 55_000_000,
    };

    /// The impairment (R points lost) of a buffer delay `delay_nanos` at frame loss
    /// `loss_fraction` (0 … 1).
    pub fn impairment(&self, delay_nanos: u64, loss_fraction: f64) -> f64 {
        let ta_ms = (self.other_delay_nanos + delay_nanos) as f64 / 1e6;
        emodel::delay_impairment(ta_ms) + emodel::loss_impairment(self.codec, 100.0 * loss_fraction)
    }
}

/// Relative delays in 1 ms buckets (the last one holds everything beyond), older packets
/// forgotten geometrically: each new packet weighs `1/f` times the one before.
#[derive(Debug, Clone)]
pub(super) struct DelayHistogram {
    buckets: Vec<f64>,
    weight: f64,
    total: f64,
    forgetting: f64,
}

impl DelayHistogram {
    /// Buckets covering 0 … `max_nanos`; `forgetting` per packet in (0, 1).
    pub(super) fn new(max_nanos: u64, forgetting: f64) -> Self {
        Self {
            buckets: vec![0.0; (max_nanos / BUCKET_NANOS + 1) as usize],
            weight: 1.0,
            total: 0.0,
            forgetting: forgetting.clamp(1e-6, 1.0 - 1e-12),
        }
    }

    /// Adds one packet whose delay above the floor is `relative_nanos`.
    pub(super) fn add(&mut self, relative_nanos: u64) {
        // Geometric forgetting without touching every bucket: rescale everything only when
        // the weights grow large.
        self.weight /= self.forgetting;
        if self.weight > 1e200 {
            self.discount(1.0 / self.weight);
            self.weight = 1.0;
        }
        let last = self.buckets.len() - 1;
        let bucket = ((relative_nanos / BUCKET_NANOS) as usize).min(last);
        self.buckets[bucket] += self.weight;
        self.total += self.weight;
    }

    /// Multiplies what was learned so far by `factor` (the rescaling of the weights).
    fn discount(&mut self, factor: f64) {
        for b in &mut self.buckets {
            *b *= factor;
        }
        self.total *= factor;
    }

    /// Moves every delay by `by` buckets (positive: later), because the floor the delays
    /// are measured from moved the other way. Delays pushed below zero pile up in the first
    /// bucket, beyond the range in the last.
    pub(super) fn shift(&mut self, by: i64) {
        let n = self.buckets.len();
        let last = n - 1;
        if by > 0 {
            let k = (by as usize).min(last);
            let overflow: f64 = self.buckets[last - k..].iter().sum();
            self.buckets.copy_within(0..last - k, k);
            self.buckets[..k].fill(0.0);
            self.buckets[last] = overflow;
        } else if by < 0 {
            let k = (by.unsigned_abs() as usize).min(last);
            let underflow: f64 = self.buckets[..=k].iter().sum();
            self.buckets.copy_within(k + 1.., 1);
            self.buckets[n - k..].fill(0.0);
            self.buckets[0] = underflow;
        }
    }

    /// The smallest delay at or below which a `q` share of the (weighted) packets arrived.
    pub(super) fn quantile_nanos(&self, q: f64) -> u64 {
        // A hair under the share asked for: the running sum may round below the total.
        let wanted = q.clamp(0.0, 1.0) * self.total * (1.0 - 1e-12);
        let mut seen = 0.0;
        for (i, mass) in self.buckets.iter().enumerate() {
            seen += mass;
            if seen >= wanted && seen > 0.0 {
                return (i as u64 + 1) * BUCKET_NANOS;
            }
        }
        self.buckets.len() as u64 * BUCKET_NANOS
    }

    /// The delay in `min_nanos ..= max_nanos` (whole buckets) that minimises the E-model
    /// impairment: the delay term of waiting that long, plus the loss term of the packets
    /// that would come later (their share of the histogram) on top of those the network
    /// lost (`network_loss`, 0 … 1). A packet `r` after the floor is on time for a delay
    /// `d` when `r ≤ d`, so a delay of `k` buckets keeps buckets `0 … k − 1`.
    ///
    /// Beyond the 99th percentile the share of later packets is the larger of the
    /// histogram's and an exponential tail fitted to it (the mean excess over that
    /// percentile): the histogram alone knows nothing beyond the latest packet it has
    /// seen, and a target set at its edge loses the next one a little later. Waiting a
    /// millisecond longer costs the listener far less than losing a packet.
    pub(super) fn best_delay_nanos(
        &self,
        quality: &QualityModel,
        network_loss: f64,
        min_nanos: u64,
        max_nanos: u64,
    ) -> u64 {
        let last = self.buckets.len() - 1;
        let lo = (min_nanos.div_ceil(BUCKET_NANOS) as usize).min(last);
        let hi = ((max_nanos / BUCKET_NANOS) as usize).clamp(lo, last);
        let network_loss = network_loss.clamp(0.0, 1.0);
        let total = self.total.max(f64::MIN_POSITIVE);
        let tail_model = self.exponential_tail(TAIL_FROM_QUANTILE);
        // Mass at or beyond bucket `k`, summed from the top down, and the fitted tail's
        // share beyond `k` buckets, stepped down by its per-bucket ratio.
        let mut tail: f64 = self.buckets[hi..].iter().sum();
        let mut fitted = tail_model.map_or(0.0, |t| t.share_beyond(hi));
        let mut best = (f64::INFINITY, hi);
        for k in (lo..=hi).rev() {
            if k < hi {
                tail += self.buckets[k];
                if let Some(t) = &tail_model {
                    fitted = if k >= t.from { fitted / t.ratio } else { 0.0 };
                }
            }
            let late = (tail / total).max(fitted).clamp(0.0, 1.0);
            let loss = network_loss + (1.0 - network_loss) * late;
            let cost = quality.impairment(k as u64 * BUCKET_NANOS, loss);
            // Ties go to the shorter delay.
            if cost <= best.0 {
                best = (cost, k);
            }
        }
        best.1 as u64 * BUCKET_NANOS
    }

    /// An exponential tail fitted beyond the `q` quantile: the share beyond it and the mean
    /// excess of the packets there. `None` while the histogram is empty.
    fn exponential_tail(&self, q: f64) -> Option<ExponentialTail> {
        if self.total <= 0.0 {
            return None;
        }
        // The first bucket where the share at or beyond it falls to 1 − q or below.
        let wanted = (1.0 - q) * self.total;
        let mut beyond = self.total;
        let mut from = 0;
        while from < self.buckets.len() && beyond > wanted {
            beyond -= self.buckets[from];
            from += 1;
        }
        let (mass, excess) = self.buckets[from..]
            .iter()
            .enumerate()
            .fold((0.0, 0.0), |(m, e), (i, b)| {
                (m + b, e + b * (i as f64 + 0.5))
            });
        // Mean excess in buckets; at least half a bucket (a tail inside one bucket).
        let mean_excess = if mass > 0.0 { excess / mass } else { 0.5 }.max(0.5);
        Some(ExponentialTail {
            from,
            share: (beyond / self.total).max(0.0),
            ratio: libm::exp(-1.0 / mean_excess),
        })
    }
}

/// Quantile beyond which the tail is fitted.
const TAIL_FROM_QUANTILE: f64 = 0.99;

/// `P(r ≥ k buckets) ≈ share · ratio^(k − from)` for `k ≥ from`.
#[derive(Debug, Clone, Copy)]
struct ExponentialTail {
    from: usize,
    share: f64,
    ratio: f64,
}

impl ExponentialTail {
    fn share_beyond(&self, k: usize) -> f64 {
        if k < self.from {
            return 0.0;
        }
        self.share * libm::pow(self.ratio, (k - self.from) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn shifting_keeps_the_mass_and_piles_up_at_the_ends() {
        let mut h = DelayHistogram::new(10 * MS, 0.999);
        for d in [0, 3, 5, 9, 10, 40] {
            h.add(d * MS);
        }
        let before = h.total;
        h.shift(2);
        assert!((h.buckets.iter().sum::<f64>() - before).abs() < 1e-9);
        assert_eq!(h.buckets[0], 0.0);
        assert!(h.buckets[5] > 0.0 && h.buckets[7] > 0.0);
        h.shift(-4);
        assert!((h.buckets.iter().sum::<f64>() - before).abs() < 1e-9);
        // 0 → 2 → −2 and 3 → 5 → 1: both below or at the new floor bucket.
        assert!(h.buckets[0] > 0.0 && h.buckets[1] > 0.0);
    }

    #[test]
    fn quantiles_count_whole_buckets() {
        let mut h = DelayHistogram::new(100 * MS, 1.0);
        for i in 0..100 {
            h.add(i * MS);
        }
        // Later packets weigh a hair more: 5 of 100 are a little under 5 %.
        assert_eq!(h.quantile_nanos(0.049), 5 * MS);
        assert_eq!(h.quantile_nanos(1.0), 100 * MS);
    }

    #[test]
    fn the_best_delay_weighs_waiting_against_losing() {
        // 2 % of packets 50 ms late: covering them costs 0.024 · 48 = 1.2 R, losing them
        // 95 · 2 / 27.1 = 7 R, so they are covered.
        let mut h = DelayHistogram::new(200 * MS, 0.999_999);
        for i in 0..1000 {
            h.add(if i % 50 == 0 { 50 * MS } else { 2 * MS });
        }
        let q = QualityModel::G711_PLC;
        assert_eq!(h.best_delay_nanos(&q, 0.0, 0, 200 * MS), 51 * MS);
        // 0.1 % of packets 150 ms late: 0.024 · 148 = 3.6 R to cover, 0.38 R to lose (the
        // fitted tail spreads that 0.1 % thinly over the 148 ms).
        let mut h = DelayHistogram::new(200 * MS, 0.999_999);
        for i in 0..1000 {
            h.add(if i == 500 { 150 * MS } else { 2 * MS });
        }
        assert_eq!(h.best_delay_nanos(&q, 0.0, 0, 200 * MS), 3 * MS);
        assert_eq!(h.best_delay_nanos(&q, 0.0, 10 * MS, 200 * MS), 10 * MS);
    }

    #[test]
    fn the_target_of_a_smooth_tail_is_near_the_true_optimum() {
        // Exponential delays of mean 5 ms, 1000 packets. The optimum of the true tail:
        // its density e^(−d/5)/5 per ms times the loss cost 95/25.1 R per % equals the
        // delay cost 0.024 R per ms at d = 5 · ln(0.2 · 378.5 / 0.024 / 100) ≈ 40 ms.
        let mut h = DelayHistogram::new(200 * MS, 0.999_999);
        let n = 1000;
        for i in 0..n {
            // Quantiles (i + 0.5) / n of the exponential distribution.
            let u = (i as f64 + 0.5) / n as f64;
            h.add((-5.0 * libm::log(1.0 - u) * 1e6) as u64);
        }
        let best = h.best_delay_nanos(&QualityModel::G711_PLC, 0.0, 0, 200 * MS);
        assert!((38 * MS..=44 * MS).contains(&best), "{best}");
    }
}
