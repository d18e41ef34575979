//! Latencies in bounded memory, for a run of any length: every value while there are few
//! (a short run's percentiles stay exact, nearest rank), then a histogram of fixed size
//! with buckets 1 % wide, so a service that runs for weeks keeps a few kilobytes per
//! figure instead of eight bytes per job.

/// Values kept one by one before a [`Latencies`] switches to its histogram (128 KiB): a
/// five-minute run of the shipped scenarios stays below it for every kind.
pub const EXACT_SAMPLES: usize = 1 << 14;

/// A histogram over `[lo, hi]` with buckets whose bounds grow by a fixed ratio: the
/// quantiles it gives are within half a bucket's width (relative) of the true ones.
#[derive(Debug, Clone, PartialEq)]
pub struct LogHistogram {
    counts: Vec<u64>,
    /// `ln` of the lowest bucket's lower bound.
    ln_lo: f64,
    /// `ln` of the ratio between neighbouring bounds.
    ln_ratio: f64,
    total: u64,
    min: f64,
    max: f64,
}

impl LogHistogram {
    /// Buckets from 1 µs to about 28 hours (in milliseconds), `ratio` apart (1.01: 1 %).
    pub fn new(ratio: f64) -> Self {
        let (lo, hi) = (1e-3_f64, 1e8_f64);
        let ln_ratio = ratio.max(1.0001).ln();
        let n = ((hi / lo).ln() / ln_ratio).ceil() as usize + 1;
        Self {
            counts: vec![0; n],
            ln_lo: lo.ln(),
            ln_ratio,
            total: 0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
        }
    }

    fn bucket(&self, v: f64) -> usize {
        if v.is_nan() || v <= 0.0 {
            return 0;
        }
        let i = ((v.ln() - self.ln_lo) / self.ln_ratio).floor();
        if i <= 0.0 {
            0
        } else {
            (i as usize).min(self.counts.len() - 1)
        }
    }

    /// Counts `v` (non-finite values are not counted).
    pub fn record(&mut self, v: f64) {
        self.record_n(v, 1);
    }

    /// Counts `v` `n` times.
    pub fn record_n(&mut self, v: f64, n: u64) {
        if !v.is_finite() || n == 0 {
            return;
        }
        let b = self.bucket(v);
        self.counts[b] += n;
        self.total += n;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    /// Adds every count of `other` (with the same buckets).
    pub fn merge(&mut self, other: &LogHistogram) {
        if other.counts.len() != self.counts.len() {
            return;
        }
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
        self.total += other.total;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    /// Values counted.
    pub fn len(&self) -> u64 {
        self.total
    }

    /// Whether nothing was counted.
    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// The `q` quantile by nearest rank: the geometric middle of the bucket that holds the
    /// rank, within the smallest and largest values counted (which the first and last
    /// ranks are); NaN when empty.
    pub fn quantile(&self, q: f64) -> f64 {
        if self.total == 0 {
            return f64::NAN;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.total as f64).ceil() as u64).clamp(1, self.total);
        // The extremes are known exactly.
        if rank == 1 {
            return self.min;
        }
        if rank == self.total {
            return self.max;
        }
        let mut seen = 0;
        for (i, c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                let mid = (self.ln_lo + (i as f64 + 0.5) * self.ln_ratio).exp();
                return mid.clamp(self.min, self.max);
            }
        }
        self.max
    }
}

/// The latencies of one figure (a kind's jobs, the time to first token), in
/// milliseconds: exact while there are at most [`EXACT_SAMPLES`], then a [`LogHistogram`]
/// 1 % wide; the count, sum and mean are always exact.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Latencies {
    exact: Vec<f64>,
    hist: Option<LogHistogram>,
    count: u64,
    sum: f64,
}

impl Latencies {
    /// Counts one latency (non-finite values are not counted).
    pub fn push(&mut self, ms: f64) {
        if !ms.is_finite() {
            return;
        }
        self.count += 1;
        self.sum += ms;
        if let Some(h) = &mut self.hist {
            h.record(ms);
        } else if self.exact.len() < EXACT_SAMPLES {
            self.exact.push(ms);
        } else {
            let mut h = LogHistogram::new(1.01);
            for v in std::mem::take(&mut self.exact) {
                h.record(v);
            }
            h.record(ms);
            self.hist = Some(h);
        }
    }

    /// Latencies counted.
    pub fn len(&self) -> u64 {
        self.count
    }

    /// Whether none was counted.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Their mean, or `None` without any.
    pub fn mean(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum / self.count as f64)
    }

    /// Every latency in the order counted, while they are still kept one by one.
    pub fn exact(&self) -> Option<&[f64]> {
        self.hist.is_none().then_some(self.exact.as_slice())
    }

    /// The `q` quantile: nearest rank over the exact values, or from the histogram past
    /// [`EXACT_SAMPLES`]; NaN without any.
    pub fn quantile(&self, q: f64) -> f64 {
        match &self.hist {
            Some(h) => h.quantile(q),
            None => {
                let mut v = self.exact.clone();
                crate::stats::quantile(&mut v, q)
            }
        }
    }

    /// Bytes this holds on the heap (for the memory-bound tests).
    pub fn heap_bytes(&self) -> usize {
        self.exact.capacity() * std::mem::size_of::<f64>()
            + self
                .hist
                .as_ref()
                .map_or(0, |h| h.counts.capacity() * std::mem::size_of::<u64>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_while_few_then_within_a_percent() {
        let mut l = Latencies::default();
        for v in 1..=100 {
            l.push(f64::from(v));
        }
        assert_eq!(l.quantile(0.99), 99.0);
        assert_eq!(l.quantile(0.5), 50.0);
        assert_eq!(l.exact().map(<[f64]>::len), Some(100));
        let mut big = Latencies::default();
        let n = 100_000;
        for i in 0..n {
            big.push(1.0 + (i % 1000) as f64);
        }
        assert!(big.exact().is_none());
        assert_eq!(big.len(), n);
        let p99 = big.quantile(0.99);
        assert!((p99 - 990.0).abs() / 990.0 < 0.01, "{p99}");
        let p50 = big.quantile(0.5);
        assert!((p50 - 500.0).abs() / 500.0 < 0.01, "{p50}");
        assert!((big.mean().unwrap_or(0.0) - 500.5).abs() < 1e-6);
        // The histogram is a fixed size, whatever the count.
        let before = big.heap_bytes();
        for _ in 0..100_000 {
            big.push(7.0);
        }
        assert_eq!(big.heap_bytes(), before);
        assert!(before < 32 * 1024, "{before}");
    }

    #[test]
    fn histogram_quantiles_stay_inside_what_was_seen() {
        let mut h = LogHistogram::new(1.05);
        assert!(h.quantile(0.5).is_nan());
        h.record(0.0);
        h.record(f64::NAN);
        h.record(1e12);
        assert_eq!(h.len(), 2);
        assert_eq!(h.quantile(0.0), 0.0);
        assert_eq!(h.quantile(1.0), 1e12);
        let mut other = LogHistogram::new(1.05);
        other.record_n(5.0, 3);
        h.merge(&other);
        assert_eq!(h.len(), 5);
        let m = h.quantile(0.6);
        assert!((m - 5.0).abs() / 5.0 < 0.05, "{m}");
    }
}
