//! Signals of mmsched's own, told apart from the machine's: over a window, how much CPU the
//! other programs on the machine took (the **neighbours' CPU share**), and how long
//! mmsched's own threads waited on a run queue while they were runnable (its **own
//! run-queue wait share**), beside the machine's CPU pressure.
//!
//! Why both: a neighbour that takes CPU makes every step of mmsched slower, which the cost
//! model sees as dearer steps; what the health loop must not do is read the lateness that
//! follows as mmsched's own overload and drop work the device could still serve. These
//! figures say which it is, for the summary and `/metrics`, and for a person reading a run.
//!
//! A [`SignalSource`] takes a [`CpuSnapshot`] when asked; [`window`] turns two snapshots
//! into [`PlatformFigures`]. The real source ([`ProcSource`]) reads
//!
//! - `/proc/self/task/*/schedstat`: each thread's on-CPU time and run-queue wait, ns;
//! - `/proc/stat`: the machine's busy and total CPU ticks;
//! - `/proc/pressure/cpu` ([`super::psi`]): the machine's CPU pressure;
//! - for each of the run's own cgroup v2 groups, `cpu.pressure`: its own pressure.
//!
//! A file the kernel does not offer (no PSI, no schedstat, not Linux) makes its figures
//! unknown (`None`), never an error that stops a run; the source says so once
//! ([`SignalSource::take_notes`]). Tests feed figures through their own source.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use mmsched_core::time::Nanos;

use super::procfs::{self, MachineCpu, NANOS_PER_TICK, ProcParseError, SchedStat};
use super::psi::{self, CpuPressure};
use crate::chain::chain;

/// What a source read at one moment. A `None` is a figure the machine does not offer.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CpuSnapshot {
    /// The caller's clock at the reading.
    pub at_nanos: Nanos,
    /// Each of mmsched's threads (by thread id) and its scheduler statistics.
    pub threads: Option<Vec<(u32, SchedStat)>>,
    /// The machine's CPU ticks.
    pub machine: Option<MachineCpu>,
    /// The machine's CPU pressure.
    pub pressure: Option<CpuPressure>,
    /// The highest CPU pressure among the run's own resource groups (cgroup v2 only).
    pub group_pressure: Option<CpuPressure>,
}

/// Where snapshots come from: the kernel ([`ProcSource`]) or a test's figures.
///
/// One method to read, one to hear once what could not be read: the loop that samples
/// knows nothing of files, so a test drives it in virtual time with made-up figures.
pub trait SignalSource: Send {
    /// Reads everything it can at `now_nanos` (the caller's clock).
    fn snapshot(&mut self, now_nanos: Nanos) -> CpuSnapshot;

    /// What could not be read since the last call, each said once per run.
    fn take_notes(&mut self) -> Vec<String> {
        Vec::new()
    }
}

/// The figures of one window between two snapshots; `None` where unknown.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PlatformFigures {
    /// Share of the machine's CPU capacity (every core) that programs other than mmsched
    /// used: machine busy time minus mmsched's own CPU time, over every core's time.
    pub neighbour_cpu_share: Option<f64>,
    /// Share of the machine's CPU capacity mmsched's own threads used.
    pub own_cpu_share: Option<f64>,
    /// Of the time mmsched's threads were runnable (running or waiting for a CPU), the
    /// share they spent waiting on a run queue: for a worker busy the whole window, the
    /// share of its wall time it waited for a CPU.
    pub own_runqueue_wait_share: Option<f64>,
    /// The machine's CPU pressure, `some avg10`, as a fraction in [0, 1].
    pub machine_pressure_some_avg10: Option<f64>,
    /// The highest `some avg10` of mmsched's own resource groups (cgroup v2), in [0, 1].
    pub own_group_pressure_some_avg10: Option<f64>,
}

