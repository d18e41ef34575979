//! What the run asks of the platform: the executor of the chosen scheduler on the worker
//! layout every scheduler gets (pinning, real time for the audio worker, resource groups,
//! all or none), and the resource groups themselves.

use mmsched_core::policy::Policy;
use mmsched_runtime::sched::exec::{
    MmschedExecutor, MmschedSetup, QueueOrder, SharedQueue, ThreadPerModel,
};
use mmsched_runtime::sched::lanes::{LaneLayout, class_lane, standard_lanes};
use mmsched_runtime::sched::{Executor, SchedulerKind};

use crate::config::RunError;
use crate::inputs::Device;
use crate::run::Observer;

/// The audio worker's group's CPU weight, the heaviest of the groups (v2 semantics,
/// default 100). mmsched raises a worker's group to it while a step at risk of missing
/// its deadline runs there: such a step competes for its core like the audio path.
const AUDIO_CPU_WEIGHT: u32 = 400;

/// Creates the resource groups of the workers (`vision`, `general`, `audio`); what
/// the OS allowed or refused goes into `notes`. `None` when there are none to use.
#[cfg(target_os = "linux")]
pub fn resource_groups(
    notes: &mut Vec<String>,
    observer: &mut dyn Observer,
) -> Option<mmsched_runtime::platform::cgroup::CgroupSet> {
    use mmsched_runtime::platform::cgroup::{self, CgroupFs, ClassLimits};
    let classes = ["vision", "general", "audio"]
        .iter()
        .filter_map(|n| ClassLimits::new(n).ok())
        .map(|c| match c.name() {
            "audio" => c
                .with_cpu_weight(AUDIO_CPU_WEIGHT)
                .with_rt_runtime_micros(100_000),
            "general" => c.with_cpu_weight(100).with_memory_high_bytes(4 << 30),
            _ => c.with_cpu_weight(200),
        })
        .collect::<Vec<_>>();
    let fs = CgroupFs::system();
    let stale = fs.remove_stale(cgroup::process_exists);
    if !stale.is_empty() {
        let dirs: Vec<String> = stale.iter().map(|d| d.display().to_string()).collect();
        notes.push(format!(
            "removed {} resource group(s) left by ended runs: {}",
            stale.len(),
            dirs.join(", ")
        ));
    }
    match cgroup::setup(&fs, &classes) {
        Ok((set, status)) => {
            notes.push(status.to_string());
            if let Some(s) = &set {
                observer.cgroups(s.handle());
            }
            set
        }
        Err(e) => {
            notes.push(format!("resource groups failed, running without: {e}"));
            None
        }
    }
}

/// Where a real run's platform signals come from: the kernel's figures for this process,
/// and the CPU pressure of the run's own resource groups where they are cgroup v2 groups.
#[cfg(target_os = "linux")]
pub fn signal_source(
    groups: Option<&mmsched_runtime::platform::cgroup::CgroupSet>,
) -> Box<dyn mmsched_runtime::platform::signals::SignalSource> {
    use mmsched_runtime::platform::signals::{ProcSource, has_cpu_pressure};
    let dirs = groups.map_or_else(Vec::new, |set| {
        ["vision", "general", "audio"]
            .iter()
            .flat_map(|class| set.class_dirs(class))
            .filter(|d| has_cpu_pressure(d))
            .collect()
    });
    Box::new(ProcSource::new(dirs))
}

/// Where a real run's platform signals come from off Linux: a `/proc` that is not there,
/// so every figure is unknown (and said so once).
#[cfg(not(target_os = "linux"))]
pub fn signal_source() -> Box<dyn mmsched_runtime::platform::signals::SignalSource> {
    Box::new(mmsched_runtime::platform::signals::ProcSource::new(
        Vec::new(),
    ))
}

