//! The S11 time budgets of platform calls, and the timing of one call against its budget.

use mmsched_core::time::{Clock, NANOS_PER_MILLI, Nanos};
use serde::Serialize;

/// The kind of platform call, each with its own S11 budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BudgetKind {
    /// A resource-group decision (change a cgroup limit, move a thread): < 5 ms.
    CgroupDecision,
    /// A platform power call (HAL on Android, cpufreq on Linux): < 15 ms.
    HalCall,
    /// Waking the accelerator / MCU: < 3 ms.
    McuWake,
}

impl BudgetKind {
    /// The budget of this kind of call, in nanoseconds.
    pub fn budget_nanos(self) -> Nanos {
        match self {
            BudgetKind::CgroupDecision => 5 * NANOS_PER_MILLI,
            BudgetKind::HalCall => 15 * NANOS_PER_MILLI,
            BudgetKind::McuWake => 3 * NANOS_PER_MILLI,
        }
    }

    /// A short stable name, for traces and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            BudgetKind::CgroupDecision => "cgroup-decision",
            BudgetKind::HalCall => "hal-call",
            BudgetKind::McuWake => "mcu-wake",
        }
    }
}

/// How long one platform call took against its budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CallTiming {
    /// Which budget applies.
    pub kind: BudgetKind,
    /// Device time at which the call started.
    pub start_nanos: Nanos,
    /// How long it took.
    pub elapsed_nanos: Nanos,
    /// The budget it had.
    pub budget_nanos: Nanos,
}

impl CallTiming {
    /// Whether the call took longer than its budget.
    pub fn over_budget(&self) -> bool {
        self.elapsed_nanos > self.budget_nanos
    }
}

/// Runs `call`, timing it with `clock` against the budget of `kind`.
pub fn timed<C: Clock + ?Sized, T>(
    clock: &C,
    kind: BudgetKind,
    call: impl FnOnce() -> T,
) -> (T, CallTiming) {
    let start_nanos = clock.now_nanos();
    let value = call();
    let elapsed_nanos = clock.now_nanos().saturating_sub(start_nanos);
    (
        value,
        CallTiming {
            kind,
            start_nanos,
            elapsed_nanos,
            budget_nanos: kind.budget_nanos(),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use mmsched_core::time::ManualClock;

    #[test]
    fn a_call_is_over_budget_only_past_its_budget() {
        let clock = ManualClock::new(100);
        let ((), t) = timed(&clock, BudgetKind::McuWake, || {
            clock.advance(3 * NANOS_PER_MILLI)
        });
        assert_eq!(t.start_nanos, 100);
        assert_eq!(t.elapsed_nanos, 3 * NANOS_PER_MILLI);
        assert!(!t.over_budget(), "exactly at the budget is within it");
        let ((), t) = timed(&clock, BudgetKind::McuWake, || {
            clock.advance(3 * NANOS_PER_MILLI + 1)
        });
        assert!(t.over_budget());
        let (v, t) = timed(&clock, BudgetKind::HalCall, || 7);
        assert_eq!(v, 7);
        assert_eq!(t.budget_nanos, 15 * NANOS_PER_MILLI);
        assert_eq!(BudgetKind::CgroupDecision.budget_nanos(), 5_000_000);
    }
}
