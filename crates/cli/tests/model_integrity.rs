//! Corrupt model files are refused before they load. Each test builds a model cache of its
//! own (MMSCHED_HOME in a temporary directory) that links to the real cached files, with
//! Gemma's GGUF replaced by a copy that has 64 bytes flipped in the middle; the shared
//! cache is never written. Needs the models (`scripts/setup.sh` fetches them).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use mmsched_models::{Artifact, ModelPaths};

/// A cache whose files link to the real ones, except Gemma's, which is a copy changed by
/// `change` (`None`: linked too).
fn cache_with_gemma(change: Option<fn(&mut [u8])>) -> tempfile::TempDir {
    let real = ModelPaths::from_env();
    let dir = tempfile::tempdir().expect("tempdir");
    let mine = ModelPaths::new(dir.path());
    for a in Artifact::ALL {
        let src = real.cached(a);
        if a.optional() && !src.exists() {
            continue;
        }
        assert!(
            src.is_file(),
            "{} is missing: run scripts/setup.sh (it fetches the models)",
            src.display()
        );
        let dst = mine.cached(a);
        std::fs::create_dir_all(dst.parent().expect("parent")).expect("mkdir");
        match (a, change) {
            (Artifact::Gemma3, Some(change)) => {
                let mut bytes = std::fs::read(&src).expect("read gemma");
                change(&mut bytes);
                std::fs::write(&dst, bytes).expect("write the copy");
            }
            _ => std::os::unix::fs::symlink(&src, &dst).expect("link"),
        }
    }
    dir
}

fn flip_64_bytes_in_the_middle(bytes: &mut [u8]) {
    let mid = bytes.len() / 2;
    for b in &mut bytes[mid..mid + 64] {
        *b ^= 0xff;
    }
}

fn mmsched(home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mmsched"))
        .args(args)
        .env("MMSCHED_HOME", home)
        .env_remove("MMSCHED_MODEL_GEMMA3_270M")
        .output()
        .expect("runs")
}

fn assert_refused_as_corrupt(out: &Output) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "a corrupt model was used: {err}");
    assert!(
        err.contains("gemma-3-270m-q4_k_m.gguf is corrupt"),
        "the error names the file: {err}"
    );
    assert!(
        err.contains("mmsched models fetch --only gemma3-270m"),
        "the error names the fix: {err}"
    );
}

#[test]
fn infer_llm_refuses_a_corrupt_gguf_and_names_the_fix() {
    let home = cache_with_gemma(Some(flip_64_bytes_in_the_middle));
    let out = mmsched(
        home.path(),
        &["infer", "llm", "--prompt", "The", "--max-tokens", "2"],
    );
    assert_refused_as_corrupt(&out);
}

#[test]
fn run_refuses_a_corrupt_gguf_and_names_the_fix() {
    let home = cache_with_gemma(Some(flip_64_bytes_in_the_middle));
    let report = home.path().join("report");
    let out = mmsched(
        home.path(),
        &[
            "run",
            "--duration",
            "2",
            "--no-platform",
            "--report",
            report.to_str().expect("utf-8"),
        ],
    );
    assert_refused_as_corrupt(&out);
}

#[test]
fn an_intact_model_is_verified_once_and_the_verdict_remembered() {
    let home = cache_with_gemma(None);
    let out = mmsched(
        home.path(),
        &["infer", "llm", "--prompt", "The", "--max-tokens", "1"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let verdict: PathBuf = home.path().join("verified/gemma3-270m.json");
    let text = std::fs::read_to_string(&verdict).expect("the verdict is remembered");
    assert!(text.contains(Artifact::Gemma3.sha256()), "{text}");
}

#[test]
fn a_users_own_malformed_gguf_fails_in_one_line_even_with_rust_backtrace() {
    let dir = tempfile::tempdir().expect("tempdir");
    let own = dir.path().join("mine.gguf");
    std::fs::write(&own, b"GGUF\x03\x00\x00\x00 this header is cut short").expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_mmsched"))
        .args(["infer", "llm", "--prompt", "The", "--max-tokens", "1"])
        .env(Artifact::Gemma3.override_var(), &own)
        .env("RUST_BACKTRACE", "1")
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("mine.gguf"), "{err}");
    assert!(err.contains("not a GGUF file"), "{err}");
    assert!(
        err.lines().count() <= 2,
        "an error is a line or two, not a backtrace: {err}"
    );
}

#[test]
fn max_tokens_beyond_the_context_is_refused_before_loading() {
    let out = Command::new(env!("CARGO_BIN_EXE_mmsched"))
        .args(["infer", "llm", "--prompt", "The", "--max-tokens", "100000"])
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("--max-tokens 100000"), "{err}");
    assert!(err.contains("context of 4096 tokens"), "{err}");
}
