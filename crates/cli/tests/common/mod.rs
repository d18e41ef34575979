//! Helpers the CLI's integration tests share.

use std::process::Command;

/// Runs `mmsched ARGS`, which must succeed, and parses its stdout as one JSON value.
pub fn mmsched(args: &[&str]) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_mmsched"))
        .args(args)
        .output()
        .expect("run mmsched");
    assert!(
        out.status.success(),
        "mmsched {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("valid JSON on stdout")
}
