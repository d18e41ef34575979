//! Real-time scheduling (SCHED_FIFO) and CPU affinity for the calling thread.
//!
//! Both are requests the kernel may refuse (SCHED_FIFO needs `CAP_SYS_NICE` or an
//! `RLIMIT_RTPRIO`, and inside a v1 cpu cgroup a real-time budget): each call returns a
//! status the caller logs once, and the thread simply keeps running at normal priority.
//! Everything goes through `thread-priority` and `core_affinity`, so no `unsafe` is needed.

use std::fmt;

use thread_priority::{
    NormalThreadSchedulePolicy, RealtimeThreadSchedulePolicy, ThreadPriority, ThreadPriorityValue,
    ThreadSchedulePolicy,
};

/// The outcome of asking for real-time priority or a CPU pin.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "status", rename_all = "kebab-case")]
pub enum RtStatus {
    /// Done.
    Applied {
        /// What was applied, e.g. `SCHED_FIFO priority 50` or `pinned to CPU 1`.
        what: String,
    },
    /// The kernel refused for lack of privilege: running without.
    NotPermitted {
        /// What was asked, and what to do to allow it.
        reason: String,
    },
    /// The request could not be carried out for another reason: running without.
    Failed {
        /// Why.
        reason: String,
    },
}

impl RtStatus {
    /// Whether the request took effect.
    pub fn is_applied(&self) -> bool {
        matches!(self, RtStatus::Applied { .. })
    }
}

impl fmt::Display for RtStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RtStatus::Applied { what } => f.write_str(what),
            RtStatus::NotPermitted { reason } => {
                write!(f, "not permitted, running without: {reason}")
            }
            RtStatus::Failed { reason } => write!(f, "failed, running without: {reason}"),
        }
    }
}

/// Makes the calling thread SCHED_FIFO at `priority` (1 ..= 99, clamped; the kernel's
/// own threads mostly use 50).
pub fn set_current_fifo(priority: u8) -> RtStatus {
    let clamped = priority.clamp(1, 99);
    let value = match ThreadPriorityValue::try_from(clamped) {
        Ok(v) => v,
        Err(e) => {
            return RtStatus::Failed {
                reason: format!("priority {clamped}: {e}"),
            };
        }
    };
    let result = thread_priority::set_thread_priority_and_policy(
        thread_priority::thread_native_id(),
        ThreadPriority::Crossplatform(value),
        ThreadSchedulePolicy::Realtime(RealtimeThreadSchedulePolicy::Fifo),
    );
    match result {
        Ok(()) => RtStatus::Applied {
            what: format!("SCHED_FIFO priority {clamped}"),
        },
        // EPERM (1): no CAP_SYS_NICE / RLIMIT_RTPRIO, or no RT budget in the cpu cgroup.
        Err(thread_priority::Error::OS(1)) => RtStatus::NotPermitted {
            reason: format!(
                "SCHED_FIFO priority {clamped} needs CAP_SYS_NICE (or RLIMIT_RTPRIO) and, inside a v1 cpu cgroup, cpu.rt_runtime_us > 0"
            ),
        },
        Err(e) => RtStatus::Failed {
            reason: format!("SCHED_FIFO priority {clamped}: {e:?}"),
        },
    }
}

/// Returns the calling thread to the normal time-sharing policy.
pub fn set_current_normal() -> RtStatus {
    let result = thread_priority::set_thread_priority_and_policy(
        thread_priority::thread_native_id(),
        ThreadPriority::Min,
        ThreadSchedulePolicy::Normal(NormalThreadSchedulePolicy::Other),
    );
    match result {
        Ok(()) => RtStatus::Applied {
            what: "SCHED_OTHER".to_string(),
        },
        Err(e) => RtStatus::Failed {
            reason: format!("SCHED_OTHER: {e:?}"),
        },
    }
}

/// Whether the calling thread currently runs SCHED_FIFO.
pub fn current_is_fifo() -> bool {
    matches!(
        thread_priority::thread_schedule_policy(),
        Ok(ThreadSchedulePolicy::Realtime(
            RealtimeThreadSchedulePolicy::Fifo
        ))
    )
}

/// The CPU ids the process may run on.
pub fn available_cpus() -> Vec<usize> {
    core_affinity::get_core_ids()
        .map(|ids| ids.into_iter().map(|c| c.id).collect())
        .unwrap_or_default()
}

