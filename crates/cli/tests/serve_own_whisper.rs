//! `serve --models --model NAME=DIR`: a Whisper of the user's own, as a Hugging Face
//! directory (here the fetched tiny.en's files copied elsewhere, as a user's checkpoint
//! would be), served in place of the default and asked by the official `openai` Python
//! client (`$MMSCHED_HOME/venv-openai`) under the name it was given. The transcript is
//! scored against the recording's published words.

#[path = "support/serving.rs"]
#[allow(dead_code)]
mod serving;
use serving::{run_client, serve, venv_python};

use mmsched_backends::asr::word_error_rate;
use mmsched_models::{Artifact, BECKETT_TRANSCRIPT, require};

const TRANSCRIBE: &str = r#"
import sys, openai
c = openai.OpenAI(base_url=sys.argv[1] + "/v1", api_key="none")
print("models", " ".join(m.id for m in c.models.list()))
with open(sys.argv[2], "rb") as f:
    print("transcript", c.audio.transcriptions.create(model="ears", file=f).text)
try:
    with open(sys.argv[2], "rb") as f:
        c.audio.transcriptions.create(model="whisper-tiny.en", file=f)
    print("default served")
except openai.NotFoundError as e:
    print("default", e.status_code)
"#;

#[test]
fn the_openai_client_transcribes_with_a_whisper_directory_of_the_users_own() {
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
    let wav = require(Artifact::Beckett).unwrap_or_else(|e| panic!("{e}"));
    let server = serve(&["--model", &format!("ears={}", mine.display())]);
    let python = venv_python("venv-openai", "the openai client");
    let out = run_client(
        &python,
        &["-c", TRANSCRIBE, &server.url, wav.to_str().expect("utf-8")],
    );
    let models = out.get("models");
    assert!(models.split(' ').any(|m| m == "ears"), "{models}");
    assert!(!models.contains("whisper-tiny.en"), "{models}");
    let transcript = out.get("transcript");
    let wer = word_error_rate(BECKETT_TRANSCRIPT, &transcript);
    assert!(wer <= 0.09, "WER {wer:.3} for {transcript:?}");
    assert_eq!(out.get("default"), "404", "{}", out.0);
}
