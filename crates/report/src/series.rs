//! Time series of one run, for the plots of `report.html` (saved as `series.json`).
//!
//! These are not part of `summary.json`: they grow with the run length. The runtime pushes
//! one value per event; the plots reduce them to the pixel resolution (see [`downsample`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::num::de_f64;

/// Everything the plots of `report.html` need besides the summary.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RunSeries {
    /// Per modality name (`vision`, `vad`, `asr`, `llm`): every completed job's latency (ms),
    /// in completion order.
    pub latencies_ms: BTreeMap<String, Vec<f64>>,
    /// Every LDTI evaluation, in time order (100+ per second is fine: plots keep the maximum
    /// per pixel column, so spikes stay visible).
    pub ldti: Vec<LdtiPoint>,
    /// Slot occupancy per worker, sampled over time.
    pub slot_occupancy: Vec<OccupancyPoint>,
    /// Job rates per modality, sampled over time.
    pub rates: Vec<RatePoint>,
    /// Every deadline miss, in completion order: where in the run the misses were.
    pub misses: Vec<MissPoint>,
    /// The speech row's jitter buffer, sampled over time (empty without a microphone).
    pub playout: Vec<PlayoutPoint>,
    /// Alignment error per pair of streams over time (empty where no stream carries its
    /// true capture time).
    pub alignment: Vec<AlignmentPoint>,
}

impl RunSeries {
    /// Records one completed job's latency for `modality` (ms).
    pub fn record_latency(&mut self, modality: &str, latency_ms: f64) {
        self.latencies_ms
            .entry(modality.to_string())
            .or_default()
            .push(latency_ms);
    }

    /// Records a deadline miss of `modality`: a job that completed `t_s` seconds into the
    /// run with `latency_ms`, later than its SLA.
    pub fn record_miss(&mut self, t_s: f64, modality: &str, latency_ms: f64) {
        self.misses.push(MissPoint {
            t_s,
            modality: modality.to_string(),
            latency_ms,
        });
    }

    /// Records one LDTI evaluation `t_s` seconds into the run.
    pub fn record_ldti(&mut self, t_s: f64, value: f64, level: &str) {
        self.ldti.push(LdtiPoint {
            t_s,
            value,
            level: level.to_string(),
        });
    }
}

impl RunSeries {
    /// Keeps at most `max_points` LDTI evaluations (at least one per bucket of equal time
    /// width that had any): per bucket the evaluation with the highest LDTI, with its time
    /// and level, so spikes survive. For long runs, whose 100 Hz health loop would make
    /// `series.json` large; the plot reduces further to its pixel width either way.
    /// Evaluations with a non-finite time or value are dropped.
    pub fn thin_ldti(&mut self, max_points: usize) {
        if self.ldti.len() <= max_points.max(1) {
            return;
        }
        let buckets = max_points.max(1);
        let finite = || {
            self.ldti
                .iter()
                .filter(|p| p.t_s.is_finite() && p.value.is_finite())
        };
        let (lo, hi) = finite().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), p| {
            (lo.min(p.t_s), hi.max(p.t_s))
        });
        let width = (hi - lo) / buckets as f64;
        let mut kept: Vec<Option<&LdtiPoint>> = vec![None; buckets];
        for point in finite() {
            let index = if width > 0.0 {
                (((point.t_s - lo) / width) as usize).min(buckets - 1)
            } else {
                0
            };
            if kept[index].is_none_or(|k| point.value > k.value) {
                kept[index] = Some(point);
            }
        }
        self.ldti = kept.into_iter().flatten().cloned().collect();
    }
}

/// One job that completed after its deadline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MissPoint {
    /// Seconds since the start of the run, at completion.
    #[serde(deserialize_with = "de_f64")]
    pub t_s: f64,
    /// Modality name (`vision`, `vad`, `asr`, `llm`).
    pub modality: String,
    /// The job's latency (ms).
    #[serde(deserialize_with = "de_f64")]
    pub latency_ms: f64,
}

/// One LDTI evaluation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LdtiPoint {
    /// Seconds since the start of the run.
    #[serde(deserialize_with = "de_f64")]
    pub t_s: f64,
    /// The LDTI value.
    #[serde(deserialize_with = "de_f64")]
    pub value: f64,
    /// The level it was classified as: `stable`, `degraded` or `critical`.
    pub level: String,
}

/// Slot occupancy of every worker at one time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OccupancyPoint {
    /// Seconds since the start of the run.
    #[serde(deserialize_with = "de_f64")]
    pub t_s: f64,
    /// Per worker (index = worker id): percent of its slot time busy since the last sample.
    pub per_worker_pct: Vec<f64>,
}

/// Job rates of every modality at one time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RatePoint {
    /// Seconds since the start of the run.
    #[serde(deserialize_with = "de_f64")]
    pub t_s: f64,
    /// Per modality name: completed jobs per second since the last sample (Hz).
    pub per_modality_hz: BTreeMap<String, f64>,
}

