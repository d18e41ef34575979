//! The schema of `summary.json`: what one `mmsched run` did, per modality and overall.
//!
//! The key names are a public interface (scripts and `bench e2e --json` read them); new
//! fields may be added, existing keys keep their names and meaning. Every struct reads with
//! `#[serde(default)]`, so files written by an older build, which lack newer fields, still
//! parse. Non-finite numbers are written as `null` and read back as NaN (see [`crate::num`]).

use serde::{Deserialize, Serialize};

use crate::num::de_f64;

/// The summary of one run: the content of `summary.json`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RunSummary {
    /// Scenario name (or the file it came from), as the user gave it.
    pub scenario: String,
    /// Scheduler that ran: `mmsched`, `os-threads`, `fifo` or `static-priority`.
    pub scheduler: String,
    /// Seconds actually run (shorter than asked when interrupted).
    #[serde(deserialize_with = "de_f64")]
    pub duration: f64,
    /// Seed of every random choice in the run (jitter, loss, generated inputs).
    pub seed: u64,
    /// The run's worth in one figure, in [0, 1]: Σ over the modalities with offered
    /// inputs of importance × on_time / offered, over Σ importance
    /// ([`RunSummary::compute_utility`]).
    #[serde(deserialize_with = "de_f64")]
    pub utility: f64,
    /// The same over results that are right as well as on time: Σ importance ×
    /// correct_on_time / offered over Σ importance ([`RunSummary::compute_utility_correct`]).
    /// A result whose truth is unknown counts as right.
    #[serde(deserialize_with = "de_f64")]
    pub utility_correct: f64,
    /// Vision (OCR) jobs.
    pub vision: ModalitySummary,
    /// Voice-activity detection jobs.
    pub vad: ModalitySummary,
    /// Speech-recognition jobs.
    pub asr: ModalitySummary,
    /// Text-generation requests, with token figures.
    pub llm: LlmSummary,
    /// The user's own models, by class (their name): each as a modality of its own,
    /// counted in `utility` and `utility_correct` with its stream's importance. Absent
    /// when the run had none.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub models: std::collections::BTreeMap<String, ModalitySummary>,
    /// The latency death-triangle index (LDTI) over the run.
    pub ldti: LdtiSummary,
    /// Clock alignment of the sensor streams.
    pub alignment: AlignmentSummary,
    /// Audio delivery through the jitter buffer.
    pub audio: AudioSummary,
    /// CPU time spent in scheduling decisions, in percent of the CPU time of the run.
    #[serde(deserialize_with = "de_f64")]
    pub scheduler_overhead_pct: f64,
    /// The health loop and its actions.
    pub health: HealthSummary,
    /// The router's information gates.
    pub routing: RoutingSummary,
    /// Notes on the platform integration, e.g. `cgroup v1 cpu: workers in mmsched/audio`.
    pub platform: Vec<String>,
    /// The last minutes of the run (every other key counts since the start).
    pub window: crate::window::WindowSummary,
    /// mmsched's own signals beside the machine's over the run: the neighbours' CPU
    /// share, its own run-queue wait, CPU pressure.
    pub platform_signals: PlatformSignals,
    /// How mmsched's decisions of rung and admission turned out (empty for the
    /// baselines).
    pub decisions: crate::decisions::DecisionsSummary,
}

/// What the run read of the machine once a second, mmsched's own figures told apart from
/// its neighbours' (each `null` where this machine does not offer it: no PSI, no
/// schedstat, not Linux, or a baseline's run that did not read them).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PlatformSignals {
    /// Windows (about a second each) the figures are over.
    pub windows: u64,
    /// Share of every core's time that other programs used: the machine's busy time less
    /// mmsched's own CPU time, over every core's time, 0 … 1.
    pub neighbour_cpu_share: MeanMax,
    /// Share of every core's time mmsched's own threads used, 0 … 1.
    pub own_cpu_share: MeanMax,
    /// Of the time mmsched's threads were runnable, the share they waited on a run queue
    /// for a CPU (`/proc/self/task/*/schedstat`), 0 … 1.
    pub own_runqueue_wait_share: MeanMax,
    /// The machine's CPU pressure, PSI `some avg10`, 0 … 1.
    pub machine_pressure_some_avg10: MeanMax,
    /// The highest CPU pressure of mmsched's own resource groups (cgroup v2), 0 … 1.
    pub own_group_pressure_some_avg10: MeanMax,
    /// Share of the health evaluations at which mmsched's own work exceeded its lanes
    /// (busy the whole window with more waiting): only then do the health remedies that
    /// keep work from the models act. `null` where not evaluated.
    pub own_overload_share: Option<f64>,
}

