//! Long-run soak (S10): days of a scenario in seconds of wall time, with and without the
//! adaptive threshold compensation of S3.
//!
//! ## How time is compressed (what is sampled)
//!
//! The run is cut into evaluation windows (default 120 s of simulated time, 2160 windows in
//! 72 h). For each window the environment is computed from the scenario — temperature
//! cycle, battery charge, low-power mode, background load and load spikes, Wi-Fi switching
//! and packet loss, vibration, and the accumulated wear — and turned into *conditions*
//! (job-cost multiplier, extra packet loss, battery fraction, camera-rate scale). Then a
//! **sample** of the window (default its first 6 s) is run through the discrete-event
//! simulator, i.e. through the real core scheduler with modelled job costs, and the LDTI is
//! evaluated on that sample's P99 latency, the crystal drift and the throughput. The health
//! loop acts once per window on that LDTI. So: decisions inside a sample are the real
//! core's, event by event; the rest of each window is assumed to behave like its sample.
//!
//! ## LDTI inputs
//!
//! - latency: sliding-window P99 of the vision jobs (release → finish) over the last five
//!   samples, against L₀ = the profile's P99 of one vision job on an idle device;
//! - drift: the largest crystal drift of the scenario's streams, in ppm, at the window's
//!   temperature (`clock_drift_ppm + drift_ppm_per_c · (T − 25 °C)`);
//! - throughput: completed / offered jobs, averaged over the job classes and over the last
//!   five samples (work released in a sample is run to completion before it is counted).
//!
//! ## The environment model
//!
//! - cost multiplier = (1 + wear) · throttle(T) · (1 + background load) · (1 + spike duty ·
//!   spike load) · low-power factor (1.15 in low-power mode, 1.3 below 20 % charge);
//!   throttle(T) = 1 + 1 % per °C above 70 °C;
//! - wear grows by `device.wear_pct_per_hour` per hour of uptime, times the window's
//!   utilisation relative to the scenario's nominal (a lighter load wears less);
//! - Wi-Fi switching: extra loss = outage share + `loss_pct` during the 2 s after a switch;
//!   vibration: +0.2 % loss per g (connector micro-drops); jitter bursts: loss of the late
//!   packets of the burst share.
//!
//! ## The health loop and what compensation does
//!
//! Both runs use S3's levels and actions on every window: *degraded* (LDTI ≥ 0.25) scales
//! the camera rate to 75 % and retransmits (half the lost packets recovered); *critical*
//! (≥ 0.6) circuit-breaks the LLM branch and answers from the cache.
//!
//! The **compensated** run adds S3's adaptive compensation, and makes it act on the system:
//! `ldti::AdaptiveThreshold` is fed every window's LDTI; its factor (≈ 0.925 in a calm
//! window, towards 1 in a noisy one) (a) scales the level thresholds, so the actions above
//! fire earlier, and (b) is the long-run re-calibration trigger: when the health score
//! falls below `factor ×` the score calibrated in the first hour, the monitor runs
//! **maintenance** — it re-estimates the clock drift (the drift term returns to the
//! crystal's current rate), restarts the worker pool and flushes caches (wear back to 0),
//! and keeps the camera at 90 % until the score has recovered. Maintenance runs at most once
//! per simulated hour, so a noisy window cannot make it flap. The uncompensated run has
//! none of this and only reacts at the fixed thresholds. Both runs see identical
//! environments and identical random numbers (same seed per window).

use mmsched_core::ldti::{
    self, ActionSwitches, AdaptiveThreshold, HealthAction, LdtiInputs, Level, LevelThresholds,
};
use mmsched_core::policy::Policy;
use mmsched_scenario::{EpisodeKind, Scenario, StreamKind};
use serde::Serialize;

use crate::des::{Conditions, Simulator};
use crate::profile::{Profile, ProfileError};

/// Samples pooled for the sliding-window P99 and throughput.
const SLIDING_SAMPLES: usize = 5;

