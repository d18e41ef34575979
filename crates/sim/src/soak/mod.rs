//! Long-run soak (S10): days of a scenario in seconds of wall time, in three arms.
//!
//! ## How time is compressed (what is sampled)
//!
//! The run is cut into windows (default 120 s of simulated time, 2160 windows in 72 h).
//! For each window the environment is computed from the scenario's stressors ([`env`]):
//! job-cost multiplier, link loss, crystal drift, battery. A **sample** of each window
//! (default 6 s) runs through the real run loop in virtual time — `mmsched sim run`'s
//! [`mmsched_pipeline::simulate`]: the book of jobs with its cost model, rungs and steps,
//! the branches, the health loop and its actions, on simulated models whose step costs
//! are drawn from the device profile. The samples run back to back in **one** simulated
//! run per arm (window k's sample follows window k−1's), so the cost model, the queues
//! and the health loop's timers carry over from window to window as they would over the
//! days; the window's environment acts during its sample ([`mmsched_pipeline::conditions`])
//! and the window's point is cut from the run ([`window`]). The rest of each window is
//! assumed to behave like its sample.
//!
//! ## Mechanisms (how stressors act)
//!
//! Nothing decays by itself: a figure changes only through one of these, and the output
//! lists those active in the scenario ([`Mechanism`]).
//!
//! - *thermal throttling* (temperature episode): job cost × (1 + 1 % per °C above 70 °C),
//!   on every simulated step;
//! - *crystal drift* (temperature episode): a stream's drift = `clock_drift_ppm` +
//!   `drift_ppm_per_c` · (T − 25 °C): its events' stamps drift so, the run's alignment
//!   estimates it, and the health loop reads that as its drift input;
//! - *low-power mode* (battery): job cost × 1.15 in the scenario's low-power mode, × 1.3
//!   below 20 % charge; *battery saver*: the charge goes to the scheduler at every health
//!   evaluation, which prunes unimportant work when low;
//! - *background load* (`[device] background_load_pct`) and *load spikes* (load-spike
//!   episodes): they take the simulated cores as in `sim run`
//!   (see [`mmsched_world::load::LoadProfile::stretch`]);
//! - *Wi-Fi outages* (Wi-Fi switching): the outage share of time is lost on the camera's
//!   and the microphone's links; *Wi-Fi switch loss*: `loss_pct` during the 2 s after each
//!   switch, recoverable by retransmission; *vibration*: +0.2 % loss per g; *jitter
//!   bursts*: the late tenth of a burst's packets are lost.
//!
//! **Wear** (job cost growing with uptime) is not a mechanism the simulator knows: it is an
//! *assumption* a user can add (`SoakConfig::wear_pct_per_hour`), listed in the output's
//! `assumptions` and in the plot's caption. A restart resets it.
//!
//! The scenario's own timed episodes (a dark corridor from 20 s to 30 s) play at the
//! simulated run's time, as in `sim run`: in the first samples of each run.
//!
//! ## Arms
//!
//! - `no_health`: the scheduler alone; the health loop evaluates (for the LDTI curve) but
//!   nothing acts on it (the run's `health_actions` mechanism off);
//! - `naive`: what a user would try without a health loop: restart the service every
//!   `restart_every_h` hours — a fresh simulated run per restart period (book, cost model,
//!   queues start anew); each restart loses `restart_downtime_s` of input and resets any
//!   assumed wear;
//! - `mmsched`: the health loop acts — the runtime's remedies (camera rate halved,
//!   retransmission, breaker on the heaviest branch with cached answers), the run loop's
//!   own.
//!
//! The three arms run side by side, one thread each.

mod arm;
mod env;
mod window;

use std::sync::Arc;

use mmsched_core::ldti::Level;
use mmsched_core::policy::Policy;
use mmsched_scenario::Scenario;
use serde::Serialize;

use mmsched_world::profile::Profile;

pub use env::mechanisms;

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

/// Errors of a soak.
#[derive(Debug, thiserror::Error)]
pub enum SoakError {
    /// An arm's simulated run could not run.
    #[error("the {arm} arm's simulated run failed")]
    Run {
        /// The arm.
        arm: &'static str,
        /// Why.
        #[source]
        source: mmsched_pipeline::RunError,
    },
    /// Bad settings.
    #[error("invalid soak settings: {0}")]
    Settings(String),
}

