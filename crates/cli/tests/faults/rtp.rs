//! An RTP sender that stops and comes back: the microphone's gap is reported (the frames
//! the jitter buffer had to conceal) and the stream resumes with the sender. Needs the
//! Silero VAD model (`scripts/setup.sh`).

use std::io::{BufRead, BufReader};
use std::net::UdpSocket;
use std::process::Stdio;
use std::time::{Duration, Instant};

use super::{assert_accounted, exit_code, mmsched, scenario, summary, wait_for};

/// 20 ms of 16 kHz L16 audio per packet.
const SAMPLES: usize = 320;

/// Sends packets `seqs` of a 440 Hz tone at their real-time pace (20 ms apart, the first
/// at `start`), each stamped with its place in the stream: a gap in `seqs` is a gap in
/// the stream.
fn send(socket: &UdpSocket, to: &str, seqs: std::ops::Range<u16>, start: Instant) {
    for seq in seqs.clone() {
        let due = start + Duration::from_millis(20 * u64::from(seq - seqs.start));
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        let ts = u32::from(seq) * SAMPLES as u32;
        let mut packet = vec![0x80, 97];
        packet.extend_from_slice(&seq.to_be_bytes());
        packet.extend_from_slice(&ts.to_be_bytes());
        packet.extend_from_slice(&0x3535_u32.to_be_bytes());
        for i in 0..SAMPLES {
            let t = (ts as usize + i) as f32 / 16_000.0;
            let v = (0.3 * (2.0 * std::f32::consts::PI * 440.0 * t).sin() * 32_767.0) as i16;
            packet.extend_from_slice(&v.to_be_bytes());
        }
        // Once the run has ended its port is closed: what is still sent goes nowhere.
        let _ = socket.send_to(&packet, to);
    }
}

/// Two seconds of audio, a two-second silence from the sender (a network outage, a
/// process restarted), then audio again to the end of the run. The run ends at its duration with exit 0; the
/// gap is in the report as concealed frames, and the frames after it are played: the
/// stream resumed.
#[test]
fn an_rtp_sender_that_stops_and_comes_back_is_reported_and_resumes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let port = UdpSocket::bind("127.0.0.1:0")
        .and_then(|s| s.local_addr())
        .expect("a free port")
        .port();
    let file = scenario(
        dir.path(),
        &format!(
            r#"
name = "rtp-gap"
duration_s = 9
[[models]]
name = "vad"
kind = "vad"
[[streams]]
name = "mic"
kind = "audio"
models = ["vad"]
packet_ms = 20
sla_ms = 200
importance = 0.9
source = {{ kind = "rtp", port = {port}, payload_type = 97, sample_rate_hz = 16000 }}
"#
        ),
    );
    let report = dir.path().join("report");
    let mut run = mmsched()
        .args(["run", "--no-platform", "--scenario", &file, "--report"])
        .arg(&report)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starts");
    let mut lines = BufReader::new(run.stderr.take().expect("stderr")).lines();
    let mut seen = Vec::new();
    for line in lines.by_ref() {
        let line = line.expect("utf-8");
        let ready = line.contains("receiving RTP");
        seen.push(line);
        if ready {
            break;
        }
    }
    assert!(seen.iter().any(|l| l.contains("receiving RTP")), "{seen:?}");
    // Drain the rest, so the run never blocks on a full pipe.
    std::thread::spawn(move || lines.for_each(drop));
    let socket = UdpSocket::bind("127.0.0.1:0").expect("a socket");
    let to = format!("127.0.0.1:{port}");
    std::thread::spawn(move || {
        let start = Instant::now();
        send(&socket, &to, 0..100, start);
        // Packets 100..200 are never sent: two seconds of silence from the sender. Then
        // it sends until after the run has ended.
        send(&socket, &to, 200..800, start + Duration::from_secs(4));
    });
    let status = wait_for(&mut run, Duration::from_secs(60), "run");
    assert_eq!(exit_code(status, "run"), 0, "{seen:?}");
    let s = summary(&report);
    assert_accounted(&s);
    let audio = &s["audio"];
    let n = |k: &str| audio[k].as_u64().unwrap_or(0);
    // The 100 packets never sent (a few more if the machine is busy), and no more.
    assert!(
        (100..=115).contains(&n("concealed")),
        "the two-second gap is reported as concealed frames: {audio}"
    );
    // 100 packets before the gap and at least three seconds after it are played.
    assert!(
        n("frames").saturating_sub(n("concealed")) >= 100 + 150,
        "the stream resumed after the gap: {audio}"
    );
    assert!(
        audio["frame_loss_pct"].as_f64().is_some_and(|p| p > 10.0),
        "{audio}"
    );
}
