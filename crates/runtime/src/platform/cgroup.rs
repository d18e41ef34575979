//! A Linux resource group (cgroup) per scheduler class, written as plain files.
//!
//! Layout: `<process cgroup>/mmsched-<pid>/<class>` in every hierarchy that carries a
//! controller we use. Groups are created *below the cgroup the process already runs in*,
//! so whatever limits the process was started under keep applying to it.
//!
//! Controllers are detected one by one, because hybrid machines are common: a controller
//! is used through cgroup v2 when the unified hierarchy's `cgroup.controllers` lists it,
//! else through its v1 hierarchy (`<root>/cpu`, `<root>/memory`) when that is mounted.
//!
//! | limit | v2 file | v1 file |
//! |---|---|---|
//! | CPU quota | `cpu.max` = `"80000 100000"` | `cpu.cfs_quota_us` / `cpu.cfs_period_us` |
//! | CPU share | `cpu.weight` (1–10000) | `cpu.shares` (weight · 1024 / 100) |
//! | memory | `memory.high` (on `mmsched-<pid>`: the sum of the classes) | `memory.soft_limit_in_bytes`, `memory.limit_in_bytes` |
//! | RT budget | — | `cpu.rt_runtime_us` |
//!
//! Threads are moved in by thread id: `tasks` in v1; in v2 the class groups are *threaded*
//! (`cgroup.type` = `threaded`) and take thread ids in `cgroup.threads`. v2 memory is not a
//! threaded controller, so there the memory limit applies to the whole `mmsched-<pid>`
//! group, which holds the process.
//!
//! Every directory created is removed again by [`CgroupSet::cleanup`], which runs on drop
//! and from the interrupt handler the binary installs ([`exit_on_interrupt`] or its own,
//! calling [`CgroupHandle::cleanup`]). A cgroup can only be removed once no task is left
//! in it, so members are first moved back to the cgroup they came from.
//!
//! The root is injectable ([`CgroupFs::at`]) so tests run the same code against a
//! temporary directory that mimics the cgroup filesystem. There, `mkdir` does not create
//! control files, so the set remembers which files *it* created and removes them before
//! `rmdir`; on the real filesystem that list stays empty.

use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

/// Where cgroup hierarchies are mounted on a standard Linux system.
pub const DEFAULT_ROOT: &str = "/sys/fs/cgroup";

/// Default CFS period, in microseconds (the kernel's default too).
pub const DEFAULT_CPU_PERIOD_MICROS: u64 = 100_000;

/// A cgroup controller that mmsched sets limits with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Controller {
    /// CPU bandwidth and share (and, in v1, the real-time budget).
    Cpu,
    /// Memory limits.
    Memory,
}

impl Controller {
    /// All controllers, in setup order.
    pub const ALL: [Controller; 2] = [Controller::Cpu, Controller::Memory];

    /// The kernel's name of the controller.
    pub fn as_str(self) -> &'static str {
        match self {
            Controller::Cpu => "cpu",
            Controller::Memory => "memory",
        }
    }
}

/// Which cgroup version a controller is used through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Hierarchy {
    /// The legacy per-controller hierarchies.
    V1,
    /// The unified hierarchy.
    V2,
}

/// The limits of one scheduler class (e.g. `vision`, `audio`, `llm`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassLimits {
    name: String,
    /// CPU time allowed per period, in microseconds (`None`: unlimited).
    pub cpu_quota_micros: Option<u64>,
    /// The CFS period, in microseconds (1 000 ..= 1 000 000).
    pub cpu_period_micros: u64,
    /// Relative CPU weight, v2 semantics: 1 ..= 10 000, default 100.
    pub cpu_weight: u32,
    /// Memory above which the class is throttled and reclaimed (`None`: no limit).
    pub memory_high_bytes: Option<u64>,
    /// Hard memory limit (`None`: none). v1 `memory.limit_in_bytes`, v2 `memory.max`.
    pub memory_max_bytes: Option<u64>,
    /// Real-time runtime per second, in microseconds, for classes whose threads run
    /// SCHED_FIFO. On kernels with RT group scheduling a v1 cpu group starts with none, and a
    /// real-time thread can neither enter nor be made real-time in it without this.
    pub rt_runtime_micros: Option<u64>,
}

impl ClassLimits {
    /// A class with no limits (weight 100) named `name`: 1 to 32 characters of
    /// `a-z`, `0-9`, `-`, `_`.
    pub fn new(name: &str) -> Result<Self, CgroupError> {
        let valid = !name.is_empty()
            && name.len() <= 32
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_');
        if !valid {
            return Err(CgroupError::InvalidName {
                name: name.to_string(),
            });
        }
        Ok(Self {
            name: name.to_string(),
            cpu_quota_micros: None,
            cpu_period_micros: DEFAULT_CPU_PERIOD_MICROS,
            cpu_weight: 100,
            memory_high_bytes: None,
            memory_max_bytes: None,
            rt_runtime_micros: None,
        })
    }