/// Whether the health remedies that keep work from the models wait for the run's own
/// overload ([`crate::Mechanisms::own_overload`]): on unless `MMSCHED_OWN_OVERLOAD=0`
/// (to measure what it buys with one build, for every run of the process).
pub fn own_overload_on() -> bool {
    !std::env::var("MMSCHED_OWN_OVERLOAD").is_ok_and(|v| v.trim() == "0")
}

/// Most intra-op threads one step may be granted: every core (so a lone LLM step uses
/// both cores of a 2-core device while the camera is idle), or `MMSCHED_THREAD_GRANT` when
/// set (`1` turns grants off, to measure what they buy).
pub fn max_thread_grant() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    std::env::var("MMSCHED_THREAD_GRANT")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .map_or(cores, |n| n.clamp(1, cores))
}

/// mmsched's executor set-up on `layout`: its lanes, the workers restricted to some
/// classes (the voice-activity worker), step recording, shedding and thread grants. The
/// one constructor for the real executor and the one in virtual time.
pub fn mmsched_setup(layout: &LaneLayout, record_steps: bool, no_shedding: bool) -> MmschedSetup {
    MmschedSetup {
        restricted: layout
            .restricted
            .iter()
            .map(|(w, c)| (*w as u32, c.clone()))
            .collect(),
        lanes: layout.lanes.clone(),
        record_steps,
        no_shedding,
        max_thread_grant: max_thread_grant(),
        at_risk_cpu_weight: Some(AUDIO_CPU_WEIGHT),
    }
}

/// Builds the executor of `kind` on the worker layout every scheduler gets
/// ([`standard_lanes`]: `workers` general workers and a voice-activity worker; with
/// `platform`, pinned, in resource groups, the audio worker real time): the comparison is
/// about scheduling only. `no_shedding` switches mmsched's shedding off (an ablation).
#[allow(clippy::too_many_arguments)]
pub fn executor(
    kind: SchedulerKind,
    policy: &Policy,
    workers: usize,
    clock: Device,
    platform: bool,
    record_steps: bool,
    no_shedding: bool,
    #[cfg(target_os = "linux")] cgroups: Option<mmsched_runtime::platform::cgroup::CgroupHandle>,
) -> Result<Box<dyn Executor>, RunError> {
    #[cfg(target_os = "linux")]
    let cpus = mmsched_runtime::platform::rt::available_cpus();
    #[cfg(not(target_os = "linux"))]
    let cpus: Vec<usize> = Vec::new();
    let layout = standard_lanes(workers, platform, &cpus);
    Ok(match kind {
        SchedulerKind::Mmsched => {
            let setup = mmsched_setup(&layout, record_steps, no_shedding);
            Box::new(
                MmschedExecutor::new(
                    policy,
                    &setup,
                    clock,
                    #[cfg(target_os = "linux")]
                    cgroups,
                )
                .map_err(|source| RunError::Scheduler { source })?,
            )
        }
        SchedulerKind::OsThreads => Box::new(ThreadPerModel::new(
            clock,
            Box::new(move |class: &str| class_lane(class, workers, platform, &cpus)),
            #[cfg(target_os = "linux")]
            cgroups,
        )),
        SchedulerKind::Fifo | SchedulerKind::StaticPriority => {
            let order = if kind == SchedulerKind::Fifo {
                QueueOrder::Fifo
            } else {
                QueueOrder::StaticPriority
            };
            Box::new(SharedQueue::new(
                order,
                &layout,
                clock,
                #[cfg(target_os = "linux")]
                cgroups,
            ))
        }
    })
}

/// The executor of `kind` on the standard layout of `workers`, as a library or a server
/// runs it: no pinning, real-time priority or resource groups, no step recording,
/// shedding on.
pub fn plain_executor(
    kind: SchedulerKind,
    policy: &Policy,
    workers: usize,
    clock: Device,
) -> Result<Box<dyn Executor>, RunError> {
    executor(
        kind,
        policy,
        workers,
        clock,
        false,
        false,
        false,
        #[cfg(target_os = "linux")]
        None,
    )
}
