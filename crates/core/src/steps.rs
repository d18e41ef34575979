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
//!
//! The runtime's book of jobs and the simulator both track a job as a [`Chain`]: the next
//! step's deadline, whether it is committed (a step before it ran), and what a shed step
//! becomes — it ends the chain, or (a started chain, or one that keeps its place) waits
//! [`RETRY_NANOS`] and competes again until the chain's deadline ([`Chain::when_shed`],
//! [`Chain::when_deferred`]).

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
    latest_finish(now, chain_deadline, step_cost, after)
}

/// The deadline of a step of cost `step_cost` of a chain due at `chain_deadline` whose
/// steps after it are predicted to cost `after` in all (steps of unequal cost, such as a
/// transcription's encoder layers and its decoding): the chain's deadline less `after`,
/// bounded as [`step_deadline`] bounds it.
pub fn latest_finish(now: Nanos, chain_deadline: Nanos, step_cost: Nanos, after: Nanos) -> Nanos {
    chain_deadline
        .saturating_sub(after)
        .max(now.saturating_add(step_cost))
        .min(chain_deadline)
}

/// How long a shed step that competes again ([`WhenShed::Retry`]) waits before it does.
pub const RETRY_NANOS: Nanos = 20_000_000;

/// What becomes of a shed step of a chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhenShed {
    /// It waits and competes again: shedding it would throw away the steps before it (or
    /// the request keeps its place), and its deadline still allows.
    Retry,
    /// The chain ends shed.
    Drop,
}

/// What a shed step waiting to compete again does at a given time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deferred {
    /// Its retry is not due yet.
    Wait,
    /// It competes again.
    Retry,
    /// Its chain's deadline has passed: the chain ends shed.
    Shed,
}

/// One job cut into steps, as the runtime's book of jobs and the simulator both track it:
/// how many steps may still follow the next one, whether one has run (the later ones are
/// then committed: admission never sheds them, [`crate::arbiter::Job::committed`]), and what
/// a shed step means. A one-step job is a chain with nothing after its step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chain {
    /// The chain's own deadline.
    pub deadline_nanos: Nanos,
    /// Steps that may still run after the next one.
    pub steps_after: u32,
    /// Whether a step has run.
    pub started: bool,
    /// Whether a shed first step keeps its place and competes again (a stream's text
    /// request) instead of ending the chain (an outside client's, told to retry).
    pub keeps_place: bool,
}

impl Chain {
    /// A chain due at `deadline_nanos` of at most `steps` steps (at least one).
    pub fn new(deadline_nanos: Nanos, steps: u32, keeps_place: bool) -> Self {
        Self {
            deadline_nanos,
            steps_after: steps.max(1) - 1,
            started: false,
            keeps_place,
        }
    }

    /// The deadline of the next step at `now`, each step predicted to cost `step_cost`:
    /// spread over the steps after it ([`step_deadline`]) when `spread`, else the chain's.
    pub fn next_deadline(&self, now: Nanos, step_cost: Nanos, spread: bool) -> Nanos {
        if spread {
            step_deadline(now, self.deadline_nanos, self.steps_after, step_cost)
        } else {
            self.deadline_nanos
        }
    }

    /// Whether the next step is committed (a step before it has run).
    pub fn committed(&self) -> bool {
        self.started
    }

    /// A step ran and completed `steps` of the chain (a prompt chunk completes none).
    pub fn ran(&mut self, steps: u32) {
        self.started = true;
        self.steps_after = self.steps_after.saturating_sub(steps);
    }

    /// What a step shed at `now` becomes, while the runtime takes work (`open`). A step
    /// that retries waits [`RETRY_NANOS`].
    pub fn when_shed(&self, now: Nanos, open: bool) -> WhenShed {
        if open && (self.started || self.keeps_place) && now < self.deadline_nanos {
            WhenShed::Retry
        } else {
            WhenShed::Drop
        }
    }

