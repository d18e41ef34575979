//! Task control blocks, task ids and the 32 priority levels.

/// The number of priority levels: one bit each in the ready-queue bitmap.
pub const PRIORITY_LEVELS: usize = 32;

/// Marks "no task" in the fixed-size link arrays of the ready and timer queues.
pub(crate) const NO_TASK: u8 = u8::MAX;

/// A task's index in the kernel's fixed TCB array.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TaskId(pub(crate) u8);

impl TaskId {
    /// The task with control block `index` (spawn order). An id the kernel never handed out
    /// names no task, and calls given it do nothing.
    pub const fn from_index(index: u8) -> TaskId {
        TaskId(index)
    }

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
    /// Waiting, with no time limit, for a notification (from an interrupt handler or a
    /// task); see [`Kernel::wait`](crate::Kernel::wait).
    Waiting,
}

/// A task control block: what the kernel knows about one task.
///
/// Deliberately small (8 bytes on RV32, so indexing is a shift): the queue links and wake-up times live in the
/// ready and timer queues, which own them, so each structure's RAM is its own.
#[derive(Debug, Clone, Copy)]
pub struct Tcb {
    /// The saved stack pointer of a task that is not running (its register frame sits on
    /// its own stack); owned by the platform layer, opaque to the kernel.
    pub context: usize,
    /// The level the task runs and queues at: its own priority, raised to the ceiling of
    /// the locks it holds (immediate priority ceiling).
    pub(crate) effective: Priority,
    /// The priority it was spawned with.
    pub(crate) priority: Priority,
    pub(crate) state: TaskState,
    /// Bits 0–6: the critical sections the task is inside (it may not sleep, wait or yield
    /// in one); bit 7 ([`NOTIFIED`]): a notification arrived while the task was not
    /// waiting, so its next wait returns at once.
    pub(crate) flags: u8,
}

/// [`Tcb::flags`]: a notification is pending.
pub(crate) const NOTIFIED: u8 = 0x80;
/// [`Tcb::flags`]: the critical-section depth.
pub(crate) const LOCK_DEPTH: u8 = 0x7f;

impl Tcb {
    /// An unused control block.
    pub const FREE: Tcb = Tcb {
        context: 0,
        effective: Priority::MIN,
        priority: Priority::MIN,
        state: TaskState::Free,
        flags: 0,
    };

    /// A ready task at `priority`, outside any critical section.
    pub(crate) const fn ready(priority: Priority) -> Tcb {
        Tcb {
            context: 0,
            effective: priority,
            priority,
            state: TaskState::Ready,
            flags: 0,
        }
    }

    /// The task's own priority (as spawned).
    pub fn priority(&self) -> Priority {
        self.priority
    }

    /// The level it runs at now: its priority, or the ceiling of a lock it holds if higher.
    pub fn effective_priority(&self) -> Priority {
        self.effective
    }

    /// How many critical sections it is inside.
    pub fn locks_held(&self) -> u8 {
        self.flags & LOCK_DEPTH
    }

    /// The task's state.
    pub fn state(&self) -> TaskState {
        self.state
    }
}
