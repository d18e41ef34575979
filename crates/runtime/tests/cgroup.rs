//! Resource groups against a temporary tree that mimics the cgroup filesystem and against
//! this machine's real cgroup filesystem, which these tests need (Linux, root, as in CI).
#![cfg(target_os = "linux")]

use std::fs;
use std::path::Path;

use mmsched_runtime::platform::cgroup::{
    self, CgroupError, CgroupFs, CgroupStatus, ClassLimits, Controller, Hierarchy, standard_classes,
};

fn touch(path: &Path, content: &str) {
    fs::create_dir_all(path.parent().expect("has parent")).expect("tempdir writable");
    fs::write(path, content).expect("tempdir writable");
}

/// A hybrid machine: v2 mounted at `unified` without cpu/memory, v1 cpu and memory.
fn hybrid_tree(root: &Path) {
    touch(&root.join("unified/cgroup.controllers"), "\n");
    for f in [
        "tasks",
        "cpu.cfs_quota_us",
        "cpu.cfs_period_us",
        "cpu.shares",
        "cpu.rt_runtime_us",
    ] {
        touch(&root.join("cpu").join(f), "");
    }
    for f in ["tasks", "memory.limit_in_bytes"] {
        touch(&root.join("memory/process_api/abc").join(f), "");
    }
    touch(&root.join("memory/tasks"), "");
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn hybrid_v1_tree_gets_per_class_groups_and_is_cleaned_up() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    hybrid_tree(root);
    touch(
        &root.join("self-cgroup"),
        "4:memory:/process_api/abc\n1:cpu,cpuacct:/\n0::/\n",
    );
    let fs_ = CgroupFs::at(root)
        .with_self_cgroup_file(root.join("self-cgroup"))
        .with_pid(4242);
    let places = fs_.detect().expect("detects");
    assert_eq!(places.len(), 2);
    assert!(places.iter().all(|p| p.hierarchy == Hierarchy::V1));
    let mem = places
        .iter()
        .find(|p| p.controller == Controller::Memory)
        .expect("memory");
    assert_eq!(
        mem.base,
        root.join("memory/process_api/abc"),
        "groups nest under the process's cgroup"
    );

    let set = fs_.create(&standard_classes()).expect("creates");
    let group = root.join("cpu/mmsched-4242");
    assert_eq!(read(&group.join("cpu.rt_runtime_us")), "100000");
    assert_eq!(read(&group.join("vision/cpu.cfs_quota_us")), "80000");
    assert_eq!(read(&group.join("vision/cpu.cfs_period_us")), "100000");
    assert_eq!(read(&group.join("audio/cpu.cfs_quota_us")), "-1");
    assert_eq!(read(&group.join("audio/cpu.shares")), "4096");
    assert_eq!(read(&group.join("audio/cpu.rt_runtime_us")), "100000");
    assert_eq!(read(&group.join("llm/cpu.shares")), "512");
    let mgroup = root.join("memory/process_api/abc/mmsched-4242");
    assert_eq!(
        read(&mgroup.join("llm/memory.soft_limit_in_bytes")),
        (1u64 << 30).to_string()
    );

    set.add_thread("audio", 777).expect("moves");
    assert_eq!(read(&group.join("audio/tasks")), "777");
    assert_eq!(read(&mgroup.join("audio/tasks")), "777");
    assert!(matches!(
        set.add_thread("gpu", 1),
        Err(CgroupError::UnknownClass { .. })
    ));

    set.set_cpu_quota("vision", None).expect("lifts");
    assert_eq!(read(&group.join("vision/cpu.cfs_quota_us")), "-1");
    set.set_cpu_weight("vision", Some(400)).expect("raises");
    assert_eq!(read(&group.join("vision/cpu.shares")), "4096");
    set.set_cpu_weight("vision", None).expect("restores");
    assert_eq!(read(&group.join("vision/cpu.shares")), "1024");

    assert_eq!(
        set.class_dirs("audio"),
        vec![group.join("audio"), mgroup.join("audio")]
    );
    let report = set.cleanup();
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    assert_eq!(
        report.removed.len(),
        8,
        "2 hierarchies × (group + 3 classes)"
    );
    assert!(!group.exists() && !mgroup.exists());
    assert_eq!(
        read(&root.join("cpu/tasks")),
        "777",
        "members go back where they came from"
    );
    assert!(matches!(
        set.add_thread("audio", 1),
        Err(CgroupError::Closed)
    ));
    assert!(set.cleanup().removed.is_empty(), "cleanup runs once");
}

