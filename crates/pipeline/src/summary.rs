//! The summary of a run (`summary.json`), built from what the loop counted.

use mmsched_report::{
    AlignmentSummary, AudioSummary, HealthActionRecord, HealthSummary, LdtiSummary, LevelSeconds,
    LlmSummary, ModalitySummary, RoutingSummary, RunSummary, StreamAlignment,
};
use mmsched_runtime::ingest::StreamIngest;
use mmsched_runtime::router::image::ImageRouter;

use crate::audio::AudioPath;
use crate::config::RunConfig;
use crate::health::HealthMonitor;
use crate::latency::Latencies;
use crate::stats::{Kind, RunStats};

/// Totals the loop kept outside [`RunStats`].
#[derive(Debug, Clone, Default)]
pub struct Totals {
    /// Time the inputs ran, nanoseconds.
    pub elapsed_nanos: u64,
    /// Importance of each kind's stream, by [`Kind::index`] (vision, vad, asr, llm, then the
    /// user's models), from the scenario.
    pub importance: Vec<f64>,
    /// Tokens generated.
    pub llm_tokens: u64,
    /// Summed time from each request's arrival to its last token.
    pub llm_request_nanos: u64,
    /// Time to first token of each request, ms.
    pub llm_ttft_ms: Latencies,
    /// Median time per output token of each request, ms.
    pub llm_tpot_ms: Latencies,
    /// CPU time the main loop spent in the scheduler (submitting, deciding, collecting).
    pub overhead_nanos: u64,
    /// Answers given from the result cache, marked stale.
    pub stale_answers: u64,
    /// Times the breaker opened.
    pub breaker_opened: u64,
    /// Time the camera ran at a reduced rate.
    pub camera_scaled_nanos: u64,
    /// Retransmissions requested.
    pub retransmit_requests: u64,
    /// Retransmitted packets that arrived in time to play.
    pub recovered: u64,
    /// Platform notes.
    pub platform: Vec<String>,
}

fn modality(stats: &RunStats, kind: Kind, t: &Totals) -> ModalitySummary {
    let k = stats.kind(kind);
    let lat = &k.latencies_ms;
    let mut m = ModalitySummary::from_latencies(
        k.jobs,
        k.skipped,
        k.shed,
        k.sla_ms,
        lat.exact().unwrap_or(&[]),
    );
    if lat.exact().is_none() {
        // Past the exact samples: the percentiles from the histogram (1 % buckets), the
        // mean from the running sum.
        m.p50_ms = lat.quantile(0.5);
        m.p99_ms = lat.quantile(0.99);
        m.mean_ms = lat.mean().unwrap_or(f64::NAN);
    }
    // Deadlines are per job (speech recognition's grows with the utterance): the loop's
    // own count is the truth.
    m.completed = k.completed;
    m.deadline_misses = k.deadline_misses;
    m.offered = k.offered;
    m.on_time = k.on_time();
    m.late = k.deadline_misses;
    m.dropped = k.dropped();
    m.dropped_by = k
        .dropped_by
        .iter()
        .map(|(by, n)| (by.as_str().to_string(), *n))
        .collect();
    m.unfinished = k.unfinished;
    m.failed = k.failed;
    m.scored = k.scored;
    m.correct = k.correct();
    m.correct_on_time = k.correct_on_time();
    m.accuracy = k.accuracy().unwrap_or(f64::NAN);
    m.failures = k.failures.clone();
    m.on_time_per_s = if t.elapsed_nanos == 0 {
        0.0
    } else {
        m.on_time as f64 / (t.elapsed_nanos as f64 / 1e9)
    };
    m.importance = t.importance.get(kind.index()).copied().unwrap_or(f64::NAN);
    for origin in crate::request::Origin::ALL {
        let c = stats.origin(kind, origin);
        if c.offered > 0 {
            m.origin.insert(
                origin.as_str().to_string(),
                mmsched_report::OriginSummary {
                    offered: c.offered,
                    on_time: c.on_time,
                    late: c.late,
                    shed: c.shed,
                    skipped: c.skipped,
                    dropped: c.dropped,
                    unfinished: c.unfinished,
                    failed: c.failed,
                },
            );
        }
    }
    // Without a microphone there is no deadline to describe (its SLA is undefined).
    if kind == Kind::Asr && k.sla_ms.is_finite() {
        m.sla_rule = Some(format!(
            "{} ms + the utterance's length (at least {} s)",
            mmsched_core::text::number(k.sla_ms),
            crate::run::ASR_MIN_BUDGET_NANOS / 1_000_000_000
        ));
    }
    m
}

fn ms(nanos: u64) -> f64 {
    nanos as f64 / 1e6
}

