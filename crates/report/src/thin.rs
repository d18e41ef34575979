//! Keeping the report's time series of a run of any length in bounded memory: a series
//! that grows past twice its cap is thinned back to the cap, one point per equal slice of
//! time, so the memory stays flat and the plot still spans the whole run (older parts at a
//! coarser step). Latencies for the CDF are kept by a stride that doubles each time they
//! are halved, a systematic sample that weighs every part of the run alike.

use std::collections::BTreeMap;

use crate::series::RunSeries;

/// Points each sampled series (occupancy, rates, playout, alignment per pair, misses)
/// keeps after thinning; it grows to twice this between two thinnings.
pub const SERIES_CAP: usize = 4_000;
/// LDTI evaluations kept after thinning (the highest of each slice of time).
pub const LDTI_CAP: usize = 20_000;
/// Latencies kept per modality for the CDF after halving.
pub const LATENCY_CAP: usize = 10_000;

/// Which of the points in one slice of time survives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Keep {
    /// The first: a sampled level.
    First,
    /// The one with the largest value: a spike stays visible.
    Largest,
}

/// Thins `v` (in time order) to at most `cap` points, one per equal slice of its time
/// range, when it holds more than twice `cap`.
fn thin<T>(
    v: &mut Vec<T>,
    cap: usize,
    t: impl Fn(&T) -> f64,
    value: impl Fn(&T) -> f64,
    keep: Keep,
) {
    let cap = cap.max(1);
    if v.len() <= 2 * cap {
        return;
    }
    let (lo, hi) = v
        .iter()
        .map(&t)
        .filter(|x| x.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
            (lo.min(x), hi.max(x))
        });
    let width = (hi - lo) / cap as f64;
    let mut kept: Vec<Option<usize>> = vec![None; cap];
    for (i, p) in v.iter().enumerate() {
        let x = t(p);
        if !x.is_finite() {
            continue;
        }
        let slice = if width > 0.0 {
            (((x - lo) / width) as usize).min(cap - 1)
        } else {
            0
        };
        let replace = match (kept[slice], keep) {
            (None, _) => true,
            (Some(_), Keep::First) => false,
            (Some(k), Keep::Largest) => value(p) > value(&v[k]),
        };
        if replace {
            kept[slice] = Some(i);
        }
    }
    let mut keep_index = vec![false; v.len()];
    for i in kept.into_iter().flatten() {
        keep_index[i] = true;
    }
    let mut i = 0;
    v.retain(|_| {
        i += 1;
        keep_index[i - 1]
    });
}

/// How often a modality's latencies are kept: every `stride`-th of those counted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LatencyStride {
    stride: BTreeMap<String, (u64, u64)>,
}

impl RunSeries {
    /// Records a completed job's latency for the CDF within [`LATENCY_CAP`] to twice it
    /// per modality: every latency until the cap is passed twice over, then every other
    /// one is dropped and only every second (fourth, …) new one is kept.
    pub fn record_latency_bounded(
        &mut self,
        stride: &mut LatencyStride,
        modality: &str,
        latency_ms: f64,
    ) {
        let (every, seen) = match stride.stride.get_mut(modality) {
            Some(s) => s,
            None => stride.stride.entry(modality.to_string()).or_insert((1, 0)),
        };
        *seen += 1;
        if *seen % *every != 0 {
            return;
        }
        self.record_latency(modality, latency_ms);
        if let Some(v) = self.latencies_ms.get_mut(modality)
            && v.len() > 2 * LATENCY_CAP
        {
            let mut i = 0;
            v.retain(|_| {
                i += 1;
                i % 2 == 0
            });
            *every *= 2;
        }
    }

