//! A full disk under the report directory.

use super::{exit_code, mmsched};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A tmpfs of `kib` KiB mounted on a fresh directory, unmounted when dropped (also when
/// the test fails). Mounting needs root, which the test set-up (`scripts/setup.sh`,
/// `.ci/run`) has; without it the test fails, naming why.
struct TinyDisk {
    dir: PathBuf,
    _parent: tempfile::TempDir,
}

impl TinyDisk {
    fn mount(kib: u32) -> TinyDisk {
        let parent = tempfile::tempdir().expect("tempdir");
        let dir = parent.path().join("disk");
        std::fs::create_dir(&dir).expect("mount point");
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={kib}k"), "tmpfs"])
            .arg(&dir)
            .output()
            .expect("mount runs");
        assert!(
            out.status.success(),
            "this test fills a small tmpfs and needs root to mount it (run the tests as root, as .ci/run does): {}",
            String::from_utf8_lossy(&out.stderr)
        );
        TinyDisk {
            dir,
            _parent: parent,
        }
    }

    fn path(&self) -> &Path {
        &self.dir
    }
}

impl Drop for TinyDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.dir).status();
    }
}

/// A run whose report directory fills up: the trace stops being written a second into the
/// run and the report cannot be written at its end. The run still ends at its duration,
/// prints its summary table on standard output before the error, names the directory and
/// the fix, and exits 1 — no panic, no hang, no signal.
#[test]
fn a_full_disk_under_the_report_still_prints_the_table_then_names_the_fix() {
    // Room for the trace's first records, which then fill it within a second.
    let disk = TinyDisk::mount(64);
    let report = disk.path().join("report");
    let out = mmsched()
        .args(["run", "--no-platform", "--duration", "4", "--report"])
        .arg(&report)
        .output()
        .expect("the binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let code = exit_code(out.status, "run on a full disk");
    assert_eq!(
        code, 1,
        "exit 1 on a full disk\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(
        stdout.contains("mmsched run: scenario ar-glasses") && stdout.contains("utility"),
        "the summary table is printed first:\n{stdout}"
    );
    assert!(
        stderr.contains("could not be written to")
            && stderr.contains("pass --report another directory"),
        "the error names the directory and the fix:\n{stderr}"
    );
    assert!(
        stderr.contains("No space left on device"),
        "the cause is the full disk:\n{stderr}"
    );
    assert!(!stderr.contains("panicked"), "no panic:\n{stderr}");
}
