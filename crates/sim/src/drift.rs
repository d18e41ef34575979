//! The S5 clock-drift model and the cross-modal alignment experiment.
//!
//! ## The model
//!
//! Every stream `j` samples events at true device times `t` (its period). Its own clock
//! stamps them `s_j(t) = offset_j + t + ∫₀ᵗ α_j(u) du`: a constant offset plus the crystal
//! drift α_j (1.2 ppm = 1.2e-6 s/s is the S5 reference), which temperature episodes change
//! while they last. The event reaches the device after a fixed pipeline latency `d_j` plus a
//! one-sided random transport delay `J_j ~ Gamma(k, θ_j)` (S5's `β·w(t)` term; θ = 8 ms for a
//! network audio path is the S6 reference).
//!
//! ## "Raw" and "aligned"
//!
//! - **Raw** is what a pipeline without alignment does: it stamps each event with its device
//!   *arrival time*. The error of an event is `d_j + J_j`, and for a pair of streams the
//!   misalignment of two simultaneous events is `Δt = (d_a + J_a) − (d_b + J_b)`. With the
//!   default stream parameters below (camera 14 ms pipeline + Gamma(2, 7.6 ms), IMU 2 ms +
//!   Gamma(2, 0.5 ms), audio 56 ms capture/packetisation + Gamma(2, 8 ms)) this reproduces
//!   the S5 reference figures: vision–IMU P(|Δt| > 50 ms) ≈ 3.7 %, audio–vision ≈ 29 %.
//! - **Aligned** is what mmsched's ingest does: the event's *own timestamp* is mapped onto
//!   the device timeline by the online estimator of `mmsched-core` ([`ClockAligner`], fed
//!   with every (stamp, arrival) pair as it arrives), and the stream's known fixed pipeline
//!   latency `d_j` (a per-stream calibration in the scenario) is subtracted. The error left
//!   is the estimator's: offset and drift tracking error, including during temperature
//!   episodes.
//!
//! Figures are computed on pairs of events that happened within one period of each other
//! (each event of the first stream against the nearest event of the second, in true time);
//! the aligned figures only count events after a warm-up (default 60 s).

use mmsched_core::align::{AlignConfig, ClockAligner};
use serde::Serialize;

use crate::jitter::GammaJitter;
use crate::rng::stream_rng;
use crate::stats::quantile;

/// One stream of the drift model.
#[derive(Debug, Clone)]
pub struct StreamModel {
    /// Name (`vision`, `audio`, `imu`).
    pub name: String,
    /// Event period, in nanoseconds.
    pub period_nanos: u64,
    /// Constant clock offset of the stream against the device, in ms.
    pub offset_ms: f64,
    /// Crystal drift α, in ppm (1 ppm = 1e-6 s/s).
    pub drift_ppm: f64,
    /// Fixed pipeline latency d_j, in ms (known calibration).
    pub latency_ms: f64,
    /// One-sided random transport delay J_j.
    pub jitter: GammaJitter,
}

/// A temperature episode: the stream's drift moves by `drift_ppm_delta`, ramping linearly
/// over `ramp_s` seconds at both ends.
#[derive(Debug, Clone)]
pub struct TemperatureEpisode {
    /// The stream affected.
    pub stream: String,
    /// Start, in seconds of simulated time.
    pub start_s: f64,
    /// End, in seconds of simulated time.
    pub end_s: f64,
    /// Drift change at full strength, in ppm.
    pub drift_ppm_delta: f64,
    /// Ramp length, in seconds.
    pub ramp_s: f64,
}

impl TemperatureEpisode {
    /// The drift change at time `t_s`, in ppm.
    pub fn delta_at(&self, t_s: f64) -> f64 {
        if t_s <= self.start_s || t_s >= self.end_s {
            return 0.0;
        }
        let ramp = self.ramp_s.max(1e-9);
        let up = ((t_s - self.start_s) / ramp).min(1.0);
        let down = ((self.end_s - t_s) / ramp).min(1.0);
        self.drift_ppm_delta * up.min(down)
    }
}

/// Settings of the drift experiment.
#[derive(Debug, Clone)]
pub struct DriftConfig {
    /// Run seed.
    pub seed: u64,
    /// Simulated duration, in seconds.
    pub duration_s: u64,
    /// Warm-up before aligned figures count, in seconds.
    pub warmup_s: u64,
    /// The streams.
    pub streams: Vec<StreamModel>,
    /// Temperature episodes.
    pub episodes: Vec<TemperatureEpisode>,
    /// Pairs to report, as (first, second) stream names.
    pub pairs: Vec<(String, String)>,
}

