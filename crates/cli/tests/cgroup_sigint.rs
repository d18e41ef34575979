//! An interrupted run leaves no resource group behind: `mmsched cgroup-selftest --hold`
//! is stopped with SIGINT while its groups hold threads, and every directory must be gone.
#![cfg(target_os = "linux")]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn spawn(root: Option<&Path>) -> (Child, serde_json::Value) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mmsched"));
    cmd.args(["cgroup-selftest", "--hold", "60", "--json"]);
    if let Some(root) = root {
        cmd.arg("--root").arg(root);
    }
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the mmsched binary starts");
    let stdout = child.stdout.take().expect("piped");
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("reads the first line");
    let first: serde_json::Value = serde_json::from_str(&line)
        .unwrap_or_else(|e| panic!("first line {line:?} is not JSON: {e}"));
    (child, first)
}

fn interrupt_and_wait(child: &mut Child) -> i32 {
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success());
    let start = Instant::now();
    loop {
        if let Some(s) = child.try_wait().expect("waits") {
            return s.code().unwrap_or(-1);
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "no exit after SIGINT"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn dirs(first: &serde_json::Value) -> Vec<PathBuf> {
    first["dirs"]
        .as_array()
        .expect("dirs listed")
        .iter()
        .map(|d| PathBuf::from(d.as_str().expect("string")))
        .collect()
}

fn touch(path: &Path) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("tempdir writable");
    std::fs::write(path, "").expect("tempdir writable");
}

#[test]
fn sigint_on_a_mimic_tree_removes_every_group() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    touch(&root.join("unified/cgroup.controllers"));
    for f in ["tasks", "cpu.cfs_quota_us", "cpu.rt_runtime_us"] {
        touch(&root.join("cpu").join(f));
    }
    touch(&root.join("memory/tasks"));
    let (mut child, first) = spawn(Some(root));
    assert_eq!(first["active"], true, "{first}");
    let created = dirs(&first);
    assert_eq!(created.len(), 8, "{first}");
    assert!(created.iter().all(|d| d.is_dir()));
    assert_eq!(interrupt_and_wait(&mut child), 130);
    for d in created {
        assert!(!d.exists(), "{} left behind", d.display());
    }
}

#[test]
fn sigint_on_the_real_cgroup_filesystem_removes_every_group() {
    let (mut child, first) = spawn(None);
    if first["active"] != true {
        println!("skipped: {}", first["status"]);
        let _ = child.wait();
        return;
    }
    let created = dirs(&first);
    assert!(!created.is_empty());
    assert!(created.iter().all(|d| d.is_dir()));
    // The member threads are in the groups: rmdir only works once they are moved out.
    let audio = created
        .iter()
        .find(|d| d.ends_with("audio"))
        .expect("audio group");
    let members = std::fs::read_to_string(audio.join("tasks"))
        .or_else(|_| std::fs::read_to_string(audio.join("cgroup.threads")))
        .expect("members readable");
    assert!(
        !members.trim().is_empty(),
        "a thread sits in the audio group"
    );
    assert_eq!(interrupt_and_wait(&mut child), 130);
    for d in created {
        assert!(!d.exists(), "{} left behind", d.display());
    }
}