    /// The class name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Limits the class to `percent` of one CPU (may exceed 100 for several CPUs).
    pub fn with_cpu_percent(mut self, percent: u32) -> Self {
        self.cpu_quota_micros = Some(self.cpu_period_micros * u64::from(percent) / 100);
        self
    }

    /// Sets the relative CPU weight (clamped to 1 ..= 10 000).
    pub fn with_cpu_weight(mut self, weight: u32) -> Self {
        self.cpu_weight = weight.clamp(1, 10_000);
        self
    }

    /// Sets the memory throttle limit.
    pub fn with_memory_high_bytes(mut self, bytes: u64) -> Self {
        self.memory_high_bytes = Some(bytes);
        self
    }

    /// Gives the class a real-time budget per second (for SCHED_FIFO threads).
    pub fn with_rt_runtime_micros(mut self, micros: u64) -> Self {
        self.rt_runtime_micros = Some(micros);
        self
    }

    /// v1 `cpu.shares` equivalent of the weight (default weight 100 ↔ 1024 shares).
    pub fn cpu_shares(&self) -> u64 {
        (u64::from(self.cpu_weight) * 1024 / 100).max(2)
    }

    /// The v2 `cpu.max` line: `"<quota|max> <period>"`.
    pub fn cpu_max_line(&self) -> String {
        match self.cpu_quota_micros {
            Some(q) => format!("{q} {}", self.cpu_period_micros),
            None => format!("max {}", self.cpu_period_micros),
        }
    }
}

/// The standard scheduler classes: `vision` (80 % of a CPU), `audio` (heavy weight and a
/// real-time budget for its SCHED_FIFO worker) and `llm` (80 % of a CPU, light weight,
/// `memory.high` 1 GiB).
pub fn standard_classes() -> Vec<ClassLimits> {
    let mk = |name: &str| ClassLimits::new(name).expect("built-in class names are valid");
    vec![
        mk("vision").with_cpu_percent(80).with_cpu_weight(100),
        mk("audio")
            .with_cpu_weight(400)
            .with_rt_runtime_micros(100_000),
        mk("llm")
            .with_cpu_percent(80)
            .with_cpu_weight(50)
            .with_memory_high_bytes(1 << 30),
    ]
}

/// Why resource groups could not be set up or changed.
#[derive(Debug, thiserror::Error)]
pub enum CgroupError {
    /// A file operation failed.
    #[error("cannot {action} {}: {source}{hint}", path.display())]
    Io {
        /// What was being done.
        action: &'static str,
        /// On which path.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
        /// What to do about it (may be empty).
        hint: &'static str,
    },
    /// A class name that cannot be a directory name.
    #[error("invalid scheduler class name {name:?}: use 1 to 32 characters of a-z, 0-9, '-', '_'")]
    InvalidName {
        /// The name given.
        name: String,
    },
    /// Two classes share one name.
    #[error("scheduler class {name:?} is listed twice")]
    DuplicateClass {
        /// The repeated name.
        name: String,
    },
    /// A thread was added to a class that was not set up.
    #[error("no resource group for scheduler class {name:?}")]
    UnknownClass {
        /// The class asked for.
        name: String,
    },
    /// The groups were already removed.
    #[error("the resource groups were already removed")]
    Closed,
    /// `/proc/self/cgroup` (or the injected copy) could not be understood.
    #[error("cannot parse {}", path.display())]
    BadProcFile {
        /// The file.
        path: PathBuf,
        /// What was wrong.
        #[source]
        reason: BadMembershipLine,
    },
}

impl CgroupError {
    fn io(action: &'static str, path: &Path, source: io::Error) -> Self {
        let hint = match source.kind() {
            io::ErrorKind::PermissionDenied | io::ErrorKind::ReadOnlyFilesystem => {
                " (resource groups need root or a delegated cgroup; mmsched runs without them)"
            }
            io::ErrorKind::AlreadyExists => {
                " (left over from an earlier run with the same process id: rmdir it)"
            }
            io::ErrorKind::ResourceBusy => {
                " (a cgroup v2 group cannot enable controllers while it holds processes: \
                 start mmsched in its own delegated cgroup, e.g. systemd-run --scope -p Delegate=yes)"
            }
            io::ErrorKind::InvalidInput if action == "move a thread into" => {
                " (a SCHED_FIFO thread needs a real-time budget in its cpu group: give the class rt_runtime_micros)"
            }
            _ => "",
        };
        CgroupError::Io {
            action,
            path: path.to_path_buf(),
            source,
            hint,
        }
    }

    /// Whether the OS refused for lack of permission (EACCES/EPERM) or because the
    /// filesystem is read-only (EROFS): the caller should say so once and run without.
    pub fn is_not_permitted(&self) -> bool {
        match self {
            CgroupError::Io { source, .. } => matches!(
                source.kind(),
                io::ErrorKind::PermissionDenied | io::ErrorKind::ReadOnlyFilesystem
            ),
            _ => false,
        }
    }
}