    /// Thins every sampled series that has grown past twice its cap back to it (see the
    /// module's documentation); call it now and then in a long run.
    pub fn bound(&mut self) {
        if self.ldti.len() > 2 * LDTI_CAP {
            self.thin_ldti(LDTI_CAP);
        }
        thin(
            &mut self.slot_occupancy,
            SERIES_CAP,
            |p| p.t_s,
            |_| 0.0,
            Keep::First,
        );
        thin(&mut self.rates, SERIES_CAP, |p| p.t_s, |_| 0.0, Keep::First);
        thin(
            &mut self.playout,
            SERIES_CAP,
            |p| p.t_s,
            |p| p.delay_ms,
            Keep::First,
        );
        thin(
            &mut self.misses,
            SERIES_CAP,
            |p| p.t_s,
            |p| p.latency_ms,
            Keep::Largest,
        );
        // The alignment plot draws one line per pair: each pair is thinned on its own.
        if self.alignment.len() <= 2 * SERIES_CAP {
            return;
        }
        // The pairs are few (one per stream beside the reference): finding them without
        // cloning each point's name keeps this cheap, as it runs once a second of a run
        // while the series sits between one and two caps per pair.
        let mut names: Vec<&str> = Vec::new();
        for p in &self.alignment {
            if !names.contains(&p.pair.as_str()) {
                names.push(&p.pair);
            }
        }
        if self.alignment.len() > 2 * SERIES_CAP * names.len().max(1) {
            let pairs: std::collections::BTreeSet<String> =
                names.into_iter().map(str::to_string).collect();
            let mut all = Vec::new();
            for pair in pairs {
                let mut v: Vec<_> = self
                    .alignment
                    .iter()
                    .filter(|p| p.pair == pair)
                    .cloned()
                    .collect();
                thin(&mut v, SERIES_CAP, |p| p.t_s, |_| 0.0, Keep::First);
                all.extend(v);
            }
            all.sort_by(|a, b| a.t_s.total_cmp(&b.t_s));
            self.alignment = all;
        }
    }

    /// Points held over every series (for the memory-bound tests).
    pub fn points(&self) -> usize {
        self.latencies_ms.values().map(Vec::len).sum::<usize>()
            + self.ldti.len()
            + self.slot_occupancy.len()
            + self.rates.len()
            + self.misses.len()
            + self.playout.len()
            + self.alignment.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::series::{AlignmentPoint, OccupancyPoint};

    #[test]
    fn a_week_of_samples_stays_within_the_caps() {
        let mut s = RunSeries::default();
        let mut stride = LatencyStride::default();
        // A week at 10 samples a second would be 6 million points per series.
        for i in 0..200_000u64 {
            let t_s = i as f64 / 10.0;
            s.slot_occupancy.push(OccupancyPoint {
                t_s,
                per_worker_pct: vec![50.0],
            });
            s.record_ldti(t_s, if i == 123_456 { 9.0 } else { 0.1 }, "stable");
            s.record_miss(t_s, "vision", if i == 65_432 { 5_000.0 } else { 300.0 });
            for pair in ["a-b", "a-c"] {
                s.alignment.push(AlignmentPoint {
                    t_s,
                    pair: pair.into(),
                    error_ms: 1.0,
                });
            }
            s.record_latency_bounded(&mut stride, "vad", (i % 100) as f64);
            if i % 1000 == 0 {
                s.bound();
            }
        }
        s.bound();
        assert!(s.slot_occupancy.len() <= 2 * SERIES_CAP);
        assert!(s.misses.len() <= 2 * SERIES_CAP);
        assert!(s.alignment.len() <= 4 * SERIES_CAP);
        assert!(s.ldti.len() <= 2 * LDTI_CAP);
        assert!(s.latencies_ms["vad"].len() <= 2 * LATENCY_CAP);
        // Spikes survive, the span is the whole run, each pair keeps its line.
        assert!(s.ldti.iter().any(|p| p.value == 9.0));
        assert!(s.misses.iter().any(|p| p.latency_ms == 5_000.0));
        let last = s.slot_occupancy.last().map_or(0.0, |p| p.t_s);
        assert!(s.slot_occupancy[0].t_s == 0.0 && last > 19_000.0, "{last}");
        assert!(s.alignment.iter().any(|p| p.pair == "a-c"));
        // The sample of latencies is still spread over every value alike.
        let v = &s.latencies_ms["vad"];
        let low = v.iter().filter(|x| **x < 50.0).count() as f64 / v.len() as f64;
        assert!((low - 0.5).abs() < 0.05, "{low}");
    }

    #[test]
    fn short_series_are_left_alone() {
        let mut s = RunSeries::default();
        let mut stride = LatencyStride::default();
        for i in 0..100 {
            s.record_latency_bounded(&mut stride, "asr", f64::from(i));
        }
        s.bound();
        assert_eq!(s.latencies_ms["asr"].len(), 100);
        assert_eq!(s.points(), 100);
    }
}
