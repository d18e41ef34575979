//! Cutting a soak's run into its windows: an observer of the simulated run that counts,
//! per window sample, what the run told it (jobs, sheds, failures, inputs the health loop
//! kept from the models, router skips, health evaluations, link losses).
//!
//! The run tells jobs and skips without a time; each goes to the window of the latest
//! health evaluation, which the loop makes many times a second (the policy's rate), so an
//! event lands at most one evaluation period away from its window's edge.

use mmsched_core::ldti::Level;
use mmsched_pipeline::run::{Evaluation, Observer};
use mmsched_pipeline::stats::DropAction;
use mmsched_runtime::sched::WorkError;

/// What one window's sample counted.
#[derive(Debug, Clone, Default)]
pub(super) struct WindowCounts {
    /// Jobs that ended with a result, and those of them in time.
    pub jobs: u64,
    pub on_time: u64,
    /// Jobs shed by admission or battery saver, and jobs whose model failed.
    pub shed: u64,
    pub failed: u64,
    /// Inputs the circuit breaker kept from their model with no cached answer.
    pub broken: u64,
    /// Inputs kept from their model otherwise (the camera's halved rate, the breaker with
    /// a cached answer): offered, served by the remedy's choice.
    pub kept: u64,
    /// Inputs the router found nothing worth running for (silence, dark frames).
    pub skipped: u64,
    /// Events lost on the links, and packets of them recovered by retransmission.
    pub lost: u64,
    pub recovered: u64,
    /// Health evaluations, the sum of their index, and how many at each level.
    pub evaluations: u64,
    pub ldti_sum: f64,
    pub by_level: [u64; 3],
    /// Whether a remedy was in force at any evaluation.
    pub acted: bool,
    /// Latencies of the vision jobs, ms.
    pub vision_ms: Vec<f64>,
}

impl WindowCounts {
    /// Jobs completed in time over jobs submitted (inputs the breaker dropped count as
    /// submitted and missed), percent; 100 without any.
    pub fn on_time_pct(&self) -> f64 {
        let submitted = self.jobs + self.shed + self.failed + self.broken;
        if submitted == 0 {
            100.0
        } else {
            100.0 * self.on_time as f64 / submitted as f64
        }
    }

    /// Inputs without a result (unrecovered losses, sheds, failures, breaker drops without
    /// a cached answer) over inputs offered, percent.
    pub fn drops_pct(&self) -> f64 {
        let unrecovered = self.lost.saturating_sub(self.recovered);
        let dropped = unrecovered + self.shed + self.failed + self.broken;
        let offered = self.jobs
            + self.shed
            + self.failed
            + self.broken
            + self.kept
            + self.skipped
            + self.lost;
        if offered == 0 {
            0.0
        } else {
            100.0 * dropped as f64 / offered as f64
        }
    }

    /// Mean index over the window's evaluations (0 without any).
    pub fn ldti(&self) -> f64 {
        self.ldti_sum / self.evaluations.max(1) as f64
    }

    /// The level of most evaluations (the lower one on a tie).
    pub fn level(&self) -> Level {
        let most = (0..3).fold(0, |best, l| {
            if self.by_level[l] > self.by_level[best] {
                l
            } else {
                best
            }
        });
        [Level::Stable, Level::Degraded, Level::Critical][most]
    }

    /// The P99 of the vision jobs' latencies, ms (NaN without any).
    pub fn vision_p99_ms(&mut self) -> f64 {
        if self.vision_ms.is_empty() {
            f64::NAN
        } else {
            mmsched_world::stats::quantile(&mut self.vision_ms, 0.99)
        }
    }
}

/// The observer: one [`WindowCounts`] per window of the run, `progress` told as each
/// window closes (once per window of the run's length).
pub(super) struct WindowCutter<'p> {
    sample_s: f64,
    /// Windows the run is long, and how many `progress` was told of.
    count: usize,
    ticked: usize,
    /// The windows so far; the last is the one the run is in.
    pub windows: Vec<WindowCounts>,
    /// Link losses and recoveries at the last evaluation (the run counts them from its
    /// start).
    lost_so_far: u64,
    recovered_so_far: u64,
    progress: &'p (dyn Fn() + Sync),
}

impl<'p> WindowCutter<'p> {
    /// A cutter of a run `count` windows `sample_s` long, from the run's start.
    pub fn new(sample_s: f64, count: usize, progress: &'p (dyn Fn() + Sync)) -> Self {
        Self {
            sample_s,
            count,
            ticked: 0,
            windows: vec![WindowCounts::default()],
            lost_so_far: 0,
            recovered_so_far: 0,
            progress,
        }
    }

    fn tick(&mut self) {
        if self.ticked < self.count {
            self.ticked += 1;
            (self.progress)();
        }
    }

    fn current(&mut self) -> &mut WindowCounts {
        // Never empty: it starts with one window and only grows.
        let last = self.windows.len() - 1;
        &mut self.windows[last]
    }