/// Where one controller lives, and the cgroup the process is in there.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ControllerPlace {
    /// The controller.
    pub controller: Controller,
    /// Through which version it is used.
    pub hierarchy: Hierarchy,
    /// The hierarchy's mount point.
    pub mount: PathBuf,
    /// The process's current cgroup directory in that hierarchy.
    pub base: PathBuf,
}

/// Access to a cgroup filesystem tree: the real one or a directory that mimics it.
#[derive(Debug, Clone)]
pub struct CgroupFs {
    root: PathBuf,
    proc_self_cgroup: Option<PathBuf>,
    pid: u32,
    group_name: Option<String>,
}

impl CgroupFs {
    /// The system's cgroup filesystem at [`DEFAULT_ROOT`], with the process placed by
    /// `/proc/self/cgroup`.
    pub fn system() -> Self {
        Self {
            root: PathBuf::from(DEFAULT_ROOT),
            proc_self_cgroup: Some(PathBuf::from("/proc/self/cgroup")),
            pid: std::process::id(),
            group_name: None,
        }
    }

    /// A cgroup tree rooted at `root`, the process taken to sit at each hierarchy's root
    /// (use [`CgroupFs::with_self_cgroup_file`] to say otherwise).
    pub fn at(root: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into(),
            proc_self_cgroup: None,
            pid: std::process::id(),
            group_name: None,
        }
    }

    /// Reads the process's cgroup membership from `path` (the format of `/proc/self/cgroup`).
    pub fn with_self_cgroup_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.proc_self_cgroup = Some(path.into());
        self
    }

    /// Names the group directory `name` instead of `mmsched-<pid>`.
    pub fn with_group_name(mut self, name: &str) -> Result<Self, CgroupError> {
        ClassLimits::new(name)?;
        self.group_name = Some(name.to_string());
        Ok(self)
    }

    /// The process id written to v2 `cgroup.procs` (tests use a fake one with a mimic tree).
    pub fn with_pid(mut self, pid: u32) -> Self {
        self.pid = pid;
        self
    }

    /// The group directory name: `mmsched-<pid>` unless overridden.
    pub fn group_name(&self) -> String {
        self.group_name
            .clone()
            .unwrap_or_else(|| format!("mmsched-{}", self.pid))
    }

    /// Finds where each controller lives. Controllers found nowhere are left out.
    pub fn detect(&self) -> Result<Vec<ControllerPlace>, CgroupError> {
        let membership = self.read_membership()?;
        // Pure v2 puts the unified hierarchy at the root; hybrid mounts it at `unified`.
        let v2_mount = [self.root.clone(), self.root.join("unified")]
            .into_iter()
            .find(|p| p.join("cgroup.controllers").is_file());
        let v2_controllers: Vec<String> = match &v2_mount {
            Some(m) => read_to_string(&m.join("cgroup.controllers"))?
                .split_whitespace()
                .map(str::to_string)
                .collect(),
            None => Vec::new(),
        };
        let mut places = Vec::new();
        for controller in Controller::ALL {
            let name = controller.as_str();
            if let Some(m) = v2_mount
                .as_ref()
                .filter(|_| v2_controllers.iter().any(|c| c == name))
            {
                let rel = membership.v2.clone().unwrap_or_default();
                places.push(ControllerPlace {
                    controller,
                    hierarchy: Hierarchy::V2,
                    mount: m.clone(),
                    base: join_rel(m, &rel),
                });
                continue;
            }
            let v1_mount = self.root.join(name);
            if v1_mount.join("tasks").is_file() {
                let rel = membership.v1.get(name).cloned().unwrap_or_default();
                places.push(ControllerPlace {
                    controller,
                    hierarchy: Hierarchy::V1,
                    mount: v1_mount.clone(),
                    base: join_rel(&v1_mount, &rel),
                });
            }
        }
        Ok(places)
    }

    fn read_membership(&self) -> Result<Membership, CgroupError> {
        let Some(path) = &self.proc_self_cgroup else {
            return Ok(Membership::default());
        };
        let text = read_to_string(path)?;
        parse_membership(&text).map_err(|reason| CgroupError::BadProcFile {
            path: path.clone(),
            reason,
        })
    }

    /// Creates one resource group per class, with their limits, in every hierarchy that
    /// carries a controller. Nothing is left behind on error.
    pub fn create(&self, classes: &[ClassLimits]) -> Result<CgroupSet, CgroupError> {
        let mut seen = std::collections::BTreeSet::new();
        for c in classes {
            if !seen.insert(c.name()) {
                return Err(CgroupError::DuplicateClass {
                    name: c.name().to_string(),
                });
            }
        }
        let places = self.detect()?;
        let set = CgroupSet {
            inner: Arc::new(Mutex::new(Inner::default())),
            places: places.clone(),
        };
        let group = self.group_name();
        let v1: Vec<&ControllerPlace> = places
            .iter()
            .filter(|p| p.hierarchy == Hierarchy::V1)
            .collect();
        let v2: Vec<&ControllerPlace> = places
            .iter()
            .filter(|p| p.hierarchy == Hierarchy::V2)
            .collect();
        {
            let mut inner = set.lock();
            for place in &v1 {
                create_v1(&mut inner, place, &group, classes)?;
            }
            if let Some(first) = v2.first() {
                let controllers: Vec<Controller> = v2.iter().map(|p| p.controller).collect();
                create_v2(&mut inner, first, &controllers, &group, classes, self.pid)?;
            }
        }
        Ok(set)
    }
}