/// The mean and the maximum of a figure over a run's windows (`null`: unknown).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MeanMax {
    /// Mean over the windows that knew the figure.
    pub mean: Option<f64>,
    /// The largest.
    pub max: Option<f64>,
}

impl RunSummary {
    /// Deadline misses of the vision and audio branches together (vision + VAD + ASR): the
    /// figure `bench e2e` compares across schedulers.
    pub fn deadline_misses_vision_audio(&self) -> u64 {
        self.vision
            .deadline_misses
            .saturating_add(self.vad.deadline_misses)
            .saturating_add(self.asr.deadline_misses)
    }

    /// Σ importance × on-time share over the modalities that were offered inputs, divided
    /// by their Σ importance; NaN when no modality was offered anything (or all have
    /// importance 0).
    pub fn compute_utility(&self) -> f64 {
        self.weighted(ModalitySummary::on_time_rate)
    }

    /// Σ importance × correct-and-on-time share over the modalities that were offered
    /// inputs, divided by their Σ importance; NaN as [`RunSummary::compute_utility`].
    pub fn compute_utility_correct(&self) -> f64 {
        self.weighted(|m| (m.offered > 0).then(|| m.correct_on_time as f64 / m.offered as f64))
    }

    /// The importance-weighted mean of `rate` over the modalities where it is defined.
    fn weighted(&self, rate: impl Fn(&ModalitySummary) -> Option<f64>) -> f64 {
        let (mut worth, mut weight) = (0.0, 0.0);
        let own = self.models.values().map(|m| ("model", m));
        for (_, m) in self.modalities().into_iter().chain(own) {
            if let Some(rate) = rate(m) {
                let w = if m.importance.is_finite() {
                    m.importance.max(0.0)
                } else {
                    0.0
                };
                worth += w * rate;
                weight += w;
            }
        }
        if weight > 0.0 {
            worth / weight
        } else {
            f64::NAN
        }
    }

