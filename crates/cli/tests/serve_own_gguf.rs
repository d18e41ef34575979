//! `serve --models --model NAME=FILE.gguf`: a GGUF text model of the user's own served in
//! place of the default, driven by the official `openai` Python client
//! (`$MMSCHED_HOME/venv-openai`). The model is written by the GGUF format's own Python
//! package (`scripts/gguf_toy_model.py`: a byte-level BPE vocabulary and a ChatML
//! template), and the chat's prompt is counted against the reference tokenization that
//! script computes of the ChatML text, independently of llama.cpp: the prompt was written
//! with the file's template, special tokens and all. The Triton client then finds the
//! same model over the Open Inference Protocol under the name it was given.

use std::path::Path;
use std::process::Command;

// Only the server of the shared support is needed here, not its inputs.
#[path = "support/serving.rs"]
#[allow(dead_code)]
mod serving;
use serving::{run_client, serve, venv_python};

/// The reference count of tokens of ChatML text: each special token one, the text between
/// them as the script's own tokenizer splits it.
fn reference_tokens(python: &Path, text: &str) -> usize {
    let code = concat!(
        "import sys, re; sys.path.insert(0, sys.argv[1]); import gguf_toy_model as m\n",
        "tokens, _ = m.vocabulary()\n",
        "parts = re.split(r'(<\\|im_start\\|>|<\\|im_end\\|>)', sys.argv[2])\n",
        "print(sum(1 if p in m.SPECIALS else len(m.encode(p, tokens)) for p in parts if p))\n",
    );
    let out = Command::new(python)
        .args([
            "-c",
            code,
            concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts"),
            text,
        ])
        .output()
        .expect("python runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .expect("a count")
}

#[test]
fn the_openai_client_chats_with_a_gguf_of_the_users_own_through_its_template() {
    let dir = tempfile::tempdir().expect("tempdir");
    let gguf_python = venv_python("venv-ort", "the Python gguf package");
    let model = dir.path().join("toy.gguf");
    let model_arg = format!("toy={}", model.display());
    run_client(
        &gguf_python,
        &[
            concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../scripts/gguf_toy_model.py"
            ),
            model.to_str().expect("utf-8"),
            dir.path().join("toy.json").to_str().expect("utf-8"),
        ],
    );
    let server = serve(&["--model", &model_arg]);
    let out = run_client(
        &venv_python("venv-openai", "the openai client"),
        &[
            concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/support/own_gguf_client.py"
            ),
            &server.url,
        ],
    );
    let line = |key: &str| out.get(key);
    let stdout = &out.0;
    let models = line("models");
    assert!(models.split(',').any(|m| m == "toy"), "{models}");
    assert!(!models.contains("gemma"), "{models}");
    assert!(
        ["length", "stop"].contains(&line("chat_finish").as_str()),
        "{stdout}"
    );
    let chatml = "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nhello world<|im_end|>\n<|im_start|>assistant\n";
    let want = reference_tokens(&gguf_python, chatml);
    assert_eq!(line("chat_prompt_tokens"), want.to_string(), "{stdout}");
    assert_eq!(line("chat_same"), "True", "greedy answers repeat: {stdout}");
    assert_eq!(line("default_id"), "404", "{stdout}");
    // The same model over the Open Inference Protocol, with its official client.
    let out = run_client(
        &venv_python("venv-triton", "the tritonclient package"),
        &[
            concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/support/own_gguf_v2_client.py"
            ),
            &server.url,
        ],
    );
    let line = |key: &str| out.get(key);
    let stdout = &out.0;
    assert_eq!(line("v2_name"), "toy", "{stdout}");
    assert_eq!(line("v2_ready"), "True", "{stdout}");
    assert_eq!(line("v2_model"), "toy", "{stdout}");
    assert_eq!(line("v2_text"), "True", "{stdout}");
    assert_eq!(line("v2_default"), "404", "{stdout}");
}
