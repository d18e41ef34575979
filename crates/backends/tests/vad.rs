//! Silero VAD on speech synthesised by espeak-ng against digital silence and low noise.

mod common;

use mmsched_backends::audio::{SAMPLE_RATE_HZ, read_wav_16k};
use mmsched_backends::vad::{CHUNK_SAMPLES, SegmentParams, SileroVad, VadConfig, speech_segments};
use mmsched_backends::{Backend, run_timed};
use mmsched_core::time::MonotonicClock;

/// One second of silence, the spoken sentence, one second of low noise.
fn speech_between_silence_and_noise() -> (Vec<f32>, usize, usize) {
    let dir = tempfile::tempdir().expect("tempdir");
    let wav = common::espeak(
        dir.path(),
        "speech",
        "The quick brown fox jumps over the lazy dog",
    );
    let speech = read_wav_16k(&wav).expect("espeak wav reads");
    assert_eq!(
        speech.source_rate_hz, 22_050,
        "espeak-ng speaks at 22.05 kHz"
    );
    let second = SAMPLE_RATE_HZ as usize;
    let mut samples = vec![0.0f32; second];
    let start = samples.len();
    samples.extend_from_slice(&speech.samples);
    let end = samples.len();
    let mut state = 12345u32;
    samples.extend((0..second).map(|_| {
        state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        (state >> 8) as f32 / (1u32 << 24) as f32 * 0.004 - 0.002
    }));
    (samples, start / CHUNK_SAMPLES, end / CHUNK_SAMPLES)
}

#[test]
fn separates_speech_from_silence_and_noise() {
    common::require_models();
    let (samples, speech_start, speech_end) = speech_between_silence_and_noise();
    let mut vad = SileroVad::new(VadConfig::default()).expect("VAD loads");
    let probs = vad.probabilities(&samples).expect("VAD runs");
    assert_eq!(probs.len(), samples.len().div_ceil(CHUNK_SAMPLES));
    let speech = &probs[speech_start..speech_end];
    let silence: Vec<f32> = probs[..speech_start - 1]
        .iter()
        .chain(&probs[speech_end + 12..])
        .copied()
        .collect();
    let speech_frac = speech.iter().filter(|&&p| p >= 0.5).count() as f32 / speech.len() as f32;
    let silence_max = silence.iter().copied().fold(0.0f32, f32::max);
    assert!(
        speech_frac > 0.6,
        "only {speech_frac} of speech chunks detected: {speech:?}"
    );
    assert!(silence_max < 0.3, "silence/noise reached {silence_max}");
    let segments = speech_segments(&probs, &SegmentParams::default());
    assert!(!segments.is_empty());
    for s in &segments {
        assert!(
            s.start_chunk + 2 >= speech_start && s.end_chunk <= speech_end + 12,
            "segment {s:?} outside speech {speech_start}..{speech_end}"
        );
    }
}

#[test]
fn state_is_carried_and_reset() {
    common::require_models();
    let (samples, _, _) = speech_between_silence_and_noise();
    let mut vad = SileroVad::new(VadConfig::default()).expect("VAD loads");
    let first = vad.probabilities(&samples).expect("runs");
    vad.reset();
    let again = vad.probabilities(&samples).expect("runs");
    assert_eq!(
        first, again,
        "same stream after reset gives the same probabilities"
    );
    // Without a reset the state carries over, so a chunk's result depends on history.
    let clock = MonotonicClock::new();
    let chunk = samples[20_000..20_000 + CHUNK_SAMPLES].to_vec();
    vad.reset();
    let (fresh, _) = run_timed(&mut vad, &chunk, &clock).expect("runs");
    let (carried, _) = run_timed(&mut vad, &chunk, &clock).expect("runs");
    assert_ne!(fresh, carried);
}

#[test]
fn wrong_chunk_length_is_refused() {
    common::require_models();
    let mut vad = SileroVad::new(VadConfig::default()).expect("VAD loads");
    let err = vad.prepare(&vec![0.0; 100]).expect_err("must fail");
    assert!(err.to_string().contains("512 samples"), "{err}");
}