    /// The four modalities in report order, with their `summary.json` key names.
    pub fn modalities(&self) -> [(&'static str, &ModalitySummary); 4] {
        [
            ("vision", &self.vision),
            ("vad", &self.vad),
            ("asr", &self.asr),
            ("llm", &self.llm.modality),
        ]
    }
}

/// Jobs of one modality and their latencies (milliseconds from arrival to result).
///
/// Every input is accounted for: `offered = on_time + late + shed + skipped + dropped +
/// unfinished + failed` ([`ModalitySummary::accounted`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ModalitySummary {
    /// Inputs that arrived for this modality (frames, VAD chunks, utterances, text
    /// requests), whatever became of them.
    pub offered: u64,
    /// Results within their deadline.
    pub on_time: u64,
    /// Results after their deadline (the same count as `deadline_misses`).
    pub late: u64,
    /// Jobs handed to the scheduler (run, or shed by its admission): `offered` less what
    /// was skipped, dropped, failed before submission, or still waiting to be submitted.
    pub jobs: u64,
    /// Jobs that produced a result (`on_time + late`).
    pub completed: u64,
    /// Completed jobs whose result came after their deadline (SLA).
    pub deadline_misses: u64,
    /// Inputs the router skipped as not worth running (dark or blurred frame).
    pub skipped: u64,
    /// Jobs shed by admission under overload (or refused by battery saver).
    pub shed: u64,
    /// Inputs dropped by a health action (`dropped_by` names the actions).
    pub dropped: u64,
    /// Of `dropped`, how many each health action dropped: `camera_rate_halved` (every
    /// other frame while degraded), `circuit_breaker` (the heaviest branch while critical).
    pub dropped_by: std::collections::BTreeMap<String, u64>,
    /// Inputs still queued or running when the run ended (after the drain).
    pub unfinished: u64,
    /// Jobs whose model failed (or whose input could not be read or decoded).
    pub failed: u64,
    /// Why they failed: each reason (a frame file gone or truncated, a read past its
    /// deadline, the engine's error) and how often; at most 16 distinct reasons, the rest
    /// under `other reasons`. Absent when nothing failed.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub failures: std::collections::BTreeMap<String, u64>,
    /// On-time results per second of the run (`on_time / duration`).
    #[serde(deserialize_with = "de_f64")]
    pub on_time_per_s: f64,
    /// Importance of the stream behind this modality (from the scenario), the weight of
    /// its on-time share in the run's `utility`.
    #[serde(deserialize_with = "de_f64")]
    pub importance: f64,
    /// Median latency of completed jobs (ms).
    #[serde(deserialize_with = "de_f64")]
    pub p50_ms: f64,
    /// 99th-percentile latency of completed jobs (ms).
    #[serde(deserialize_with = "de_f64")]
    pub p99_ms: f64,
    /// Mean latency of completed jobs (ms).
    #[serde(deserialize_with = "de_f64")]
    pub mean_ms: f64,
    /// The latency SLA (deadline relative to arrival) of this modality (ms).
    #[serde(deserialize_with = "de_f64")]
    pub sla_ms: f64,
    /// How the deadline is set when it is not `sla_ms` alone, e.g. for speech recognition
    /// `60 ms + the utterance's length (at least 2 s)`; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sla_rule: Option<String>,
    /// The same outcomes split by where the inputs came from: `streams` (the scenario's
    /// sensors) and `api` (HTTP and library clients); each accounts for its own `offered`.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub origin: std::collections::BTreeMap<String, OriginSummary>,
    /// Results scored against a known truth (generated or labelled frames, known
    /// recordings); the rest count as right.
    pub scored: u64,
    /// Results that are right: `completed` less the scored ones that were wrong (OCR:
    /// every true line read, case- and space-insensitive; speech: WER ≤ 0.1).
    pub correct: u64,
    /// Right results within their deadline.
    pub correct_on_time: u64,
    /// Mean accuracy of the scored results (share of true lines read; 1 − WER, at least
    /// 0); null when nothing was scored.
    #[serde(deserialize_with = "de_f64")]
    pub accuracy: f64,
    /// Jobs run at each quality rung of the model, by rung name (OCR, speech recognition).
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub rung_counts: std::collections::BTreeMap<String, u64>,
}

/// One modality's outcomes from one origin (see [`ModalitySummary::origin`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct OriginSummary {
    /// Inputs that arrived.
    pub offered: u64,
    /// Results within their deadline.
    pub on_time: u64,
    /// Results after their deadline.
    pub late: u64,
    /// Shed by admission.
    pub shed: u64,
    /// Skipped by the router.
    pub skipped: u64,
    /// Dropped by a health action.
    pub dropped: u64,
    /// Still waiting or running at the end, or abandoned by their client.
    pub unfinished: u64,
    /// Failed in the model (or could not be decoded).
    pub failed: u64,
}

impl OriginSummary {
    /// The sum of the outcomes, which equals `offered` when every input is accounted for.
    pub fn accounted(&self) -> u64 {
        self.on_time
            + self.late
            + self.shed
            + self.skipped
            + self.dropped
            + self.unfinished
            + self.failed
    }
}

