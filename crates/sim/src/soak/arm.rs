//! One arm of a soak on the real path: the window samples run back to back in simulated
//! runs of the real run loop (`mmsched_pipeline::simulate`), one run for the whole soak,
//! or one per restart period for the naive arm (a restart starts the process afresh:
//! book, cost model, health loop, queues). Each window's environment acts on the run
//! during its sample through [`mmsched_pipeline::conditions`] (step cost, link loss, clock
//! drift, battery); the window's point is cut from the run by
//! [`super::window::WindowCutter`].

use std::sync::Arc;

use mmsched_core::policy::Policy;
use mmsched_pipeline::RunConfig;
use mmsched_pipeline::conditions::{ConditionSchedule, Conditions};
use mmsched_pipeline::simulate::simulate;
use mmsched_runtime::sched::SchedulerKind;
use mmsched_scenario::Scenario;
use mmsched_world::profile::Profile;

use super::env::Env;
use super::window::{WindowCounts, WindowCutter};
use super::{Arm, SoakConfig, SoakError, SoakPoint};

/// What every arm of a soak shares.
pub(super) struct Plan<'a> {
    pub scenario: &'a Scenario,
    pub profile: &'a Profile,
    pub policy: &'a Policy,
    pub cfg: &'a SoakConfig,
    /// The environment of each window.
    pub envs: Arc<Vec<Env>>,
}

impl Plan<'_> {
    fn sample_nanos(&self) -> u64 {
        (self.cfg.sample_s * 1e9).round().max(1.0) as u64
    }

    /// Windows between two restarts of the naive arm.
    fn restart_every(&self) -> usize {
        (self.cfg.restart_every_h * 3600.0 / self.cfg.window_s)
            .round()
            .max(1.0) as usize
    }

    /// The runs of `arm`: first window and number of windows of each.
    fn runs(&self, arm: Arm) -> Vec<(usize, usize)> {
        let windows = self.envs.len();
        let every = match arm {
            Arm::Naive => self.restart_every(),
            Arm::NoHealth | Arm::Mmsched => windows,
        };
        (0..windows)
            .step_by(every.max(1))
            .map(|k0| (k0, every.min(windows - k0)))
            .collect()
    }

    /// The job-cost multiplier of window `k`, `uptime_windows` after the last (re)start:
    /// the environment's, times the assumed wear.
    pub fn cost_multiplier(&self, k: usize, uptime_windows: usize) -> f64 {
        let uptime_h = uptime_windows as f64 * self.cfg.window_s / 3600.0;
        self.envs[k].cost * (1.0 + self.cfg.wear_pct_per_hour / 100.0 * uptime_h)
    }

    /// The conditions over the run's time of a run of windows `k0..k0 + n` started
    /// afresh at window `k0`: window `k0 + i`'s during the run's `i`th sample.
    fn schedule(&self, k0: usize, n: usize) -> ConditionSchedule {
        let envs = Arc::clone(&self.envs);
        let sample = self.sample_nanos();
        let (window_h, wear) = (self.cfg.window_s / 3600.0, self.cfg.wear_pct_per_hour);
        ConditionSchedule::new(move |t| {
            let i = usize::try_from(t / sample).unwrap_or(usize::MAX).min(n - 1);
            let env = &envs[k0 + i];
            Conditions {
                cost_multiplier: env.cost * (1.0 + wear / 100.0 * i as f64 * window_h),
                link_loss: (env.outage_loss_pct + env.random_loss_pct) / 100.0,
                clock_drift_ppm: env.warm_drift_ppm,
                battery_fraction: env.battery_fraction,
            }
        })
    }

    /// The simulated run of windows `k0..k0 + n` of `arm`.
    fn config(&self, arm: Arm, k0: usize, n: usize) -> RunConfig {
        let mut c = RunConfig::new(
            self.scenario.clone(),
            self.policy.clone(),
            SchedulerKind::Mmsched,
        );
        // Every arm asks the same prompts (by default half would ask about the latest
        // transcript, which depends on what the arm transcribed).
        c.fixed_prompts = true;
        c.duration_nanos = self.sample_nanos() * n as u64;
        // A restarted process meets a world that went on: its own random numbers.
        c.seed = if k0 == 0 {
            self.cfg.seed
        } else {
            super::window_seed(self.cfg.seed, k0)
        };
        // Without the health loop's actions the loop still evaluates (for the LDTI curve),
        // as `run --ablate health-actions` does.
        c.mechanisms.health_actions = arm == Arm::Mmsched;
        c.device_profile = Some(self.profile.clone());
        c.conditions = Some(self.schedule(k0, n));
        c
    }

    /// Runs `arm`, telling `progress` once per window.
    pub fn run(&self, arm: Arm, progress: &(dyn Fn() + Sync)) -> Result<Vec<SoakPoint>, SoakError> {
        let mut points = Vec::with_capacity(self.envs.len());
        for (k0, n) in self.runs(arm) {
            let mut cutter = WindowCutter::new(self.cfg.sample_s, n, progress);
            simulate(self.config(arm, k0, n), &mut cutter).map_err(|source| SoakError::Run {
                arm: arm.as_str(),
                source,
            })?;
            for (i, w) in cutter.finish().into_iter().enumerate() {
                let restart = arm == Arm::Naive && k0 > 0 && i == 0;
                points.push(self.point(k0 + i, i, w, restart));
            }
        }
        Ok(points)
    }

    /// Window `k`'s point, `uptime` windows after the last (re)start.
    fn point(&self, k: usize, uptime: usize, mut w: WindowCounts, restart: bool) -> SoakPoint {
        let env = &self.envs[k];
        let mut on_time_pct = w.on_time_pct();
        let mut drops_pct = w.drops_pct();
        if restart {
            // The restart's downtime: nothing served, everything offered lost.
            let down = (self.cfg.restart_downtime_s / self.cfg.window_s).clamp(0.0, 1.0);
            on_time_pct *= 1.0 - down;
            drops_pct = 100.0 * down + (1.0 - down) * drops_pct;
        }
        SoakPoint {
            hour: k as f64 * self.cfg.window_s / 3600.0,
            on_time_pct,
            drops_pct,
            ldti: w.ldti(),
            level: w.level(),
            acted: w.acted,
            restart,
            vision_p99_ms: w.vision_p99_ms(),
            cost_multiplier: self.cost_multiplier(k, uptime),
            loss_pct: env.outage_loss_pct + env.random_loss_pct,
            drift_ppm: env.drift_ppm,
        }
    }
}
