//! The scheduler: decisions ([`dispatcher`]), cost prediction ([`cost`]), the unit of work
//! ([`work`]) and the worker threads that run it ([`worker`]).
//!
//! The split keeps every decision in one place that takes time as an argument: the
//! dispatcher can be driven by the threaded loop here or stepped by hand in tests, and it
//! calls the same core functions (admission, ready queue, slot table) the simulator calls.

pub mod cost;
pub mod dispatcher;
pub mod work;
pub mod worker;

pub use dispatcher::{ClassStats, Decision, Dispatch, DispatchError, Dispatcher};
pub use work::{StepOutcome, Work, WorkError};
pub use worker::{Completion, Event, LaneConfig, SchedulerLoop, WorkerPool};
