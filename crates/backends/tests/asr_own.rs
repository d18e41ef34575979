//! A Whisper of your own, given as a Hugging Face directory: the fetched tiny.en's files
//! copied elsewhere, as a user's checkpoint would be. Needs `mmsched models fetch` first.

use mmsched_backends::asr::{AsrOptions, AsrSession, own_whisper, read_wav, word_error_rate};
use mmsched_backends::run_timed;
use mmsched_core::time::MonotonicClock;
use mmsched_models::hash::sha256_file;
use mmsched_models::{Artifact, BECKETT_TRANSCRIPT, require};

#[test]
fn a_hugging_face_whisper_directory_of_your_own_transcribes_as_the_default_does() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mine = dir.path().join("my-whisper");
    std::fs::create_dir_all(&mine).expect("mkdir");
    for (artifact, name) in [
        (Artifact::WhisperModel, "model.safetensors"),
        (Artifact::WhisperConfig, "config.json"),
        (Artifact::WhisperTokenizer, "tokenizer.json"),
    ] {
        let from = require(artifact).unwrap_or_else(|e| panic!("{e}"));
        std::fs::copy(&from, mine.join(name)).expect("copy");
    }
    let cache = dir.path().join("cache");
    let files = own_whisper(&mine, &cache).unwrap_or_else(|e| panic!("{e:#?}"));
    // The q8_0 weights made on the spot are the very file `models fetch` makes of the same
    // safetensors (pinned by sha256 there).
    let made = sha256_file(&files.quantized, |_| {}).expect("hash");
    let fetched = require(Artifact::WhisperQ8).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(made, sha256_file(&fetched, |_| {}).expect("hash"));
    // A second load finds them in the cache.
    let again = own_whisper(&mine, &cache).expect("second load");
    assert_eq!(again.quantized, files.quantized);

    let mut asr = AsrSession::load(&files, &AsrOptions::default()).expect("loads");
    let wav = require(Artifact::Beckett).unwrap_or_else(|e| panic!("{e}"));
    let clip = read_wav(&wav).expect("beckett.wav reads");
    let (text, _) = run_timed(&mut asr, &clip, &MonotonicClock::new()).expect("transcribes");
    let wer = word_error_rate(BECKETT_TRANSCRIPT, &text);
    assert!(wer <= 0.09, "WER {wer:.3} for {text:?}");
}
