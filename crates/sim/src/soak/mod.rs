//! Long-run soak (S10): days of a scenario in seconds of wall time, in three arms.
//!
//! ## How time is compressed (what is sampled)
//!
//! The run is cut into windows (default 120 s of simulated time, 2160 windows in 72 h).
//! For each window the environment is computed from the scenario's stressors and turned
//! into *conditions* (job-cost multiplier, link loss, battery). Then a **sample** of the
//! window (default its first 6 s) runs through the discrete-event simulator: the real core
//! scheduler in the runtime's layout, the real health controller, modelled job costs. The
//! rest of each window is assumed to behave like its sample. Every arm sees the same
//! environment and the same random numbers (one seed per window).
//!
//! ## Mechanisms (how stressors act)
//!
//! Nothing decays by itself: a figure changes only through one of these, and the output
//! lists those active in the scenario ([`Mechanism`]).
//!
//! - *thermal throttling* (temperature episode): job cost × (1 + 1 % per °C above 70 °C);
//! - *crystal drift* (temperature episode): a stream's drift = `clock_drift_ppm` +
//!   `drift_ppm_per_c` · (T − 25 °C), the index's drift input;
//! - *low-power mode* (battery): job cost × 1.15 in the scenario's low-power mode, × 1.3
//!   below 20 % charge; *battery saver*: the charge goes to the scheduler, which prunes
//!   unimportant work when low;
//! - *background load* (`[device] background_load_pct`) and *load spikes* (load-spike
//!   episodes): a thread sharing the cores with the workers, as `mmsched run` burns it
//!   (see [`mmsched_world::load::LoadProfile::stretch`]);
//! - *Wi-Fi outages* (Wi-Fi switching): the outage share of time is lost on every networked
//!   link, unrecoverably; *Wi-Fi switch loss*: `loss_pct` during the 2 s after each switch,
//!   recoverable by retransmission; *vibration*: +0.2 % loss per g; *jitter bursts*: the
//!   late tenth of a burst's packets are lost.
//!
//! **Wear** (job cost growing with uptime) is not a mechanism the simulator knows: it is an
//! *assumption* a user can add (`SoakConfig::wear_pct_per_hour`), listed in the output's
//! `assumptions` and in the plot's caption. A restart resets it.
//!
//! ## Arms
//!
//! - `no_health`: the scheduler alone; the health loop evaluates (for the LDTI curve) but
//!   nothing acts on it;
//! - `naive`: what a user would try without a health loop: restart the service every
//!   `restart_every_h` hours; each restart loses `restart_downtime_s` of input and resets
//!   any assumed wear;
//! - `mmsched`: the health loop acts — the runtime's remedies (camera rate halved,
//!   retransmission, breaker on the heaviest branch with cached answers), from the same
//!   core controller `mmsched run` uses.

use mmsched_core::ldti::Level;
use mmsched_core::policy::Policy;
use mmsched_scenario::{EpisodeKind, Scenario};
use serde::Serialize;

use crate::des::{Conditions, DesReport, Simulator};
use crate::health_loop::HealthLoop;
use mmsched_world::mic::SpeechLoop;
use mmsched_world::profile::{Profile, ProfileError};

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
    /// Assumed wear: job cost growth per hour of uptime, percent (0: none, the default).
    pub wear_pct_per_hour: f64,
    /// The naive arm restarts every this many hours.
    pub restart_every_h: f64,
    /// Input lost per restart, seconds.
    pub restart_downtime_s: f64,
}

impl Default for SoakConfig {
    fn default() -> Self {
        Self {
            seed: 1,
            hours: 72.0,
            window_s: 120.0,
            sample_s: 6.0,
            wear_pct_per_hour: 0.0,
            restart_every_h: 6.0,
            restart_downtime_s: 30.0,
        }
    }
}

/// The three arms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arm {
    /// No health loop.
    NoHealth,
    /// Periodic restarts.
    Naive,
    /// mmsched's health loop.
    Mmsched,
}

impl Arm {
    /// All arms, in output order.
    pub const ALL: [Arm; 3] = [Arm::NoHealth, Arm::Naive, Arm::Mmsched];

    /// The JSON key.
    pub fn as_str(self) -> &'static str {
        match self {
            Arm::NoHealth => "no_health",
            Arm::Naive => "naive",
            Arm::Mmsched => "mmsched",
        }
    }
}