    /// The run's windows: events after its end (jobs still in flight when the inputs
    /// stopped) belong to its last window.
    pub fn finish(mut self) -> Vec<WindowCounts> {
        let count = self.count.max(1);
        while self.windows.len() < count {
            self.windows.push(WindowCounts::default());
        }
        if self.windows.len() > count {
            let extra: Vec<WindowCounts> = self.windows.drain(count..).collect();
            let last = self.current();
            for w in extra {
                last.merge(w);
            }
        }
        while self.ticked < self.count {
            self.tick();
        }
        self.windows
    }
}

impl WindowCounts {
    fn merge(&mut self, o: WindowCounts) {
        self.jobs += o.jobs;
        self.on_time += o.on_time;
        self.shed += o.shed;
        self.failed += o.failed;
        self.broken += o.broken;
        self.kept += o.kept;
        self.skipped += o.skipped;
        self.lost += o.lost;
        self.recovered += o.recovered;
        self.evaluations += o.evaluations;
        self.ldti_sum += o.ldti_sum;
        for l in 0..3 {
            self.by_level[l] += o.by_level[l];
        }
        self.acted |= o.acted;
        self.vision_ms.extend(o.vision_ms);
    }
}

impl Observer for WindowCutter<'_> {
    fn job(&mut self, kind: &str, latency_ms: f64, missed: bool) {
        let w = self.current();
        w.jobs += 1;
        w.on_time += u64::from(!missed);
        if kind == "vision" {
            w.vision_ms.push(latency_ms);
        }
    }

    fn skip(&mut self, _kind: &str) {
        // Told for router skips and for inputs the health loop kept from the models alike;
        // the latter are told again (`kept_from_model`), which takes them back out.
        self.current().skipped += 1;
    }

    fn kept_from_model(&mut self, _kind: &str, by: DropAction, answered: bool) {
        let w = self.current();
        w.skipped = w.skipped.saturating_sub(1);
        if by == DropAction::CircuitBreaker && !answered {
            w.broken += 1;
        } else {
            w.kept += 1;
        }
    }

    fn shed(&mut self, _kind: &str) {
        self.current().shed += 1;
    }

    fn failed(&mut self, _kind: &str, _error: &WorkError) {
        self.current().failed += 1;
    }

    fn evaluation(&mut self, e: &Evaluation) {
        let k = (e.t_s / self.sample_s).floor().max(0.0) as usize;
        while self.windows.len() <= k {
            self.windows.push(WindowCounts::default());
            self.tick();
        }
        let (lost, recovered) = (e.lost_in_transport, e.recovered);
        let new_lost = lost.saturating_sub(self.lost_so_far);
        let new_recovered = recovered.saturating_sub(self.recovered_so_far);
        (self.lost_so_far, self.recovered_so_far) = (lost, recovered);
        let w = self.current();
        w.lost += new_lost;
        w.recovered += new_recovered;
        w.evaluations += 1;
        w.ldti_sum += e.ldti;
        w.by_level[e.level as usize] += 1;
        w.acted |= e.remedies_in_force;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn evaluation(t_s: f64, ldti: f64, level: Level, lost: u64) -> Evaluation {
        Evaluation {
            t_s,
            ldti,
            level,
            remedies_in_force: level != Level::Stable,
            lost_in_transport: lost,
            recovered: 0,
        }
    }

    #[test]
    fn events_go_to_the_window_of_the_latest_evaluation_and_late_ones_to_the_last() {
        let ticks = std::sync::atomic::AtomicUsize::new(0);
        let progress = || {
            ticks.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        };
        let mut c = WindowCutter::new(2.0, 2, &progress);
        c.evaluation(&evaluation(0.5, 0.1, Level::Stable, 0));
        c.job("vision", 40.0, false);
        c.job("vision", 300.0, true);
        c.skip("vision");
        c.evaluation(&evaluation(2.5, 0.5, Level::Degraded, 3));
        c.skip("vision");
        c.kept_from_model("vision", DropAction::CameraRateHalved, false);
        c.skip("asr");
        c.kept_from_model("asr", DropAction::CircuitBreaker, false);
        c.shed("llm");
        c.evaluation(&evaluation(4.5, 0.2, Level::Stable, 3));
        c.job("vad", 1.0, false);
        let mut w = c.finish();
        assert_eq!(ticks.load(std::sync::atomic::Ordering::Relaxed), 2);
        assert_eq!(w.len(), 2);
        assert_eq!((w[0].on_time_pct(), w[0].drops_pct()), (50.0, 0.0));
        assert!((290.0..=300.0).contains(&w[0].vision_p99_ms()));
        assert_eq!(w[0].level(), Level::Stable);
        // The second window: its own events and the job after the run's end.
        let second = &w[1];
        assert_eq!((second.jobs, second.shed, second.broken), (1, 1, 1));
        assert_eq!((second.kept, second.skipped, second.lost), (1, 0, 3));
        assert_eq!(second.on_time_pct(), 100.0 / 3.0);
        // 3 lost + 1 shed + 1 broken of 1 + 1 + 1 + 1 + 3 offered.
        assert!((second.drops_pct() - 500.0 / 7.0).abs() < 1e-9);
        assert!(second.acted && (second.ldti() - 0.35).abs() < 1e-12);
        assert_eq!(
            second.level(),
            Level::Stable,
            "a tie goes to the lower level"
        );
        assert!(w[1].vision_p99_ms().is_nan());
    }
}