/// Pins the calling thread to CPU `cpu`.
pub fn pin_current(cpu: usize) -> RtStatus {
    let cpus = available_cpus();
    if !cpus.contains(&cpu) {
        return RtStatus::Failed {
            reason: format!("CPU {cpu} is not available to this process (available: {cpus:?})"),
        };
    }
    if core_affinity::set_for_current(core_affinity::CoreId { id: cpu }) {
        RtStatus::Applied {
            what: format!("pinned to CPU {cpu}"),
        }
    } else {
        RtStatus::NotPermitted {
            reason: format!("the kernel refused to pin this thread to CPU {cpu}"),
        }
    }
}

/// A thread's CPU mask, saved to be put back.
#[derive(Debug)]
pub struct SavedMask(nix::sched::CpuSet);

/// Lets the calling thread, and the threads it starts from now on (they inherit the
/// mask), run on every CPU the process may use (the main thread's mask), and returns the
/// mask it had. Why: a worker pinned to one core that is granted two threads for a step
/// must let its engine's helper thread run on the other core. `None` if the masks cannot
/// be read or set (the step then runs where it was pinned).
pub fn widen_current_to_process_cpus() -> Option<SavedMask> {
    use nix::sched::{sched_getaffinity, sched_setaffinity};
    use nix::unistd::Pid;
    let this_thread = Pid::from_raw(0);
    let saved = sched_getaffinity(this_thread).ok()?;
    let process = sched_getaffinity(Pid::this()).ok()?;
    sched_setaffinity(this_thread, &process).ok()?;
    Some(SavedMask(saved))
}

/// Puts back a mask saved by [`widen_current_to_process_cpus`].
pub fn restore_current_mask(saved: &SavedMask) {
    let _ = nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &saved.0);
}

/// The CPUs the calling thread may run on now, from `/proc/thread-self/status`.
pub fn current_allowed_cpus() -> std::io::Result<String> {
    let status = std::fs::read_to_string("/proc/thread-self/status")?;
    Ok(status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap_or_default()
        .trim()
        .to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether this process holds CAP_SYS_NICE (bit 23 of `CapEff`), which SCHED_FIFO needs.
    fn has_cap_sys_nice() -> bool {
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("CapEff:"))
            .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
            .is_some_and(|caps| caps & (1 << 23) != 0)
    }

    #[test]
    fn a_pinned_thread_is_widened_to_the_process_cpus_and_pinned_again() {
        std::thread::spawn(|| {
            let process = current_allowed_cpus().expect("status");
            let cpus = available_cpus();
            let Some(&first) = cpus.first() else {
                panic!("no CPU available");
            };
            assert!(pin_current(first).is_applied());
            let pinned = current_allowed_cpus().expect("status");
            assert_eq!(pinned, first.to_string());
            let saved = widen_current_to_process_cpus().expect("masks can be set");
            assert_eq!(current_allowed_cpus().expect("status"), process);
            restore_current_mask(&saved);
            assert_eq!(current_allowed_cpus().expect("status"), pinned);
        })
        .join()
        .expect("thread");
    }

    /// With CAP_SYS_NICE (root, as in CI) FIFO must be applied and undone; without it the
    /// refusal must be a status, not an error. Each branch checks what it claims.
    #[test]
    fn fifo_is_applied_with_the_capability_and_refused_without() {
        let permitted = has_cap_sys_nice();
        std::thread::spawn(move || {
            let status = set_current_fifo(10);
            match (&status, permitted) {
                (RtStatus::Applied { what }, true) => {
                    assert_eq!(what, "SCHED_FIFO priority 10");
                    assert!(current_is_fifo());
                    assert!(set_current_normal().is_applied());
                    assert!(!current_is_fifo());
                }
                (RtStatus::NotPermitted { .. }, false) => assert!(!current_is_fifo()),
                (other, _) => panic!(
                    "CAP_SYS_NICE {}: SCHED_FIFO gave {other:?}",
                    if permitted { "held" } else { "not held" }
                ),
            }
        })
        .join()
        .expect("thread ran");
    }

    #[test]
    fn pinning_moves_the_thread_to_one_cpu() {
        std::thread::spawn(|| {
            let cpus = available_cpus();
            assert!(!cpus.is_empty());
            let last = *cpus.last().expect("non-empty");
            assert!(pin_current(last).is_applied());
            assert_eq!(current_allowed_cpus().expect("readable"), last.to_string());
            assert!(!pin_current(100_000).is_applied());
        })
        .join()
        .expect("thread ran");
    }
}