impl ModalitySummary {
    /// The figures of one modality from the latencies of its completed jobs (ms, any
    /// order): `completed` is their number, `deadline_misses` those above `sla_ms`, and the
    /// percentiles are nearest-rank (the P99 is a latency some job really had). Non-finite
    /// latencies are not counted. Without completed jobs the latency figures are NaN
    /// (written as `null`).
    pub fn from_latencies(
        jobs: u64,
        skipped: u64,
        shed: u64,
        sla_ms: f64,
        latencies_ms: &[f64],
    ) -> Self {
        let mut sorted: Vec<f64> = latencies_ms
            .iter()
            .copied()
            .filter(|v| v.is_finite())
            .collect();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let rank = |p: f64| -> f64 {
            if n == 0 {
                return f64::NAN;
            }
            let index = ((p * n as f64).ceil() as usize).clamp(1, n) - 1;
            sorted[index]
        };
        let mean = if n == 0 {
            f64::NAN
        } else {
            sorted.iter().sum::<f64>() / n as f64
        };
        let late = sorted.iter().filter(|v| **v > sla_ms).count() as u64;
        Self {
            jobs,
            completed: n as u64,
            deadline_misses: late,
            on_time: n as u64 - late,
            late,
            skipped,
            shed,
            p50_ms: rank(0.50),
            p99_ms: rank(0.99),
            mean_ms: mean,
            sla_ms,
            sla_rule: None,
            ..Self::default()
        }
    }

    /// The sum of the outcomes: `on_time + late + shed + skipped + dropped + unfinished +
    /// failed`. Equals `offered` in every summary a run writes.
    pub fn accounted(&self) -> u64 {
        [
            self.on_time,
            self.late,
            self.shed,
            self.skipped,
            self.dropped,
            self.unfinished,
            self.failed,
        ]
        .iter()
        .fold(0u64, |a, b| a.saturating_add(*b))
    }

    /// Share of offered inputs answered in time, or `None` when nothing was offered.
    pub fn on_time_rate(&self) -> Option<f64> {
        (self.offered > 0).then(|| self.on_time as f64 / self.offered as f64)
    }
}

/// Text generation: the common job figures (flattened into the same JSON object) plus tokens.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LlmSummary {
    /// Requests as jobs: `llm.jobs`, `llm.p99_ms`, … sit beside the token figures.
    #[serde(flatten)]
    pub modality: ModalitySummary,
    /// Requests whose whole answer (last token) came within the text SLA: the headline
    /// (the same count as `on_time`).
    pub requests_on_time: u64,
    /// Generated tokens over the run's length (seconds the inputs ran): what the device
    /// delivered, shed and unserved requests included as zero.
    #[serde(deserialize_with = "de_f64")]
    pub tokens_per_wall_s: f64,
    /// Generated tokens per second of request time: all tokens over the summed time from
    /// each served request's arrival to its last token (queueing and preemption included).
    /// A request that got no token adds neither tokens nor time, so shedding a request
    /// does not lower it: compare `requests_on_time` and `tokens_per_wall_s` instead.
    #[serde(deserialize_with = "de_f64")]
    pub tokens_per_s: f64,
    /// Generated tokens.
    pub tokens: u64,
    /// Median time to first token, from the request's arrival (ms).
    #[serde(deserialize_with = "de_f64")]
    pub ttft_ms_p50: f64,
    /// 99th-percentile time to first token (ms).
    #[serde(deserialize_with = "de_f64")]
    pub ttft_ms_p99: f64,
    /// Median time per output token after the first, as the user sees it: per request,
    /// (last token − first token) / (tokens − 1), preemption included (ms).
    #[serde(deserialize_with = "de_f64")]
    pub tpot_ms_p50: f64,
    /// 99th-percentile time per output token over the requests (ms).
    #[serde(deserialize_with = "de_f64")]
    pub tpot_ms_p99: f64,
    /// Text requests that arrived (the same count as `offered`).
    pub requests: u64,
}

/// The LDTI over the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LdtiSummary {
    /// Time-weighted mean LDTI.
    #[serde(deserialize_with = "de_f64")]
    pub mean: f64,
    /// Largest LDTI evaluated.
    #[serde(deserialize_with = "de_f64")]
    pub max: f64,
    /// Seconds spent at each health level.
    pub seconds_by_level: LevelSeconds,
    /// LDTI at and above which the device was *degraded* (the policy's threshold).
    #[serde(deserialize_with = "de_f64")]
    pub degraded_at: f64,
    /// LDTI at and above which the device was *critical* (the policy's threshold).
    #[serde(deserialize_with = "de_f64")]
    pub critical_at: f64,
}

