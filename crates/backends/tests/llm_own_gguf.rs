//! A GGUF text model of the user's own: any vocabulary llama.cpp reads, not only the
//! default Gemma-3's SentencePiece. The model is written here by the GGUF format's own
//! Python package (`scripts/gguf_toy_model.py`: one `llama` block, random weights, a
//! byte-level BPE vocabulary and a ChatML template), with reference tokenizations it
//! computes independently of llama.cpp.
#![cfg(feature = "llama")]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use mmsched_backends::llm::{LlmEngine, LlmOptions, LlmSession};
use mmsched_core::time::MonotonicClock;

/// Writes the toy model and its reference into `dir`.
fn toy_model(dir: &Path) -> (PathBuf, serde_json::Value) {
    let python = mmsched_models::cache_dir().join("venv-ort/bin/python");
    assert!(
        python.is_file(),
        "{} is missing: run scripts/setup.sh (it makes the environment with the Python gguf package)",
        python.display()
    );
    let (file, reference) = (dir.join("toy.gguf"), dir.join("toy.json"));
    let made = Command::new(&python)
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../scripts/gguf_toy_model.py"
        ))
        .arg(&file)
        .arg(&reference)
        .output()
        .expect("python runs");
    assert!(
        made.status.success(),
        "gguf_toy_model.py failed (run scripts/setup.sh for the gguf package): {}",
        String::from_utf8_lossy(&made.stderr)
    );
    let text = std::fs::read_to_string(&reference).expect("reference written");
    (
        file,
        serde_json::from_str(&text).expect("reference is JSON"),
    )
}

fn load(file: &Path) -> LlmSession {
    let options = LlmOptions {
        engine: LlmEngine::Llama,
        threads: 1,
        max_seq_len: 128,
        ..LlmOptions::default()
    };
    LlmSession::load(file, options, Arc::new(MonotonicClock::new())).expect("the toy model loads")
}

#[test]
fn a_byte_level_vocabulary_is_read_by_llamas_tokenizer_as_the_reference_splits_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (file, reference) = toy_model(dir.path());
    let s = load(&file);
    let t = s.tokenizer();
    assert_eq!(
        t.vocab_size() as u64,
        reference["vocab"].as_u64().expect("vocab")
    );
    for (text, want) in reference["encodings"].as_object().expect("encodings") {
        let want: Vec<u32> = want
            .as_array()
            .expect("ids")
            .iter()
            .map(|v| v.as_u64().expect("id") as u32)
            .collect();
        assert_eq!(t.encode(text), want, "{text:?}");
        assert_eq!(t.decode(&want), *text);
    }
    // Characters outside ASCII are split into bytes and come back whole.
    let text = "héllo wörld €";
    assert_eq!(t.decode(&t.encode(text)), text);
    // A chat template's turn marker is one special token, and ends no turn.
    let start = reference["specials"]["<|im_start|>"].as_u64().expect("id") as u32;
    let end = reference["specials"]["<|im_end|>"].as_u64().expect("id") as u32;
    assert_eq!(t.encode("<|im_start|>user")[0], start);
    assert!(t.is_stop(end) && !t.is_stop(start));
    let template = s.chat_template().expect("the file carries a template");
    assert!(template.contains("<|im_start|>"), "{template}");
}

#[test]
fn the_model_generates_the_same_greedy_tokens_each_time_with_whole_characters() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (file, _) = toy_model(dir.path());
    let mut s = load(&file);
    let a = s.generate("hello world", 12).expect("generates");
    let b = s.generate("hello world", 12).expect("generates again");
    assert_eq!(a.tokens, b.tokens);
    assert!(!a.tokens.is_empty());
    // Token by token, the texts join into the whole answer's text.
    let first = s.prefill("hello world", 64).expect("prefills");
    let mut joined = first.text.clone();
    let mut stopped = first.stop;
    for _ in 1..a.tokens.len() {
        if stopped {
            break;
        }
        let tok = s.step().expect("steps");
        joined.push_str(&tok.text);
        stopped = tok.stop;
    }
    assert_eq!(joined, s.tokenizer().decode(&a.tokens));
}