/// One window of one arm.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SoakPoint {
    /// Simulated time, hours.
    pub hour: f64,
    /// Jobs completed in time over jobs submitted, percent (restart downtime counts as
    /// missed).
    pub on_time_pct: f64,
    /// Inputs without a result over inputs offered, percent.
    pub drops_pct: f64,
    /// Mean LDTI over the sample's evaluations.
    pub ldti: f64,
    /// The level the sample spent most time at.
    pub level: Level,
    /// Whether any remedy was in force during the sample.
    pub acted: bool,
    /// Whether the naive arm restarted in this window.
    pub restart: bool,
    /// Vision P99 of the sample, ms (NaN without vision jobs).
    pub vision_p99_ms: f64,
    /// The environment's job-cost multiplier.
    pub cost_multiplier: f64,
    /// Extra link loss, percent.
    pub loss_pct: f64,
    /// Largest crystal drift, ppm.
    pub drift_ppm: f64,
}

/// Summary of one arm.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ArmSummary {
    /// Mean on-time rate over the run, percent.
    pub on_time_pct: f64,
    /// Over the first hour.
    pub on_time_pct_first_hour: f64,
    /// Over the last hour.
    pub on_time_pct_last_hour: f64,
    /// Mean drop rate, percent.
    pub drops_pct: f64,
    /// Mean LDTI.
    pub ldti_mean: f64,
    /// Largest per-window LDTI.
    pub ldti_max: f64,
    /// Windows at each level: stable, degraded, critical.
    pub windows_by_level: [u64; 3],
    /// Windows with a remedy in force.
    pub windows_acted: u64,
    /// Restarts.
    pub restarts: u64,
}

/// One arm: its curve and its summary.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SoakArm {
    /// Summary.
    pub summary: ArmSummary,
    /// Curve, one point per window.
    pub points: Vec<SoakPoint>,
}

/// A mechanism through which a stressor acts.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Mechanism {
    /// Its name.
    pub name: &'static str,
    /// What it does, with the scenario's figures.
    pub effect: String,
}

/// A soak: three arms.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SoakResult {
    /// Scenario name.
    pub scenario: String,
    /// Simulated hours.
    pub hours: f64,
    /// Assumptions beyond the mechanisms (empty by default).
    pub assumptions: Vec<String>,
    /// The mechanisms active in the scenario.
    pub mechanisms: Vec<Mechanism>,
    /// What the naive arm does.
    pub naive: String,
    /// No health loop.
    pub no_health: SoakArm,
    /// Periodic restarts.
    pub naive_arm: SoakArm,
    /// mmsched's health loop.
    pub mmsched: SoakArm,
}

impl SoakResult {
    /// The arm's run.
    pub fn arm(&self, arm: Arm) -> &SoakArm {
        match arm {
            Arm::NoHealth => &self.no_health,
            Arm::Naive => &self.naive_arm,
            Arm::Mmsched => &self.mmsched,
        }
    }
}

/// The environment of one window.
#[derive(Debug, Clone, Copy)]
struct Env {
    temp_c: f64,
    drift_ppm: f64,
    cost: f64,
    outage_loss_pct: f64,
    random_loss_pct: f64,
    battery_fraction: f64,
}

/// Loss during the seconds after a Wi-Fi switch.
const SWITCH_LOSSY_S: f64 = 2.0;

fn env_at(s: &Scenario, hour: f64) -> Env {
    let t_s = hour * 3600.0;
    let mut temp_c = 25.0;
    let mut drift_per_c = 0.0;
    let mut outage = 0.0;
    let mut random = 0.0;
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
                outage += 100.0 * (per_min * e.outage_ms.unwrap_or(150.0) / 60_000.0).min(1.0);
                let lossy = (per_min * SWITCH_LOSSY_S / 60.0).min(1.0);
                random += e.loss_pct.unwrap_or(0.0) * lossy;
            }
            EpisodeKind::Vibration => random += 0.2 * e.amplitude_g.unwrap_or(0.0),
            EpisodeKind::Jitter => {
                if let (Some(every), Some(burst)) = (e.burst_every_ms, e.burst_ms) {
                    random += 100.0 * (burst / every).min(1.0) * 0.1;
                }
            }
            EpisodeKind::LoadSpike
            | EpisodeKind::PacketLoss
            | EpisodeKind::Blur
            | EpisodeKind::Dark => {}
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
    // Background load and spikes act in the simulator itself, sharing the cores.
    Env {
        temp_c,
        drift_ppm,
        cost: throttle * low_power,
        outage_loss_pct: outage.min(100.0),
        random_loss_pct: random.min(100.0),
        battery_fraction: battery_pct / 100.0,
    }
}