/// Settings of a soak.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SoakConfig {
    /// Run seed.
    pub seed: u64,
    /// Simulated hours.
    pub hours: f64,
    /// Evaluation window, simulated seconds.
    pub window_s: f64,
    /// Simulated seconds of each window run through the scheduler.
    pub sample_s: f64,
}

impl Default for SoakConfig {
    fn default() -> Self {
        Self {
            seed: 1,
            hours: 72.0,
            window_s: 120.0,
            sample_s: 6.0,
        }
    }
}

/// One point of the health curve.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SoakPoint {
    /// Simulated time, hours.
    pub hour: f64,
    /// LDTI of the window.
    pub ldti: f64,
    /// Health score = 100 · (1 − LDTI).
    pub score: f64,
    /// Level under the thresholds in force.
    pub level: Level,
    /// Threshold factor in force (1 without compensation).
    pub factor: f64,
    /// Whether maintenance ran in this window.
    pub maintenance: bool,
    /// Vision P99 of the window's sample, ms.
    pub vision_p99_ms: f64,
    /// Crystal drift, ppm.
    pub drift_ppm: f64,
    /// Completed / offered.
    pub throughput_ratio: f64,
}

/// Summary of one run (the S10 table row).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SoakSummary {
    /// Mean score over the first hour.
    pub start_score: f64,
    /// Mean score over the last hour.
    pub end_score: f64,
    /// (start − end) / start, percent (positive = decay).
    pub decay_pct: f64,
    /// Standard deviation of the score over the last 6 hours (± residual).
    pub residual: f64,
    /// Windows at each level: stable, degraded, critical.
    pub windows_by_level: [u64; 3],
    /// Maintenance runs.
    pub maintenance_runs: u64,
}

/// One run: its curve and its summary.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SoakRun {
    /// Summary.
    pub summary: SoakSummary,
    /// Curve, one point per window.
    pub points: Vec<SoakPoint>,
}

/// Both runs of a soak.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SoakResult {
    /// Scenario name.
    pub scenario: String,
    /// Simulated hours.
    pub hours: f64,
    /// With adaptive compensation.
    pub compensated: SoakRun,
    /// Without.
    pub uncompensated: SoakRun,
}

/// The environment of one window (before health actions).
#[derive(Debug, Clone, Copy)]
struct Env {
    temp_c: f64,
    drift_ppm: f64,
    base_cost: f64,
    extra_loss_pct: f64,
    battery_fraction: f64,
}

fn env_at(s: &Scenario, hour: f64) -> Env {
    let t_s = hour * 3600.0;
    let mut temp_c = 25.0;
    let mut drift_per_c = 0.0;
    let mut extra_loss_pct = 0.0;
    let mut spike = 0.0;
    for e in s.episodes().iter().filter(|e| e.active_at(t_s)) {
        match e.kind {
            EpisodeKind::Temperature => {
                let (lo, hi) = (e.temp_min_c.unwrap_or(25.0), e.temp_max_c.unwrap_or(25.0));
                let cycle_s = e.cycle_h.unwrap_or(24.0) * 3600.0;
                // Start at the mid-point, warming up first.
                let phase = 2.0 * std::f64::consts::PI * (t_s - e.start_s) / cycle_s;
                temp_c = (lo + hi) / 2.0 + (hi - lo) / 2.0 * phase.sin();
                drift_per_c = e.drift_ppm_per_c.unwrap_or(0.5);
            }
            EpisodeKind::WifiSwitching => {
                let per_min = e.switches_per_min.unwrap_or(0.0);
                let outage = per_min * e.outage_ms.unwrap_or(150.0) / 60_000.0;
                let lossy = (per_min * 2.0 / 60.0).min(1.0);
                extra_loss_pct += 100.0 * outage.min(1.0) + e.loss_pct.unwrap_or(0.0) * lossy;
            }
            EpisodeKind::Vibration => extra_loss_pct += 0.2 * e.amplitude_g.unwrap_or(0.0),
            EpisodeKind::Jitter => {
                if let (Some(every), Some(burst)) = (e.burst_every_ms, e.burst_ms) {
                    extra_loss_pct += 100.0 * (burst / every).min(1.0) * 0.1;
                }
            }
            EpisodeKind::LoadSpike => {
                let duty = e.spike_ms.unwrap_or(0.0) / e.every_ms.unwrap_or(1.0).max(1.0);
                spike += duty.min(1.0) * e.load_pct.unwrap_or(0.0) / 100.0;
            }
            EpisodeKind::PacketLoss | EpisodeKind::Blur | EpisodeKind::Dark => {}
        }
    }
    let drift_ppm = s
        .streams()
        .iter()
        .map(|st| (st.clock_drift_ppm + drift_per_c * (temp_c - 25.0)).abs())
        .fold(0.0, f64::max);
    let battery_pct = s.battery().charge_pct_at(hour);
    let low_power = if battery_pct < 20.0 {
        1.3
    } else if s.battery().low_power {
        1.15
    } else {
        1.0
    };
    let throttle = 1.0 + 0.01 * (temp_c - 70.0).max(0.0);
    let background = s.device().background_load_pct.unwrap_or(0.0) / 100.0;
    Env {
        temp_c,
        drift_ppm,
        base_cost: throttle * (1.0 + background) * (1.0 + spike) * low_power,
        extra_loss_pct,
        battery_fraction: battery_pct / 100.0,
    }
}

