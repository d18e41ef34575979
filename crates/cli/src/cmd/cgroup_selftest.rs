//! `mmsched cgroup-selftest` (hidden): create the per-class resource groups, put one thread
//! in each, hold them, then remove them — or remove them on Ctrl-C / SIGTERM. Used by the
//! tests that check an interrupted run leaves no cgroup behind; handy to check a machine's
//! cgroup setup by hand.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args;
use mmsched_runtime::platform::cgroup::{self, CgroupFs, CgroupStatus, standard_classes};

#[derive(Debug, Args)]
pub struct CgroupSelftestArgs {
    /// Seconds to hold the groups before removing them (Ctrl-C removes them at once).
    #[arg(long, value_name = "SECS", default_value_t = 0)]
    hold: u64,
    /// Use this directory as the cgroup root instead of the system's (/sys/fs/cgroup with
    /// /proc/self/cgroup); the process is then taken to sit at each hierarchy's root.
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
    /// Print one JSON object per line: {"status", "active", "dirs", "stale_removed"} once
    /// the groups are in place, then {"removed", "tasks_moved", "errors"} after cleanup.
    #[arg(long)]
    json: bool,
}

pub fn run(a: CgroupSelftestArgs) -> Result<ExitCode> {
    let fs = match &a.root {
        Some(root) => CgroupFs::at(root),
        None => CgroupFs::system(),
    };
    // Groups of runs that were killed (SIGKILL) and could not clean up.
    let stale: Vec<String> = fs
        .remove_stale(cgroup::process_exists)
        .iter()
        .map(|d| d.display().to_string())
        .collect();
    if !stale.is_empty() && !a.json {
        eprintln!(
            "removed resource groups left by ended runs: {}",
            stale.join(", ")
        );
    }
    let (set, status) = cgroup::setup(&fs, &standard_classes())
        .context("setting up the per-class resource groups")?;
    let active = matches!(status, CgroupStatus::Active { .. });
    let dirs: Vec<String> = set
        .as_ref()
        .map(|s| {
            s.created_dirs()
                .iter()
                .map(|d| d.display().to_string())
                .collect()
        })
        .unwrap_or_default();
    let Some(set) = set else {
        say(
            &a,
            serde_json::json!({"status": status.to_string(), "active": false, "dirs": dirs, "stale_removed": stale}),
        );
        return Ok(ExitCode::SUCCESS);
    };
    cgroup::exit_on_interrupt(set.handle()).context("installing the Ctrl-C handler")?;
    let set = Arc::new(set);
    // One sleeping thread per class, so cleanup has members to move out before rmdir.
    let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
    let stop_rx = Arc::new(std::sync::Mutex::new(stop_rx));
    let mut members = Vec::new();
    for class in standard_classes() {
        let name = class.name().to_string();
        let set = Arc::clone(&set);
        let stop_rx = Arc::clone(&stop_rx);
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        members.push(std::thread::spawn(move || {
            let joined = set.add_current_thread(class.name());
            let _ = ready_tx.send(joined);
            if let Ok(rx) = stop_rx.lock() {
                let _ = rx.recv();
            }
        }));
        ready_rx
            .recv()
            .context("member thread ended early")?
            .with_context(|| format!("moving a thread into class {name}"))?;
    }
    say(
        &a,
        serde_json::json!({"status": status.to_string(), "active": active, "dirs": dirs, "stale_removed": stale}),
    );
    std::thread::sleep(Duration::from_secs(a.hold));
    let report = set.cleanup();
    drop(stop_tx);
    for m in members {
        let _ = m.join();
    }
    let removed: Vec<String> = report
        .removed
        .iter()
        .map(|d| d.display().to_string())
        .collect();
    say(
        &a,
        serde_json::json!({"removed": removed, "tasks_moved": report.tasks_moved, "errors": report.errors}),
    );
    Ok(if report.errors.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn say(a: &CgroupSelftestArgs, value: serde_json::Value) {
    let mut out = std::io::stdout().lock();
    if a.json {
        let _ = writeln!(out, "{value}");
    } else if let Some(status) = value.get("status").and_then(|s| s.as_str()) {
        let _ = writeln!(out, "{status}");
        for d in value["dirs"].as_array().into_iter().flatten() {
            let _ = writeln!(out, "  created {}", d.as_str().unwrap_or_default());
        }
    } else {
        let _ = writeln!(
            out,
            "removed {} directories, moved {} threads back, {} errors",
            value["removed"].as_array().map_or(0, Vec::len),
            value["tasks_moved"],
            value["errors"].as_array().map_or(0, Vec::len)
        );
    }
    let _ = out.flush();
}
