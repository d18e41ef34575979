//! The flags of a process that runs for weeks (`run`, `serve --models`): the trace's cap and
//! rotation, a report written as it goes, the summary's window. See docs/long-runs.md.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::{Result, bail};
use clap::Args;
use mmsched_pipeline::RunConfig;
use mmsched_pipeline::run::Observer;
use mmsched_pipeline::trace_files::{MAX_TRACE_FILES, Rotation};
use mmsched_report::{RunSeries, RunSummary, write_report};

/// Trace rotation, periodic reports and the summary's window.
#[derive(Debug, Args, Clone)]
pub struct LongRunArgs {
    /// The most disk the trace takes, in MiB, over all its files: the newest
    /// (trace.mmtrace) and the older ones (trace.1.mmtrace, …), each at most its share.
    #[arg(long, value_name = "MIB", default_value_t = 256)]
    pub trace_max_mib: u64,
    /// Trace files kept (the newest and N−1 older ones; 1 to 100): the oldest is deleted
    /// when a new one starts.
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub trace_files: u32,
    /// A new trace file starts when the newest has covered this many minutes; 0: by size
    /// only.
    #[arg(long, value_name = "MIN", default_value_t = 60)]
    pub trace_max_age_min: u64,
    /// Write the report so far (summary.json, series.json, report.html, each replaced
    /// atomically) every SECS seconds while running; 0: only at the end (and on SIGHUP).
    /// Default: 0 for `run`, 60 for `serve`.
    #[arg(long, value_name = "SECS")]
    pub report_every: Option<u64>,
    /// The span of summary.json's `window` (the last minutes, beside the since-start
    /// figures), in minutes.
    #[arg(long, value_name = "MIN", default_value_t = 10)]
    pub summary_window_min: u64,
}

impl Default for LongRunArgs {
    /// The flags' defaults.
    fn default() -> Self {
        Self {
            trace_max_mib: 256,
            trace_files: 4,
            trace_max_age_min: 60,
            report_every: None,
            summary_window_min: 10,
        }
    }
}

/// What the flags set on a run.
#[derive(Debug, Clone)]
pub struct LongRun {
    rotation: Rotation,
    report_every_nanos: Option<u64>,
    window_nanos: u64,
    report_now: Arc<AtomicBool>,
}

impl LongRun {
    /// Sets them on `config`.
    pub fn set(&self, config: &mut RunConfig) {
        config.trace_rotation = self.rotation;
        config.report_every_nanos = self.report_every_nanos;
        config.window_nanos = self.window_nanos;
        config.report_now = Arc::clone(&self.report_now);
    }
}

impl LongRunArgs {
    /// Checks the flags: the trace's rotation, the report period (`default_every` seconds
    /// unless given) and the window; registers the report flag for SIGHUP.
    pub fn settings(&self, default_every: u64) -> Result<LongRun> {
        if self.trace_max_mib == 0 {
            bail!("--trace-max-mib must be at least 1 (MiB over all the trace's files)");
        }
        if !(1..=MAX_TRACE_FILES).contains(&self.trace_files) {
            bail!("--trace-files must be 1 to {MAX_TRACE_FILES}");
        }
        if self.summary_window_min == 0 || self.summary_window_min > 7 * 24 * 60 {
            bail!("--summary-window-min must be 1 to 10080 (a week)");
        }
        const MIN: u64 = 60_000_000_000;
        let every = self.report_every.unwrap_or(default_every);
        let report_now = Arc::new(AtomicBool::new(false));
        super::hangup::on_hangup(std::slice::from_ref(&report_now))?;
        Ok(LongRun {
            rotation: Rotation {
                max_bytes: self.trace_max_mib.saturating_mul(1 << 20),
                files: self.trace_files,
                max_age_nanos: (self.trace_max_age_min > 0)
                    .then(|| self.trace_max_age_min.saturating_mul(MIN)),
            },
            report_every_nanos: (every > 0).then(|| every.saturating_mul(1_000_000_000)),
            window_nanos: self.summary_window_min * MIN,
            report_now,
        })
    }
}

/// Writes the report so far into its directory (an observer of a run still going) on a
/// thread of its own: rendering and `fsync` on a slow card must not hold up the run loop.
/// A report handed over while the previous one is still being written is skipped; a
/// failure is said once until a write succeeds again, and the run goes on. Dropping it
/// waits for the write under way, so the final report written after it is the last.
pub struct ReportWriter {
    tx: Option<std::sync::mpsc::SyncSender<(RunSummary, RunSeries)>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ReportWriter {
    /// Reports into `dir`.
    pub fn new(dir: &Path) -> Self {
        let dir: PathBuf = dir.to_path_buf();
        let (tx, rx) = std::sync::mpsc::sync_channel::<(RunSummary, RunSeries)>(1);
        let thread = std::thread::Builder::new()
            .name("mmsched-report".into())
            .spawn(move || {
                let mut failing = false;
                for (summary, series) in rx {
                    match write_report(&dir, &summary, &series) {
                        Ok(_) => failing = false,
                        Err(e) if !failing => {
                            failing = true;
                            eprintln!(
                                "the report so far could not be written (the run goes on): {e}"
                            );
                        }
                        Err(_) => {}
                    }
                }
            })
            .ok();
        Self {
            tx: thread.is_some().then_some(tx),
            thread,
        }
    }
}

impl Observer for ReportWriter {
    fn report(&mut self, summary: &RunSummary, series: &RunSeries) {
        if let Some(tx) = &self.tx {
            // Full: the previous report is still being written; this one is skipped.
            let _ = tx.try_send((summary.clone(), series.clone()));
        }
    }
}

impl Drop for ReportWriter {
    fn drop(&mut self) {
        self.tx = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