    /// What a shed step whose retry is due at `retry_at` does at `now`: past the chain's
    /// deadline the chain ends shed, whether or not the retry was due.
    pub fn when_deferred(&self, now: Nanos, retry_at: Nanos) -> Deferred {
        if now >= self.deadline_nanos {
            Deferred::Shed
        } else if now >= retry_at {
            Deferred::Retry
        } else {
            Deferred::Wait
        }
    }

    /// The first time a shed step whose retry is due at `retry_at` does something other
    /// than wait ([`Chain::when_deferred`]): its retry, or the chain's deadline if sooner.
    pub fn deferred_until(&self, retry_at: Nanos) -> Nanos {
        retry_at.min(self.deadline_nanos)
    }
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
    fn steps_of_unequal_cost_are_due_when_the_rest_after_them_fits() {
        // A 2 s transcription due at 10 s, 1.5 s of encoder and decoding after this step.
        assert_eq!(latest_finish(0, 10_000, 200, 1_500), 8_500);
        // Past its pace: the earliest it can meet, never later than the chain's deadline.
        assert_eq!(latest_finish(9_000, 10_000, 200, 1_500), 9_200);
        assert_eq!(latest_finish(9_900, 10_000, 200, 0), 10_000);
        // The same as equal steps when the rest is their sum.
        assert_eq!(
            latest_finish(0, 10_000, 100, 300),
            step_deadline(0, 10_000, 3, 100)
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

    #[test]
    fn a_started_chain_retries_a_shed_step_until_its_deadline_and_commits_the_rest() {
        let mut c = Chain::new(1_000 * MS, 3, false);
        assert_eq!(c.steps_after, 2);
        assert!(!c.committed());
        assert_eq!(
            c.when_shed(0, true),
            WhenShed::Drop,
            "not started, no place kept"
        );
        assert_eq!(c.next_deadline(0, 100 * MS, true), 800 * MS);
        assert_eq!(c.next_deadline(0, 100 * MS, false), 1_000 * MS);
        c.ran(0);
        assert!(c.committed(), "a prompt chunk ran");
        assert_eq!(c.steps_after, 2);
        c.ran(1);
        assert_eq!(c.when_shed(500 * MS, true), WhenShed::Retry);
        assert_eq!(
            c.when_shed(1_000 * MS, true),
            WhenShed::Drop,
            "past its deadline"
        );
        assert_eq!(c.when_shed(500 * MS, false), WhenShed::Drop, "draining");
        let kept = Chain::new(1_000 * MS, 1, true);
        assert_eq!(kept.steps_after, 0);
        assert_eq!(kept.when_shed(0, true), WhenShed::Retry);
    }

    #[test]
    fn a_deferred_step_waits_for_its_retry_and_is_shed_at_the_chain_deadline() {
        let c = Chain::new(1_000 * MS, 4, true);
        let retry_at = 500 * MS + RETRY_NANOS;
        assert_eq!(c.when_deferred(500 * MS, retry_at), Deferred::Wait);
        assert_eq!(c.when_deferred(retry_at, retry_at), Deferred::Retry);
        assert_eq!(c.deferred_until(retry_at), retry_at);
        // A retry due after the deadline: shed at the deadline, not at the retry.
        let late_retry = 990 * MS + RETRY_NANOS;
        assert_eq!(c.deferred_until(late_retry), 1_000 * MS);
        assert_eq!(c.when_deferred(1_000 * MS, late_retry), Deferred::Shed);
        assert_eq!(c.when_deferred(2_000 * MS, 0), Deferred::Shed);
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

        #[test]
        fn a_deferred_step_acts_by_its_retry_or_the_deadline_and_never_retries_late(
            now in 0u64..10_000_000_000,
            deadline in 0u64..10_000_000_000,
            retry_at in 0u64..10_000_000_000,
        ) {
            let c = Chain::new(deadline, 8, true);
            let until = c.deferred_until(retry_at);
            prop_assert_ne!(c.when_deferred(until, retry_at), Deferred::Wait);
            match c.when_deferred(now, retry_at) {
                Deferred::Wait => prop_assert!(now < until),
                Deferred::Retry => prop_assert!(now >= retry_at && now < deadline),
                Deferred::Shed => prop_assert!(now >= deadline),
            }
        }
    }
}