impl Default for DriftConfig {
    fn default() -> Self {
        let g = |k: f64, theta: f64| GammaJitter::new(k, theta).expect("valid defaults");
        Self {
            seed: 1,
            duration_s: 600,
            warmup_s: 60,
            streams: vec![
                StreamModel {
                    name: "vision".into(),
                    period_nanos: 33_333_333,
                    offset_ms: -512.0,
                    drift_ppm: 1.2,
                    latency_ms: 14.0,
                    jitter: g(2.0, 7.6),
                },
                StreamModel {
                    name: "imu".into(),
                    period_nanos: 5_000_000,
                    offset_ms: 1_234.5,
                    drift_ppm: -0.8,
                    latency_ms: 2.0,
                    jitter: g(2.0, 0.5),
                },
                StreamModel {
                    name: "audio".into(),
                    period_nanos: 20_000_000,
                    offset_ms: 77.7,
                    drift_ppm: 3.1,
                    latency_ms: 56.0,
                    jitter: g(2.0, 8.0),
                },
            ],
            // A warm-up of the camera module: +25 ppm over two minutes, in and out in 30 s.
            episodes: vec![TemperatureEpisode {
                stream: "vision".into(),
                start_s: 240.0,
                end_s: 360.0,
                drift_ppm_delta: 25.0,
                ramp_s: 30.0,
            }],
            pairs: vec![
                ("vision".into(), "imu".into()),
                ("audio".into(), "vision".into()),
            ],
        }
    }
}

/// The figures for one pair of streams.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PairResult {
    /// `first–second`, e.g. `vision–imu`.
    pub pair: String,
    /// P(|Δt| > 50 ms) with arrival-time stamping, in percent.
    pub raw_p_over_50ms: f64,
    /// P99 of |Δt| with arrival-time stamping, in ms.
    pub raw_p99_ms: f64,
    /// P(|Δt| > 50 ms) after online alignment (after the warm-up), in percent.
    pub aligned_p_over_50ms: f64,
    /// P99 of the residual |Δt| after alignment (after the warm-up), in ms.
    pub residual_p99_ms: f64,
    /// Pairs of events compared.
    pub samples: usize,
}

struct EventErrors {
    t_nanos: Vec<u64>,
    raw_ms: Vec<f64>,
    aligned_ms: Vec<f64>,
}

fn simulate_stream(cfg: &DriftConfig, index: usize) -> EventErrors {
    let s = &cfg.streams[index];
    let mut rng = stream_rng(cfg.seed, 0xD71F_0000 + index as u64);
    let mut aligner = ClockAligner::new(AlignConfig::default());
    let end = cfg.duration_s * 1_000_000_000;
    let n = (end / s.period_nanos.max(1)) as usize;
    let mut out = EventErrors {
        t_nanos: Vec::with_capacity(n),
        raw_ms: Vec::with_capacity(n),
        aligned_ms: Vec::with_capacity(n),
    };
    let episodes: Vec<&TemperatureEpisode> =
        cfg.episodes.iter().filter(|e| e.stream == s.name).collect();
    // Keep the stream clock in a large positive range: stamps are unsigned.
    let origin_nanos = 1_000_000_000_000.0;
    let mut phase_nanos = 0.0;
    let mut t: u64 = 0;
    while t < end {
        let t_s = t as f64 / 1e9;
        let alpha_ppm = s.drift_ppm + episodes.iter().map(|e| e.delta_at(t_s)).sum::<f64>();
        let stamp = origin_nanos + s.offset_ms * 1e6 + t as f64 + phase_nanos;
        let delay_ms = s.latency_ms + s.jitter.sample_ms(&mut rng);
        let arrival = t as f64 + delay_ms * 1e6;
        let arrival_nanos = (arrival + origin_nanos) as u64;
        aligner.observe(stamp as u64, arrival_nanos);
        let mapped = aligner.to_device_nanos(stamp as u64) as f64 - origin_nanos;
        out.t_nanos.push(t);
        out.raw_ms.push(delay_ms);
        out.aligned_ms
            .push((mapped - s.latency_ms * 1e6 - t as f64) / 1e6);
        phase_nanos += alpha_ppm * 1e-6 * s.period_nanos as f64;
        t += s.period_nanos;
    }
    out
}

