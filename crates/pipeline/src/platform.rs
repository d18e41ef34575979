//! What the run asks of the platform: the executor of the chosen scheduler with its
//! worker layout (pinning, real time, resource groups for mmsched; plain threads for the
//! baselines), and the resource groups themselves.

use mmsched_core::policy::Policy;
use mmsched_runtime::sched::exec::{
    MmschedExecutor, MmschedSetup, QueueOrder, SharedQueue, ThreadPerModel,
};
use mmsched_runtime::sched::{Executor, LaneConfig, SchedulerKind};

use crate::config::RunError;
use crate::inputs::Device;
use crate::run::Observer;
use crate::stats::Kind;

/// Creates the resource groups of mmsched's workers (`vision`, `general`, `audio`); what
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
            "audio" => c.with_cpu_weight(400).with_rt_runtime_micros(100_000),
            "general" => c.with_cpu_weight(100).with_memory_high_bytes(4 << 30),
            _ => c.with_cpu_weight(200),
        })
        .collect::<Vec<_>>();
    match cgroup::setup(&CgroupFs::system(), &classes) {
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

/// Most intra-op threads one step may be granted: every core (so a lone LLM step uses
/// both cores of a 2-core device while the camera is idle), or `MMSCHED_THREAD_GRANT` when
/// set (`1` turns grants off, to measure what they buy).
fn max_thread_grant() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    std::env::var("MMSCHED_THREAD_GRANT")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .map_or(cores, |n| n.clamp(1, cores))
}

/// Builds the executor of `kind`.
pub fn executor(
    kind: SchedulerKind,
    policy: &Policy,
    workers: usize,
    clock: Device,
    platform: bool,
    record_steps: bool,
    #[cfg(target_os = "linux")] cgroups: Option<mmsched_runtime::platform::cgroup::CgroupHandle>,
) -> Result<Box<dyn Executor>, RunError> {
    #[cfg(target_os = "linux")]
    let cpus = mmsched_runtime::platform::rt::available_cpus();
    #[cfg(not(target_os = "linux"))]
    let cpus: Vec<usize> = Vec::new();
    Ok(match kind {
        SchedulerKind::Mmsched => {
            let mut lanes: Vec<LaneConfig> = (0..workers)
                .map(|i| LaneConfig {
                    cpu: platform
                        .then(|| cpus.get(i % cpus.len().max(1)).copied())
                        .flatten(),
                    fifo_priority: None,
                    cgroup_class: platform
                        .then(|| if i == 0 { "vision" } else { "general" }.to_string()),
                })
                .collect();
            // The audio worker: real time when permitted, only voice-activity jobs, so
            // a 32 ms chunk never waits behind a frame or a transcript.
            lanes.push(LaneConfig {
                cpu: None,
                fifo_priority: platform.then_some(50),
                cgroup_class: platform.then(|| "audio".to_string()),
            });
            let setup = MmschedSetup {
                restricted: vec![(workers as u32, vec![Kind::Vad.as_str().to_string()])],
                lanes,
                record_steps,
                max_thread_grant: max_thread_grant(),
            };
            Box::new(
                MmschedExecutor::new(
                    policy,
                    &setup,
                    clock,
                    #[cfg(target_os = "linux")]
                    cgroups,
                )
                .map_err(|e| RunError::Scheduler(e.to_string()))?,
            )
        }
        SchedulerKind::OsThreads => Box::new(ThreadPerModel::new(clock)),
        SchedulerKind::Fifo | SchedulerKind::StaticPriority => {
            let order = if kind == SchedulerKind::Fifo {
                QueueOrder::Fifo
            } else {
                QueueOrder::StaticPriority
            };
            Box::new(SharedQueue::new(
                order,
                &vec![LaneConfig::default(); workers],
                clock,
                #[cfg(target_os = "linux")]
                None,
            ))
        }
    })
}
