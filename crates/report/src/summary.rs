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
    /// Vision (OCR) jobs.
    pub vision: ModalitySummary,
    /// Voice-activity detection jobs.
    pub vad: ModalitySummary,
    /// Speech-recognition jobs.
    pub asr: ModalitySummary,
    /// Text-generation requests, with token figures.
    pub llm: LlmSummary,
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
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ModalitySummary {
    /// Jobs that arrived (frames, VAD windows, utterances, requests).
    pub jobs: u64,
    /// Jobs that produced a result.
    pub completed: u64,
    /// Completed jobs whose result came after their deadline (SLA).
    pub deadline_misses: u64,
    /// Jobs the router skipped as not worth running (dark or blurred frame, silence).
    pub skipped: u64,
    /// Jobs dropped by overload shedding or an open circuit breaker.
    pub shed: u64,
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
        Self {
            jobs,
            completed: n as u64,
            deadline_misses: sorted.iter().filter(|v| **v > sla_ms).count() as u64,
            skipped,
            shed,
            p50_ms: rank(0.50),
            p99_ms: rank(0.99),
            mean_ms: mean,
            sla_ms,
            sla_rule: None,
        }
    }
}

/// Text generation: the common job figures (flattened into the same JSON object) plus tokens.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LlmSummary {
    /// Requests as jobs: `llm.jobs`, `llm.p99_ms`, … sit beside the token figures.
    #[serde(flatten)]
    pub modality: ModalitySummary,
    /// Generated tokens per second of request time: all tokens over the summed time from
    /// each request's arrival to its last token (queueing and preemption included).
    #[serde(deserialize_with = "de_f64")]
    pub tokens_per_s: f64,
    /// Generated tokens.
    pub tokens: u64,
    /// Median time to first token (ms).
    #[serde(deserialize_with = "de_f64")]
    pub ttft_ms_p50: f64,
    /// Median time per output token after the first (ms).
    #[serde(deserialize_with = "de_f64")]
    pub tpot_ms_p50: f64,
    /// Text requests that arrived.
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
        let none = ModalitySummary::from_latencies(3, 3, 0, 100.0, &[f64::NAN]);
        assert_eq!((none.completed, none.deadline_misses), (0, 0));
        assert!(none.p50_ms.is_nan() && none.p99_ms.is_nan() && none.mean_ms.is_nan());
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