/// The mechanisms active in `s`, with its figures.
pub fn mechanisms(s: &Scenario) -> Vec<Mechanism> {
    let mut out = Vec::new();
    let mut add = |name: &'static str, effect: String| {
        if !out.iter().any(|m: &Mechanism| m.name == name) {
            out.push(Mechanism { name, effect });
        }
    };
    if let Some(bg) = s.device().background_load_pct.filter(|b| *b > 0.0) {
        add(
            "background load",
            format!(
                "{bg} % of one core taken by another thread, from the workers' cores when no core is idle"
            ),
        );
    }
    let b = s.battery();
    if b.low_power || b.drain_pct_per_hour > 0.0 {
        add(
            "low-power mode",
            format!(
                "job cost × {} (× 1.3 below 20 % charge; {:.0} % at start, −{} %/h)",
                if b.low_power { "1.15" } else { "1" },
                b.start_pct,
                b.drain_pct_per_hour
            ),
        );
        add(
            "battery saver",
            "the charge goes to the scheduler, which prunes unimportant jobs when low".into(),
        );
    }
    for e in s.episodes() {
        match e.kind {
            EpisodeKind::Temperature => {
                add(
                    "thermal throttling",
                    format!(
                        "{}…{} °C every {} h; job cost +1 % per °C above 70 °C",
                        e.temp_min_c.unwrap_or(25.0),
                        e.temp_max_c.unwrap_or(25.0),
                        e.cycle_h.unwrap_or(24.0)
                    ),
                );
                add(
                    "crystal drift",
                    format!(
                        "{} ppm/°C away from 25 °C on every stream's clock",
                        e.drift_ppm_per_c.unwrap_or(0.5)
                    ),
                );
            }
            EpisodeKind::WifiSwitching => {
                let per_min = e.switches_per_min.unwrap_or(0.0);
                add(
                    "Wi-Fi outages",
                    format!(
                        "{per_min} switches/min × {} ms outage lost on every link",
                        e.outage_ms.unwrap_or(150.0)
                    ),
                );
                add(
                    "Wi-Fi switch loss",
                    format!(
                        "{} % loss for {SWITCH_LOSSY_S} s after each switch (recoverable)",
                        e.loss_pct.unwrap_or(0.0)
                    ),
                );
            }
            EpisodeKind::LoadSpike => add(
                "load spikes",
                format!(
                    "{} % of one core for {} ms every {} ms, shared with the workers like the background load",
                    e.load_pct.unwrap_or(0.0),
                    e.spike_ms.unwrap_or(0.0),
                    e.every_ms.unwrap_or(0.0)
                ),
            ),
            EpisodeKind::Vibration => add(
                "vibration",
                format!("{} g: +0.2 % link loss per g", e.amplitude_g.unwrap_or(0.0)),
            ),
            EpisodeKind::Jitter => add(
                "jitter bursts",
                "the late tenth of a burst's packets are lost".into(),
            ),
            EpisodeKind::PacketLoss | EpisodeKind::Blur | EpisodeKind::Dark => {}
        }
    }
    out
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

fn drops_pct(r: &DesReport) -> f64 {
    let (d, o) = r.drops();
    if o == 0 {
        0.0
    } else {
        100.0 * d as f64 / o as f64
    }
}