/// The speech jitter buffer over one sampling interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlayoutPoint {
    /// Seconds since the start of the run, at the end of the interval.
    #[serde(deserialize_with = "de_f64")]
    pub t_s: f64,
    /// Mean delay the buffer added to the frames played in the interval (ms; the last
    /// interval's value when none was played).
    #[serde(deserialize_with = "de_f64")]
    pub delay_ms: f64,
    /// The controller's target delay at the end of the interval (ms).
    #[serde(deserialize_with = "de_f64")]
    pub target_ms: f64,
    /// Packets that arrived after their frame had been played, in the interval.
    pub late: u64,
    /// Frames concealed (packet lost or late), in the interval.
    pub concealed: u64,
}

/// The alignment error of one pair of streams over one sampling interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AlignmentPoint {
    /// Seconds since the start of the run, at the end of the interval.
    #[serde(deserialize_with = "de_f64")]
    pub t_s: f64,
    /// The two streams, `a-b`.
    pub pair: String,
    /// Mean placement error of `a` minus that of `b` in the interval (ms; each error is
    /// placed capture time minus true capture time): how far apart two events captured at
    /// the same moment were placed.
    #[serde(deserialize_with = "de_f64")]
    pub error_ms: f64,
}

/// How [`downsample`] reduces the points that fall into one bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reduce {
    /// Keep the largest value: spikes stay visible (LDTI, latencies).
    Max,
    /// Keep the mean: levels stay honest (occupancy, rates).
    Mean,
}

/// Reduces `(x, y)` points to at most one per bucket of `buckets` equal-width buckets over
/// the x range, placed at the mean x of its points. Points with a non-finite coordinate are
/// dropped; the input need not be sorted, the output is sorted by x.
pub fn downsample(points: &[(f64, f64)], buckets: usize, reduce: Reduce) -> Vec<(f64, f64)> {
    let finite: Vec<(f64, f64)> = points
        .iter()
        .copied()
        .filter(|(x, y)| x.is_finite() && y.is_finite())
        .collect();
    let buckets = buckets.max(1);
    if finite.len() <= buckets {
        let mut out = finite;
        out.sort_by(|a, b| a.0.total_cmp(&b.0));
        return out;
    }
    let (lo, hi) = finite
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), (x, _)| {
            (lo.min(*x), hi.max(*x))
        });
    let width = (hi - lo) / buckets as f64;
    // Per bucket: (sum of x, count, reduced y, sum of y).
    let mut acc: Vec<Option<(f64, u64, f64, f64)>> = vec![None; buckets];
    for (x, y) in finite {
        let index = if width > 0.0 {
            (((x - lo) / width) as usize).min(buckets - 1)
        } else {
            0
        };
        acc[index] = Some(match acc[index] {
            None => (x, 1, y, y),
            Some((sx, n, max, sy)) => (sx + x, n + 1, max.max(y), sy + y),
        });
    }
    acc.into_iter()
        .flatten()
        .map(|(sx, n, max, sy)| {
            let y = match reduce {
                Reduce::Max => max,
                Reduce::Mean => sy / n as f64,
            };
            (sx / n as f64, y)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_reduction_keeps_a_single_spike() {
        let mut points: Vec<(f64, f64)> = (0..10_000).map(|i| (i as f64 / 100.0, 0.1)).collect();
        points[5_003].1 = 0.9;
        let out = downsample(&points, 200, Reduce::Max);
        assert!(out.len() <= 200);
        let peak = out.iter().map(|p| p.1).fold(0.0, f64::max);
        assert_eq!(peak, 0.9);
    }

    #[test]
    fn mean_reduction_averages_a_bucket() {
        let points = [(0.0, 1.0), (0.1, 3.0), (10.0, 5.0)];
        let out = downsample(&points, 2, Reduce::Mean);
        assert_eq!(out, vec![(0.05, 2.0), (10.0, 5.0)]);
    }

    #[test]
    fn non_finite_points_are_dropped() {
        let points = [(0.0, f64::NAN), (f64::INFINITY, 1.0), (1.0, 2.0)];
        assert_eq!(downsample(&points, 10, Reduce::Max), vec![(1.0, 2.0)]);
    }

    #[test]
    fn thinning_ldti_keeps_the_peak_with_its_level() {
        let mut series = RunSeries::default();
        for i in 0..100_000 {
            let spike = i == 54_321;
            let level = if spike { "critical" } else { "stable" };
            series.record_ldti(i as f64 / 100.0, if spike { 0.8 } else { 0.1 }, level);
        }
        series.record_ldti(f64::NAN, 0.9, "critical");
        series.thin_ldti(1000);
        assert!(series.ldti.len() <= 1000);
        let peak = series
            .ldti
            .iter()
            .max_by(|a, b| a.value.total_cmp(&b.value))
            .expect("points kept");
        assert_eq!(
            (peak.t_s, peak.value, peak.level.as_str()),
            (543.21, 0.8, "critical")
        );
        assert!(series.ldti.windows(2).all(|w| w[0].t_s < w[1].t_s));
    }

    #[test]
    fn recording_appends_per_modality() {
        let mut series = RunSeries::default();
        series.record_latency("vision", 40.0);
        series.record_latency("vision", 50.0);
        series.record_ldti(0.01, 0.2, "stable");
        series.record_miss(0.5, "asr", 1200.0);
        assert_eq!(series.latencies_ms["vision"], vec![40.0, 50.0]);
        assert_eq!(series.ldti.len(), 1);
        assert_eq!(series.misses[0].modality, "asr");
    }
}