impl CgroupFs {
    /// Removes the groups that runs killed without cleanup (SIGKILL, a crash) left behind:
    /// `mmsched-<pid>` directories beside where this process's group goes, whose process
    /// `is_running` says is gone and in which no task is left. Returns the directories
    /// removed (say so once); groups that cannot be removed are left alone.
    pub fn remove_stale(&self, is_running: impl Fn(u32) -> bool) -> Vec<PathBuf> {
        let mut removed = Vec::new();
        let Ok(places) = self.detect() else {
            return removed;
        };
        let mut bases: Vec<&PathBuf> = places.iter().map(|p| &p.base).collect();
        bases.sort();
        bases.dedup();
        for base in bases {
            let Ok(entries) = std::fs::read_dir(base) else {
                continue;
            };
            for entry in entries.flatten() {
                let name = entry.file_name();
                let Some(pid) = name
                    .to_str()
                    .and_then(|n| n.strip_prefix("mmsched-"))
                    .and_then(|p| p.parse::<u32>().ok())
                else {
                    continue;
                };
                let dir = entry.path();
                if pid == self.pid || is_running(pid) || !dir.is_dir() || has_tasks(&dir) {
                    continue;
                }
                if remove_group_tree(&dir).is_ok() {
                    removed.push(dir);
                }
            }
        }
        removed
    }
}

/// Whether `/proc/<pid>` exists: the process is running (or a zombie not yet reaped).
pub fn process_exists(pid: u32) -> bool {
    Path::new("/proc").join(pid.to_string()).exists()
}

/// Whether any group at or below `dir` still holds a task.
fn has_tasks(dir: &Path) -> bool {
    let here = ["cgroup.procs", "tasks"]
        .iter()
        .any(|f| std::fs::read_to_string(dir.join(f)).is_ok_and(|t| !t.trim().is_empty()));
    here || std::fs::read_dir(dir).is_ok_and(|es| {
        es.flatten()
            .any(|e| e.path().is_dir() && has_tasks(&e.path()))
    })
}

/// Removes an empty group and its child groups, children first. In a real cgroup tree a
/// directory holds only the kernel's control files and `rmdir` takes it; in a mimic tree
/// the control files are ordinary files, removed first.
fn remove_group_tree(dir: &Path) -> io::Result<()> {
    for entry in std::fs::read_dir(dir)?.flatten() {
        if entry.path().is_dir() {
            remove_group_tree(&entry.path())?;
        }
    }
    match std::fs::remove_dir(dir) {
        Err(e) if e.kind() == io::ErrorKind::DirectoryNotEmpty => {
            for entry in std::fs::read_dir(dir)?.flatten() {
                let _ = std::fs::remove_file(entry.path());
            }
            std::fs::remove_dir(dir)
        }
        other => other,
    }
}

#[derive(Debug, Default)]
struct Membership {
    /// v1 controller name → path relative to its mount.
    v1: BTreeMap<String, String>,
    /// The unified hierarchy path.
    v2: Option<String>,
}

/// A line of `/proc/self/cgroup` that is not `id:controllers:/path`.
#[derive(Debug, thiserror::Error)]
#[error("line {line}: expected `id:controllers:/path`, got {text:?}")]
pub struct BadMembershipLine {
    /// The line number, from 1.
    pub line: usize,
    /// The line.
    pub text: String,
}

/// Parses `/proc/self/cgroup`: lines of `id:controller,list:/path`.
fn parse_membership(text: &str) -> Result<Membership, BadMembershipLine> {
    let mut m = Membership::default();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let mut parts = line.splitn(3, ':');
        let (Some(_id), Some(ctrls), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(BadMembershipLine {
                line: i + 1,
                text: line.to_string(),
            });
        };
        if ctrls.is_empty() {
            m.v2 = Some(path.to_string());
        } else {
            for c in ctrls.split(',') {
                m.v1.insert(c.to_string(), path.to_string());
            }
        }
    }
    Ok(m)
}

fn join_rel(mount: &Path, rel: &str) -> PathBuf {
    let rel = rel.trim_start_matches('/');
    if rel.is_empty() {
        mount.to_path_buf()
    } else {
        mount.join(rel)
    }
}

