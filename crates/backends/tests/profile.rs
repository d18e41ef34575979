//! Profiling a real backend through the generic measuring code.

mod common;

use mmsched_backends::profile::{DeviceProfile, EntryLabel, MeasureOptions, profile_backend};
use mmsched_backends::vad::{SileroVad, VadConfig};
use mmsched_core::time::MonotonicClock;

#[test]
fn profiles_vad_and_round_trips() {
    common::require_models();
    let mut vad = SileroVad::new(VadConfig::default()).expect("VAD loads");
    let label = EntryLabel {
        engine: "tract".into(),
        input: "chunk512".into(),
        threads: 1,
    };
    let mut calls = 0;
    let entry = profile_backend(
        &mut vad,
        &label,
        &vec![0.01f32; 512],
        MeasureOptions {
            warmup_runs: 2,
            runs: 10,
        },
        &MonotonicClock::new(),
        || calls += 1,
    )
    .expect("measures");
    assert_eq!(calls, 12);
    assert_eq!(entry.model, "silero-vad");
    let s = entry.stages;
    assert!(
        s.exec.p50_nanos > 0
            && s.exec.p50_nanos <= s.exec.p95_nanos
            && s.exec.p95_nanos <= s.exec.p99_nanos
    );
    assert!(s.total.p50_nanos >= s.exec.p50_nanos);
    let mut profile = DeviceProfile::new();
    profile.upsert(entry);
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("profile.json");
    profile.save(&path).expect("saves");
    let loaded = DeviceProfile::load(&path).expect("loads");
    assert!(
        loaded
            .predict_p95_nanos("silero-vad", "tract", "chunk512")
            .is_some()
    );
}
