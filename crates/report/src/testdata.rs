//! Shared test input: one summary with every field set.

use crate::summary::{
    AlignmentSummary, AudioSummary, HealthActionRecord, HealthSummary, LdtiSummary, LevelSeconds,
    LlmSummary, ModalitySummary, RoutingSummary, RunSummary, StreamAlignment,
};

/// A summary with every field set to a distinct value.
pub(crate) fn sample() -> RunSummary {
    let modality = |base: u64, sla_ms: f64| ModalitySummary {
        jobs: base,
        completed: base - 10,
        deadline_misses: base / 100,
        skipped: 7,
        shed: 3,
        p50_ms: sla_ms * 0.4,
        p99_ms: sla_ms * 0.9,
        mean_ms: sla_ms * 0.45,
        sla_ms,
        sla_rule: None,
    };
    RunSummary {
        scenario: "ar-glasses".into(),
        scheduler: "mmsched".into(),
        duration: 60.0,
        seed: 42,
        vision: modality(600, 100.0),
        vad: modality(3000, 20.0),
        asr: modality(40 + 10, 1000.0),
        llm: LlmSummary {
            modality: modality(12 + 10, 5000.0),
            tokens_per_s: 12.5,
            tokens: 750,
            ttft_ms_p50: 120.0,
            tpot_ms_p50: 80.0,
            requests: 22,
        },
        ldti: LdtiSummary {
            mean: 0.12,
            max: 0.41,
            seconds_by_level: LevelSeconds {
                stable: 55.0,
                degraded: 5.0,
                critical: 0.0,
            },
            ..LdtiSummary::default()
        },
        alignment: AlignmentSummary {
            residual_p99_ms: 0.8,
            streams: vec![StreamAlignment {
                name: "camera".into(),
                offset_ms: 12.0,
                drift_ppm: 40.0,
                residual_p99_ms: 0.8,
            }],
        },
        audio: AudioSummary {
            frame_loss_pct: 0.1,
            frames: 3000,
            concealed: 3,
            late_packets: 5,
            retransmit_requests: 4,
            recovered_packets: 2,
            playout_delay_ms_p50: 40.0,
            playout_delay_ms_p99: 80.0,
        },
        scheduler_overhead_pct: 0.35,
        health: HealthSummary {
            evaluations: 6000,
            evaluate_hz: 100.0,
            camera_scaled_seconds: 5.0,
            breaker_opened: 0,
            stale_answers: 0,
            actions: vec![HealthActionRecord {
                t_s: 20.5,
                level: "degraded".into(),
                action: "camera 15 fps; retransmit on".into(),
            }],
        },
        routing: RoutingSummary {
            vision_seen: 600,
            vision_skipped_dark: 3,
            vision_skipped_blurred: 4,
            audio_packets_seen: 3000,
            audio_skipped_silence: 900,
            vision_gate_ms_mean: 0.3,
        },
        platform: vec!["cgroup v1 cpu: workers in mmsched/audio".into()],
    }
}
