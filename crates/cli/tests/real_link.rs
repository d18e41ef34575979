//! A real sender and a real receiver on a real link (`scripts/real-link.sh`): ffmpeg sends
//! speech as RTP from one network namespace to `mmsched run --record-rtp` in another, over
//! a veth pair whose sending end is a 1 Mbit/s bottleneck shared with bursts of cross
//! traffic; the recorded trace is then replayed by `mmsched sim jitter --trace --real`.
//! Needs root (network namespaces), iproute2, ffmpeg, espeak-ng, python3 and the model
//! cache (`scripts/setup.sh`); without them the test fails and says what is missing.

use std::path::Path;
use std::process::Command;

fn sim_jitter_json(trace: &Path) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_mmsched"))
        .args(["sim", "jitter", "--real", "--json", "--trace"])
        .arg(trace)
        .output()
        .expect("mmsched runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

#[test]
fn a_trace_recorded_behind_a_real_bottleneck_replays_in_sim_jitter() {
    let dir = tempfile::tempdir().expect("tempdir");
    let trace = dir.path().join("shaped.csv");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/real-link.sh");
    let out = Command::new("bash")
        .arg(&script)
        .arg(&trace)
        .args(["25", "shaped", "7"])
        .env("MMSCHED_BIN", env!("CARGO_BIN_EXE_mmsched"))
        .output()
        .expect("bash runs");
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "scripts/real-link.sh failed (exit {:?}; root and scripts/setup.sh are needed):\n{log}",
        out.status.code()
    );
    let text = std::fs::read_to_string(&trace).expect("trace written");
    let packets = mmsched_world::jitter::parse_trace(&text).expect("the format sim jitter reads");
    // 25 s of 20 ms packets, from the first to the last received.
    assert!(
        (1000..=1300).contains(&packets.len()),
        "{}: {log}",
        packets.len()
    );
    let v = sim_jitter_json(&trace);
    let row = &v["rows"][0];
    assert_eq!(row["real"], true, "{row}");
    assert_eq!(v["simulated"], false, "{v}");
    // The bottleneck queued packets behind the cross traffic: far beyond a clean link's few
    // milliseconds.
    let p99 = row["p99_ms"].as_f64().expect("p99_ms");
    assert!(p99 > 30.0, "P99 {p99} ms: {row}");
    let mos = |b: &str| row[b]["mos"].as_f64().expect("mos");
    // The fixed buffers lose the packets queued behind the bursts; the adaptive one waits
    // for them (on the shipped 300 s trace of this link it gains 1.04 MOS over the best
    // fixed size).
    for b in ["fixed_20", "fixed_40", "fixed_60"] {
        assert!(mos("adaptive") >= mos(b), "{b}: {row}");
    }
    assert!(mos("adaptive") <= mos("ceiling"), "{row}");
}