/// Errors of a soak.
#[derive(Debug, thiserror::Error)]
pub enum SoakError {
    /// The profile lacks a model kind.
    #[error(transparent)]
    Profile(#[from] ProfileError),
    /// Bad settings.
    #[error("invalid soak settings: {0}")]
    Settings(String),
}

fn window_seed(seed: u64, k: usize) -> u64 {
    seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (k as u64).wrapping_mul(0xD1B5_4A32_D192_ED03)
}

fn class_throughput(r: &crate::des::DesReport) -> f64 {
    let ratios: Vec<f64> = r
        .classes
        .values()
        .filter(|c| c.offered > 0)
        .map(|c| c.completed as f64 / c.offered as f64)
        .collect();
    if ratios.is_empty() {
        1.0
    } else {
        ratios.iter().sum::<f64>() / ratios.len() as f64
    }
}

struct Health {
    compensated: bool,
    adaptive: AdaptiveThreshold,
    thresholds: LevelThresholds,
    actions: ActionSwitches,
    calibration: Vec<f64>,
    baseline: Option<f64>,
    action: HealthAction,
    careful: bool,
}

/// Runs one of the two runs.
fn run_one(
    s: &Scenario,
    sim: &Simulator<'_>,
    policy: &Policy,
    l0_nanos: u64,
    cfg: &SoakConfig,
    compensated: bool,
    progress: &mut dyn FnMut(),
) -> SoakRun {
    let windows = ((cfg.hours * 3600.0) / cfg.window_s).ceil().max(1.0) as usize;
    let lp = policy.ldti();
    let mut h = Health {
        compensated,
        adaptive: AdaptiveThreshold::new(lp.adaptive_window as usize, lp.adaptive_smoothing),
        thresholds: lp.thresholds,
        actions: lp.actions,
        calibration: Vec::new(),
        baseline: None,
        action: HealthAction::Stable,
        careful: false,
    };
    let windows_per_hour = (3600.0 / cfg.window_s).round().max(1.0) as usize;
    let wear_rate = s.device().wear_pct_per_hour.unwrap_or(0.0) / 100.0;
    let mut wear = 0.0;
    let mut points = Vec::with_capacity(windows);
    let mut recent: std::collections::VecDeque<crate::des::DesReport> =
        std::collections::VecDeque::with_capacity(SLIDING_SAMPLES + 1);
    let mut maintenance_runs = 0;
    let mut last_maintenance: Option<usize> = None;
    let sample_nanos = (cfg.sample_s * 1e9) as u64;
    for k in 0..windows {
        let hour = k as f64 * cfg.window_s / 3600.0;
        let env = env_at(s, hour);
        // Health actions decided at the end of the previous window apply now.
        let mut camera: f64 = if h.careful { 0.9 } else { 1.0 };
        let mut loss = env.extra_loss_pct;
        let mut circuit_break = false;
        match h.action {
            HealthAction::Stable => {}
            HealthAction::Degraded {
                scale_frequency,
                retransmit,
            } => {
                if scale_frequency {
                    camera = camera.min(0.75);
                }
                if retransmit {
                    loss *= 0.5;
                }
            }
            HealthAction::Critical {
                circuit_break: cb, ..
            } => {
                camera = camera.min(0.75);
                circuit_break = cb;
            }
        }
        let cond = Conditions {
            cost_multiplier: env.base_cost * (1.0 + wear),
            camera_rate_scale: camera,
            extra_loss_pct: loss,
            battery_fraction: env.battery_fraction,
        };
        let report = sim.run(window_seed(cfg.seed, k), sample_nanos, &cond, None);
        // Sliding-window P99 and throughput over the last few samples, as the runtime's
        // health monitor keeps them.
        recent.push_back(report);
        if recent.len() > SLIDING_SAMPLES {
            recent.pop_front();
        }
        let mut pooled: Vec<f64> = recent
            .iter()
            .filter_map(|r| r.latencies_ms.get("vision"))
            .flatten()
            .copied()
            .collect();
        let vision_p99_ms = crate::stats::quantile(&mut pooled, 0.99);
        let mut throughput = recent.iter().map(class_throughput).sum::<f64>() / recent.len() as f64;
        if circuit_break {
            // The LLM branch answers from cache: stale answers count as half served.
            throughput = throughput.max(0.5 * (1.0 + throughput));
        }
        let inputs = LdtiInputs {
            latency_p99_nanos: (vision_p99_ms * 1e6) as u64,
            latency_ref_nanos: l0_nanos,
            drift_ppm: env.drift_ppm,
            throughput,
            throughput_max: 1.0,
        };
        let value = ldti::evaluate(&lp.weights, &inputs).value;
        let score = 100.0 * (1.0 - value);
        // Wear accumulates with the work done (camera rate as the load proxy).
        wear += wear_rate * (cfg.window_s / 3600.0) * camera;
        let mut maintenance = false;
        let factor = if h.compensated {
            h.adaptive.update(value)
        } else {
            1.0
        };
        let thresholds = h.thresholds.scaled(factor);
        let level = thresholds.classify(value);
        h.action = h.actions.action_for(level);
        if h.compensated {
            if h.baseline.is_none() {
                h.calibration.push(score);
                if h.calibration.len() >= windows_per_hour {
                    h.baseline = Some(crate::stats::mean(&h.calibration));
                }
            }
            if let Some(base) = h.baseline {
                let rested = last_maintenance.is_none_or(|m| k >= m + windows_per_hour);
                if score < factor * base && rested {
                    last_maintenance = Some(k);
                    // Long-run maintenance: re-estimate drift, restart workers, flush caches.
                    wear = 0.0;
                    maintenance = true;
                    maintenance_runs += 1;
                    h.careful = true;
                } else if score >= base {
                    h.careful = false;
                }
            }
        }
        points.push(SoakPoint {
            hour,
            ldti: value,
            score,
            level,
            factor,
            maintenance,
            vision_p99_ms,
            drift_ppm: env.drift_ppm,
            throughput_ratio: throughput,
        });
        let _ = env.temp_c;
        progress();
    }
    SoakRun {
        summary: summarize(&points, windows_per_hour, maintenance_runs),
        points,
    }
}

fn summarize(points: &[SoakPoint], per_hour: usize, maintenance_runs: u64) -> SoakSummary {
    let n = points.len();
    let head: Vec<f64> = points.iter().take(per_hour).map(|p| p.score).collect();
    let tail: Vec<f64> = points[n.saturating_sub(per_hour)..]
        .iter()
        .map(|p| p.score)
        .collect();
    let last6: Vec<f64> = points[n.saturating_sub(6 * per_hour)..]
        .iter()
        .map(|p| p.score)
        .collect();
    let start = crate::stats::mean(&head);
    let end = crate::stats::mean(&tail);
    let m = crate::stats::mean(&last6);
    let var = last6.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / last6.len().max(1) as f64;
    let mut by_level = [0u64; 3];
    for p in points {
        by_level[match p.level {
            Level::Stable => 0,
            Level::Degraded => 1,
            Level::Critical => 2,
        }] += 1;
    }
    SoakSummary {
        start_score: start,
        end_score: end,
        decay_pct: if start > 0.0 {
            100.0 * (start - end) / start
        } else {
            0.0
        },
        residual: var.sqrt(),
        windows_by_level: by_level,
        maintenance_runs,
    }
}

/// Runs both soaks of a scenario. `progress` is called once per window of each run.
pub fn run(
    scenario: &Scenario,
    profile: &Profile,
    policy: &Policy,
    cfg: &SoakConfig,
    mut progress: impl FnMut(),
) -> Result<SoakResult, SoakError> {
    if !(cfg.hours.is_finite() && cfg.hours > 0.0 && cfg.hours <= 10_000.0) {
        return Err(SoakError::Settings(format!(
            "hours must be in (0, 10000], got {}",
            cfg.hours
        )));
    }
    if !(cfg.window_s >= 1.0 && cfg.sample_s > 0.0 && cfg.sample_s <= cfg.window_s) {
        return Err(SoakError::Settings(format!(
            "need window ≥ 1 s and 0 < sample ≤ window, got window {} s, sample {} s",
            cfg.window_s, cfg.sample_s
        )));
    }
    let sim = Simulator::new(scenario, profile, policy.clone())?;
    let has_camera = scenario
        .streams()
        .iter()
        .any(|s| s.kind == StreamKind::Camera);
    let l0_ms = if has_camera {
        profile.latency("vision")?.p99_ms
    } else {
        1.0
    };
    let l0 = (l0_ms * 1e6) as u64;
    let compensated = run_one(scenario, &sim, policy, l0, cfg, true, &mut progress);
    let uncompensated = run_one(scenario, &sim, policy, l0, cfg, false, &mut progress);
    Ok(SoakResult {
        scenario: scenario.name().to_string(),
        hours: cfg.hours,
        compensated,
        uncompensated,
    })
}

/// The two health curves as CSV: `hour,score_compensated,score_uncompensated,…`.
pub fn to_csv(r: &SoakResult) -> String {
    let mut out = String::from(
        "hour,ldti_compensated,score_compensated,level_compensated,factor,maintenance,ldti_uncompensated,score_uncompensated,level_uncompensated,vision_p99_ms_uncompensated,drift_ppm,throughput_uncompensated\n",
    );
    for (c, u) in r.compensated.points.iter().zip(&r.uncompensated.points) {
        out.push_str(&format!(
            "{:.4},{:.5},{:.3},{},{:.4},{},{:.5},{:.3},{},{:.2},{:.2},{:.4}\n",
            c.hour,
            c.ldti,
            c.score,
            c.level.as_str(),
            c.factor,
            u8::from(c.maintenance),
            u.ldti,
            u.score,
            u.level.as_str(),
            u.vision_p99_ms,
            u.drift_ppm,
            u.throughput_ratio
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn environment_follows_the_scenario() {
        let car = Scenario::load("car").expect("shipped");
        // Six hours in: the top of the temperature cycle (85 °C): throttled, large drift.
        let hot = env_at(&car, 6.0);
        assert!((hot.temp_c - 85.0).abs() < 1e-6);
        assert!(hot.base_cost > env_at(&car, 0.0).base_cost);
        assert!(hot.drift_ppm > 25.0);
        let ar = Scenario::load("ar-glasses").expect("shipped");
        assert!(env_at(&ar, 72.0).battery_fraction < env_at(&ar, 0.0).battery_fraction);
        let insp = Scenario::load("inspection").expect("shipped");
        assert!(env_at(&insp, 1.0).extra_loss_pct > 2.0);
    }
}
