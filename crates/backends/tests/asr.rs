//! Whisper tiny.en on real speech: the `beckett.wav` clip and a sentence spoken by
//! `espeak-ng` (22.05 kHz, resampled), on both engines: the q8_0 default must transcribe no
//! worse than the float reference. Needs `mmsched models fetch` first.

use std::path::Path;
use std::process::Command;

use mmsched_backends::asr::{
    AsrEngine, AsrOptions, AsrSession, AudioClip, WhisperFiles, read_wav, word_error_rate,
};
use mmsched_backends::{Backend, run_timed};
use mmsched_core::time::MonotonicClock;
use mmsched_models::{Artifact, ModelPaths, require};

/// Tests in this file share one model-sized budget of memory and cores: run them one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn session(engine: AsrEngine) -> AsrSession {
    let files = WhisperFiles::from_cache(&ModelPaths::from_env()).unwrap_or_else(|e| panic!("{e}"));
    let options = AsrOptions { threads: 2, engine };
    AsrSession::load(&files, &options).unwrap_or_else(|e| panic!("Whisper ({engine}) loads: {e}"))
}

/// Word error rates of both engines on `clip`, q8 first, each checked against `bound`.
fn both_engines(clip: &AudioClip, reference: &str, bound: f64) -> [f64; 2] {
    [AsrEngine::Q8, AsrEngine::F32].map(|engine| {
        let mut s = session(engine);
        assert_eq!(s.engine(), engine);
        let text = transcribe(&mut s, clip);
        let wer = word_error_rate(reference, &text);
        eprintln!("{engine}: {text:?} (WER {wer:.3})");
        assert!(wer <= bound, "{engine}: WER {wer:.3} for {text:?}");
        wer
    })
}

fn transcribe(s: &mut AsrSession, clip: &AudioClip) -> String {
    let clock = MonotonicClock::new();
    let (text, timing) = run_timed(s, clip, &clock).expect("transcription");
    assert!(timing.pre_nanos > 0 && timing.exec_nanos > 0);
    text
}

#[test]
fn beckett_clip_is_transcribed_with_low_word_error_rate() {
    let _serial = serial();
    let wav = require(Artifact::Beckett).unwrap_or_else(|e| panic!("{e}"));
    let clip = read_wav(&wav).expect("beckett.wav reads");
    assert_eq!(clip.sample_rate_hz, 16_000);
    let reference = "Ever tried, ever failed. No matter, try again. Fail again. Fail better.";
    // Measured: 0.0 on both engines (exact transcripts). The bound leaves room for one word in 12.
    let [q8, f32] = both_engines(&clip, reference, 0.09);
    assert!(q8 <= f32, "q8 WER {q8:.3} is worse than f32's {f32:.3}");
}

#[test]
fn memory_accounting_follows_the_weights() {
    let _serial = serial();
    let f32 = session(AsrEngine::F32).memory_bytes();
    let q8 = session(AsrEngine::Q8).memory_bytes();
    // 37.8 M float32 parameters; q8: the GGUF plus the float32 embedding table for lookups.
    assert!(f32 > 150_000_000, "{f32}");
    assert!(q8 > 40_000_000 && q8 < f32, "{q8} vs {f32}");
}

#[test]
fn espeak_sentence_at_22khz_is_resampled_and_transcribed() {
    let _serial = serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let wav = dir.path().join("speech.wav");
    let sentence = "Please open the door and turn on the light in the kitchen.";
    let status = Command::new("espeak-ng")
        .args(["-s", "140", "-w"])
        .arg(&wav)
        .arg(sentence)
        .status()
        .unwrap_or_else(|e| {
            panic!("cannot run espeak-ng ({e}): install it with `apt-get install -y espeak-ng`")
        });
    assert!(status.success(), "espeak-ng failed");
    let clip = read_wav(&wav).expect("espeak WAV reads");
    assert_eq!(clip.sample_rate_hz, 22_050, "espeak-ng speaks at 22.05 kHz");
    // Measured: 0.0 on both engines (exact). Synthetic speech is harder for Whisper than
    // real speech, so the bound allows two words in twelve.
    let [q8, f32] = both_engines(&clip, sentence, 0.17);
    assert!(q8 <= f32, "q8 WER {q8:.3} is worse than f32's {f32:.3}");
}

#[test]
fn bad_audio_is_refused_clearly() {
    let _serial = serial();
    let mut s = session(AsrEngine::Q8);
    let empty = AudioClip {
        samples: vec![],
        sample_rate_hz: 16_000,
    };
    let err = s.prepare(&empty).expect_err("empty audio");
    assert!(err.to_string().contains("no samples"), "{err}");
    let nan = AudioClip {
        samples: vec![f32::NAN; 160],
        sample_rate_hz: 16_000,
    };
    assert!(s.prepare(&nan).is_err());
    let zero_rate = AudioClip {
        samples: vec![0.0; 160],
        sample_rate_hz: 0,
    };
    assert!(s.prepare(&zero_rate).is_err());
    let err = read_wav(Path::new("Cargo.toml")).expect_err("not a WAV");
    assert!(err.to_string().contains("not a readable WAV"), "{err}");
}
