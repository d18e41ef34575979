//! A scenario's real sources, built for a run: a WAV file (written by sox, an independent
//! tool) plays through the microphone at 16 kHz; a prompts file is asked as written, with
//! each prompt's own token budget; RTP binds its port; a V4L2 camera that cannot be opened
//! is a clear error. No models are needed. The sources start in the past, so everything
//! they hold is due at once: no waiting.

use std::path::Path;
use std::process::Command;

use mmsched_core::time::Clock;
use mmsched_pipeline::inputs::{Device, Inputs};
use mmsched_scenario::Scenario;

fn scenario(dir: &Path, streams: &str) -> Scenario {
    let text = format!("name = \"t\"\n{streams}");
    Scenario::from_toml_in(&text, "t.toml", Some(dir)).expect("valid scenario")
}

/// The error and its causes, as the command line prints them.
fn chain(e: &mmsched_pipeline::RunError) -> String {
    mmsched_runtime::chain::chain(e)
}

fn build(s: &Scenario) -> Result<Inputs, mmsched_pipeline::RunError> {
    let device = Device::new();
    let start = device.now_nanos() - 30_000_000_000;
    Inputs::build(s, &device, start, 1)
}

#[test]
fn a_wav_file_plays_through_the_microphone_at_16_khz() {
    let dir = tempfile::tempdir().expect("tempdir");
    let wav = dir.path().join("tone.wav");
    // 0.5 s of a 1 kHz sine at half scale, 44.1 kHz stereo: resampled and mixed down.
    let made = Command::new("sox")
        .args(["-n", "-r", "44100", "-c", "2", "-b", "16"])
        .arg(&wav)
        .args(["synth", "0.5", "sine", "1000", "vol", "0.5"])
        .status()
        .expect("sox is installed (scripts/setup.sh)");
    assert!(made.success());
    let s = scenario(
        dir.path(),
        "[[streams]]\nname = \"mic\"\nkind = \"audio\"\npacket_ms = 20\nsla_ms = 100\nimportance = 0.5\n\
         source = { kind = \"wav\", path = \"tone.wav\", at_end = \"stop\" }\n",
    );
    let mut inputs = build(&s).expect("builds");
    let (mic, _) = inputs.mic.as_mut().expect("a microphone");
    let mut samples = Vec::new();
    while let Some(a) = mic.poll() {
        assert_eq!(a.event.payload.samples.len(), 320);
        samples.extend(a.event.payload.samples);
    }
    assert_eq!(
        samples.len(),
        25 * 320,
        "0.5 s in 20 ms packets, then the end"
    );
    // Away from the resampler's edges, the RMS of a half-scale sine: 0.5/√2.
    let mid = &samples[800..7200];
    let rms = (mid.iter().map(|v| v * v).sum::<f32>() / mid.len() as f32).sqrt();
    assert!((rms - 0.5 / 2f32.sqrt()).abs() < 0.01, "rms {rms}");
    // 1 kHz at 16 kHz: 16 samples per period, so 2 zero crossings every 16 samples.
    let crossings = mid.windows(2).filter(|w| w[0] < 0.0 && w[1] >= 0.0).count();
    assert!((395..=405).contains(&crossings), "{crossings}");
}

#[test]
fn a_prompts_file_is_asked_as_written_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("prompts.jsonl"),
        "What does the sign say?\n{\"prompt\": \"Name a colour.\", \"max_tokens\": 4}\n",
    )
    .expect("write");
    let s = scenario(
        dir.path(),
        "[[streams]]\nname = \"chat\"\nkind = \"text\"\nrequests_per_min = 60\ntokens_per_request = 24\n\
         sla_ms = 5000\nimportance = 0.5\nsource = { kind = \"prompts\", path = \"prompts.jsonl\", at_end = \"stop\" }\n",
    );
    let mut inputs = build(&s).expect("builds");
    let (text, _) = inputs.text.as_mut().expect("a text source");
    let mut got = Vec::new();
    while let Some(a) = text.poll() {
        got.push(a.event.payload);
    }
    let asked: Vec<(&str, u32, bool)> = got
        .iter()
        .map(|r| (r.prompt.as_str(), r.max_tokens, r.as_written))
        .collect();
    assert_eq!(
        asked,
        [
            ("What does the sign say?", 24, true),
            ("Name a colour.", 4, true)
        ]
    );
}

#[test]
fn rtp_binds_its_port_and_a_camera_device_that_cannot_open_is_explained() {
    let dir = tempfile::tempdir().expect("tempdir");
    let taken = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind");
    let busy = taken.local_addr().expect("addr").port();
    let s = scenario(
        dir.path(),
        &format!(
            "[[streams]]\nname = \"mic\"\nkind = \"audio\"\npacket_ms = 20\nsla_ms = 100\nimportance = 0.5\n\
             source = {{ kind = \"rtp\", port = {busy}, payload_type = 96 }}\n"
        ),
    );
    let e = chain(&build(&s).expect_err("port in use"));
    assert!(
        e.contains(&format!("127.0.0.1:{busy}")) && e.contains("choose a free port"),
        "{e}"
    );
    let port = std::net::UdpSocket::bind("127.0.0.1:0")
        .and_then(|s| s.local_addr())
        .expect("a free port")
        .port();
    let s = scenario(
        dir.path(),
        &format!(
            "[[streams]]\nname = \"mic\"\nkind = \"audio\"\npacket_ms = 20\nsla_ms = 100\nimportance = 0.5\n\
             source = {{ kind = \"rtp\", port = {port}, payload_type = 96 }}\n"
        ),
    );
    let inputs = build(&s).expect("binds");
    assert!(
        inputs
            .notes
            .iter()
            .any(|n| n.contains(&format!("udp://127.0.0.1:{port}"))),
        "{:?}",
        inputs.notes
    );
    let s = scenario(
        dir.path(),
        "[[streams]]\nname = \"cam\"\nkind = \"camera\"\nfps = 5\nsla_ms = 100\nimportance = 0.5\n\
         source = { kind = \"v4l2\", path = \"/nonexistent/video7\" }\n",
    );
    let e = chain(&build(&s).expect_err("no such device"));
    assert!(
        e.contains("stream cam") && e.contains("/nonexistent/video7"),
        "{e}"
    );
    assert!(
        e.contains("--features v4l2") || e.contains("no V4L2 device"),
        "{e}"
    );
}