/// Runs one arm.
fn run_arm(
    s: &Scenario,
    sim: &Simulator<'_>,
    policy: &Policy,
    cfg: &SoakConfig,
    arm: Arm,
    progress: &mut dyn FnMut(),
) -> SoakArm {
    let windows = ((cfg.hours * 3600.0) / cfg.window_s).ceil().max(1.0) as usize;
    let windows_per_hour = (3600.0 / cfg.window_s).round().max(1.0) as usize;
    let restart_every = (cfg.restart_every_h * 3600.0 / cfg.window_s)
        .round()
        .max(1.0) as usize;
    let down = (cfg.restart_downtime_s / cfg.window_s).clamp(0.0, 1.0);
    let mut health = HealthLoop::new(policy.ldti(), arm == Arm::Mmsched);
    let mut uptime_h = 0.0;
    let mut points = Vec::with_capacity(windows);
    let sample_nanos = (cfg.sample_s * 1e9) as u64;
    for k in 0..windows {
        let hour = k as f64 * cfg.window_s / 3600.0;
        let env = env_at(s, hour);
        let restart = arm == Arm::Naive && k > 0 && k % restart_every == 0;
        if restart {
            uptime_h = 0.0;
        }
        let wear = 1.0 + cfg.wear_pct_per_hour / 100.0 * uptime_h;
        let cond = Conditions {
            cost_multiplier: env.cost * wear,
            outage_loss_pct: env.outage_loss_pct,
            random_loss_pct: env.random_loss_pct,
            battery_fraction: env.battery_fraction,
            start_s: hour * 3600.0,
        };
        health.drift_ppm = env.drift_ppm;
        health.offset_nanos = (hour * 3600.0 * 1e9) as u64;
        let before_levels = health.seconds_by_level;
        let (before_sum, before_n) = (health.ldti_sum, health.evaluations);
        let before_changes = health.changes.len();
        let in_force = health.remedies() != Default::default();
        let report = sim.run(
            window_seed(cfg.seed, k),
            sample_nanos,
            &cond,
            Some(&mut health),
            None,
        );
        let acted = in_force || health.changes.len() > before_changes;
        let n = (health.evaluations - before_n).max(1) as f64;
        let ldti = (health.ldti_sum - before_sum) / n;
        let spent: Vec<f64> = (0..3)
            .map(|l| health.seconds_by_level[l] - before_levels[l])
            .collect();
        // The level the sample spent most time at (the lower one on a tie).
        let most = (0..3).fold(0, |best, l| if spent[l] > spent[best] { l } else { best });
        let level = [Level::Stable, Level::Degraded, Level::Critical][most];
        let mut on_time_pct = 100.0 * report.on_time_ratio();
        let mut drops = drops_pct(&report);
        if restart {
            // The restart's downtime: nothing served, everything offered lost.
            on_time_pct *= 1.0 - down;
            drops = 100.0 * down + (1.0 - down) * drops;
        }
        points.push(SoakPoint {
            hour,
            on_time_pct,
            drops_pct: drops,
            ldti,
            level,
            acted,
            restart,
            vision_p99_ms: report.classes.get("vision").map_or(f64::NAN, |c| c.p99_ms),
            cost_multiplier: cond.cost_multiplier,
            loss_pct: env.outage_loss_pct + env.random_loss_pct,
            drift_ppm: env.drift_ppm,
        });
        let _ = env.temp_c;
        uptime_h += cfg.window_s / 3600.0;
        progress();
    }
    SoakArm {
        summary: summarize(&points, windows_per_hour),
        points,
    }
}

fn summarize(points: &[SoakPoint], per_hour: usize) -> ArmSummary {
    let mean = |xs: &[SoakPoint], f: fn(&SoakPoint) -> f64| {
        mmsched_world::stats::mean(&xs.iter().map(f).collect::<Vec<_>>())
    };
    let n = points.len();
    let head = &points[..per_hour.min(n)];
    let tail = &points[n.saturating_sub(per_hour)..];
    let mut by_level = [0u64; 3];
    for p in points {
        by_level[p.level as usize] += 1;
    }
    ArmSummary {
        on_time_pct: mean(points, |p| p.on_time_pct),
        on_time_pct_first_hour: mean(head, |p| p.on_time_pct),
        on_time_pct_last_hour: mean(tail, |p| p.on_time_pct),
        drops_pct: mean(points, |p| p.drops_pct),
        ldti_mean: mean(points, |p| p.ldti),
        ldti_max: points.iter().map(|p| p.ldti).fold(0.0, f64::max),
        windows_by_level: by_level,
        windows_acted: points.iter().filter(|p| p.acted).count() as u64,
        restarts: points.iter().filter(|p| p.restart).count() as u64,
    }
}

/// Runs the three arms of a soak with the microphone's talk spurts `speech`. `progress` is
/// called once per window of each arm.
pub fn run(
    scenario: &Scenario,
    profile: &Profile,
    policy: &Policy,
    cfg: &SoakConfig,
    speech: &SpeechLoop,
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
    if !(cfg.wear_pct_per_hour.is_finite() && cfg.wear_pct_per_hour >= 0.0) {
        return Err(SoakError::Settings(format!(
            "assumed wear must be a non-negative percentage per hour, got {}",
            cfg.wear_pct_per_hour
        )));
    }
    if !(cfg.restart_every_h > 0.0 && cfg.restart_downtime_s >= 0.0) {
        return Err(SoakError::Settings(format!(
            "the naive arm needs a restart interval > 0 h and a downtime ≥ 0 s, got {} h and {} s",
            cfg.restart_every_h, cfg.restart_downtime_s
        )));
    }
    let sim = Simulator::new(scenario, profile, policy.clone())?.with_speech(speech.clone());
    let mut assumptions = Vec::new();
    if cfg.wear_pct_per_hour > 0.0 {
        assumptions.push(format!(
            "wear: job cost grows {} % per hour of uptime (not a simulated mechanism; a restart resets it)",
            cfg.wear_pct_per_hour
        ));
    }
    let mut arms = Arm::ALL
        .map(|arm| run_arm(scenario, &sim, policy, cfg, arm, &mut progress))
        .into_iter();
    let (Some(no_health), Some(naive_arm), Some(mmsched)) = (arms.next(), arms.next(), arms.next())
    else {
        unreachable!("three arms");
    };
    Ok(SoakResult {
        scenario: scenario.name().to_string(),
        hours: cfg.hours,
        assumptions,
        mechanisms: mechanisms(scenario),
        naive: format!(
            "restart every {} h, losing {} s of input each time; no health loop",
            cfg.restart_every_h, cfg.restart_downtime_s
        ),
        no_health,
        naive_arm,
        mmsched,
    })
}