/// Errors of the drift experiment.
#[derive(Debug, thiserror::Error)]
pub enum DriftError {
    /// A pair names a stream that is not defined.
    #[error("pair {first}–{second}: unknown stream `{missing}` (defined: {defined})")]
    UnknownStream {
        /// First stream of the pair.
        first: String,
        /// Second stream of the pair.
        second: String,
        /// The missing name.
        missing: String,
        /// The defined names.
        defined: String,
    },
}

/// Runs the experiment and returns one result per pair.
pub fn run(cfg: &DriftConfig) -> Result<Vec<PairResult>, DriftError> {
    let find = |name: &str, a: &str, b: &str| {
        cfg.streams
            .iter()
            .position(|s| s.name == name)
            .ok_or_else(|| DriftError::UnknownStream {
                first: a.into(),
                second: b.into(),
                missing: name.into(),
                defined: cfg
                    .streams
                    .iter()
                    .map(|s| s.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            })
    };
    let mut cache: Vec<Option<EventErrors>> = cfg.streams.iter().map(|_| None).collect();
    let mut results = Vec::new();
    for (a, b) in &cfg.pairs {
        let ia = find(a, a, b)?;
        let ib = find(b, a, b)?;
        for i in [ia, ib] {
            if cache[i].is_none() {
                cache[i] = Some(simulate_stream(cfg, i));
            }
        }
        let (Some(ea), Some(eb)) = (&cache[ia], &cache[ib]) else {
            unreachable!("both streams were simulated above")
        };
        let warmup = cfg.warmup_s * 1_000_000_000;
        let mut raw = Vec::with_capacity(ea.t_nanos.len());
        let mut aligned = Vec::with_capacity(ea.t_nanos.len());
        let mut j = 0;
        for (k, &t) in ea.t_nanos.iter().enumerate() {
            while j + 1 < eb.t_nanos.len()
                && eb.t_nanos[j + 1].abs_diff(t) <= eb.t_nanos[j].abs_diff(t)
            {
                j += 1;
            }
            if eb.t_nanos.is_empty() {
                break;
            }
            raw.push((ea.raw_ms[k] - eb.raw_ms[j]).abs());
            if t >= warmup {
                aligned.push((ea.aligned_ms[k] - eb.aligned_ms[j]).abs());
            }
        }
        let over = |v: &[f64]| {
            if v.is_empty() {
                0.0
            } else {
                100.0 * v.iter().filter(|x| **x > 50.0).count() as f64 / v.len() as f64
            }
        };
        let samples = raw.len();
        results.push(PairResult {
            pair: format!("{a}–{b}"),
            raw_p_over_50ms: over(&raw),
            aligned_p_over_50ms: over(&aligned),
            raw_p99_ms: quantile(&mut raw, 0.99),
            residual_p99_ms: quantile(&mut aligned, 0.99),
            samples,
        });
    }
    Ok(results)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reproduces_raw_reference_and_aligns() {
        let cfg = DriftConfig {
            duration_s: 300,
            ..DriftConfig::default()
        };
        let r = run(&cfg).expect("known streams");
        let vi = &r[0];
        let av = &r[1];
        assert!((2.5..5.0).contains(&vi.raw_p_over_50ms), "{vi:?}");
        assert!((24.0..34.0).contains(&av.raw_p_over_50ms), "{av:?}");
        for p in &r {
            assert_eq!(p.aligned_p_over_50ms, 0.0, "{p:?}");
            assert!(p.residual_p99_ms < 2.0, "{p:?}");
        }
    }

    #[test]
    fn unknown_stream_is_an_error() {
        let cfg = DriftConfig {
            pairs: vec![("vision".into(), "lidar".into())],
            ..DriftConfig::default()
        };
        let e = run(&cfg).unwrap_err().to_string();
        assert!(
            e.contains("lidar") && e.contains("vision, imu, audio"),
            "{e}"
        );
    }

    #[test]
    fn episode_ramps() {
        let e = TemperatureEpisode {
            stream: "x".into(),
            start_s: 10.0,
            end_s: 20.0,
            drift_ppm_delta: 10.0,
            ramp_s: 2.0,
        };
        assert_eq!(e.delta_at(5.0), 0.0);
        assert_eq!(e.delta_at(11.0), 5.0);
        assert_eq!(e.delta_at(15.0), 10.0);
        assert_eq!(e.delta_at(19.5), 2.5);
    }
}