impl Default for LdtiSummary {
    /// Thresholds default to the core's `LevelThresholds` defaults (0.25 and 0.6).
    fn default() -> Self {
        Self {
            mean: 0.0,
            max: 0.0,
            seconds_by_level: LevelSeconds::default(),
            degraded_at: 0.25,
            critical_at: 0.6,
        }
    }
}

/// Seconds spent at each LDTI health level.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LevelSeconds {
    /// Seconds at level *stable*.
    #[serde(deserialize_with = "de_f64")]
    pub stable: f64,
    /// Seconds at level *degraded*.
    #[serde(deserialize_with = "de_f64")]
    pub degraded: f64,
    /// Seconds at level *critical*.
    #[serde(deserialize_with = "de_f64")]
    pub critical: f64,
}

/// Clock alignment of the sensor streams against the device clock.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AlignmentSummary {
    /// 99th-percentile residual alignment error of the worst stream (ms).
    #[serde(deserialize_with = "de_f64")]
    pub residual_p99_ms: f64,
    /// Every stream's estimate and residual.
    pub streams: Vec<StreamAlignment>,
}

/// One stream's clock estimate at the end of the run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct StreamAlignment {
    /// Stream name (`camera`, `microphone`, `imu`, …).
    pub name: String,
    /// Estimated offset of the stream clock from the device clock (ms).
    #[serde(deserialize_with = "de_f64")]
    pub offset_ms: f64,
    /// Estimated drift of the stream clock (parts per million).
    #[serde(deserialize_with = "de_f64")]
    pub drift_ppm: f64,
    /// 99th-percentile residual alignment error (ms).
    #[serde(deserialize_with = "de_f64")]
    pub residual_p99_ms: f64,
    /// The source of timing that placed the stream's events at the end of the run:
    /// `arrival` (the link jitters no more than the stamps are noisy) or `stamp` (the
    /// stream's own stamp mapped onto the device clock); empty in older summaries.
    pub source: String,
}

/// Audio delivery: packet loss, concealment, the jitter buffer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AudioSummary {
    /// Frames played out concealed (lost or too late), in percent of all frames.
    #[serde(deserialize_with = "de_f64")]
    pub frame_loss_pct: f64,
    /// Audio frames played out.
    pub frames: u64,
    /// Frames concealed because their packet was lost or late.
    pub concealed: u64,
    /// Packets that arrived after their playout time.
    pub late_packets: u64,
    /// Packets re-requested from the jitter buffer's history (health action *degraded*).
    pub retransmit_requests: u64,
    /// Re-requested packets that arrived in time.
    pub recovered_packets: u64,
    /// Median playout delay of the adaptive jitter buffer (ms).
    #[serde(deserialize_with = "de_f64")]
    pub playout_delay_ms_p50: f64,
    /// 99th-percentile playout delay of the adaptive jitter buffer (ms).
    #[serde(deserialize_with = "de_f64")]
    pub playout_delay_ms_p99: f64,
}

/// The health loop: how often it ran and what it did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HealthSummary {
    /// LDTI evaluations.
    pub evaluations: u64,
    /// Achieved evaluation rate (Hz).
    #[serde(deserialize_with = "de_f64")]
    pub evaluate_hz: f64,
    /// Seconds during which the camera ran at a lowered rate or resolution.
    #[serde(deserialize_with = "de_f64")]
    pub camera_scaled_seconds: f64,
    /// Times the circuit breaker opened on the heaviest branch.
    pub breaker_opened: u64,
    /// Answers served from the result cache, marked stale.
    pub stale_answers: u64,
    /// Every level change and the action taken, in time order.
    pub actions: Vec<HealthActionRecord>,
}

