//! An interrupted run leaves no resource group behind: `mmsched cgroup-selftest --hold`
//! is stopped with SIGINT while its groups hold threads, and every directory must be gone;
//! one killed with SIGKILL (no chance to clean up) has its groups removed by the next start.
//! The real-filesystem tests need cgroups (Linux, root, as in CI) and fail without them.
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

/// A cgroup hierarchy under `root` as the mimic mode reads it: v2 unified plus v1 cpu and
/// memory controllers.
fn mimic_tree(root: &Path) {
    touch(&root.join("unified/cgroup.controllers"));
    for f in ["tasks", "cpu.cfs_quota_us", "cpu.rt_runtime_us"] {
        touch(&root.join("cpu").join(f));
    }
    touch(&root.join("memory/tasks"));
}

#[test]
fn sigint_on_a_mimic_tree_removes_every_group() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    mimic_tree(root);
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
        let _ = child.wait();
        panic!(
            "this test needs writable cgroups (Linux, root, as in CI): {}",
            first["status"]
        );
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

/// SIGKILL leaves the groups; the next start removes them and says so.
#[test]
fn groups_left_by_sigkill_are_removed_at_the_next_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    mimic_tree(root);
    let (mut killed, first) = spawn(Some(root));
    let left = dirs(&first);
    killed.kill().expect("SIGKILL");
    killed.wait().expect("reaped");
    assert!(left.iter().all(|d| d.is_dir()), "SIGKILL leaves the groups");
    // In a mimic tree the killed threads are still listed in the class `tasks` files
    // (no kernel removes them): empty them as the kernel does when a process dies.
    for d in &left {
        let tasks = d.join("tasks");
        if tasks.exists() {
            std::fs::write(&tasks, "").expect("tempdir writable");
        }
    }
    let (mut next, first) = spawn(Some(root));
    let stale: Vec<PathBuf> = first["stale_removed"]
        .as_array()
        .expect("stale_removed listed")
        .iter()
        .map(|d| PathBuf::from(d.as_str().expect("string")))
        .collect();
    assert_eq!(interrupt_and_wait(&mut next), 130);
    let groups: Vec<&PathBuf> = left
        .iter()
        .filter(|d| {
            d.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("mmsched-"))
        })
        .collect();
    assert!(!groups.is_empty(), "{left:?}");
    for g in groups {
        assert!(stale.contains(g), "{} not reported: {stale:?}", g.display());
        assert!(!g.exists(), "{} left behind", g.display());
    }
}

/// The same with the real cgroup filesystem: the kernel empties the groups of a killed
/// process, and the next start removes them.
#[test]
fn groups_left_by_sigkill_on_the_real_cgroup_filesystem_are_removed_at_the_next_start() {
    let (mut killed, first) = spawn(None);
    assert_eq!(
        first["active"], true,
        "this test needs writable cgroups (Linux, root, as in CI): {first}"
    );
    let left = dirs(&first);
    killed.kill().expect("SIGKILL");
    killed.wait().expect("reaped");
    assert!(left.iter().all(|d| d.is_dir()), "SIGKILL leaves the groups");
    let (mut next, first) = spawn(None);
    let stale = first["stale_removed"].to_string();
    assert_eq!(interrupt_and_wait(&mut next), 130);
    for d in &left {
        assert!(!d.exists(), "{} left behind", d.display());
    }
    let group = format!("mmsched-{}", killed.id());
    assert!(stale.contains(&group), "{group} not reported: {stale}");
}
