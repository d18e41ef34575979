//! Shared test input: one summary with every field set.

use crate::summary::{
    AlignmentSummary, AudioSummary, HealthActionRecord, HealthSummary, LdtiSummary, LevelSeconds,
    LlmSummary, ModalitySummary, RoutingSummary, RunSummary, StreamAlignment,
};

/// A summary with every field set to a distinct value.
pub(crate) fn sample() -> RunSummary {
    // Every job accounted for: of `base` jobs, 10 did not complete (3 shed, 4 unfinished,
    // 3 failed); 7 more inputs were skipped and 2 dropped before becoming jobs.
    let modality = |base: u64, sla_ms: f64, importance: f64| ModalitySummary {
        offered: base + 9,
        on_time: base - 10 - base / 100,
        late: base / 100,
        jobs: base,
        completed: base - 10,
        deadline_misses: base / 100,
        skipped: 7,
        shed: 3,
        dropped: 2,
        dropped_by: [("camera_rate_halved".to_string(), 2)].into(),
        unfinished: 4,
        failed: 3,
        failures: Default::default(),
        on_time_per_s: (base - 10 - base / 100) as f64 / 60.0,
        importance,
        p50_ms: sla_ms * 0.4,
        p99_ms: sla_ms * 0.9,
        mean_ms: sla_ms * 0.45,
        sla_ms,
        sla_rule: None,
        origin: Default::default(),
        scored: base - 10,
        correct: base - 11,
        correct_on_time: base - 11 - base / 100,
        accuracy: 0.95,
        rung_counts: Default::default(),
    };
    RunSummary {
        scenario: "ar-glasses".into(),
        scheduler: "mmsched".into(),
        duration: 60.0,
        seed: 42,
        utility: 0.9,
        utility_correct: 0.88,
        vision: modality(600, 100.0, 0.8),
        vad: modality(3000, 20.0, 0.9),
        asr: modality(40 + 10, 1000.0, 0.9),
        models: Default::default(),
        llm: LlmSummary {
            modality: modality(12 + 10, 5000.0, 0.5),
            requests_on_time: 12,
            tokens_per_wall_s: 12.5,
            tokens_per_s: 12.5,
            tokens: 750,
            ttft_ms_p50: 120.0,
            ttft_ms_p99: 400.0,
            tpot_ms_p50: 80.0,
            tpot_ms_p99: 150.0,
            requests: 31,
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
                source: "stamp".into(),
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
        window: Default::default(),
        platform_signals: crate::summary::PlatformSignals {
            windows: 60,
            neighbour_cpu_share: crate::summary::MeanMax {
                mean: Some(0.42),
                max: Some(0.61),
            },
            own_runqueue_wait_share: crate::summary::MeanMax {
                mean: Some(0.12),
                max: Some(0.3),
            },
            own_overload_share: Some(0.0),
            ..Default::default()
        },
        decisions: Default::default(),
    }
}