fn read_to_string(path: &Path) -> Result<String, CgroupError> {
    std::fs::read_to_string(path).map_err(|e| CgroupError::io("read", path, e))
}

fn create_v1(
    inner: &mut Inner,
    place: &ControllerPlace,
    group: &str,
    classes: &[ClassLimits],
) -> Result<(), CgroupError> {
    let group_dir = place.base.join(group);
    inner.mkdir(&group_dir, "tasks", &place.base, "tasks")?;
    let rt_total: u64 = classes.iter().filter_map(|c| c.rt_runtime_micros).sum();
    // Only kernels with RT group scheduling have the file; elsewhere RT needs no budget.
    let rt_groups = place.mount.join("cpu.rt_runtime_us").is_file();
    if place.controller == Controller::Cpu && rt_total > 0 && rt_groups {
        // The parent's real-time budget must cover its children before they ask for theirs.
        inner.write(&group_dir.join("cpu.rt_runtime_us"), &rt_total.to_string())?;
    }
    for class in classes {
        let dir = group_dir.join(class.name());
        inner.mkdir(&dir, "tasks", &place.base, "tasks")?;
        match place.controller {
            Controller::Cpu => {
                inner.write(
                    &dir.join("cpu.cfs_period_us"),
                    &class.cpu_period_micros.to_string(),
                )?;
                let quota = class
                    .cpu_quota_micros
                    .map_or("-1".to_string(), |q| q.to_string());
                inner.write(&dir.join("cpu.cfs_quota_us"), &quota)?;
                inner.write(&dir.join("cpu.shares"), &class.cpu_shares().to_string())?;
                if let Some(rt) = class.rt_runtime_micros.filter(|_| rt_groups) {
                    inner.write(&dir.join("cpu.rt_runtime_us"), &rt.to_string())?;
                }
            }
            Controller::Memory => {
                if let Some(high) = class.memory_high_bytes {
                    inner.write(&dir.join("memory.soft_limit_in_bytes"), &high.to_string())?;
                }
                if let Some(max) = class.memory_max_bytes {
                    inner.write(&dir.join("memory.limit_in_bytes"), &max.to_string())?;
                }
            }
        }
        let entry = inner.classes.entry(class.name().to_string()).or_default();
        entry.cpu_period_micros = class.cpu_period_micros;
        entry.cpu_weight = class.cpu_weight;
        entry.members.push(Member {
            dir,
            file: "tasks",
            controller: Some(place.controller),
        });
    }
    Ok(())
}

fn create_v2(
    inner: &mut Inner,
    place: &ControllerPlace,
    controllers: &[Controller],
    group: &str,
    classes: &[ClassLimits],
    pid: u32,
) -> Result<(), CgroupError> {
    let base = &place.base;
    let enable: Vec<String> = controllers
        .iter()
        .map(|c| format!("+{}", c.as_str()))
        .collect();
    inner.write(&base.join("cgroup.subtree_control"), &enable.join(" "))?;
    let group_dir = base.join(group);
    inner.mkdir(&group_dir, "cgroup.procs", base, "cgroup.procs")?;
    if controllers.contains(&Controller::Memory) {
        // Memory is not a threaded controller: the process-wide group carries the sum of
        // the classes' limits (a class without one adds nothing).
        let high: u64 = classes.iter().filter_map(|c| c.memory_high_bytes).sum();
        if high > 0 {
            inner.write(&group_dir.join("memory.high"), &high.to_string())?;
        }
    }
    // Order matters on a real v2 tree: the process enters the group, the children become
    // threaded (making the group a threaded root, which may hold processes), and only
    // then is the cpu controller enabled for them.
    inner.write(&group_dir.join("cgroup.procs"), &pid.to_string())?;
    for class in classes {
        let dir = group_dir.join(class.name());
        inner.mkdir(&dir, "cgroup.threads", &group_dir, "cgroup.threads")?;
        inner.write(&dir.join("cgroup.type"), "threaded")?;
    }
    if controllers.contains(&Controller::Cpu) {
        inner.write(&group_dir.join("cgroup.subtree_control"), "+cpu")?;
    }
    for class in classes {
        let dir = group_dir.join(class.name());
        if controllers.contains(&Controller::Cpu) {
            inner.write(&dir.join("cpu.max"), &class.cpu_max_line())?;
            inner.write(&dir.join("cpu.weight"), &class.cpu_weight.to_string())?;
        }
        let entry = inner.classes.entry(class.name().to_string()).or_default();
        entry.cpu_period_micros = class.cpu_period_micros;
        entry.cpu_weight = class.cpu_weight;
        entry.members.push(Member {
            dir,
            file: "cgroup.threads",
            controller: None,
        });
    }
    Ok(())
}