/// One health action taken by the health loop.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HealthActionRecord {
    /// Seconds since the start of the run.
    #[serde(deserialize_with = "de_f64")]
    pub t_s: f64,
    /// Level entered: `stable`, `degraded` or `critical`.
    pub level: String,
    /// What was done, in words (e.g. `camera 15 fps; retransmit on`).
    pub action: String,
}

/// The router's information gates (S4): what they saw and what they let skip.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RoutingSummary {
    /// Camera frames the vision gate scored.
    pub vision_seen: u64,
    /// Frames skipped as too dark.
    pub vision_skipped_dark: u64,
    /// Frames skipped as too blurred.
    pub vision_skipped_blurred: u64,
    /// Audio packets the speech gate saw.
    pub audio_packets_seen: u64,
    /// Audio packets that did not reach speech recognition (no voice activity).
    pub audio_skipped_silence: u64,
    /// Mean cost of the image gate per frame (ms): what a skipped frame costs instead of OCR.
    #[serde(deserialize_with = "de_f64")]
    pub vision_gate_ms_mean: f64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata::sample;
    use serde_json::Value;

    #[test]
    fn json_round_trip_is_lossless() {
        let summary = sample();
        let text = serde_json::to_string_pretty(&summary).expect("serialisable");
        let back: RunSummary = serde_json::from_str(&text).expect("parses");
        assert_eq!(back, summary);
    }

    #[test]
    fn required_keys_are_present_with_their_names() {
        let value = serde_json::to_value(sample()).expect("serialisable");
        for modality in ["vision", "vad", "asr", "llm"] {
            for key in [
                "jobs",
                "completed",
                "deadline_misses",
                "skipped",
                "shed",
                "p50_ms",
                "p99_ms",
            ] {
                let found = &value[modality][key];
                assert!(found.is_number(), "{modality}.{key} missing: {found}");
            }
        }
        for path in [
            "/llm/tokens_per_s",
            "/ldti/mean",
            "/ldti/max",
            "/ldti/seconds_by_level/stable",
            "/ldti/seconds_by_level/degraded",
            "/ldti/seconds_by_level/critical",
            "/alignment/residual_p99_ms",
            "/audio/frame_loss_pct",
            "/scheduler_overhead_pct",
            "/duration",
        ] {
            let found = value.pointer(path);
            assert!(
                found.is_some_and(Value::is_number),
                "{path} missing or not a number: {found:?}"
            );
        }
        assert_eq!(value["scenario"], "ar-glasses");
        assert_eq!(value["scheduler"], "mmsched");
        // The LLM's job figures are flattened beside its token figures, not nested.
        assert!(value["llm"].get("modality").is_none());
        assert_eq!(value["llm"]["jobs"], 22);
    }

    #[test]
    fn non_finite_values_are_written_as_null_and_read_back() {
        let mut summary = sample();
        summary.vision.p99_ms = f64::NAN;
        summary.ldti.max = f64::INFINITY;
        summary.llm.modality.p50_ms = f64::NAN;
        let text = serde_json::to_string(&summary).expect("serialisable");
        assert!(!text.contains("NaN") && !text.contains("inf"));
        let back: RunSummary = serde_json::from_str(&text).expect("null parses");
        assert!(back.vision.p99_ms.is_nan());
        assert!(back.ldti.max.is_nan());
        assert!(
            back.llm.modality.p50_ms.is_nan(),
            "flattened fields read null too"
        );
    }

    #[test]
    fn an_older_file_without_newer_fields_still_parses() {
        let text = r#"{"scenario":"car","scheduler":"fifo","duration":5.0,
                       "vision":{"jobs":3,"completed":2,"deadline_misses":1}}"#;
        let summary: RunSummary = serde_json::from_str(text).expect("parses");
        assert_eq!(summary.vision.deadline_misses, 1);
        assert_eq!(summary.ldti.critical_at, 0.6);
    }

    #[test]
    fn figures_from_latencies_use_nearest_rank_and_the_sla() {
        let latencies: Vec<f64> = (1..=200).rev().map(f64::from).collect();
        let m = ModalitySummary::from_latencies(210, 6, 4, 150.0, &latencies);
        assert_eq!(m.completed, 200);
        assert_eq!(m.deadline_misses, 50);
        assert_eq!((m.p50_ms, m.p99_ms, m.mean_ms), (100.0, 198.0, 100.5));
        assert_eq!((m.jobs, m.skipped, m.shed), (210, 6, 4));
        assert_eq!((m.on_time, m.late), (150, 50));
        let none = ModalitySummary::from_latencies(3, 3, 0, 100.0, &[f64::NAN]);
        assert_eq!((none.completed, none.deadline_misses), (0, 0));
        assert!(none.p50_ms.is_nan() && none.p99_ms.is_nan() && none.mean_ms.is_nan());
    }

    #[test]
    fn the_sample_accounts_for_every_input() {
        let s = sample();
        for (name, m) in s.modalities() {
            assert_eq!(m.accounted(), m.offered, "{name}: {m:?}");
            assert_eq!(m.on_time + m.late, m.completed, "{name}");
            assert_eq!(m.dropped_by.values().sum::<u64>(), m.dropped, "{name}");
        }
        let value = serde_json::to_value(&s).expect("serialisable");
        for key in [
            "offered",
            "on_time",
            "late",
            "shed",
            "skipped",
            "dropped",
            "unfinished",
            "failed",
            "on_time_per_s",
        ] {
            assert!(value["vision"][key].is_number(), "vision.{key}");
            assert!(value["llm"][key].is_number(), "llm.{key}");
        }
        assert_eq!(value["vision"]["dropped_by"]["camera_rate_halved"], 2);
        for key in [
            "requests_on_time",
            "tokens_per_wall_s",
            "ttft_ms_p99",
            "tpot_ms_p99",
        ] {
            assert!(value["llm"][key].is_number(), "llm.{key}");
        }
        assert!(value["utility"].is_number());
    }

    #[test]
    fn utility_weighs_on_time_shares_by_importance() {
        let mut s = RunSummary::default();
        // Nothing offered: no utility.
        assert!(s.compute_utility().is_nan());
        s.vision.offered = 10;
        s.vision.on_time = 5;
        s.vision.importance = 0.8;
        s.llm.modality.offered = 4;
        s.llm.modality.on_time = 4;
        s.llm.modality.importance = 0.2;
        // A modality with nothing offered does not count, whatever its importance.
        s.vad.importance = 1.0;
        // (0.8 × 0.5 + 0.2 × 1.0) / (0.8 + 0.2) = 0.6
        assert!((s.compute_utility() - 0.6).abs() < 1e-12);
        s.vad.offered = 2;
        // (0.4 + 0.2 + 1.0 × 0) / 2.0 = 0.3
        assert!((s.compute_utility() - 0.3).abs() < 1e-12);
    }

    #[test]
    fn utility_correct_counts_right_answers_on_time_only() {
        let mut s = RunSummary::default();
        assert!(s.compute_utility_correct().is_nan());
        s.vision.offered = 10;
        s.vision.on_time = 8;
        s.vision.correct_on_time = 4;
        s.vision.importance = 0.75;
        s.asr.offered = 2;
        s.asr.on_time = 2;
        s.asr.correct_on_time = 2;
        s.asr.importance = 0.25;
        // (0.75 × 0.4 + 0.25 × 1.0) / 1.0 = 0.55, against (0.75 × 0.8 + 0.25) = 0.85
        assert!((s.compute_utility_correct() - 0.55).abs() < 1e-12);
        assert!((s.compute_utility() - 0.85).abs() < 1e-12);
    }

    #[test]
    fn vision_audio_misses_add_vision_vad_and_asr_only() {
        let mut summary = RunSummary::default();
        summary.vision.deadline_misses = 5;
        summary.vad.deadline_misses = 2;
        summary.asr.deadline_misses = 1;
        summary.llm.modality.deadline_misses = 100;
        assert_eq!(summary.deadline_misses_vision_audio(), 8);
    }
}