/// The arms' curves as CSV, one row per window and arm.
pub fn to_csv(r: &SoakResult) -> String {
    let mut out = String::from(
        "arm,hour,on_time_pct,drops_pct,ldti,level,acted,restart,vision_p99_ms,cost_multiplier,loss_pct,drift_ppm\n",
    );
    for arm in Arm::ALL {
        for p in &r.arm(arm).points {
            out.push_str(&format!(
                "{},{:.4},{:.3},{:.3},{:.5},{},{},{},{:.2},{:.4},{:.3},{:.2}\n",
                arm.as_str(),
                p.hour,
                p.on_time_pct,
                p.drops_pct,
                p.ldti,
                p.level.as_str(),
                u8::from(p.acted),
                u8::from(p.restart),
                p.vision_p99_ms,
                p.cost_multiplier,
                p.loss_pct,
                p.drift_ppm
            ));
        }
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
        assert!(hot.cost > env_at(&car, 0.0).cost);
        assert!(hot.drift_ppm > 25.0);
        let ar = Scenario::load("ar-glasses").expect("shipped");
        assert!(env_at(&ar, 72.0).battery_fraction < env_at(&ar, 0.0).battery_fraction);
        let insp = Scenario::load("inspection").expect("shipped");
        let e = env_at(&insp, 1.0);
        // 4.7 switches/min × 150 ms = 1.175 % outage; 18.3 % × (4.7 × 2 s / 60 s).
        assert!((e.outage_loss_pct - 1.175).abs() < 1e-9, "{e:?}");
        assert!(
            (e.random_loss_pct - 18.3 * 4.7 * 2.0 / 60.0).abs() < 1e-9,
            "{e:?}"
        );
        let names: Vec<_> = mechanisms(&insp).iter().map(|m| m.name).collect();
        assert!(names.contains(&"Wi-Fi outages") && !names.contains(&"thermal throttling"));
    }

    fn short(hours: f64, wear: f64) -> SoakConfig {
        SoakConfig {
            hours,
            window_s: 600.0,
            sample_s: 3.0,
            wear_pct_per_hour: wear,
            restart_every_h: 1.0,
            ..SoakConfig::default()
        }
    }

    #[test]
    fn without_assumptions_the_arms_differ_only_through_remedies_and_restarts() {
        let s = Scenario::load("ar-glasses").expect("shipped");
        let r = run(
            &s,
            &Profile::reference(),
            &Policy::default(),
            &short(2.0, 0.0),
            &SpeechLoop::default(),
            || {},
        )
        .expect("runs");
        assert!(r.assumptions.is_empty());
        for (a, b) in r.no_health.points.iter().zip(&r.mmsched.points) {
            if !b.acted {
                assert_eq!((a.on_time_pct, a.drops_pct), (b.on_time_pct, b.drops_pct));
            }
        }
        for (a, b) in r.no_health.points.iter().zip(&r.naive_arm.points) {
            if !b.restart {
                assert_eq!((a.on_time_pct, a.drops_pct), (b.on_time_pct, b.drops_pct));
            } else {
                assert!(b.drops_pct > a.drops_pct);
            }
        }
        assert_eq!(r.naive_arm.summary.restarts, 1);
    }

    #[test]
    fn assumed_wear_is_listed_and_raises_cost_with_uptime() {
        let s = Scenario::load("car").expect("shipped");
        let r = run(
            &s,
            &Profile::reference(),
            &Policy::default(),
            &short(2.0, 5.0),
            &SpeechLoop::default(),
            || {},
        )
        .expect("runs");
        assert_eq!(r.assumptions.len(), 1);
        assert!(r.assumptions[0].contains("5 % per hour"));
        let p = &r.no_health.points;
        let last = p.last().expect("points");
        assert!(last.cost_multiplier > p[0].cost_multiplier);
    }
}
