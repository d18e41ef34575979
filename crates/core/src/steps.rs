//! Deadlines of work cut into steps that run one after the other: a text request runs one
//! token per step (S7), so a frame never waits behind a whole answer.
//!
//! The request has one deadline. If every step carried it, earliest-deadline-first would
//! run each step after every job due sooner, however little time the request has left,
//! and its last tokens would miss. Each step is instead due at the latest finish that
//! still leaves the steps after it time to run back to back: the request's deadline less
//! their predicted cost (the deadline modification for jobs with precedence constraints,
//! Chetto, Silly and Bouchentouf, Real-Time Systems 2(3), 1990). While the request has
//! slack its steps sort behind frames; as the slack runs out they move ahead of them.

use crate::time::Nanos;

/// The deadline of a step of a chain due at `chain_deadline`, with `steps_after` steps of
/// predicted cost `step_cost` still to run after it. Never later than the chain's own
/// deadline, and never before the step could finish if it started `now`: a chain already
/// behind gets the most urgent deadline it can meet, not one in the past.
pub fn step_deadline(
    now: Nanos,
    chain_deadline: Nanos,
    steps_after: u32,
    step_cost: Nanos,
) -> Nanos {
    let after = step_cost.saturating_mul(u64::from(steps_after));
    chain_deadline
        .saturating_sub(after)
        .max(now.saturating_add(step_cost))
        .min(chain_deadline)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MS: Nanos = 1_000_000;

    #[test]
    fn a_step_is_due_when_the_steps_after_it_still_fit_before_the_chain_deadline() {
        // 10 steps of 50 ms after this one, the chain due at 4 s.
        assert_eq!(step_deadline(0, 4_000 * MS, 10, 50 * MS), 3_500 * MS);
        assert_eq!(
            step_deadline(0, 4_000 * MS, 0, 50 * MS),
            4_000 * MS,
            "the last step"
        );
    }

    #[test]
    fn a_chain_behind_its_pace_gets_the_earliest_deadline_it_can_meet() {
        assert_eq!(
            step_deadline(3_900 * MS, 4_000 * MS, 10, 50 * MS),
            3_950 * MS
        );
        // Past the chain's deadline the step keeps it (it is late whatever runs).
        assert_eq!(
            step_deadline(4_100 * MS, 4_000 * MS, 3, 50 * MS),
            4_000 * MS
        );
    }

    proptest! {
        #[test]
        fn never_after_the_chain_and_later_with_fewer_steps_left(
            now in 0u64..10_000_000_000,
            deadline in 0u64..20_000_000_000,
            after in 0u32..1_000,
            cost in 0u64..1_000_000_000,
        ) {
            let d = step_deadline(now, deadline, after, cost);
            prop_assert!(d <= deadline);
            prop_assert!(d >= deadline.min(now.saturating_add(cost)));
            if after > 0 {
                prop_assert!(step_deadline(now, deadline, after - 1, cost) >= d);
            }
        }
    }
}
