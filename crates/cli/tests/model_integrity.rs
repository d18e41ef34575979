//! Corrupt model files are refused before they load, by every command that loads them.
//! Each test builds a model cache of its own (MMSCHED_HOME in a temporary directory) that
//! links to the real cached files, with the file under test replaced by a copy that has 64
//! bytes flipped in the middle; the shared cache is never written. Needs the models
//! (`scripts/setup.sh` fetches them).

use std::path::Path;
use std::process::{Command, Output};

use mmsched_models::{Artifact, ModelPaths};

/// A cache whose files link to the real ones, except `changed`, which is a copy with 64
/// bytes flipped in the middle.
fn cache_with_corrupt(changed: Option<Artifact>) -> tempfile::TempDir {
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
        if changed == Some(a) {
            let mut bytes = std::fs::read(&src).expect("read the model");
            flip_64_bytes_in_the_middle(&mut bytes);
            std::fs::write(&dst, bytes).expect("write the copy");
        } else {
            std::os::unix::fs::symlink(&src, &dst).expect("link");
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

/// The command failed, naming the corrupt file and the command that fetches it again.
fn assert_refused_as_corrupt(out: &Output, artifact: Artifact) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "a corrupt model was used: {err}");
    assert_eq!(out.status.code(), Some(1), "{err}");
    let file = Path::new(artifact.relative_path())
        .file_name()
        .expect("a file name")
        .to_string_lossy()
        .into_owned();
    assert!(
        err.contains(&format!("{file} is corrupt")),
        "the error names the file: {err}"
    );
    assert!(
        err.contains(&format!("mmsched models fetch --only {}", artifact.name())),
        "the error names the fix: {err}"
    );
}

/// A white PNG with text on it, rendered by ffmpeg (scripts/setup.sh installs it).
fn sign(dir: &Path) -> String {
    let path = dir.join("sign.png");
    let ok = Command::new("ffmpeg")
        .args(["-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i"])
        .arg("color=c=white:s=320x96")
        .arg("-vf")
        .arg("drawtext=fontfile=/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf:text='EXIT 12':fontsize=48:fontcolor=black:x=20:y=20")
        .args(["-frames:v", "1"])
        .arg(&path)
        .status()
        .expect("ffmpeg runs (scripts/setup.sh installs it)");
    assert!(ok.success());
    path.to_str().expect("utf-8").to_string()
}

#[test]
fn infer_llm_refuses_a_corrupt_gguf_and_names_the_fix() {
    let home = cache_with_corrupt(Some(Artifact::Gemma3));
    let out = mmsched(
        home.path(),
        &["infer", "llm", "--prompt", "The", "--max-tokens", "2"],
    );
    assert_refused_as_corrupt(&out, Artifact::Gemma3);
}

#[test]
fn run_refuses_a_corrupt_gguf_and_names_the_fix() {
    let home = cache_with_corrupt(Some(Artifact::Gemma3));
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
    assert_refused_as_corrupt(&out, Artifact::Gemma3);
}

/// Finding 2: `infer ocr` read `1` for `EXIT 12` with a flipped detector or recogniser.
#[test]
fn infer_ocr_refuses_a_corrupt_detector_or_recogniser() {
    for (artifact, engine) in [
        (Artifact::PpocrDet, "tract"),
        (Artifact::PpocrRec, "tract"),
        (Artifact::PpocrDet, "ort"),
    ] {
        let home = cache_with_corrupt(Some(artifact));
        let image = sign(home.path());
        let out = mmsched(
            home.path(),
            &["infer", "ocr", "--engine", engine, "--image", &image],
        );
        assert_refused_as_corrupt(&out, artifact);
    }
}

/// Finding 2: the q8_0 GGUF the default Whisper engine runs was checked nowhere.
#[test]
fn infer_asr_and_serve_refuse_a_corrupt_whisper_gguf() {
    let home = cache_with_corrupt(Some(Artifact::WhisperQ8));
    let wav = ModelPaths::from_env().cached(Artifact::Beckett);
    let out = mmsched(
        home.path(),
        &["infer", "asr", "--wav", wav.to_str().expect("utf-8")],
    );
    assert_refused_as_corrupt(&out, Artifact::WhisperQ8);
    let report = home.path().join("report");
    let out = mmsched(
        home.path(),
        &[
            "serve",
            "--models",
            "--addr",
            "127.0.0.1:0",
            "--report",
            report.to_str().expect("utf-8"),
        ],
    );
    assert_refused_as_corrupt(&out, Artifact::WhisperQ8);
}

/// Finding 2: the voice-activity model was not checked by `infer vad`.
#[test]
fn infer_vad_refuses_a_corrupt_silero_model() {
    let home = cache_with_corrupt(Some(Artifact::SileroVadOpenvino16k));
    let wav = ModelPaths::from_env().cached(Artifact::Beckett);
    let out = mmsched(
        home.path(),
        &["infer", "vad", "--wav", wav.to_str().expect("utf-8")],
    );
    assert_refused_as_corrupt(&out, Artifact::SileroVadOpenvino16k);
}

/// Finding 2: bit rot changes neither a file's size nor its time, so a verdict remembered
/// by size and time let a file that verified once load after it rotted.
#[test]
fn bit_rot_under_the_same_size_and_time_is_caught_at_the_next_start() {
    let home = cache_with_corrupt(None);
    let image = sign(home.path());
    let args = ["infer", "ocr", "--engine", "tract", "--image", &image];
    let first = mmsched(home.path(), &args);
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    assert!(
        String::from_utf8_lossy(&first.stdout).contains("EXIT 12"),
        "the intact model reads the sign: {}",
        String::from_utf8_lossy(&first.stdout)
    );
    // The detector rots in place: same size, same modification time.
    let det = ModelPaths::new(home.path()).cached(Artifact::PpocrDet);
    let real = std::fs::canonicalize(&det).expect("the link resolves");
    let mtime = std::fs::metadata(&real)
        .and_then(|m| m.modified())
        .expect("mtime");
    let mut bytes = std::fs::read(&real).expect("read");
    flip_64_bytes_in_the_middle(&mut bytes);
    std::fs::remove_file(&det).expect("unlink");
    std::fs::write(&det, &bytes).expect("write");
    let f = std::fs::File::options()
        .write(true)
        .open(&det)
        .expect("open");
    f.set_modified(mtime).expect("keep the time");
    drop(f);
    assert_eq!(
        std::fs::metadata(&det).expect("meta").len(),
        std::fs::metadata(&real).expect("meta").len()
    );
    let second = mmsched(home.path(), &args);
    assert_refused_as_corrupt(&second, Artifact::PpocrDet);
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
