//! Platform power control behind one small trait, every call timed against its S11 budget.
//!
//! The reference wake path (Android HAL → Binder → power domain → MCU wake pin → I²C ack →
//! cgroup throttle release) differs on every platform, but the scheduler only ever needs
//! three things from it: wake the accelerator, ask for a frequency level, and release a
//! throttle. [`PowerControl`] is exactly that, and each call returns a [`PowerEvent`] — what
//! was done, or why it was only recorded, and how long it took against its budget — which
//! the caller puts on the trace. Linux is the first implementation ([`LinuxPower`]).

use std::path::{Path, PathBuf};

use mmsched_core::time::{Clock, Nanos};
use serde::Serialize;

use crate::platform::budget::{BudgetKind, CallTiming, timed};

/// A requested performance level, as a percentage of the platform's frequency range
/// (0 = lowest, 100 = highest).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct FrequencyLevel(u8);

impl FrequencyLevel {
    /// The lowest level.
    pub const LOWEST: FrequencyLevel = FrequencyLevel(0);
    /// The highest level.
    pub const HIGHEST: FrequencyLevel = FrequencyLevel(100);

    /// A level of `percent` of the range (clamped to 100).
    pub fn percent(percent: u8) -> Self {
        FrequencyLevel(percent.min(100))
    }

    /// The level in percent.
    pub fn as_percent(self) -> u8 {
        self.0
    }
}

/// Which power operation an event records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "op", rename_all = "kebab-case")]
pub enum PowerOp {
    /// Wake the accelerator / MCU.
    Wake,
    /// Ask for a frequency level.
    RequestFrequency {
        /// The level asked for.
        level: FrequencyLevel,
    },
    /// Release a throttle (restore full frequency and lift CPU quotas).
    ReleaseThrottle,
}

impl PowerOp {
    /// The S11 budget this operation is held to.
    pub fn budget(self) -> BudgetKind {
        match self {
            PowerOp::Wake => BudgetKind::McuWake,
            PowerOp::RequestFrequency { .. } => BudgetKind::HalCall,
            PowerOp::ReleaseThrottle => BudgetKind::CgroupDecision,
        }
    }
}

/// What a power call did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "effect", rename_all = "kebab-case")]
pub enum PowerEffect {
    /// The platform carried it out.
    Applied {
        /// What changed.
        detail: String,
    },
    /// The platform has no such control: the request is only recorded.
    RecordedOnly {
        /// Why nothing changed.
        reason: String,
    },
    /// The platform refused or failed.
    Failed {
        /// Why.
        reason: String,
    },
}

/// One power call, for the trace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PowerEvent {
    /// What was asked.
    pub op: PowerOp,
    /// What happened.
    pub effect: PowerEffect,
    /// How long it took against its budget.
    pub timing: CallTiming,
}

impl PowerEvent {
    /// Whether the call exceeded its S11 budget.
    pub fn over_budget(&self) -> bool {
        self.timing.over_budget()
    }
}

/// Platform power control: the three requests the scheduler makes of the power path.
///
/// Why a trait this small: each platform's path is different (a HAL service, sysfs,
/// a GPIO and an I²C bus), while the scheduler's needs are not. Every implementation times
/// each call with the clock it was given and returns the event, so budget overruns are
/// visible on every platform the same way.
pub trait PowerControl {
    /// Wakes the accelerator / MCU (budget: 3 ms).
    fn wake(&mut self) -> PowerEvent;
    /// Asks for a frequency level (budget: 15 ms).
    fn request_frequency(&mut self, level: FrequencyLevel) -> PowerEvent;
    /// Releases throttling: full frequency and no CPU quota on the throttled classes
    /// (budget: 5 ms).
    fn release_throttle(&mut self) -> PowerEvent;
}

/// Something that can lift a CPU throttle for the power path (the resource groups).
pub trait ThrottleRelease: Send {
    /// Lifts the throttle; returns what changed.
    fn release(&mut self) -> Result<String, ReleaseError>;
}

