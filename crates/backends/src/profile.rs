//! Device latency profiles (S8): measured P50/P95/P99 per stage, per model, input size and
//! engine, which the scheduler and the simulator read to predict what a job will cost.
//!
//! `mmsched profile` writes one to `$MMSCHED_HOME/profile.json`. The file format:
//!
//! ```json
//! {
//!   "format_version": 1,
//!   "device": {"arch": "x86_64", "os": "linux", "cpu_model": "…", "logical_cores": 2},
//!   "entries": [
//!     {"model": "ppocr-v4-det", "engine": "tract", "input": "320x320", "threads": 1,
//!      "warmup_runs": 3, "runs": 20, "memory_bytes": 4745517,
//!      "stages": {"pre":  {"p50_nanos": …, "p95_nanos": …, "p99_nanos": …, "mean_nanos": …, "max_nanos": …},
//!                 "exec": {…}, "post": {…}, "total": {…}}}
//!   ]
//! }
//! ```
//!
//! Measuring is generic over [`Backend`]: [`measure`] runs any backend through
//! [`run_timed`], so every engine (tract, ONNX Runtime, candle) is profiled the same way.

use std::path::Path;

use hdrhistogram::Histogram;
use mmsched_core::time::{Clock, Nanos};
use serde::{Deserialize, Serialize};

use crate::backend::{Backend, BackendError};
use crate::probe::{StageTiming, run_timed};

/// Version of the profile format written by this build.
pub const FORMAT_VERSION: u32 = 1;

/// Why a profile could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// The file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The profile file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not a valid profile.
    #[error("{path} is not a valid device profile: {reason} (re-create it with `mmsched profile`)")]
    Format {
        /// The profile file.
        path: String,
        /// What is wrong.
        reason: String,
    },
}

/// Percentiles of one stage, nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Percentiles {
    /// Median.
    pub p50_nanos: Nanos,
    /// 95th percentile.
    pub p95_nanos: Nanos,
    /// 99th percentile.
    pub p99_nanos: Nanos,
    /// Mean.
    pub mean_nanos: Nanos,
    /// Largest sample.
    pub max_nanos: Nanos,
}

/// Percentiles of every stage and of the total.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct StageStats {
    /// Pre-processing.
    pub pre: Percentiles,
    /// Execution.
    pub exec: Percentiles,
    /// Post-processing.
    pub post: Percentiles,
    /// All three stages of one job.
    pub total: Percentiles,
}

/// One measured (model, engine, input size) combination.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfileEntry {
    /// The backend's name (`Backend::name`), e.g. `ppocr-v4-det`.
    pub model: String,
    /// The engine, e.g. `tract`, `ort`, `candle`.
    pub engine: String,
    /// A label for the input size, e.g. `320x320`, `chunk512`, `w320`.
    pub input: String,
    /// Threads the engine was allowed.
    pub threads: u32,
    /// Untimed runs before measuring.
    pub warmup_runs: u32,
    /// Timed runs.
    pub runs: u32,
    /// `Backend::memory_bytes` of the loaded model.
    pub memory_bytes: u64,
    /// Latency percentiles per stage.
    pub stages: StageStats,
}

/// The device the profile was measured on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceInfo {
    /// CPU architecture (`std::env::consts::ARCH`).
    pub arch: String,
    /// Operating system (`std::env::consts::OS`).
    pub os: String,
    /// CPU model name, if known.
    pub cpu_model: String,
    /// Logical cores visible to the process.
    pub logical_cores: u32,
}

impl DeviceInfo {
    /// Describes the machine this process runs on.
    pub fn current() -> Self {
        let cpu_model = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split_once(':'))
                    .map(|(_, v)| v.trim().to_string())
            })
            .unwrap_or_else(|| "unknown".to_string());
        Self {
            arch: std::env::consts::ARCH.to_string(),
            os: std::env::consts::OS.to_string(),
            cpu_model,
            logical_cores: std::thread::available_parallelism()
                .map(|n| u32::try_from(n.get()).unwrap_or(u32::MAX))
                .unwrap_or(1),
        }
    }
}

