//! Thread grants that have to pay for themselves.
//!
//! A step granted more than one intra-op thread ([`super::thread_grant`]) bets that the
//! other cores stay free while it runs: the engines' threads wait for each other at every
//! operation (llama.cpp and ggml), so when another thread lands on one of their cores the
//! whole step runs at the pace of the thread that shares its core, and far slower than on
//! one thread. On a loaded device (`scenarios/bench/overload.toml`) such steps took 0.2 to
//! 1.7 s instead of about 30 ms, in every round, holding a worker the frames needed.
//!
//! So a grant is judged by its outcome: a granted step that took longer than its class is
//! predicted to take (the cost model's figure, which one-thread steps dominate) while
//! another step started beside it lost its bet, and no step is granted more than one
//! thread for the next [`WITHHOLD_NANOS`]. A step that overran alone says nothing about
//! contention: a 64-token prompt step over the API costs several decoding steps, and the
//! prediction is the class's.
//!
//! A step that waits for the granted step's call does not share its cores: the requests of
//! one batch decoder ([`crate::sched::Work::one_call_at_a_time`]) take the tokens the
//! leading step decodes for them, and a step of theirs that starts beside it blocks until
//! that call ends. Counting such steps as contention withheld every grant after the first
//! concurrent chats (`bench serve` with `--text-batch`: a lone request then decoded on one
//! thread, 27.7–29.8 tokens/s, against 39.0–43.5 since).
//!
//! Why that long: the bets are lopsided. A grant that pays saves a few milliseconds of a
//! decoding step; one that loses costs hundreds (on `overload.toml` 33–60 steps a round
//! were granted and 3–5 overran by 0.3–0.8 s while grants were withheld for only 1 s after
//! each). A minute bounds the loss to about one overrun a minute on a busy device, while a
//! quiet one, whose grants never overrun, keeps its faster steps. (No step is granted
//! while a periodic stream is booked at all: [`super::thread_grant`].)

use std::collections::HashMap;

use mmsched_core::arbiter::{ClassId, JobId};
use mmsched_core::time::Nanos;

/// How long grants are withheld after a granted step overran.
pub const WITHHOLD_NANOS: Nanos = 60_000_000_000;

/// A granted step in flight.
#[derive(Debug, Clone, Copy)]
struct Granted {
    /// What its class is predicted to cost.
    predicted: Nanos,
    /// Whether a step that computes beside it started while it ran.
    shared: bool,
    /// Its class, when that class's calls run one at a time (its steps wait for it).
    serial: Option<ClassId>,
}

/// Granted steps in flight and whether grants are withheld.
#[derive(Debug, Clone, Default)]
pub struct GrantWithdrawal {
    /// Granted steps in flight.
    in_flight: HashMap<JobId, Granted>,
    /// No step is granted more than one thread before this.
    withheld_until: Nanos,
    /// Steps granted more than one thread, and how many of them overran.
    granted: u64,
    overran: u64,
}

impl GrantWithdrawal {
    /// Whether a step starting at `now_nanos` may be granted more than one thread.
    pub fn allows(&self, now_nanos: Nanos) -> bool {
        now_nanos >= self.withheld_until
    }

    /// `job`'s step started with more than one thread; `predicted_nanos` is what its class
    /// is predicted to cost; `serial`: its class, if that class's calls run one at a time.
    pub fn started(&mut self, job: JobId, predicted_nanos: Nanos, serial: Option<ClassId>) {
        self.granted += 1;
        self.in_flight.insert(
            job,
            Granted {
                predicted: predicted_nanos,
                shared: false,
                serial,
            },
        );
    }

    /// Another step, of `class`, started (on any worker): every granted step in flight
    /// now shares the cores with it, but those of `class` when its calls run one at a time
    /// (the step waits for theirs).
    pub fn other_started(&mut self, class: ClassId) {
        for g in self.in_flight.values_mut() {
            if g.serial != Some(class) {
                g.shared = true;
            }
        }
    }

    /// `job`'s step never ran (its worker was gone).
    pub fn abandoned(&mut self, job: JobId) {
        self.in_flight.remove(&job);
    }

