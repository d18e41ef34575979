//! The dynamic priority arbitration engine (S2).
//!
//! Every scheduling period each runnable job gets a score in [0, 1]:
//!
//! ```text
//! score = w_d · normalize(1/δ) + w_i · γ + w_b · (η / η_max)
//! ```
//!
//! with the weights from the policy (defaults 0.45 / 0.35 / 0.20), δ the job's remaining
//! slack (time to its deadline), γ its semantic importance and η/η_max the battery
//! fraction. [`Arbiter`] computes it (one job, or a full re-evaluation of a job set),
//! together with the two pruning rules: battery saver (heavy classes disabled below a
//! battery threshold) and the SLA-risk boost of the deadline weight.
//!
//! Where the score is used, following real-time theory: the score is not
//! deadline-monotone, so dispatching by it loses EDF's guarantee (on one preemptive
//! worker EDF meets every deadline while utilisation ≤ 1). The score therefore drives
//! **admission and shedding under overload** ([`Admission`]), and admitted jobs are
//! **dispatched by the policy's [`DispatchRule`]** from a [`ReadyQueue`]: earliest
//! deadline first by default, the score as the alternative so that the two can be
//! compared ([`sim`] measures both).

mod admission;
mod job;
mod ready;
mod score;
pub mod sim;

pub use crate::policy::DispatchRule;
pub use admission::{Admission, Verdict};
pub use job::{ClassId, Job, JobId};
pub use ready::{QueuedJob, ReadyQueue};
pub use score::{Arbiter, Assessment, MIN_SLACK_NANOS, UrgencyBounds, Weights};

#[cfg(test)]
mod tests;