/// A device latency profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceProfile {
    /// [`FORMAT_VERSION`] when written.
    pub format_version: u32,
    /// Where it was measured.
    pub device: DeviceInfo,
    /// One entry per (model, engine, input).
    pub entries: Vec<ProfileEntry>,
}

impl DeviceProfile {
    /// An empty profile for this machine.
    pub fn new() -> Self {
        Self {
            format_version: FORMAT_VERSION,
            device: DeviceInfo::current(),
            entries: Vec::new(),
        }
    }

    /// Reads a profile written by `mmsched profile`.
    pub fn load(path: &Path) -> Result<Self, ProfileError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ProfileError::Io {
            path: shown.clone(),
            source,
        })?;
        let profile: Self = serde_json::from_str(&text).map_err(|e| ProfileError::Format {
            path: shown.clone(),
            reason: e.to_string(),
        })?;
        if profile.format_version != FORMAT_VERSION {
            return Err(ProfileError::Format {
                path: shown,
                reason: format!(
                    "format version {} (this build reads {FORMAT_VERSION})",
                    profile.format_version
                ),
            });
        }
        Ok(profile)
    }

    /// Writes the profile as pretty JSON (to a temporary name, then renamed, so a reader
    /// never sees half a file).
    pub fn save(&self, path: &Path) -> Result<(), ProfileError> {
        let shown = path.display().to_string();
        let io = |source| ProfileError::Io {
            path: shown.clone(),
            source,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let text = serde_json::to_string_pretty(self).map_err(|e| ProfileError::Format {
            path: shown.clone(),
            reason: e.to_string(),
        })?;
        let tmp = path.with_extension("json.tmp");
        std::fs::write(&tmp, text).map_err(io)?;
        std::fs::rename(&tmp, path).map_err(io)
    }

    /// Adds an entry, replacing any earlier one for the same (model, engine, input).
    pub fn upsert(&mut self, entry: ProfileEntry) {
        self.entries.retain(|e| {
            !(e.model == entry.model && e.engine == entry.engine && e.input == entry.input)
        });
        self.entries.push(entry);
    }

    /// The entry for this model, engine and input label.
    pub fn lookup(&self, model: &str, engine: &str, input: &str) -> Option<&ProfileEntry> {
        self.entries
            .iter()
            .find(|e| e.model == model && e.engine == engine && e.input == input)
    }

    /// Predicted cost of one job: the P95 of the total (or `None` if not profiled).
    pub fn predict_p95_nanos(&self, model: &str, engine: &str, input: &str) -> Option<Nanos> {
        self.lookup(model, engine, input)
            .map(|e| e.stages.total.p95_nanos)
    }
}

impl Default for DeviceProfile {
    fn default() -> Self {
        Self::new()
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

    fn entry(model: &str, p95: Nanos) -> ProfileEntry {
        ProfileEntry {
            model: model.into(),
            engine: "tract".into(),
            input: "320x320".into(),
            threads: 1,
            warmup_runs: 1,
            runs: 2,
            memory_bytes: 10,
            stages: StageStats {
                total: Percentiles {
                    p95_nanos: p95,
                    ..Percentiles::default()
                },
                ..StageStats::default()
            },
        }
    }

    #[test]
    fn round_trips_and_upserts() {
        let mut p = DeviceProfile::new();
        p.upsert(entry("a", 5));
        p.upsert(entry("a", 7));
        p.upsert(entry("b", 9));
        assert_eq!(p.entries.len(), 2);
        assert_eq!(p.predict_p95_nanos("a", "tract", "320x320"), Some(7));
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("sub").join("profile.json");
        p.save(&path).expect("save");
        assert_eq!(DeviceProfile::load(&path).expect("load"), p);
    }

    #[test]
    fn rejects_garbage_and_other_versions() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("p.json");
        std::fs::write(&path, "{}").expect("write");
        assert!(DeviceProfile::load(&path).is_err());
        let mut p = DeviceProfile::new();
        p.format_version = 99;
        std::fs::write(&path, serde_json::to_string(&p).expect("json")).expect("write");
        let err = DeviceProfile::load(&path).expect_err("version");
        assert!(err.to_string().contains("format version 99"), "{err}");
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