/// The seed of a run started afresh at window `k` (the naive arm's restarts): the world
/// went on while the service restarted, so its random numbers are new ones.
fn window_seed(seed: u64, k: usize) -> u64 {
    seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (k as u64).wrapping_mul(0xD1B5_4A32_D192_ED03)
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

/// Runs the three arms of a soak, side by side. `progress` is called once per window of
/// each arm (from the arms' threads).
pub fn run(
    scenario: &Scenario,
    profile: &Profile,
    policy: &Policy,
    cfg: &SoakConfig,
    progress: impl Fn() + Sync,
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
    let mut assumptions = Vec::new();
    if cfg.wear_pct_per_hour > 0.0 {
        assumptions.push(format!(
            "wear: job cost grows {} % per hour of uptime (not a simulated mechanism; a restart resets it)",
            cfg.wear_pct_per_hour
        ));
    }
    // A simulated run has no live device or port: their streams run generated sensors.
    let (simulated, _) = scenario.without_live_sources();
    let windows = ((cfg.hours * 3600.0) / cfg.window_s).ceil().max(1.0) as usize;
    let plan = arm::Plan {
        scenario: &simulated,
        profile,
        policy,
        cfg,
        envs: Arc::new(
            (0..windows)
                .map(|k| env::env_at(&simulated, k as f64 * cfg.window_s / 3600.0))
                .collect(),
        ),
    };
    let progress: &(dyn Fn() + Sync) = &progress;
    let [no_health, naive_arm, mmsched] = std::thread::scope(|s| {
        let arms = Arm::ALL.map(|a| {
            let plan = &plan;
            s.spawn(move || plan.run(a, progress))
        });
        // An arm's thread panics only on a bug; its panic goes on here.
        arms.map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
    });
    let per_hour = (3600.0 / cfg.window_s).round().max(1.0) as usize;
    let summarized = |points: Vec<SoakPoint>| SoakArm {
        summary: summarize(&points, per_hour),
        points,
    };
    let (no_health, naive_arm, mmsched) = (
        summarized(no_health?),
        summarized(naive_arm?),
        summarized(mmsched?),
    );
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
        let hot = env::env_at(&car, 6.0);
        // 85 °C: 15 °C above the throttling point.
        assert!(
            (hot.cost / env::env_at(&car, 0.0).cost - 1.15).abs() < 1e-9,
            "{hot:?}"
        );
        assert!(hot.drift_ppm > 25.0);
        let ar = Scenario::load("ar-glasses").expect("shipped");
        assert!(env::env_at(&ar, 72.0).battery_fraction < env::env_at(&ar, 0.0).battery_fraction);
        let insp = Scenario::load("inspection").expect("shipped");
        let e = env::env_at(&insp, 1.0);
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
        let ticks = std::sync::atomic::AtomicUsize::new(0);
        let r = run(
            &s,
            &Profile::reference(),
            &Policy::default(),
            &short(2.0, 0.0),
            || {
                ticks.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            },
        )
        .expect("runs");
        assert!(r.assumptions.is_empty());
        assert_eq!(ticks.into_inner(), 3 * 12, "once per window of each arm");
        // One run per arm: the arms are the same run until mmsched's health loop first
        // acts (then its book and queues differ for good).
        for (a, b) in r.no_health.points.iter().zip(&r.mmsched.points) {
            if b.acted {
                break;
            }
            assert_eq!((a.on_time_pct, a.drops_pct), (b.on_time_pct, b.drops_pct));
        }
        // The naive arm is the no-health run until its restart, which loses input.
        for (a, b) in r.no_health.points.iter().zip(&r.naive_arm.points) {
            if b.restart {
                assert!(b.drops_pct > 0.0 && b.on_time_pct < 100.0, "{b:?}");
                break;
            }
            assert_eq!((a.on_time_pct, a.drops_pct), (b.on_time_pct, b.drops_pct));
        }
        assert_eq!(r.naive_arm.summary.restarts, 1);
        for arm in Arm::ALL {
            let points = &r.arm(arm).points;
            assert_eq!(points.len(), 12);
            // Every window of a sample that ran jobs measured something.
            assert!(
                points
                    .iter()
                    .all(|p| p.ldti.is_finite() && p.on_time_pct > 0.0)
            );
        }
    }

    #[test]
    fn assumed_wear_is_listed_and_raises_cost_with_uptime() {
        let s = Scenario::load("car").expect("shipped");
        let r = run(
            &s,
            &Profile::reference(),
            &Policy::default(),
            &short(2.0, 5.0),
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