    /// `job`'s step ran from `started_nanos` to `ended_nanos` (any step: those not granted
    /// are ignored).
    pub fn ended(&mut self, job: JobId, started_nanos: Nanos, ended_nanos: Nanos) {
        let Some(g) = self.in_flight.remove(&job) else {
            return;
        };
        if g.shared && ended_nanos.saturating_sub(started_nanos) > g.predicted {
            self.overran += 1;
            self.withheld_until = ended_nanos.saturating_add(WITHHOLD_NANOS);
        }
    }

    /// A run note: how many steps were granted more than one thread and how many of them
    /// took longer than predicted beside another step (`None` when none was granted).
    pub fn note(&self) -> Option<String> {
        (self.granted > 0).then(|| {
            format!(
                "thread grants: {} step(s) granted more than one thread, {} took longer than \
                 predicted beside another step (grants are then withheld for {} s)",
                self.granted,
                self.overran,
                WITHHOLD_NANOS / 1_000_000_000
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Nanos = 1_000_000_000;
    const MS: Nanos = 1_000_000;

    #[test]
    fn a_grant_that_pays_keeps_grants_and_one_that_overruns_beside_another_step_withholds_them() {
        let mut g = GrantWithdrawal::default();
        assert!(g.allows(0));
        g.started(JobId(1), 40 * MS, None);
        g.ended(JobId(1), 0, 40 * MS);
        assert!(g.allows(40 * MS), "a step within its prediction paid");
        g.started(JobId(2), 40 * MS, None);
        g.ended(JobId(2), S, S + 900 * MS);
        assert!(
            g.allows(S + 900 * MS),
            "it overran alone: a long step, no contention"
        );
        g.started(JobId(3), 40 * MS, None);
        g.other_started(ClassId(0));
        g.ended(JobId(3), S, S + 900 * MS);
        assert!(!g.allows(S + 900 * MS), "a step slower than predicted lost");
        assert!(!g.allows(S + 900 * MS + WITHHOLD_NANOS - 1));
        assert!(g.allows(S + 900 * MS + WITHHOLD_NANOS));
        assert_eq!(
            g.note().as_deref(),
            Some(
                "thread grants: 3 step(s) granted more than one thread, 1 took longer than \
                 predicted beside another step (grants are then withheld for 60 s)"
            )
        );
    }

    #[test]
    fn steps_not_granted_or_abandoned_are_ignored() {
        let mut g = GrantWithdrawal::default();
        g.ended(JobId(7), 0, 10 * S);
        g.started(JobId(8), MS, None);
        g.other_started(ClassId(0));
        g.abandoned(JobId(8));
        g.ended(JobId(8), 0, 10 * S);
        assert!(g.allows(0));
        assert_eq!(
            g.note().as_deref(),
            Some(
                "thread grants: 1 step(s) granted more than one thread, 0 took longer than \
                 predicted beside another step (grants are then withheld for 60 s)"
            )
        );
    }

    #[test]
    fn a_step_waiting_for_a_granted_call_of_its_own_class_is_no_contention() {
        // The requests of one batch decoder (class 3): one leads a call on every thread,
        // another's step starts and waits for that call's token.
        let batch = ClassId(3);
        let mut g = GrantWithdrawal::default();
        g.started(JobId(1), 20 * MS, Some(batch));
        g.other_started(batch);
        g.ended(JobId(1), 0, 90 * MS);
        assert!(
            g.allows(90 * MS),
            "the waiting step computed nothing beside it"
        );
        // A step of another class computes beside it: the grant lost its bet.
        g.started(JobId(2), 20 * MS, Some(batch));
        g.other_started(ClassId(4));
        g.ended(JobId(2), S, S + 90 * MS);
        assert!(!g.allows(S + 90 * MS));
        // A class whose calls do not run one at a time competes with its own kind.
        let mut g = GrantWithdrawal::default();
        g.started(JobId(3), 20 * MS, None);
        g.other_started(batch);
        g.ended(JobId(3), 0, 90 * MS);
        assert!(!g.allows(90 * MS));
    }
}