#[test]
fn pure_v2_tree_uses_threaded_groups() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    touch(
        &root.join("cgroup.controllers"),
        "cpuset cpu io memory pids\n",
    );
    touch(&root.join("user.slice/cgroup.procs"), "");
    touch(&root.join("self"), "0::/user.slice\n");
    let fs_ = CgroupFs::at(root)
        .with_self_cgroup_file(root.join("self"))
        .with_pid(99);
    let set = fs_.create(&standard_classes()).expect("creates");
    assert!(set.places().iter().all(|p| p.hierarchy == Hierarchy::V2));
    let base = root.join("user.slice");
    let group = base.join("mmsched-99");
    assert_eq!(read(&base.join("cgroup.subtree_control")), "+cpu +memory");
    assert_eq!(read(&group.join("cgroup.procs")), "99");
    assert_eq!(read(&group.join("memory.high")), (1u64 << 30).to_string());
    assert_eq!(read(&group.join("vision/cgroup.type")), "threaded");
    assert_eq!(read(&group.join("vision/cpu.max")), "80000 100000");
    assert_eq!(read(&group.join("audio/cpu.max")), "max 100000");
    assert_eq!(read(&group.join("llm/cpu.weight")), "50");
    set.add_thread("llm", 1234).expect("moves");
    assert_eq!(read(&group.join("llm/cgroup.threads")), "1234");
    set.set_cpu_quota("audio", Some(20_000)).expect("sets");
    assert_eq!(read(&group.join("audio/cpu.max")), "20000 100000");
    set.handle()
        .set_cpu_weight("llm", Some(400))
        .expect("raises");
    assert_eq!(read(&group.join("llm/cpu.weight")), "400");
    set.handle().set_cpu_weight("llm", None).expect("restores");
    assert_eq!(read(&group.join("llm/cpu.weight")), "50");
    drop(set);
    assert!(!group.exists(), "drop removes the groups");
    assert_eq!(
        read(&base.join("cgroup.procs")),
        "99",
        "the process goes back"
    );
    assert!(
        !base.join("cgroup.subtree_control").exists(),
        "files we created are removed"
    );
}

#[test]
fn a_failure_midway_leaves_nothing_behind() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    hybrid_tree(root);
    // A stale group from an earlier run blocks the memory hierarchy only.
    fs::create_dir_all(root.join("memory/mmsched-5")).expect("mkdir");
    let fs_ = CgroupFs::at(root).with_pid(5);
    let err = fs_.create(&standard_classes()).expect_err("stale group");
    assert!(err.to_string().contains("rmdir it"), "{err}");
    assert!(
        !root.join("cpu/mmsched-5").exists(),
        "the cpu groups were undone"
    );
    assert!(!err.is_not_permitted());
}

#[test]
fn duplicate_classes_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let c = ClassLimits::new("a").expect("valid");
    let err = CgroupFs::at(dir.path())
        .create(&[c.clone(), c])
        .expect_err("duplicate");
    assert!(matches!(err, CgroupError::DuplicateClass { .. }));
}

#[test]
fn no_controllers_means_run_without() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (set, status) =
        cgroup::setup(&CgroupFs::at(dir.path()), &standard_classes()).expect("status");
    assert!(set.is_none());
    assert!(
        matches!(status, CgroupStatus::Unavailable { .. }),
        "{status}"
    );
}

/// Whether this process runs as root (effective uid 0).
fn is_root() -> bool {
    fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|ids| ids.split_whitespace().nth(1).map(|e| e == "0"))
        .unwrap_or(false)
}

fn run(cmd: &str, args: &[&str]) {
    let st = std::process::Command::new(cmd)
        .args(args)
        .status()
        .unwrap_or_else(|e| panic!("{cmd}: {e}"));
    assert!(st.success(), "{cmd} {args:?}: {st}");
}

/// A tree the OS refuses to change: for a normal user a directory without write
/// permission; for root, who ignores permissions, a tmpfs remounted read-only (root may
/// mount, as in CI). Either way the refusal must become a status, not an error.
#[test]
fn a_read_only_tree_is_not_permitted_and_runs_without() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let mounted = is_root();
    if mounted {
        let r = root.to_str().expect("utf-8 temp path");
        run("mount", &["-t", "tmpfs", "mmsched-test", r]);
        hybrid_tree(root);
        run("mount", &["-o", "remount,ro", r]);
    } else {
        hybrid_tree(root);
        fs::set_permissions(root.join("cpu"), fs::Permissions::from_mode(0o555)).expect("chmod");
    }
    let outcome = cgroup::setup(&CgroupFs::at(root), &standard_classes());
    if mounted {
        run("umount", &[root.to_str().expect("utf-8 temp path")]);
    }
    let (set, status) = outcome.expect("a refusal is a status");
    assert!(set.is_none());
    assert!(
        matches!(status, CgroupStatus::NotPermitted { .. }),
        "{status}"
    );
    assert!(status.to_string().contains("running without"));
}

