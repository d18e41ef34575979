//! Scheduler metrics in OpenMetrics (with trace-id exemplars) and the classic Prometheus
//! text format.
//!
//! The runtime calls the `record_*` / `set_*` methods from its threads (each is a few atomic
//! operations or a short lock inside `prometheus-client`); `/metrics` encodes a consistent
//! enough view on each scrape. Families a dashboard always expects (latency per modality)
//! are created up front so a fresh process already shows zero-valued series.

use std::sync::atomic::AtomicU64;

use mmsched_core::Modality;
use mmsched_core::ldti::Level;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::exemplar::HistogramWithExemplars;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::exponential_buckets;
use prometheus_client::registry::{Registry, Unit};

/// `Content-Type` of the OpenMetrics text format.
pub const OPENMETRICS_CONTENT_TYPE: &str =
    "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// `Content-Type` of the classic Prometheus text format (version 0.0.4).
pub const PROMETHEUS_TEXT_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Latency bucket bounds in seconds: 1 ms doubling to ~8.2 s (14 buckets + `+Inf`).
fn latency_buckets() -> impl Iterator<Item = f64> {
    exponential_buckets(0.001, 2.0, 14)
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ModalityLabels {
    modality: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct JobLabels {
    modality: String,
    class: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SkipLabels {
    modality: String,
    reason: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TraceLabels {
    trace_id: String,
}

type LatencyHistogram = HistogramWithExemplars<TraceLabels>;

fn new_latency_histogram() -> LatencyHistogram {
    HistogramWithExemplars::new(latency_buckets())
}

/// The scheduler's metric families. Share it behind an `Arc`.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    latency: Family<ModalityLabels, LatencyHistogram, fn() -> LatencyHistogram>,
    jobs: Family<JobLabels, Counter>,
    misses: Family<JobLabels, Counter>,
    sheds: Family<JobLabels, Counter>,
    skips: Family<SkipLabels, Counter>,
    ldti: Gauge<f64, AtomicU64>,
    level: Gauge,
    policy_revision: Gauge,
    neighbour_cpu_share: Gauge<f64, AtomicU64>,
    runqueue_wait_share: Gauge<f64, AtomicU64>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// All families registered under the `mmsched_` prefix; latency series exist for every
    /// modality from the start.
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("mmsched");
        let latency: Family<ModalityLabels, LatencyHistogram, fn() -> LatencyHistogram> =
            Family::new_with_constructor(new_latency_histogram);
        let jobs = Family::<JobLabels, Counter>::default();
        let misses = Family::<JobLabels, Counter>::default();
        let sheds = Family::<JobLabels, Counter>::default();
        let skips = Family::<SkipLabels, Counter>::default();
        let ldti = Gauge::<f64, AtomicU64>::default();
        let level = Gauge::default();
        let policy_revision = Gauge::default();
        // Unknown until a run has read them (NaN: no figure, not zero).
        let neighbour_cpu_share = Gauge::<f64, AtomicU64>::default();
        neighbour_cpu_share.set(f64::NAN);
        let runqueue_wait_share = Gauge::<f64, AtomicU64>::default();
        runqueue_wait_share.set(f64::NAN);
        registry.register_with_unit(
            "job_latency",
            "End-to-end job latency (queued to result), per modality; exemplars carry the trace_id",
            Unit::Seconds,
            latency.clone(),
        );
        registry.register(
            "jobs",
            "Jobs completed, per modality and job class",
            jobs.clone(),
        );
        registry.register(
            "deadline_misses",
            "Jobs that completed after their deadline, per modality and job class",
            misses.clone(),
        );
        registry.register(
            "sheds",
            "Jobs dropped by admission control under overload, per modality and job class",
            sheds.clone(),
        );
        registry.register(
            "skips",
            "Inputs whose branch was skipped by an information gate (S4), per modality and reason",
            skips.clone(),
        );
        registry.register(
            "ldti",
            "Latency-drift-throughput imbalance index (0 = healthy, 1 = worst)",
            ldti.clone(),
        );
        registry.register(
            "ldti_level",
            "LDTI level: 0 stable, 1 degraded, 2 critical",
            level.clone(),
        );
        registry.register(
            "policy_revision",
            "Revision of the live scheduling policy (1 at start, +1 per change)",
            policy_revision.clone(),
        );
        registry.register(
            "neighbour_cpu_share",
            "Share of every core's time other programs used over the last second (machine busy time less mmsched's own), 0 to 1; NaN where unknown",
            neighbour_cpu_share.clone(),
        );
        registry.register(
            "runqueue_wait_share",
            "Share of the time mmsched's threads were runnable that they waited on a run queue for a CPU over the last second, 0 to 1; NaN where unknown",
            runqueue_wait_share.clone(),
        );
        for m in Modality::ALL {
            let _ = latency.get_or_create(&ModalityLabels {
                modality: m.as_str().to_string(),
            });
        }
        Self {
            registry,
            latency,
            jobs,
            misses,
            sheds,
            skips,
            ldti,
            level,
            policy_revision,
            neighbour_cpu_share,
            runqueue_wait_share,
        }
    }

    /// Creates the zero-valued job, miss and shed series of a job class, so that rates over
    /// them are defined before the first event (call once per class at start-up).
    pub fn register_class(&self, modality: Modality, class: &str) {
        let l = job_labels(modality, class);
        let _ = self.jobs.get_or_create(&l);
        let _ = self.misses.get_or_create(&l);
        let _ = self.sheds.get_or_create(&l);
    }

    /// Records one completed job: its latency, whether it missed its deadline, and (for the
    /// exemplar on its latency bucket) the trace it belongs to (32 hex digits).
    pub fn record_job(
        &self,
        modality: Modality,
        class: &str,
        latency_nanos: u64,
        missed: bool,
        trace_id: Option<&str>,
    ) {
        let labels = job_labels(modality, class);
        let seconds = latency_nanos as f64 / 1e9;
        self.latency
            .get_or_create(&ModalityLabels {
                modality: modality.as_str().to_string(),
            })
            .observe(
                seconds,
                trace_id.map(|t| TraceLabels {
                    trace_id: t.to_string(),
                }),
                None,
            );
        self.jobs.get_or_create(&labels).inc();
        if missed {
            self.misses.get_or_create(&labels).inc();
        }
    }

    /// Records an input skipped by an information gate (`reason` e.g. `blur`, `dark`, `silence`).
    pub fn record_skip(&self, modality: Modality, reason: &str) {
        self.skips
            .get_or_create(&SkipLabels {
                modality: modality.as_str().to_string(),
                reason: reason.to_string(),
            })
            .inc();
    }

    /// Records a job shed by admission control.
    pub fn record_shed(&self, modality: Modality, class: &str) {
        self.sheds.get_or_create(&job_labels(modality, class)).inc();
    }

    /// Sets the current health index and its level.
    pub fn set_ldti(&self, ldti: f64, level: Level) {
        self.ldti.set(ldti);
        self.level.set(match level {
            Level::Stable => 0,
            Level::Degraded => 1,
            Level::Critical => 2,
        });
    }

    /// Sets the platform's signals of the last second (`None`: unknown on this machine).
    pub fn set_platform_signals(
        &self,
        neighbour_cpu_share: Option<f64>,
        runqueue_wait_share: Option<f64>,
    ) {
        self.neighbour_cpu_share
            .set(neighbour_cpu_share.unwrap_or(f64::NAN));
        self.runqueue_wait_share
            .set(runqueue_wait_share.unwrap_or(f64::NAN));
    }

    /// Sets the live policy's revision.
    pub fn set_policy_revision(&self, revision: u64) {
        self.policy_revision
            .set(i64::try_from(revision).unwrap_or(i64::MAX));
    }

    /// All families in the OpenMetrics text format (with exemplars, ending in `# EOF`).
    pub fn encode_openmetrics(&self) -> String {
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &self.registry)
            .unwrap_or_else(|e| unreachable!("writing to a String cannot fail: {e}"));
        out
    }

    /// All families in the classic Prometheus text format 0.0.4 (no exemplars): for
    /// scrapers and tools that do not ask for OpenMetrics.
    pub fn encode_prometheus_text(&self) -> String {
        let mut out = String::new();
        prometheus_client::encoding::prometheus_text::encode(&mut out, &self.registry)
            .unwrap_or_else(|e| unreachable!("writing to a String cannot fail: {e}"));
        out
    }
}

fn job_labels(modality: Modality, class: &str) -> JobLabels {
    JobLabels {
        modality: modality.as_str().to_string(),
        class: class.to_string(),
    }
}

/// Whether an `Accept` header asks for OpenMetrics (as Prometheus does when it wants
/// exemplars); anything else gets the classic text format.
pub fn wants_openmetrics(accept: Option<&str>) -> bool {
    accept.is_some_and(|a| {
        a.split(',').any(|part| {
            let mut it = part.split(';');
            let media = it.next().unwrap_or("").trim();
            let q_zero = it.any(|p| {
                let p = p.trim();
                p.strip_prefix("q=")
                    .and_then(|q| q.trim().parse::<f64>().ok())
                    .is_some_and(|q| q <= 0.0)
            });
            media.eq_ignore_ascii_case("application/openmetrics-text") && !q_zero
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_metrics_have_zero_latency_series_for_every_modality() {
        let m = Metrics::new();
        let text = m.encode_openmetrics();
        for modality in Modality::ALL {
            let line = format!(
                "mmsched_job_latency_seconds_count{{modality=\"{}\"}} 0",
                modality.as_str()
            );
            assert!(text.contains(&line), "{line} missing in\n{text}");
        }
        assert!(text.ends_with("# EOF\n"));
        assert!(text.contains("mmsched_ldti 0.0"), "{text}");
    }

    #[test]
    fn job_records_counts_misses_and_exemplar() {
        let m = Metrics::new();
        let tid = "4bf92f3577b34da6a3ce929d0e0e4736";
        m.record_job(Modality::Image, "vision", 12_000_000, true, Some(tid));
        m.record_job(Modality::Image, "vision", 1_000_000, false, None);
        m.record_skip(Modality::Audio, "silence");
        m.record_shed(Modality::Text, "llm");
        m.set_ldti(0.42, Level::Degraded);
        assert!(
            m.encode_prometheus_text()
                .contains("mmsched_neighbour_cpu_share NaN")
        );
        m.set_platform_signals(Some(0.25), Some(0.5));
        let with_signals = m.encode_prometheus_text();
        assert!(
            with_signals.contains("mmsched_neighbour_cpu_share 0.25"),
            "{with_signals}"
        );
        assert!(
            with_signals.contains("mmsched_runqueue_wait_share 0.5"),
            "{with_signals}"
        );
        m.set_policy_revision(3);
        let t = m.encode_openmetrics();
        assert!(
            t.contains(r#"mmsched_job_latency_seconds_bucket{le="0.016",modality="image"} 2 # {trace_id="4bf92f3577b34da6a3ce929d0e0e4736"} 0.012"#),
            "{t}"
        );
        assert!(t.contains(r#"mmsched_jobs_total{modality="image",class="vision"} 2"#));
        assert!(t.contains(r#"mmsched_deadline_misses_total{modality="image",class="vision"} 1"#));
        assert!(t.contains(r#"mmsched_skips_total{modality="audio",reason="silence"} 1"#));
        assert!(t.contains(r#"mmsched_sheds_total{modality="text",class="llm"} 1"#));
        assert!(t.contains("mmsched_ldti 0.42"));
        assert!(t.contains("mmsched_ldti_level 1"));
        assert!(t.contains("mmsched_policy_revision 3"));
        let classic = m.encode_prometheus_text();
        assert!(!classic.contains("# {trace_id"), "no exemplars in 0.0.4");
        assert!(!classic.contains("# EOF"));
    }

    #[test]
    fn accept_negotiation() {
        assert!(wants_openmetrics(Some(
            "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"
        )));
        assert!(!wants_openmetrics(Some("*/*")));
        assert!(!wants_openmetrics(None));
        assert!(!wants_openmetrics(Some("application/openmetrics-text;q=0")));
    }
}