/// The figures between snapshots `a` and `b` (`b` the later). Thread counters are matched
/// by thread id; a thread started inside the window counts from zero, one that ended
/// inside it is missing from `b` and its last part is lost (an underestimate of mmsched's
/// own time, so an overestimate of the neighbours', by at most that thread's share).
pub fn window(a: &CpuSnapshot, b: &CpuSnapshot) -> PlatformFigures {
    let own = match (&a.threads, &b.threads) {
        (Some(ta), Some(tb)) => Some(thread_deltas(ta, tb)),
        _ => None,
    };
    let capacity_nanos = match (a.machine, b.machine) {
        (Some(ma), Some(mb)) if mb.total_ticks > ma.total_ticks => Some((
            mb.busy_ticks.saturating_sub(ma.busy_ticks) as f64 * NANOS_PER_TICK as f64,
            (mb.total_ticks - ma.total_ticks) as f64 * NANOS_PER_TICK as f64,
        )),
        _ => None,
    };
    let own_cpu_share = own
        .zip(capacity_nanos)
        .map(|((on_cpu, _), (_, total))| (on_cpu / total).clamp(0.0, 1.0));
    let neighbour_cpu_share = own
        .zip(capacity_nanos)
        .map(|((on_cpu, _), (busy, total))| ((busy - on_cpu) / total).clamp(0.0, 1.0));
    let own_runqueue_wait_share = own.map(|(on_cpu, wait)| {
        if on_cpu + wait > 0.0 {
            wait / (on_cpu + wait)
        } else {
            0.0
        }
    });
    PlatformFigures {
        neighbour_cpu_share,
        own_cpu_share,
        own_runqueue_wait_share,
        machine_pressure_some_avg10: b.pressure.map(|p| p.saturation()),
        own_group_pressure_some_avg10: b.group_pressure.map(|p| p.saturation()),
    }
}

/// mmsched's threads' on-CPU and run-queue wait time between two readings, ns.
fn thread_deltas(a: &[(u32, SchedStat)], b: &[(u32, SchedStat)]) -> (f64, f64) {
    let before: HashMap<u32, SchedStat> = a.iter().copied().collect();
    let (mut on_cpu, mut wait) = (0u64, 0u64);
    for (tid, now) in b {
        let was = before.get(tid).copied().unwrap_or_default();
        on_cpu = on_cpu.saturating_add(now.on_cpu_nanos.saturating_sub(was.on_cpu_nanos));
        wait = wait.saturating_add(now.wait_nanos.saturating_sub(was.wait_nanos));
    }
    (on_cpu as f64, wait as f64)
}

/// The kernel's figures for this process: see the module docs.
#[derive(Debug)]
pub struct ProcSource {
    /// `/proc` (another root in tests).
    proc_root: PathBuf,
    /// The run's own resource groups (cgroup v2 directories).
    groups: Vec<PathBuf>,
    /// Which figures were found missing, so each is said once.
    said: Vec<&'static str>,
    notes: Vec<String>,
}

impl ProcSource {
    /// A source reading this process's figures from `/proc`, and the pressure of the
    /// cgroup v2 `groups` given (the run's own; empty without them).
    pub fn new(groups: Vec<PathBuf>) -> Self {
        Self::at("/proc", groups)
    }

    /// The same with another `/proc` root (a directory laid out like it, for tests).
    pub fn at(proc_root: impl Into<PathBuf>, groups: Vec<PathBuf>) -> Self {
        Self {
            proc_root: proc_root.into(),
            groups,
            said: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// Notes `what` is unknown because of `why`, once per run.
    fn missing(&mut self, what: &'static str, why: String) {
        if !self.said.contains(&what) {
            self.said.push(what);
            self.notes.push(format!("{what} unknown: {why}"));
        }
    }

    fn read_threads(&self) -> Result<Vec<(u32, SchedStat)>, ProcReadError> {
        let dir = self.proc_root.join("self/task");
        let entries = std::fs::read_dir(&dir).map_err(|source| ProcReadError::Read {
            path: dir.clone(),
            source,
        })?;
        let mut out = Vec::new();
        for entry in entries.flatten() {
            let Some(tid) = entry
                .file_name()
                .to_str()
                .and_then(|s| s.parse::<u32>().ok())
            else {
                continue;
            };
            let path = entry.path().join("schedstat");
            // A thread may end between the listing and the read: skip it.
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            let s = procfs::parse_schedstat(&text)
                .map_err(|source| ProcReadError::Parse { path, source })?;
            out.push((tid, s));
        }
        if out.is_empty() {
            return Err(ProcReadError::NoThreads { dir });
        }
        Ok(out)
    }

    fn read_machine(&self) -> Result<MachineCpu, ProcReadError> {
        let path = self.proc_root.join("stat");
        let text = std::fs::read_to_string(&path).map_err(|source| ProcReadError::Read {
            path: path.clone(),
            source,
        })?;
        procfs::parse_proc_stat(&text).map_err(|source| ProcReadError::Parse { path, source })
    }

    fn read_group_pressure(&self) -> Option<CpuPressure> {
        self.groups
            .iter()
            .filter_map(|g| psi::read(&g.join("cpu.pressure")).ok())
            .max_by_key(|p| p.some.avg10_centi_pct)
    }
}

/// Why a figure of `/proc` could not be read (kept as a note of the run, once).
#[derive(Debug, thiserror::Error)]
enum ProcReadError {
    #[error("cannot read {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot parse {}", path.display())]
    Parse {
        path: PathBuf,
        #[source]
        source: ProcParseError,
    },
    #[error("no readable schedstat under {} (a kernel without CONFIG_SCHED_INFO)", dir.display())]
    NoThreads { dir: PathBuf },
}

impl SignalSource for ProcSource {
    fn snapshot(&mut self, now_nanos: Nanos) -> CpuSnapshot {
        let threads = self.read_threads();
        let machine = self.read_machine();
        let pressure = psi::read(&self.proc_root.join("pressure/cpu"));
        let snap = CpuSnapshot {
            at_nanos: now_nanos,
            threads: threads.as_ref().ok().cloned(),
            machine: machine.as_ref().ok().copied(),
            pressure: pressure.as_ref().ok().copied(),
            group_pressure: self.read_group_pressure(),
        };
        if let Err(e) = threads {
            self.missing("own run-queue wait and CPU time", chain(&e));
        }
        if let Err(e) = machine {
            self.missing("the neighbours' CPU share", chain(&e));
        }
        if let Err(e) = pressure {
            self.missing("the machine's CPU pressure", chain(&e));
        }
        snap
    }

    fn take_notes(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notes)
    }
}

/// Whether `path` looks like a cgroup v2 group with CPU pressure (for choosing the groups
/// to give [`ProcSource::new`]).
pub fn has_cpu_pressure(path: &Path) -> bool {
    path.join("cpu.pressure").is_file()
}

/// Mean and maximum of each figure over a run's windows (unknown windows left out).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct FigureStats {
    /// Windows with the figure known.
    pub windows: u32,
    /// Their sum (for the mean).
    sum: f64,
    /// The largest.
    pub max: f64,
}