/// Why a CPU throttle could not be lifted.
#[derive(Debug, thiserror::Error)]
#[error("cannot lift the CPU quota of scheduler class {class:?}")]
pub struct ReleaseError {
    /// The class whose quota stayed.
    pub class: String,
    /// The platform's error.
    #[source]
    pub source: crate::chain::Cause,
}

#[cfg(target_os = "linux")]
impl ThrottleRelease for (crate::platform::cgroup::CgroupHandle, Vec<String>) {
    fn release(&mut self) -> Result<String, ReleaseError> {
        for class in &self.1 {
            self.0
                .set_cpu_quota(class, None)
                .map_err(|e| ReleaseError {
                    class: class.clone(),
                    source: Box::new(e),
                })?;
        }
        Ok(format!("cpu quota lifted on {}", self.1.join(", ")))
    }
}

/// One cpufreq policy directory (`cpuN/cpufreq`).
#[derive(Debug, Clone)]
struct CpufreqPolicy {
    dir: PathBuf,
    min_khz: u64,
    max_khz: u64,
}

/// What the Linux power path found at start: log it once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "kebab-case")]
pub enum PowerStatus {
    /// cpufreq is present for these CPUs.
    Cpufreq {
        /// CPU ids with a cpufreq policy.
        cpus: Vec<usize>,
    },
    /// No cpufreq here: frequency requests are recorded in the trace only.
    NoCpufreq {
        /// Where it was looked for.
        reason: String,
    },
}

impl std::fmt::Display for PowerStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PowerStatus::Cpufreq { cpus } => write!(f, "power control: cpufreq on CPUs {cpus:?}"),
            PowerStatus::NoCpufreq { reason } => {
                write!(
                    f,
                    "power control: {reason}; frequency requests are recorded in the trace only"
                )
            }
        }
    }
}

/// Power control on Linux: cpufreq's `scaling_max_freq` for frequency levels where present,
/// the resource groups for throttle release; no MCU wake path on a Linux host, so wake
/// requests are recorded only.
pub struct LinuxPower<C: Clock> {
    clock: C,
    policies: Vec<CpufreqPolicy>,
    throttle: Option<Box<dyn ThrottleRelease>>,
}

impl<C: Clock> std::fmt::Debug for LinuxPower<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LinuxPower")
            .field("policies", &self.policies)
            .field("throttle", &self.throttle.is_some())
            .finish()
    }
}

/// Where Linux lists CPUs and their cpufreq directories.
pub const CPU_SYSFS_ROOT: &str = "/sys/devices/system/cpu";

impl<C: Clock> LinuxPower<C> {
    /// Looks for cpufreq under `cpu_root` (normally [`CPU_SYSFS_ROOT`]). The status says
    /// what was found; log it once.
    pub fn new(clock: C, cpu_root: &Path) -> (Self, PowerStatus) {
        let mut found: Vec<(usize, CpufreqPolicy)> = Vec::new();
        if let Ok(entries) = std::fs::read_dir(cpu_root) {
            for entry in entries.flatten() {
                let name = entry.file_name();
                let Some(id) = name
                    .to_str()
                    .and_then(|n| n.strip_prefix("cpu"))
                    .and_then(|n| n.parse::<usize>().ok())
                else {
                    continue;
                };
                let dir = entry.path().join("cpufreq");
                let read = |f: &str| {
                    std::fs::read_to_string(dir.join(f))
                        .ok()
                        .and_then(|s| s.trim().parse::<u64>().ok())
                };
                if let (Some(min_khz), Some(max_khz)) =
                    (read("cpuinfo_min_freq"), read("cpuinfo_max_freq"))
                    && dir.join("scaling_max_freq").is_file()
                {
                    found.push((
                        id,
                        CpufreqPolicy {
                            dir,
                            min_khz,
                            max_khz,
                        },
                    ));
                }
            }
        }
        found.sort_by_key(|(id, _)| *id);
        let status = if found.is_empty() {
            PowerStatus::NoCpufreq {
                reason: format!("no cpufreq under {}/cpu*/cpufreq", cpu_root.display()),
            }
        } else {
            PowerStatus::Cpufreq {
                cpus: found.iter().map(|(id, _)| *id).collect(),
            }
        };
        let me = Self {
            clock,
            policies: found.into_iter().map(|(_, p)| p).collect(),
            throttle: None,
        };
        (me, status)
    }