/// One directory this set created, with how to empty it.
#[derive(Debug)]
struct Created {
    dir: PathBuf,
    /// File listing its members (`tasks`, `cgroup.threads`, `cgroup.procs`).
    members_file: &'static str,
    /// Where members go back to, and through which file.
    return_dir: PathBuf,
    return_file: &'static str,
}

#[derive(Debug)]
struct Member {
    dir: PathBuf,
    /// File that takes thread ids.
    file: &'static str,
    /// The v1 controller of this directory; `None` for a v2 directory (all controllers).
    controller: Option<Controller>,
}

#[derive(Debug, Default)]
struct ClassEntry {
    members: Vec<Member>,
    cpu_period_micros: u64,
    /// The weight the group was created with.
    cpu_weight: u32,
}

#[derive(Debug, Default)]
struct Inner {
    created: Vec<Created>,
    created_files: Vec<PathBuf>,
    classes: BTreeMap<String, ClassEntry>,
    closed: bool,
}

impl Inner {
    fn mkdir(
        &mut self,
        dir: &Path,
        members_file: &'static str,
        return_dir: &Path,
        return_file: &'static str,
    ) -> Result<(), CgroupError> {
        std::fs::create_dir(dir).map_err(|e| CgroupError::io("create", dir, e))?;
        self.created.push(Created {
            dir: dir.to_path_buf(),
            members_file,
            return_dir: return_dir.to_path_buf(),
            return_file,
        });
        Ok(())
    }

    fn write(&mut self, file: &Path, value: &str) -> Result<(), CgroupError> {
        let existed = file.exists();
        std::fs::write(file, value).map_err(|e| CgroupError::io("write", file, e))?;
        if !existed {
            self.created_files.push(file.to_path_buf());
        }
        Ok(())
    }

    fn class(&self, class: &str) -> Result<&ClassEntry, CgroupError> {
        if self.closed {
            return Err(CgroupError::Closed);
        }
        self.classes
            .get(class)
            .ok_or_else(|| CgroupError::UnknownClass {
                name: class.to_string(),
            })
    }

    fn add_thread(&mut self, class: &str, tid: u32) -> Result<(), CgroupError> {
        let files: Vec<PathBuf> = self
            .class(class)?
            .members
            .iter()
            .map(|m| m.dir.join(m.file))
            .collect();
        for file in files {
            let existed = file.exists();
            std::fs::write(&file, tid.to_string())
                .map_err(|e| CgroupError::io("move a thread into", &file, e))?;
            if !existed {
                self.created_files.push(file);
            }
        }
        Ok(())
    }

    fn set_cpu_weight(&self, class: &str, weight: Option<u32>) -> Result<(), CgroupError> {
        let entry = self.class(class)?;
        let limits = ClassLimits::new(class)?.with_cpu_weight(weight.unwrap_or(entry.cpu_weight));
        for m in &entry.members {
            let (file, line) = match m.controller {
                Some(Controller::Cpu) => {
                    (m.dir.join("cpu.shares"), limits.cpu_shares().to_string())
                }
                Some(Controller::Memory) => continue,
                None => {
                    if !m.dir.join("cpu.weight").exists() {
                        continue;
                    }
                    (m.dir.join("cpu.weight"), limits.cpu_weight.to_string())
                }
            };
            std::fs::write(&file, line).map_err(|e| CgroupError::io("write", &file, e))?;
        }
        Ok(())
    }

    fn set_cpu_quota(&self, class: &str, quota_micros: Option<u64>) -> Result<(), CgroupError> {
        let entry = self.class(class)?;
        for m in &entry.members {
            let (file, line) = match m.controller {
                Some(Controller::Cpu) => (
                    m.dir.join("cpu.cfs_quota_us"),
                    quota_micros.map_or("-1".to_string(), |q| q.to_string()),
                ),
                Some(Controller::Memory) => continue,
                None => {
                    if !m.dir.join("cpu.max").exists() {
                        continue;
                    }
                    let q = quota_micros.map_or("max".to_string(), |q| q.to_string());
                    (
                        m.dir.join("cpu.max"),
                        format!("{q} {}", entry.cpu_period_micros),
                    )
                }
            };
            std::fs::write(&file, line).map_err(|e| CgroupError::io("write", &file, e))?;
        }
        Ok(())
    }

