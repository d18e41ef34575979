//! Profiling a real backend through the generic measuring code.

mod common;

use mmsched_backends::profile::{
    DeviceProfile, EntryLabel, MeasureOptions, profile_backend, this_device,
};
use mmsched_backends::vad::{SileroVad, VadConfig};
use mmsched_core::time::MonotonicClock;

#[test]
fn profiles_vad_into_a_profile() {
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
    let mut profile = DeviceProfile::empty(this_device());
    profile.upsert(entry);
    assert!(profile.derive_job(
        "vad",
        ("silero-vad", "tract", "chunk512"),
        (1, 1),
        "32 ms chunk"
    ));
    assert_eq!(
        profile.job("vad").map(|j| j.p95_nanos),
        profile.predict_p95_nanos("silero-vad", "tract", "chunk512")
    );
}