    /// Lets [`PowerControl::release_throttle`] also lift CPU quotas (e.g. the resource
    /// groups' handle and the throttled classes).
    pub fn with_throttle_release(mut self, release: Box<dyn ThrottleRelease>) -> Self {
        self.throttle = Some(release);
        self
    }

    fn set_max_khz(&self, pick: impl Fn(&CpufreqPolicy) -> u64) -> PowerEffect {
        let mut changed = Vec::new();
        for p in &self.policies {
            let khz = pick(p);
            let file = p.dir.join("scaling_max_freq");
            if let Err(e) = std::fs::write(&file, khz.to_string()) {
                return PowerEffect::Failed {
                    reason: format!("write {}: {e}", file.display()),
                };
            }
            changed.push(khz.to_string());
        }
        PowerEffect::Applied {
            detail: format!("scaling_max_freq = {} kHz", changed.join(", ")),
        }
    }

    fn event(&self, op: PowerOp, call: impl FnOnce(&Self) -> PowerEffect) -> PowerEvent {
        let (effect, timing) = timed(&self.clock, op.budget(), || call(self));
        PowerEvent { op, effect, timing }
    }
}

impl<C: Clock> PowerControl for LinuxPower<C> {
    fn wake(&mut self) -> PowerEvent {
        self.event(PowerOp::Wake, |_| PowerEffect::RecordedOnly {
            reason: "no accelerator or MCU wake line on this Linux host".to_string(),
        })
    }

    fn request_frequency(&mut self, level: FrequencyLevel) -> PowerEvent {
        self.event(PowerOp::RequestFrequency { level }, |me| {
            if me.policies.is_empty() {
                return PowerEffect::RecordedOnly {
                    reason: "no cpufreq on this machine".to_string(),
                };
            }
            let pct = u64::from(level.as_percent());
            me.set_max_khz(|p| p.min_khz + (p.max_khz.saturating_sub(p.min_khz)) * pct / 100)
        })
    }

