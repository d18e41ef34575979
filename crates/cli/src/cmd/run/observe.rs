//! The console observer of a run: a live progress line on stderr and, with `--serve`, the
//! Prometheus metrics and the status document ([`ServerFeed`], which `serve --models`
//! uses on its own).

use std::sync::Arc;

use indicatif::{ProgressBar, ProgressStyle};
use mmsched_core::Modality;
use mmsched_core::ldti::Level;
use mmsched_pipeline::results::ResultRecord;
use mmsched_pipeline::run::{Observer, Progress};
use mmsched_runtime::sched::SchedulerKind;
use mmsched_server::{Metrics, StatusBoard};

use super::results_out::ResultsOut;

/// What a runtime tells the HTTP server: `/metrics` (every job of every origin, sheds,
/// skips, the LDTI) and `/api/v1/status` (the LDTI, the ETag of the policy it decides
/// with).
#[derive(Clone)]
pub struct ServerFeed {
    metrics: Arc<Metrics>,
    status: Arc<StatusBoard>,
}

impl ServerFeed {
    /// The feed of a server's shared state (registers the job classes' metrics).
    pub fn of(shared: &mmsched_server::Shared) -> Self {
        for k in ["vision", "vad", "asr", "llm"] {
            shared.metrics.register_class(modality_of(k), k);
        }
        Self {
            metrics: Arc::clone(&shared.metrics),
            status: Arc::clone(&shared.status),
        }
    }
}

impl Observer for ServerFeed {
    fn job(&mut self, kind: &str, latency_ms: f64, missed: bool) {
        let nanos = (latency_ms * 1e6) as u64;
        self.metrics
            .record_job(modality_of(kind), kind, nanos, missed, None);
    }

    fn skip(&mut self, kind: &str) {
        self.metrics.record_skip(modality_of(kind), "gate");
    }

    fn shed(&mut self, kind: &str) {
        self.metrics.record_shed(modality_of(kind), kind);
    }

    fn ldti(&mut self, value: f64, level: Level) {
        self.metrics.set_ldti(value, level);
        self.status.set_ldti(value, level);
    }

    fn policy_applied(&mut self, etag: Option<&str>) {
        if let Some(etag) = etag {
            self.status.set_applied_etag(etag);
        }
    }

    fn platform(&mut self, f: &mmsched_runtime::platform::signals::PlatformFigures) {
        self.metrics
            .set_platform_signals(f.neighbour_cpu_share, f.own_runqueue_wait_share);
    }
}

/// Progress line and, with `--serve`, the server's feed.
pub struct Console {
    bar: ProgressBar,
    server: Option<ServerFeed>,
    kind: SchedulerKind,
    results: Option<ResultsOut>,
    reports: Option<super::long_run::ReportWriter>,
}

/// The modality of the class `kind` (a built-in one, or a model of the user's own).
fn modality_of(kind: &str) -> Modality {
    mmsched_pipeline::stats::Kind::parse(kind).map_or(Modality::Text, |k| k.modality())
}

impl Console {
    /// A console for a run under `kind`.
    pub fn new(kind: SchedulerKind, server: Option<ServerFeed>) -> Self {
        let bar = ProgressBar::new(0);
        bar.set_style(
            ProgressStyle::with_template("{prefix:>16} {bar:20} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        bar.set_prefix(kind.as_str().to_string());
        Self {
            bar,
            server,
            kind,
            results: None,
            reports: None,
        }
    }

    /// Writes the report so far when the run hands it over (`--report-every`, SIGHUP).
    pub fn with_reports(mut self, reports: super::long_run::ReportWriter) -> Self {
        self.reports = Some(reports);
        self
    }

    /// Also writes every result to `out` (`--results`).
    pub fn with_results(mut self, out: Option<ResultsOut>) -> Self {
        self.results = out;
        self
    }

    /// Clears the progress line; hands back the results output, if any.
    pub fn finish(&mut self) -> Option<ResultsOut> {
        self.bar.finish_and_clear();
        self.results.take()
    }
}

impl Observer for Console {
    fn status(&mut self, line: &str) {
        let line = format!("  {}: {line}", self.kind);
        // A hidden bar (stderr not a terminal) swallows println: say it plainly then.
        if self.bar.is_hidden() {
            eprintln!("{line}");
        } else {
            self.bar.println(line);
        }
    }

    fn progress(&mut self, p: &Progress) {
        self.bar.set_length((p.duration_s * 10.0) as u64);
        self.bar.set_position((p.t_s * 10.0) as u64);
        let [v, vad, asr, llm] = p.counts;
        self.bar.set_message(format!(
            "{:>4.0}/{:.0} s  vision {:>4.1}/s miss {} skip {}  vad {:>3.0}/s miss {}  asr {} miss {}  llm {} miss {} shed {}  LDTI {:.2} {}",
            p.t_s,
            p.duration_s,
            p.rates_hz[0],
            v.1,
            v.2,
            p.rates_hz[1],
            vad.1,
            asr.0,
            asr.1,
            llm.0,
            llm.1,
            v.3 + vad.3 + asr.3 + llm.3,
            p.ldti,
            p.level.as_str()
        ));
    }

    fn job(&mut self, kind: &str, latency_ms: f64, missed: bool) {
        if let Some(s) = &mut self.server {
            s.job(kind, latency_ms, missed);
        }
    }

    fn skip(&mut self, kind: &str) {
        if let Some(s) = &mut self.server {
            s.skip(kind);
        }
    }

    fn shed(&mut self, kind: &str) {
        if let Some(s) = &mut self.server {
            s.shed(kind);
        }
    }

    fn policy_applied(&mut self, etag: Option<&str>) {
        if let Some(s) = &mut self.server {
            s.policy_applied(etag);
        }
    }

    fn result(&mut self, record: &ResultRecord) {
        if let Some(out) = &mut self.results {
            out.write(record);
        }
    }

    fn ldti(&mut self, value: f64, level: Level) {
        if let Some(s) = &mut self.server {
            s.ldti(value, level);
        }
    }

    fn report(&mut self, summary: &mmsched_report::RunSummary, series: &mmsched_report::RunSeries) {
        if let Some(r) = &mut self.reports {
            r.report(summary, series);
        }
    }

    fn platform(&mut self, f: &mmsched_runtime::platform::signals::PlatformFigures) {
        if let Some(s) = &mut self.server {
            s.platform(f);
        }
    }

    #[cfg(target_os = "linux")]
    fn cgroups(&mut self, handle: mmsched_runtime::platform::cgroup::CgroupHandle) {
        super::interrupt::guard_cgroups(handle);
    }
}