/// Builds the summary.
#[allow(clippy::too_many_arguments)]
pub fn build(
    config: &RunConfig,
    stats: &RunStats,
    health: &HealthMonitor,
    router: &ImageRouter,
    audio: Option<&AudioPath>,
    ingest: &[(String, StreamIngest)],
    actions: Vec<HealthActionRecord>,
    t: &Totals,
) -> RunSummary {
    let (mean, max) = health.mean_max();
    let [stable, degraded, critical] = health.seconds_by_level();
    let thresholds = config.policy.ldti().thresholds;
    let streams: Vec<StreamAlignment> = ingest
        .iter()
        .filter(|(_, i)| i.residual_samples() > 0)
        .map(|(name, i)| {
            let e = i.estimate().unwrap_or_default();
            StreamAlignment {
                name: name.clone(),
                offset_ms: e.offset_nanos / 1e6,
                drift_ppm: e.drift_ppm,
                residual_p99_ms: ms(i.residual_quantile_nanos(0.99)),
                source: e.source.as_str().to_string(),
            }
        })
        .collect();
    let residual_p99_ms = streams
        .iter()
        .map(|s| s.residual_p99_ms)
        .fold(f64::NAN, f64::max);
    let audio_summary = audio.map_or_else(AudioSummary::default, |a| {
        let c = a.counts();
        let delays = a.added_delays();
        AudioSummary {
            frame_loss_pct: if c.frames == 0 {
                0.0
            } else {
                100.0 * c.concealed as f64 / c.frames as f64
            },
            frames: c.frames,
            concealed: c.concealed,
            late_packets: c.late_packets,
            retransmit_requests: t.retransmit_requests,
            recovered_packets: t.recovered,
            playout_delay_ms_p50: delays.quantile(0.5),
            playout_delay_ms_p99: delays.quantile(0.99),
        }
    });
    let gate = router.counts();
    let speech = audio.map(AudioPath::gate_counts).unwrap_or_default();
    let elapsed_s = t.elapsed_nanos as f64 / 1e9;
    let (ttft, tpot) = (&t.llm_ttft_ms, &t.llm_tpot_ms);
    let llm = modality(stats, Kind::Llm, t);
    let mut summary = RunSummary {
        scenario: config.scenario.name().to_string(),
        scheduler: config.scheduler.as_str().to_string(),
        duration: elapsed_s,
        seed: config.seed,
        utility: f64::NAN,
        utility_correct: f64::NAN,
        vision: modality(stats, Kind::Vision, t),
        vad: modality(stats, Kind::Vad, t),
        asr: modality(stats, Kind::Asr, t),
        models: stats
            .kinds()
            .into_iter()
            .filter(|k| k.is_user_model())
            .map(|k| (k.as_str().to_string(), modality(stats, k, t)))
            .collect(),
        llm: LlmSummary {
            requests_on_time: llm.on_time,
            tokens_per_wall_s: if elapsed_s > 0.0 {
                t.llm_tokens as f64 / elapsed_s
            } else {
                0.0
            },
            tokens_per_s: if t.llm_request_nanos == 0 {
                0.0
            } else {
                t.llm_tokens as f64 / (t.llm_request_nanos as f64 / 1e9)
            },
            tokens: t.llm_tokens,
            ttft_ms_p50: ttft.quantile(0.5),
            ttft_ms_p99: ttft.quantile(0.99),
            tpot_ms_p50: tpot.quantile(0.5),
            tpot_ms_p99: tpot.quantile(0.99),
            requests: llm.offered,
            modality: llm,
        },
        ldti: LdtiSummary {
            mean,
            max,
            seconds_by_level: LevelSeconds {
                stable,
                degraded,
                critical,
            },
            degraded_at: thresholds.degraded_at,
            critical_at: thresholds.critical_at,
        },
        alignment: AlignmentSummary {
            residual_p99_ms,
            streams,
        },
        audio: audio_summary,
        scheduler_overhead_pct: if t.elapsed_nanos == 0 {
            0.0
        } else {
            100.0 * t.overhead_nanos as f64 / t.elapsed_nanos as f64
        },
        health: HealthSummary {
            evaluations: health.evaluations(),
            evaluate_hz: if elapsed_s > 0.0 {
                health.evaluations() as f64 / elapsed_s
            } else {
                0.0
            },
            camera_scaled_seconds: t.camera_scaled_nanos as f64 / 1e9,
            breaker_opened: t.breaker_opened,
            stale_answers: t.stale_answers,
            actions,
        },
        routing: RoutingSummary {
            vision_seen: gate.seen,
            vision_skipped_dark: gate.skipped_dark,
            vision_skipped_blurred: gate.skipped_blurred,
            audio_packets_seen: speech.seen,
            audio_skipped_silence: speech.skipped_silence,
            vision_gate_ms_mean: if gate.seen == 0 {
                f64::NAN
            } else {
                gate.gate_nanos as f64 / gate.seen as f64 / 1e6
            },
        },
        platform: t.platform.clone(),
        // Set by the loop, which has the window.
        window: Default::default(),
        // Filled in by the run from its signals (`run/signals.rs`).
        platform_signals: Default::default(),
        decisions: Default::default(),
    };
    summary.utility = summary.compute_utility();
    summary.utility_correct = summary.compute_utility_correct();
    summary
}
