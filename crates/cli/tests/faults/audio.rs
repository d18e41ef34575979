//! Audio files with a sample rate no speech model can use (finding 4): refused from the
//! header, before any resampling, by every command that reads WAV files.

use super::{exit_code, output, scenario};

/// A 1 KB WAV declaring 1 Hz (resampled to 16 kHz before any check, it aborted `infer
/// vad` and `run` with a failed allocation).
fn one_hz_wav() -> &'static str {
    concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fuzz/corpus/wav_decode/one-hz.wav"
    )
}

#[test]
fn infer_refuses_a_1_hz_wav_with_a_message() {
    for cmd in ["vad", "asr"] {
        let out = output(&["infer", cmd, "--wav", one_hz_wav()]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(exit_code(out.status, &format!("infer {cmd}")), 1, "{err}");
        assert!(err.contains("sample rate of 1 Hz"), "infer {cmd}: {err}");
        assert!(err.contains("8000 to 192000 Hz"), "infer {cmd}: {err}");
    }
}

#[test]
fn run_refuses_a_1_hz_wav_source_before_it_starts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = scenario(
        dir.path(),
        &format!(
            r#"
name = "one-hz"
duration_s = 2
[[models]]
name = "vad"
kind = "vad"
[[streams]]
name = "mic"
kind = "audio"
models = ["vad"]
sla_ms = 100
importance = 1.0
packet_ms = 20
source = {{ kind = "wav", path = "{}" }}
"#,
            one_hz_wav()
        ),
    );
    let report = dir.path().join("report");
    let out = output(&[
        "run",
        "--no-platform",
        "--scenario",
        &file,
        "--report",
        report.to_str().expect("utf-8"),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(exit_code(out.status, "run"), 1, "{err}");
    assert!(err.contains("sample rate of 1 Hz"), "{err}");
}