    fn cleanup(&mut self) -> CleanupReport {
        let mut report = CleanupReport::default();
        if self.closed {
            return report;
        }
        self.closed = true;
        // Children were created after their parents: undo in reverse.
        while let Some(c) = self.created.pop() {
            let members = std::fs::read_to_string(c.dir.join(c.members_file)).unwrap_or_default();
            for id in members.split_whitespace() {
                let target = c.return_dir.join(c.return_file);
                if !target.exists() {
                    // Only in a mimic tree: remember the file so the parent can go too.
                    self.created_files.push(target.clone());
                }
                match std::fs::write(&target, id) {
                    Ok(()) => report.tasks_moved += 1,
                    // The thread ended meanwhile: nothing to move.
                    Err(e) if e.raw_os_error() == Some(3) => {}
                    Err(e) => report
                        .errors
                        .push(format!("move {id} to {}: {e}", target.display())),
                }
            }
            let mut removed = std::fs::remove_dir(&c.dir);
            if matches!(&removed, Err(e) if e.kind() == io::ErrorKind::DirectoryNotEmpty) {
                // A mimic tree: control files are ordinary files we wrote.
                for f in self
                    .created_files
                    .iter()
                    .filter(|f| f.parent() == Some(&c.dir))
                {
                    let _ = std::fs::remove_file(f);
                }
                removed = std::fs::remove_dir(&c.dir);
            }
            match removed {
                Ok(()) => report.removed.push(c.dir),
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => report
                    .errors
                    .push(format!("rmdir {}: {e}", c.dir.display())),
            }
        }
        // Files written outside our directories (a mimic tree's parent control files).
        for f in self.created_files.drain(..) {
            let _ = std::fs::remove_file(f);
        }
        self.classes.clear();
        report
    }
}

/// What cleanup did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CleanupReport {
    /// Directories removed, children first.
    pub removed: Vec<PathBuf>,
    /// Threads moved back to the cgroup they came from.
    pub tasks_moved: usize,
    /// What could not be undone (empty when all went well).
    pub errors: Vec<String>,
}

/// The resource groups of one run: removed again on drop.
#[derive(Debug)]
pub struct CgroupSet {
    inner: Arc<Mutex<Inner>>,
    places: Vec<ControllerPlace>,
}

impl CgroupSet {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        lock(&self.inner)
    }

    /// Where each controller in use lives.
    pub fn places(&self) -> &[ControllerPlace] {
        &self.places
    }

    /// The directories of `class`, one per hierarchy (empty after cleanup).
    pub fn class_dirs(&self, class: &str) -> Vec<PathBuf> {
        self.lock()
            .classes
            .get(class)
            .map(|e| e.members.iter().map(|m| m.dir.clone()).collect())
            .unwrap_or_default()
    }

    /// Every directory created, parents first.
    pub fn created_dirs(&self) -> Vec<PathBuf> {
        self.lock().created.iter().map(|c| c.dir.clone()).collect()
    }

    /// Moves the thread `tid` into the groups of `class`.
    pub fn add_thread(&self, class: &str, tid: u32) -> Result<(), CgroupError> {
        self.lock().add_thread(class, tid)
    }

    /// Changes the CPU quota of `class` (`None`: unlimited), e.g. to release a throttle.
    pub fn set_cpu_quota(&self, class: &str, quota_micros: Option<u64>) -> Result<(), CgroupError> {
        self.lock().set_cpu_quota(class, quota_micros)
    }

    /// Changes the CPU weight of `class` (1–10 000, v2 semantics; `None`: back to the
    /// weight it was created with), e.g. while a job at risk of missing its deadline runs.
    pub fn set_cpu_weight(&self, class: &str, weight: Option<u32>) -> Result<(), CgroupError> {
        self.lock().set_cpu_weight(class, weight)
    }

    /// Moves the calling thread into the groups of `class`.
    pub fn add_current_thread(&self, class: &str) -> Result<(), CgroupError> {
        let tid = current_tid()
            .map_err(|e| CgroupError::io("read", Path::new("/proc/thread-self"), e))?;
        self.add_thread(class, tid)
    }

    /// A handle that can change or remove the groups from another thread (an interrupt
    /// handler, the power path).
    pub fn handle(&self) -> CgroupHandle {
        CgroupHandle {
            inner: Arc::clone(&self.inner),
        }
    }

    /// Moves every member back where it came from and removes every directory created.
    /// Runs once; later calls (and drop) do nothing.
    pub fn cleanup(&self) -> CleanupReport {
        self.lock().cleanup()
    }
}

impl Drop for CgroupSet {
    fn drop(&mut self) {
        self.cleanup();
    }
}

/// Changes or removes the groups of a [`CgroupSet`] from any thread, e.g. an interrupt
/// handler or the power path.
#[derive(Debug, Clone)]
pub struct CgroupHandle {
    inner: Arc<Mutex<Inner>>,
}

impl CgroupHandle {
    /// Same as [`CgroupSet::cleanup`].
    pub fn cleanup(&self) -> CleanupReport {
        lock(&self.inner).cleanup()
    }

    /// Same as [`CgroupSet::set_cpu_quota`].
    pub fn set_cpu_quota(&self, class: &str, quota_micros: Option<u64>) -> Result<(), CgroupError> {
        lock(&self.inner).set_cpu_quota(class, quota_micros)
    }

    /// Same as [`CgroupSet::add_thread`].
    pub fn add_thread(&self, class: &str, tid: u32) -> Result<(), CgroupError> {
        lock(&self.inner).add_thread(class, tid)
    }