impl FigureStats {
    /// Adds a window's figure, if known.
    pub fn add(&mut self, v: Option<f64>) {
        if let Some(v) = v.filter(|v| v.is_finite()) {
            self.windows += 1;
            self.sum += v;
            self.max = if self.windows == 1 {
                v
            } else {
                self.max.max(v)
            };
        }
    }

    /// The mean, `None` if no window knew the figure.
    pub fn mean(&self) -> Option<f64> {
        (self.windows > 0).then(|| self.sum / f64::from(self.windows))
    }

    /// The maximum, `None` if no window knew the figure.
    pub fn maximum(&self) -> Option<f64> {
        (self.windows > 0).then_some(self.max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn stat(on_cpu: u64, wait: u64) -> SchedStat {
        SchedStat {
            on_cpu_nanos: on_cpu,
            wait_nanos: wait,
            timeslices: 1,
        }
    }

    fn snap(threads: Vec<(u32, SchedStat)>, busy: u64, total: u64) -> CpuSnapshot {
        CpuSnapshot {
            at_nanos: 0,
            threads: Some(threads),
            machine: Some(MachineCpu {
                busy_ticks: busy,
                total_ticks: total,
            }),
            pressure: None,
            group_pressure: None,
        }
    }

    #[test]
    fn a_busy_neighbour_is_the_machines_busy_time_less_mmscheds_own() {
        // 2 cores for 1 s = 200 ticks; the machine was busy 180 of them (1.8 s); mmsched's
        // two threads ran 0.6 s + 0.4 s and waited 0.2 s + 0.3 s.
        let a = snap(vec![(1, stat(0, 0)), (2, stat(0, 0))], 1000, 5000);
        let b = snap(
            vec![(1, stat(600 * MS, 200 * MS)), (2, stat(400 * MS, 300 * MS))],
            1180,
            5200,
        );
        let f = window(&a, &b);
        let close = |x: Option<f64>, want: f64| x.is_some_and(|x| (x - want).abs() < 1e-9);
        assert!(close(f.own_cpu_share, 0.5), "{f:?}");
        assert!(close(f.neighbour_cpu_share, 0.4), "{f:?}");
        assert!(close(f.own_runqueue_wait_share, 0.5 / 1.5), "{f:?}");
        assert_eq!(f.machine_pressure_some_avg10, None);
    }

    #[test]
    fn threads_are_matched_by_id_and_a_new_thread_counts_from_zero() {
        let a = snap(
            vec![(1, stat(100 * MS, 0)), (9, stat(999 * MS, 999 * MS))],
            0,
            0,
        );
        // Thread 9 ended, thread 3 started: 50 ms of thread 1 and 30 ms of thread 3.
        let b = snap(
            vec![(1, stat(150 * MS, 10 * MS)), (3, stat(30 * MS, 0))],
            8,
            100,
        );
        let f = window(&a, &b);
        assert!(
            (f.own_cpu_share.expect("known") - 0.08).abs() < 1e-9,
            "{f:?}"
        );
        assert_eq!(f.neighbour_cpu_share, Some(0.0), "busy time ≤ own: clamped");
        assert!((f.own_runqueue_wait_share.expect("known") - 10.0 / 90.0).abs() < 1e-9);
    }

    #[test]
    fn unknown_inputs_give_unknown_figures_not_errors() {
        let none = CpuSnapshot::default();
        let f = window(&none, &none);
        assert_eq!(f, PlatformFigures::default());
        // The machine's counters did not move: no capacity to divide by.
        let a = snap(vec![(1, stat(0, 0))], 10, 10);
        let f = window(&a, &a);
        assert_eq!(f.neighbour_cpu_share, None);
        assert_eq!(
            f.own_runqueue_wait_share,
            Some(0.0),
            "nothing runnable: no wait"
        );
    }

    #[test]
    fn a_missing_proc_says_so_once_and_keeps_going() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut s = ProcSource::at(dir.path(), Vec::new());
        let first = s.snapshot(0);
        assert_eq!(first.threads, None);
        assert_eq!(first.machine, None);
        let notes = s.take_notes();
        assert_eq!(notes.len(), 3, "{notes:?}");
        assert!(
            notes.iter().any(|n| n.contains("neighbours' CPU share")),
            "{notes:?}"
        );
        s.snapshot(1);
        assert!(s.take_notes().is_empty(), "said once");
    }

    #[test]
    fn reads_a_proc_laid_out_like_the_kernels() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        for (tid, text) in [("10", "500 200 3\n"), ("11", "100 0 1\n")] {
            let t = root.join("self/task").join(tid);
            std::fs::create_dir_all(&t).expect("mkdir");
            std::fs::write(t.join("schedstat"), text).expect("write");
        }
        std::fs::write(root.join("stat"), "cpu  10 0 5 85 0 0 0 0 0 0\n").expect("write");
        std::fs::create_dir_all(root.join("pressure")).expect("mkdir");
        std::fs::write(
            root.join("pressure/cpu"),
            "some avg10=12.50 avg60=0.00 avg300=0.00 total=0\n",
        )
        .expect("write");
        let group = root.join("group");
        std::fs::create_dir_all(&group).expect("mkdir");
        std::fs::write(
            group.join("cpu.pressure"),
            "some avg10=40.00 avg60=0.00 avg300=0.00 total=0\n",
        )
        .expect("write");
        assert!(has_cpu_pressure(&group));
        let mut s = ProcSource::at(root, vec![group]);
        let snap = s.snapshot(7);
        let mut threads = snap.threads.clone().expect("threads");
        threads.sort_by_key(|t| t.0);
        let want = |on_cpu_nanos, wait_nanos, timeslices| SchedStat {
            on_cpu_nanos,
            wait_nanos,
            timeslices,
        };
        assert_eq!(
            threads,
            vec![(10, want(500, 200, 3)), (11, want(100, 0, 1))]
        );
        assert_eq!(snap.machine.map(|m| m.total_ticks), Some(100));
        let f = window(&CpuSnapshot::default(), &snap);
        assert_eq!(f.machine_pressure_some_avg10, Some(0.125));
        assert_eq!(f.own_group_pressure_some_avg10, Some(0.4));
        assert!(s.take_notes().is_empty());
    }

    /// This machine's own `/proc`: every Linux kernel mmsched supports has `/proc/stat`;
    /// schedstat needs `CONFIG_SCHED_INFO`, which some minimal kernels lack.
    #[cfg(target_os = "linux")]
    #[test]
    fn reads_this_machines_proc() {
        let mut s = ProcSource::new(Vec::new());
        let a = s.snapshot(0);
        assert!(a.machine.is_some(), "{:?}", s.take_notes());
        if a.threads.is_none() {
            eprintln!("skipped the schedstat part: {:?}", s.take_notes());
        }
    }

    #[test]
    fn figure_stats_keep_mean_and_max_of_known_windows() {
        let mut s = FigureStats::default();
        assert_eq!(s.mean(), None);
        for v in [Some(0.2), None, Some(0.6), Some(f64::NAN)] {
            s.add(v);
        }
        assert_eq!(s.windows, 2);
        assert!((s.mean().expect("known") - 0.4).abs() < 1e-12);
        assert_eq!(s.maximum(), Some(0.6));
    }
}
