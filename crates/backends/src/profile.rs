//! Measuring device latency profiles (S8): P50/P95/P99 per stage, per model, input size and
//! engine. The format itself (and what a scheduler or simulator reads from it) is
//! [`mmsched_core::profile`]; files are read and written by `mmsched_world::profile`.
//!
//! Measuring is generic over [`Backend`]: [`measure`] runs any backend through
//! [`run_timed`], so every engine (tract, ONNX Runtime, candle) is profiled the same way.

use hdrhistogram::Histogram;
use mmsched_core::time::{Clock, Nanos};

pub use mmsched_core::profile::{
    DeviceInfo, DeviceProfile, FORMAT_VERSION, JobCost, Percentiles, ProfileEntry, RungAccuracy,
    RungProfile, StageStats, StepCost,
};

use crate::backend::{Backend, BackendError};
use crate::probe::{StageTiming, run_timed};

/// Describes the machine this process runs on.
pub fn this_device() -> DeviceInfo {
    let cpu_model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".to_string());
    DeviceInfo {
        arch: std::env::consts::ARCH.to_string(),
        os: std::env::consts::OS.to_string(),
        cpu_model,
        logical_cores: std::thread::available_parallelism()
            .map(|n| u32::try_from(n.get()).unwrap_or(u32::MAX))
            .unwrap_or(1),
    }
}

/// Exact latency histograms of the three stages and the total (1 ns .. 1 h, 3 digits).
#[derive(Debug, Clone)]
pub struct StageHistograms {
    pre: Histogram<u64>,
    exec: Histogram<u64>,
    post: Histogram<u64>,
    total: Histogram<u64>,
}

fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3)
        .expect("constant histogram bounds are valid")
}

impl Default for StageHistograms {
    fn default() -> Self {
        Self {
            pre: histogram(),
            exec: histogram(),
            post: histogram(),
            total: histogram(),
        }
    }
}

fn percentiles(h: &Histogram<u64>) -> Percentiles {
    if h.is_empty() {
        return Percentiles::default();
    }
    Percentiles {
        p50_nanos: h.value_at_quantile(0.50),
        p95_nanos: h.value_at_quantile(0.95),
        p99_nanos: h.value_at_quantile(0.99),
        mean_nanos: h.mean().round() as Nanos,
        max_nanos: h.max(),
    }
}

impl StageHistograms {
    /// Records one job's timing.
    pub fn record(&mut self, t: &StageTiming) {
        // `saturating_record` clamps out-of-range values instead of failing; 0 becomes 1 ns.
        self.pre.saturating_record(t.pre_nanos.max(1));
        self.exec.saturating_record(t.exec_nanos.max(1));
        self.post.saturating_record(t.post_nanos.max(1));
        self.total.saturating_record(t.total_nanos().max(1));
    }

    /// Number of jobs recorded.
    pub fn len(&self) -> u64 {
        self.total.len()
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.total.is_empty()
    }

    /// Percentiles of every stage.
    pub fn stats(&self) -> StageStats {
        StageStats {
            pre: percentiles(&self.pre),
            exec: percentiles(&self.exec),
            post: percentiles(&self.post),
            total: percentiles(&self.total),
        }
    }
}

/// The latency histogram of one kind of work (a job, or one kind of step).
#[derive(Debug, Clone)]
pub struct CostHistogram(Histogram<u64>);

impl Default for CostHistogram {
    fn default() -> Self {
        Self(histogram())
    }
}

impl CostHistogram {
    /// Records one cost (0 counts as 1 ns).
    pub fn record(&mut self, nanos: Nanos) {
        self.0.saturating_record(nanos.max(1));
    }

    /// Costs recorded.
    pub fn len(&self) -> u64 {
        self.0.len()
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Its percentiles (all 0 when empty).
    pub fn percentiles(&self) -> Percentiles {
        percentiles(&self.0)
    }
}

/// How many runs to make.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MeasureOptions {
    /// Untimed runs first (plans built, caches warm).
    pub warmup_runs: u32,
    /// Timed runs.
    pub runs: u32,
}

/// Runs `backend` on `input` `warmup_runs + runs` times through [`run_timed`] and returns the
/// histograms of the timed runs. `on_run` is called after every run (for progress display).
pub fn measure<B, C>(
    backend: &mut B,
    input: &B::Input,
    options: MeasureOptions,
    clock: &C,
    mut on_run: impl FnMut(),
) -> Result<StageHistograms, BackendError>
where
    B: Backend + ?Sized,
    C: Clock + ?Sized,
{
    for _ in 0..options.warmup_runs {
        run_timed(backend, input, clock)?;
        on_run();
    }
    let mut hist = StageHistograms::default();
    for _ in 0..options.runs {
        let (_, timing) = run_timed(backend, input, clock)?;
        hist.record(&timing);
        on_run();
    }
    Ok(hist)
}

/// How a profile entry is labelled besides the backend's name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryLabel {
    /// The engine, e.g. `tract`, `ort`, `candle`.
    pub engine: String,
    /// The input size label, e.g. `320x320`.
    pub input: String,
    /// Threads the engine was allowed.
    pub threads: u32,
}

/// [`measure`], then packs the result as a profile entry named after the backend.
pub fn profile_backend<B, C>(
    backend: &mut B,
    label: &EntryLabel,
    input: &B::Input,
    options: MeasureOptions,
    clock: &C,
    on_run: impl FnMut(),
) -> Result<ProfileEntry, BackendError>
where
    B: Backend + ?Sized,
    C: Clock + ?Sized,
{
    let hist = measure(backend, input, options, clock, on_run)?;
    Ok(ProfileEntry {
        model: backend.name().to_string(),
        engine: label.engine.clone(),
        input: label.input.clone(),
        threads: label.threads,
        warmup_runs: options.warmup_runs,
        runs: options.runs,
        memory_bytes: backend.memory_bytes(),
        stages: hist.stats(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describes_this_machine() {
        let d = this_device();
        assert_eq!(d.os, std::env::consts::OS);
        assert!(d.logical_cores >= 1);
    }

    #[test]
    fn histograms_give_exact_order_statistics() {
        let mut h = StageHistograms::default();
        for i in 1..=100u64 {
            h.record(&StageTiming {
                pre_nanos: i * 1000,
                exec_nanos: 2000,
                post_nanos: 0,
            });
        }
        let s = h.stats();
        assert_eq!(h.len(), 100);
        assert!((s.pre.p50_nanos as i64 - 50_000).abs() <= 50, "{s:?}");
        assert!((s.pre.p99_nanos as i64 - 99_000).abs() <= 100, "{s:?}");
        assert_eq!(s.exec.p50_nanos, 2000);
    }
}