    /// Same as [`CgroupSet::set_cpu_weight`].
    pub fn set_cpu_weight(&self, class: &str, weight: Option<u32>) -> Result<(), CgroupError> {
        lock(&self.inner).set_cpu_weight(class, weight)
    }
}

fn lock(inner: &Mutex<Inner>) -> MutexGuard<'_, Inner> {
    // A panic while holding the lock leaves the bookkeeping usable: cleanup must still run.
    inner.lock().unwrap_or_else(|p| p.into_inner())
}

/// Installs a Ctrl-C / SIGTERM handler that removes the groups and exits with status 130.
/// For commands with no other interrupt handling; the run loop installs its own handler
/// and calls [`CgroupHandle::cleanup`] from it. A process has one such handler.
pub fn exit_on_interrupt(handle: CgroupHandle) -> Result<(), ctrlc::Error> {
    ctrlc::set_handler(move || {
        handle.cleanup();
        std::process::exit(130);
    })
}

/// The kernel id of the calling thread (what `tasks` and `cgroup.threads` take).
pub fn current_tid() -> io::Result<u32> {
    // `/proc/thread-self` links to `<pid>/task/<tid>`: no unsafe `gettid` needed.
    let link = std::fs::read_link("/proc/thread-self")?;
    link.file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                "unexpected /proc/thread-self link",
            )
        })
}

/// The outcome of trying to set up resource groups, to log once.
#[derive(Debug)]
pub enum CgroupStatus {
    /// Groups are in place.
    Active {
        /// Where each controller in use lives.
        places: Vec<ControllerPlace>,
    },
    /// The OS refused (no permission, read-only filesystem): running without.
    NotPermitted {
        /// The refusal, with the path.
        reason: String,
    },
    /// No cpu or memory controller was found: running without.
    Unavailable {
        /// What was looked for.
        reason: String,
    },
}

impl fmt::Display for CgroupStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CgroupStatus::Active { places } => {
                f.write_str("resource groups active:")?;
                for p in places {
                    let v = match p.hierarchy {
                        Hierarchy::V1 => "v1",
                        Hierarchy::V2 => "v2",
                    };
                    write!(f, " {} ({v}, {})", p.controller.as_str(), p.base.display())?;
                }
                Ok(())
            }
            CgroupStatus::NotPermitted { reason } => {
                write!(
                    f,
                    "resource groups not permitted, running without: {reason}"
                )
            }
            CgroupStatus::Unavailable { reason } => {
                write!(f, "resource groups unavailable, running without: {reason}")
            }
        }
    }
}

/// Sets up the groups if the OS allows: a refusal or a missing controller becomes a status
/// (log it once, run without); other failures are errors.
pub fn setup(
    fs: &CgroupFs,
    classes: &[ClassLimits],
) -> Result<(Option<CgroupSet>, CgroupStatus), CgroupError> {
    match fs.create(classes) {
        Ok(set) if set.places().is_empty() => Ok((
            None,
            CgroupStatus::Unavailable {
                reason: format!("no cpu or memory controller under {}", fs.root.display()),
            },
        )),
        Ok(set) => {
            let places = set.places().to_vec();
            Ok((Some(set), CgroupStatus::Active { places }))
        }
        Err(e) if e.is_not_permitted() => Ok((
            None,
            CgroupStatus::NotPermitted {
                reason: e.to_string(),
            },
        )),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn membership_parses_hybrid_proc_file() {
        let m = parse_membership(
            "9:name=systemd:/\n4:memory:/process_api/ab12\n1:cpu,cpuacct:/x\n0::/user.slice\n",
        )
        .expect("valid file");
        assert_eq!(
            m.v1.get("memory").map(String::as_str),
            Some("/process_api/ab12")
        );
        assert_eq!(m.v1.get("cpu").map(String::as_str), Some("/x"));
        assert_eq!(m.v1.get("cpuacct").map(String::as_str), Some("/x"));
        assert_eq!(m.v2.as_deref(), Some("/user.slice"));
        assert!(parse_membership("garbage line").is_err());
    }

    #[test]
    fn class_names_are_checked() {
        assert!(ClassLimits::new("audio").is_ok());
        for bad in ["", "../etc", "Audio", "a b", &"x".repeat(33)] {
            assert!(
                matches!(ClassLimits::new(bad), Err(CgroupError::InvalidName { .. })),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn limits_translate_between_versions() {
        let c = ClassLimits::new("v")
            .expect("valid")
            .with_cpu_percent(80)
            .with_cpu_weight(400);
        assert_eq!(c.cpu_max_line(), "80000 100000");
        assert_eq!(c.cpu_shares(), 4096);
        let c = ClassLimits::new("v").expect("valid");
        assert_eq!(c.cpu_max_line(), "max 100000");
        assert_eq!(c.cpu_shares(), 1024);
        assert_eq!(c.clone().with_cpu_weight(0).cpu_weight, 1);
    }
}
