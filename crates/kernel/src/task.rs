//! Task control blocks, task ids and the 32 priority levels.

/// The number of priority levels: one bit each in the ready-queue bitmap.
pub const PRIORITY_LEVELS: usize = 32;

/// Marks "no task" in the fixed-size link arrays of the ready and timer queues.
pub(crate) const NO_TASK: u8 = u8::MAX;

/// A task's index in the kernel's fixed TCB array.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TaskId(pub(crate) u8);

impl TaskId {
    /// The index of the task's control block (0-based, in spawn order).
    pub fn index(self) -> usize {
        usize::from(self.0)
    }
}

/// A SCHED_FIFO priority level in `0..=31`; **higher numbers run first**, as with Linux
/// `SCHED_FIFO`, so the same policy numbers mean the same thing on both sides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Priority(u8);

impl Priority {
    /// The lowest level.
    pub const MIN: Priority = Priority(0);
    /// The highest level.
    pub const MAX: Priority = Priority((PRIORITY_LEVELS - 1) as u8);

    /// The level `level`, or `None` when it is not in `0..=31`.
    pub const fn new(level: u8) -> Option<Priority> {
        if (level as usize) < PRIORITY_LEVELS {
            Some(Priority(level))
        } else {
            None
        }
    }

    /// The level as a number in `0..=31`.
    pub const fn level(self) -> u8 {
        self.0
    }
}

/// Where a task is in its life cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskState {
    /// The TCB is unused.
    Free,
    /// Runnable, waiting in the ready queue.
    Ready,
    /// On the CPU.
    Running,
    /// Waiting in the timer queue for its wake-up time, or for an explicit wake.
    Sleeping,
}

/// A task control block: what the kernel knows about one task.
///
/// Deliberately small (8 bytes on RV32): the queue links and wake-up times live in the
/// ready and timer queues, which own them, so each structure's RAM is its own.
#[derive(Debug, Clone, Copy)]
pub struct Tcb {
    /// The saved stack pointer of a task that is not running (its register frame sits on
    /// its own stack); owned by the platform layer, opaque to the kernel.
    pub context: usize,
    pub(crate) priority: Priority,
    pub(crate) state: TaskState,
}

impl Tcb {
    /// An unused control block.
    pub const FREE: Tcb = Tcb {
        context: 0,
        priority: Priority::MIN,
        state: TaskState::Free,
    };

    /// The task's priority.
    pub fn priority(&self) -> Priority {
        self.priority
    }

    /// The task's state.
    pub fn state(&self) -> TaskState {
        self.state
    }
}