    fn release_throttle(&mut self) -> PowerEvent {
        let start = self.clock.now_nanos();
        let mut parts = Vec::new();
        let mut failed = None;
        if !self.policies.is_empty() {
            match self.set_max_khz(|p| p.max_khz) {
                PowerEffect::Applied { detail } => parts.push(detail),
                PowerEffect::Failed { reason } => failed = Some(reason),
                PowerEffect::RecordedOnly { .. } => {}
            }
        }
        if let Some(t) = self.throttle.as_mut() {
            match t.release() {
                Ok(d) => parts.push(d),
                Err(e) => failed = Some(crate::chain::chain(&e)),
            }
        }
        let effect = match (failed, parts.is_empty()) {
            (Some(reason), _) => PowerEffect::Failed { reason },
            (None, true) => PowerEffect::RecordedOnly {
                reason: "no cpufreq and no resource groups to release".to_string(),
            },
            (None, false) => PowerEffect::Applied {
                detail: parts.join("; "),
            },
        };
        let elapsed_nanos: Nanos = self.clock.now_nanos().saturating_sub(start);
        let op = PowerOp::ReleaseThrottle;
        PowerEvent {
            op,
            effect,
            timing: CallTiming {
                kind: op.budget(),
                start_nanos: start,
                elapsed_nanos,
                budget_nanos: op.budget().budget_nanos(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mmsched_core::time::{MonotonicClock, NANOS_PER_MILLI};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// A clock shared with a throttle release that takes a set time.
    #[derive(Clone, Default)]
    struct SharedClock(Arc<AtomicU64>);
    impl Clock for SharedClock {
        fn now_nanos(&self) -> Nanos {
            self.0.load(Ordering::SeqCst)
        }
    }
    struct SlowRelease(SharedClock, Nanos);
    impl ThrottleRelease for SlowRelease {
        fn release(&mut self) -> Result<String, ReleaseError> {
            self.0.0.fetch_add(self.1, Ordering::SeqCst);
            Ok("lifted".to_string())
        }
    }

    fn fake_cpufreq(root: &Path, cpus: usize) {
        for i in 0..cpus {
            let d = root.join(format!("cpu{i}/cpufreq"));
            std::fs::create_dir_all(&d).expect("tempdir writable");
            std::fs::write(d.join("cpuinfo_min_freq"), "400000\n").expect("write");
            std::fs::write(d.join("cpuinfo_max_freq"), "2400000\n").expect("write");
            std::fs::write(d.join("scaling_max_freq"), "2400000\n").expect("write");
            std::fs::write(d.join("scaling_governor"), "schedutil\n").expect("write");
        }
        std::fs::create_dir_all(root.join("cpufreq-not-a-cpu")).expect("write");
    }

    #[test]
    fn without_cpufreq_requests_are_recorded_only_and_said_once() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("cpu0")).expect("mkdir");
        let (mut power, status) = LinuxPower::new(MonotonicClock::new(), dir.path());
        assert!(matches!(status, PowerStatus::NoCpufreq { .. }), "{status}");
        let e = power.request_frequency(FrequencyLevel::percent(50));
        assert!(matches!(e.effect, PowerEffect::RecordedOnly { .. }));
        assert_eq!(e.timing.kind, BudgetKind::HalCall);
        let e = power.wake();
        assert!(matches!(e.effect, PowerEffect::RecordedOnly { .. }));
        assert_eq!(e.timing.budget_nanos, 3 * NANOS_PER_MILLI);
        let e = power.release_throttle();
        assert!(matches!(e.effect, PowerEffect::RecordedOnly { .. }));
    }

    #[test]
    fn cpufreq_levels_map_onto_the_frequency_range() {
        let dir = tempfile::tempdir().expect("tempdir");
        fake_cpufreq(dir.path(), 2);
        let (mut power, status) = LinuxPower::new(MonotonicClock::new(), dir.path());
        assert_eq!(status, PowerStatus::Cpufreq { cpus: vec![0, 1] });
        let e = power.request_frequency(FrequencyLevel::percent(50));
        assert!(matches!(e.effect, PowerEffect::Applied { .. }), "{e:?}");
        for i in 0..2 {
            let v = std::fs::read_to_string(
                dir.path().join(format!("cpu{i}/cpufreq/scaling_max_freq")),
            )
            .expect("read");
            assert_eq!(v, "1400000");
        }
        power.request_frequency(FrequencyLevel::percent(200));
        let e = power.release_throttle();
        assert!(matches!(e.effect, PowerEffect::Applied { .. }));
        let v = std::fs::read_to_string(dir.path().join("cpu1/cpufreq/scaling_max_freq"))
            .expect("read");
        assert_eq!(v, "2400000");
    }

    #[test]
    fn over_budget_calls_are_reported() {
        let dir = tempfile::tempdir().expect("tempdir");
        let clock = SharedClock::default();
        let (power, _) = LinuxPower::new(clock.clone(), dir.path());
        let mut power =
            power.with_throttle_release(Box::new(SlowRelease(clock.clone(), 6 * NANOS_PER_MILLI)));
        let e = power.release_throttle();
        assert_eq!(
            e.effect,
            PowerEffect::Applied {
                detail: "lifted".to_string()
            }
        );
        assert_eq!(e.timing.elapsed_nanos, 6 * NANOS_PER_MILLI);
        assert!(
            e.over_budget(),
            "6 ms is over the 5 ms cgroup-decision budget"
        );
        let mut power =
            power.with_throttle_release(Box::new(SlowRelease(clock, 4 * NANOS_PER_MILLI)));
        assert!(!power.release_throttle().over_budget());
    }
}
