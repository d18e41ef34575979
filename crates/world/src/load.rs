//! Background CPU load from the scenario — the device's steady `background_load_pct` and
//! `load_spike` episodes — and what it does to the workers: `mmsched run` burns it on a
//! real thread (`mmsched_pipeline::load`), the simulator shares the cores with it
//! ([`LoadProfile::stretch`]). One profile for both.

use mmsched_core::time::Nanos;
use mmsched_scenario::{EpisodeKind, Scenario};

/// Step of the simulator's integration of a job's progress under a changing load.
const STRETCH_STEP_NANOS: Nanos = 1_000_000;

/// One periodic spike.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Spike {
    from_nanos: Nanos,
    until_nanos: Nanos,
    every_nanos: Nanos,
    spike_nanos: Nanos,
    load: f64,
}

/// The load profile of a scenario: demanded share of one core at each time.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LoadProfile {
    background: f64,
    spikes: Vec<Spike>,
}

impl LoadProfile {
    /// The profile of `scenario` for a run of `duration_nanos`.
    pub fn of(scenario: &Scenario, duration_nanos: Nanos) -> Self {
        let background = scenario.device().background_load_pct.unwrap_or(0.0) / 100.0;
        let spikes = scenario
            .episodes()
            .iter()
            .filter(|e| e.kind == EpisodeKind::LoadSpike)
            .filter_map(|e| {
                let every = e.every_ms? * 1e6;
                let spike = e.spike_ms? * 1e6;
                Some(Spike {
                    from_nanos: (e.start_s * 1e9) as Nanos,
                    until_nanos: e.end_s.map_or(duration_nanos, |s| (s * 1e9) as Nanos),
                    every_nanos: (every as Nanos).max(1),
                    spike_nanos: spike as Nanos,
                    load: e.load_pct.unwrap_or(100.0) / 100.0,
                })
            })
            .collect();
        Self {
            background: background.clamp(0.0, 1.0),
            spikes,
        }
    }

    /// Demanded share of one core at `t_nanos` after the start, in [0, 1].
    pub fn at(&self, t_nanos: Nanos) -> f64 {
        let spike: f64 = self
            .spikes
            .iter()
            .filter(|s| t_nanos >= s.from_nanos && t_nanos < s.until_nanos)
            .filter(|s| (t_nanos - s.from_nanos) % s.every_nanos < s.spike_nanos)
            .map(|s| s.load)
            .sum();
        (self.background + spike).clamp(0.0, 1.0)
    }

    /// Whether there is any load at all.
    pub fn is_idle(&self) -> bool {
        self.background == 0.0 && self.spikes.is_empty()
    }
}

impl LoadProfile {
    /// A steady load of `share` of one core, no spikes.
    pub fn steady(share: f64) -> Self {
        Self {
            background: share.clamp(0.0, 1.0),
            spikes: Vec::new(),
        }
    }

    /// How long a job of `work_nanos` on an idle core takes when it starts at `start_nanos`
    /// on one of `cores` cores with `busy` workers computing (this one included), the load
    /// thread running beside them. The load takes idle cores first; what it wants beyond
    /// them it takes from the busy workers' cores in equal parts, at most its fair share of
    /// the machine (the OS shares the cores fairly between the runnable threads: the
    /// load's one thread and `busy` workers on `cores` cores get `cores / (busy + 1)` each,
    /// so two workers and a full core of load on two cores lose a third of a core each, and
    /// one worker beside it on one core half). `busy` is taken as it is at the start for the
    /// whole job: an approximation, stated in the docs.
    pub fn stretch(&self, start_nanos: Nanos, work_nanos: Nanos, cores: u32, busy: u32) -> Nanos {
        if self.is_idle() || work_nanos == 0 {
            return work_nanos;
        }
        let busy = f64::from(busy.max(1));
        let idle = (f64::from(cores) - busy).max(0.0);
        let fair = f64::from(cores.max(1)) / (busy + 1.0);
        let mut left = work_nanos as f64;
        let mut t = start_nanos;
        while left > 0.0 {
            let taken = (self.at(t).min(fair) - idle).max(0.0) / busy;
            let speed = 1.0 - taken;
            let step = (left / speed).min(STRETCH_STEP_NANOS as f64).max(1.0);
            left -= step * speed;
            t += step as Nanos;
        }
        t - start_nanos
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spikes_follow_the_episode() {
        let s = mmsched_scenario::Scenario::load("ar-glasses").expect("built in");
        let p = LoadProfile::of(&s, 60_000_000_000);
        let ms = 1_000_000;
        // Background 10 %, spikes of 60 % for 40 ms every 300 ms.
        assert!((p.at(10 * ms) - 0.7).abs() < 1e-9, "{}", p.at(10 * ms));
        assert!((p.at(100 * ms) - 0.1).abs() < 1e-9);
        assert!((p.at(310 * ms) - 0.7).abs() < 1e-9);
    }

    #[test]
    fn load_slows_a_job_only_when_no_core_is_left_idle() {
        let ms = 1_000_000;
        let p = LoadProfile::steady(0.5);
        // One busy worker of two: the load runs on the idle core.
        assert_eq!(p.stretch(0, 100 * ms, 2, 1), 100 * ms);
        // Both busy: each loses a quarter of its core to the load.
        let t = p.stretch(0, 100 * ms, 2, 2);
        assert!(
            (t as f64 / (100 * ms) as f64 - 1.0 / 0.75).abs() < 0.02,
            "{t}"
        );
        // A full core of load on a one-core device takes half of it.
        let t = LoadProfile::steady(1.0).stretch(0, 100 * ms, 1, 1);
        assert!((t as f64 / (100 * ms) as f64 - 2.0).abs() < 0.02, "{t}");
        // Two workers beside a full core of load on two cores: three threads share two
        // cores, each worker keeps two thirds of its core.
        let t = LoadProfile::steady(1.0).stretch(0, 100 * ms, 2, 2);
        assert!((t as f64 / (100 * ms) as f64 - 1.5).abs() < 0.02, "{t}");
        assert_eq!(LoadProfile::default().stretch(0, 7, 2, 2), 7);
    }
}
