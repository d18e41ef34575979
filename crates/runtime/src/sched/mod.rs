//! The scheduler side of the runtime: the unit of work ([`work`]), cost prediction
//! ([`cost`]), worker threads ([`worker`]) and the executors that decide which work runs
//! where ([`exec`]): mmsched's own, driven by the core's shared decision step
//! ([`mmsched_core::scheduler::Scheduler::step`], the one the simulator drives), and the
//! three baselines people compare against. [`virtual_time`] runs mmsched's executor
//! without threads or sleeping, for tests of the loops that drive it.

pub mod cost;
pub mod dist;
pub mod exec;
pub mod lanes;
pub mod virtual_time;
pub mod work;
pub mod worker;

pub use exec::{ExecEvent, Executor, MmschedControl, SchedulerKind, Task, TaskInfo};
pub use work::{StepOutcome, Work, WorkError};
pub use worker::{Completion, LaneConfig, WorkerPool};