/// Groups of a run killed with SIGKILL (a mimic tree): removed at the next start, those of
/// running processes and of this process kept.
#[test]
fn stale_groups_of_ended_processes_are_removed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    hybrid_tree(root);
    for pid in [111, 222] {
        for class in ["audio", "vision"] {
            touch(
                &root.join(format!("cpu/mmsched-{pid}/{class}/cpu.shares")),
                "1024",
            );
            touch(&root.join(format!("cpu/mmsched-{pid}/{class}/tasks")), "");
        }
    }
    touch(&root.join("cpu/mmsched-333/tasks"), "4242\n");
    touch(&root.join("cpu/mmsched-notapid/tasks"), "");
    touch(&root.join("cpu/other-group/tasks"), "");
    let fs_ = CgroupFs::at(root).with_pid(222);
    let removed = fs_.remove_stale(|pid| pid == 4242);
    assert_eq!(removed, vec![root.join("cpu/mmsched-111")]);
    assert!(!root.join("cpu/mmsched-111").exists());
    assert!(
        root.join("cpu/mmsched-222/audio").is_dir(),
        "this process's own"
    );
    assert!(
        root.join("cpu/mmsched-333").is_dir(),
        "a group with a task left"
    );
    assert!(root.join("cpu/mmsched-notapid").is_dir());
    assert!(root.join("cpu/other-group").is_dir());
}

/// The same on this machine's real cgroup filesystem: a group named after a process that
/// has ended is created as a killed run would leave it, then removed.
#[test]
fn stale_groups_are_removed_from_the_real_cgroup_filesystem() {
    let system = CgroupFs::system();
    let places = system
        .detect()
        .unwrap_or_else(|e| panic!("this test needs cgroups (Linux, root, as in CI): {e}"));
    assert!(
        !places.is_empty(),
        "this test needs a cpu or memory cgroup controller (Linux, root, as in CI)"
    );
    let mut child = std::process::Command::new("true")
        .spawn()
        .expect("spawn true");
    let dead = child.id();
    child.wait().expect("true ran");
    let mut made = Vec::new();
    for p in &places {
        let group = p.base.join(format!("mmsched-{dead}"));
        for class in ["audio", "general"] {
            let d = group.join(class);
            fs::create_dir_all(&d).unwrap_or_else(|e| {
                panic!(
                    "this test needs writable cgroups (root, as in CI): {}: {e}",
                    d.display()
                )
            });
        }
        made.push(group);
    }
    let removed = system.remove_stale(cgroup::process_exists);
    for g in &made {
        assert!(
            removed.contains(g),
            "{} not removed: {removed:?}",
            g.display()
        );
        assert!(!g.exists(), "{} left behind", g.display());
    }
}

/// The real cgroup filesystem of this machine (CI runs as root with cgroups; a machine
/// without them fails here rather than passing untested).
#[test]
fn real_cgroup_filesystem_round_trip() {
    let fs_ = CgroupFs::system()
        .with_group_name(&format!("mmsched-test-{}", std::process::id()))
        .expect("valid name");
    let classes = vec![
        ClassLimits::new("vision")
            .expect("valid")
            .with_cpu_percent(80),
        ClassLimits::new("audio")
            .expect("valid")
            .with_cpu_weight(400)
            .with_rt_runtime_micros(50_000),
    ];
    let (set, status) = match cgroup::setup(&fs_, &classes) {
        Ok((Some(set), status)) => (set, status),
        Ok((None, status)) => {
            panic!("this test needs writable cgroups (Linux, root, as in CI): {status}")
        }
        Err(e) => panic!("unexpected error on the real cgroup filesystem: {e}"),
    };
    println!("{status}");
    let dirs = set.created_dirs();
    assert!(dirs.iter().all(|d| d.is_dir()));
    let vision_dirs = set.class_dirs("vision");
    for d in &vision_dirs {
        if d.join("cpu.cfs_quota_us").exists() {
            assert_eq!(read(&d.join("cpu.cfs_quota_us")).trim(), "80000");
        }
        if d.join("cpu.max").exists() {
            assert_eq!(read(&d.join("cpu.max")).trim(), "80000 100000");
        }
    }
    // A real thread moves in, is listed by the kernel, and is moved out again on cleanup.
    let set = std::sync::Arc::new(set);
    let s2 = std::sync::Arc::clone(&set);
    let (tx, rx) = std::sync::mpsc::channel();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let worker = std::thread::spawn(move || {
        s2.add_current_thread("vision").expect("thread moves in");
        let tid = cgroup::current_tid().expect("tid");
        let mine = read(Path::new("/proc/thread-self/cgroup"));
        tx.send((tid, mine)).expect("send");
        done_rx.recv().expect("wait");
        read(Path::new("/proc/thread-self/cgroup"))
    });
    let (tid, membership) = rx.recv().expect("worker reports");
    let group_name = format!("mmsched-test-{}", std::process::id());
    assert!(
        membership.contains(&format!("{group_name}/vision")),
        "{membership}"
    );
    for d in &vision_dirs {
        let members = read(&d.join(if d.join("tasks").exists() {
            "tasks"
        } else {
            "cgroup.threads"
        }));
        assert!(
            members.split_whitespace().any(|t| t == tid.to_string()),
            "{members}"
        );
    }
    let report = set.cleanup();
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    assert!(report.tasks_moved >= 1);
    done_tx.send(()).expect("send");
    let after = worker.join().expect("worker ran");
    assert!(!after.contains(&group_name), "{after}");
    for d in dirs {
        assert!(!d.exists(), "{} left behind", d.display());
    }
}
