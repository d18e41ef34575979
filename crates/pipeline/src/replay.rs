//! Replay of a scheduling log recorded by a run (`RunConfig::record_steps`): the
//! scheduling core is rebuilt from the log's first entry and fed the recorded calls at
//! their recorded (virtual) times. Identical decisions show that the run decided with the
//! core's one decision function and nothing else.

use mmsched_core::policy::Policy;
use mmsched_core::scheduler::{Decision, LogEntry, Scheduler, SchedulerError};

/// What a replay found.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayReport {
    /// Decision steps replayed.
    pub steps: usize,
    /// Decisions compared.
    pub decisions: usize,
    /// Virtual time at the last step, nanoseconds.
    pub end_nanos: u64,
    /// The first step that decided differently: its index in the log, and the decisions
    /// the simulator made instead of the recorded ones.
    pub mismatch: Option<(usize, Vec<Decision>)>,
}

/// Replays `log` under `policy`.
pub fn replay(policy: &Policy, log: &[LogEntry]) -> Result<ReplayReport, SchedulerError> {
    let mut sched = Scheduler::from_log(policy, log)?;
    let (mut steps, mut decisions, mut end_nanos) = (0, 0, 0);
    for entry in log {
        if let LogEntry::Step {
            now_nanos,
            decisions: d,
            ..
        } = entry
        {
            steps += 1;
            decisions += d.len();
            end_nanos = *now_nanos;
        }
    }
    Ok(ReplayReport {
        steps,
        decisions,
        end_nanos,
        mismatch: sched.replay(log).err(),
    })
}
