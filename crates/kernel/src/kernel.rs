//! The SCHED_FIFO rules: which task runs, and what sleeping, yielding and waking do.
//!
//! The rules are those of Linux `SCHED_FIFO`, so a policy means the same on both sides:
//!
//! 1. the running task is always one of the highest-priority ready tasks;
//! 2. within a level, tasks run in the order they became ready (FIFO), and a running task
//!    keeps the CPU until it sleeps, yields or a strictly higher level becomes ready;
//! 3. a task preempted by a higher level returns to the **head** of its level;
//! 4. a task that yields, or wakes up, goes to the **tail** of its level.
//!
//! Shared data is protected by the immediate priority ceiling protocol ([`crate::lock`]): a
//! task inside a critical section runs (and queues) at the lock's ceiling, so no other user
//! of the lock can start until it leaves. Tasks also wait for notifications from interrupt
//! handlers ([`Kernel::wait`], [`Kernel::notify`]), which is how a device wakes a task.
//!
//! There is no priority inheritance and there are no user timers (S14). The kernel never
//! reads a clock: every call that depends on time is handed `now_ticks`, and the caller arms
//! the hardware timer for [`Kernel::next_alarm`]. That makes every rule testable on the host.

use core::fmt;

use crate::ready::ReadyQueue;
use crate::task::{LOCK_DEPTH, NO_TASK, NOTIFIED, Priority, TaskId, TaskState, Tcb};
use crate::timer::{MAX_SLEEP_TICKS, TimerQueue, tick_reached};

/// Why a kernel call was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KernelError {
    /// Every task control block is in use; the capacity is the kernel's `N`.
    TooManyTasks {
        /// The capacity.
        capacity: usize,
    },
    /// A sleep longer than the wrap-around-safe range of the 32-bit tick counter.
    SleepTooLong {
        /// The requested sleep, in ticks.
        ticks: u32,
    },
    /// A task-level call (sleep, yield, wait, lock) was made while no task is running.
    NoCurrentTask,
    /// A sleep, wait or yield inside a critical section: the section would block every
    /// task up to the lock's ceiling for an unbounded time.
    LockHeld,
    /// Critical sections nested deeper than 127.
    LocksTooDeep,
    /// A task locked a resource whose ceiling is below its own priority, so the ceiling
    /// would not keep the other users out.
    CeilingTooLow {
        /// The lock's ceiling level.
        ceiling: u8,
        /// The calling task's priority level.
        priority: u8,
    },
}

impl fmt::Display for KernelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KernelError::TooManyTasks { capacity } => write!(
                f,
                "all {capacity} task control blocks are in use; build the kernel with a larger capacity"
            ),
            KernelError::SleepTooLong { ticks } => write!(
                f,
                "a sleep of {ticks} ticks exceeds the maximum of {MAX_SLEEP_TICKS}; sleep in shorter steps"
            ),
            KernelError::NoCurrentTask => {
                f.write_str("no task is running; sleep, wait, yield and lock are task calls")
            }
            KernelError::LockHeld => f.write_str(
                "a task may not sleep, wait or yield inside a critical section; leave the lock first",
            ),
            KernelError::LocksTooDeep => {
                f.write_str("critical sections nest at most 127 deep; take fewer locks at once")
            }
            KernelError::CeilingTooLow { ceiling, priority } => write!(
                f,
                "a task of priority {priority} locked a resource with ceiling {ceiling}; \
                 the ceiling must be at least the priority of every task that locks it"
            ),
        }
    }
}

/// Counters that show what the kernel did (printed by the demo, checked by tests).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Timer interrupts taken.
    pub timer_interrupts: u32,
    /// Timer interrupts that woke no task: a tickless kernel takes none.
    pub idle_tick_interrupts: u32,
    /// Times the running task changed (to or from idle included).
    pub context_switches: u32,
}

/// The scheduler for up to `N` tasks (`N` ≤ 255), with no heap: all state is in this value,
/// which the platform keeps in a `static`.
#[derive(Debug, Clone)]
pub struct Kernel<const N: usize> {
    tcbs: [Tcb; N],
    spawned: u8,
    ready: ReadyQueue<N>,
    timers: TimerQueue<N>,
    current: u8,
    /// A task above the running one became ready without a switch: the next
    /// [`schedule_if_needed`](Kernel::schedule_if_needed) must decide.
    resched: bool,
    stats: Stats,
}

impl<const N: usize> Default for Kernel<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> Kernel<N> {
    /// A kernel with no tasks, running idle.
    pub const fn new() -> Self {
        assert!(N < NO_TASK as usize, "at most 254 tasks");
        Self {
            tcbs: [Tcb::FREE; N],
            spawned: 0,
            ready: ReadyQueue::new(),
            timers: TimerQueue::new(),
            current: NO_TASK,
            resched: false,
            stats: Stats {
                timer_interrupts: 0,
                idle_tick_interrupts: 0,
                context_switches: 0,
            },
        }
    }

    /// Creates a task at `priority`; it is ready at once (at the tail of its level) and runs
    /// at the next [`schedule`](Self::schedule) that finds it highest.
    pub fn spawn(&mut self, priority: Priority) -> Result<TaskId, KernelError> {
        let i = usize::from(self.spawned);
        let tcb = self
            .tcbs
            .get_mut(i)
            .ok_or(KernelError::TooManyTasks { capacity: N })?;
        *tcb = Tcb::ready(priority);
        let id = TaskId(self.spawned);
        self.spawned += 1;
        self.ready.push_back(id, priority);
        Ok(id)
    }

    /// The running task, or `None` while idle.
    pub fn current(&self) -> Option<TaskId> {
        match self.current {
            NO_TASK => None,
            c => Some(TaskId(c)),
        }
    }

    /// The control block of `task`.
    #[inline(always)]
    pub fn tcb(&self, task: TaskId) -> &Tcb {
        &self.tcbs[task.index()]
    }

    /// The control block of `task`, for the platform to save its context pointer.
    #[inline(always)]
    pub fn tcb_mut(&mut self, task: TaskId) -> &mut Tcb {
        &mut self.tcbs[task.index()]
    }

    /// Stores `context` (a saved stack pointer) in the running task's control block; `false`
    /// when no task runs (the platform keeps the idle context itself).
    #[inline(always)]
    pub fn save_context(&mut self, context: usize) -> bool {
        match self.current {
            NO_TASK => false,
            c => {
                self.tcbs[usize::from(c) % N].context = context;
                true
            }
        }
    }

    /// The saved context of the running task, `None` while idle.
    #[inline(always)]
    pub fn current_context(&self) -> Option<usize> {
        match self.current {
            NO_TASK => None,
            c => Some(self.tcbs[usize::from(c) % N].context),
        }
    }

    /// The ready queue (read-only, for diagnostics and tests).
    pub fn ready_queue(&self) -> &ReadyQueue<N> {
        &self.ready
    }

    /// What the kernel has done so far.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// The time the hardware timer must be armed for, or `None` to leave it off: the only
    /// timer interrupt the kernel ever asks for is the next wake-up.
    pub fn next_alarm(&self) -> Option<u32> {
        self.timers.next_deadline()
    }

    /// Picks the task that runs now and makes it current; `None` means idle.
    ///
    /// Call after every event (sleep, yield, wake, timer interrupt). A running task keeps
    /// the CPU unless a level strictly above its effective priority is ready, in which case
    /// it goes back to the head of that level.
    #[inline(never)]
    pub fn schedule(&mut self) -> Option<TaskId> {
        self.resched = false;
        // One find-first-set serves both the preemption test and the pick: putting the
        // preempted task back at its own (lower) level does not change the highest level.
        let prev = self.current;
        let Some(h) = self.ready.highest() else {
            return match prev {
                NO_TASK => None,
                c if self.tcbs[usize::from(c) % N].state == TaskState::Running => Some(TaskId(c)),
                _ => self.switch_to(NO_TASK),
            };
        };
        if prev != NO_TASK {
            let tcb = &mut self.tcbs[usize::from(prev) % N];
            if tcb.state == TaskState::Running {
                if h <= tcb.effective {
                    return Some(TaskId(prev));
                }
                tcb.state = TaskState::Ready;
                self.ready.push_front_inline(TaskId(prev), tcb.effective);
            }
        }
        let next = self.ready.pop_level(h);
        self.tcbs[next.index() % N].state = TaskState::Running;
        self.switch_to(next.0)
    }

    /// Makes `next` (a task index or `NO_TASK`) current, counting the switch.
    #[inline(always)]
    fn switch_to(&mut self, next: u8) -> Option<TaskId> {
        if next != self.current {
            self.stats.context_switches = self.stats.context_switches.wrapping_add(1);
        }
        self.current = next;
        self.current()
    }

    pub(crate) fn running(&self) -> Result<usize, KernelError> {
        match self.current {
            NO_TASK => Err(KernelError::NoCurrentTask),
            c => Ok(usize::from(c)),
        }
    }

    /// The running task's index when it may block (it holds no lock).
    fn running_unlocked(&self) -> Result<usize, KernelError> {
        let c = self.running()?;
        if self.tcbs[c].flags & LOCK_DEPTH != 0 {
            return Err(KernelError::LockHeld);
        }
        Ok(c)
    }

    pub(crate) fn tcbs_mut(&mut self) -> &mut [Tcb; N] {
        &mut self.tcbs
    }

    /// Puts the running task to sleep until `deadline_ticks`. A deadline already reached
    /// at `now_ticks` is not a sleep at all (the task keeps running), so no wake-up can be
    /// lost to a late call. Follow with [`schedule`](Self::schedule) and re-arm the timer.
    #[inline(never)]
    pub fn sleep_until(&mut self, now_ticks: u32, deadline_ticks: u32) -> Result<(), KernelError> {
        let c = self.running_unlocked()?;
        if tick_reached(deadline_ticks, now_ticks) {
            return Ok(());
        }
        let ticks = deadline_ticks.wrapping_sub(now_ticks);
        if ticks > MAX_SLEEP_TICKS {
            return Err(KernelError::SleepTooLong { ticks });
        }
        self.tcbs[c].state = TaskState::Sleeping;
        self.timers.insert(TaskId(c as u8), deadline_ticks);
        Ok(())
    }

    /// Puts the running task to sleep for `ticks` from `now_ticks`.
    pub fn sleep_for(&mut self, now_ticks: u32, ticks: u32) -> Result<(), KernelError> {
        if ticks > MAX_SLEEP_TICKS {
            return Err(KernelError::SleepTooLong { ticks });
        }
        self.sleep_until(now_ticks, now_ticks.wrapping_add(ticks))
    }

    /// Moves the running task to the tail of its level (`sched_yield`). Follow with
    /// [`schedule`](Self::schedule).
    pub fn yield_now(&mut self) -> Result<(), KernelError> {
        let c = self.running_unlocked()?;
        let tcb = &mut self.tcbs[c];
        tcb.state = TaskState::Ready;
        self.ready.push_back(TaskId(c as u8), tcb.priority);
        Ok(())
    }

    /// `sched_yield` and the scheduling decision in one step, for the platform's yield fast
    /// path: stores `context` (the running task's saved context) in its TCB and returns the
    /// context to resume, or `None` when the yield is refused (no task is running, or it is
    /// inside a critical section; nothing changes, [`yield_now`](Self::yield_now) says why). The answer is two registers wide, so it comes back without a memory round
    /// trip. That is the next task of the same level when it has one (the
    /// yielding task goes to the tail), `context` itself when it has none (it keeps
    /// running), and whatever [`schedule`](Self::schedule) picks in the general case.
    ///
    /// Equivalent to [`yield_now`](Self::yield_now) followed by `schedule`. Since the
    /// running task is always one of the highest ready tasks, the level's list is rotated
    /// without a find-first-set; only when a higher level became ready without a
    /// `schedule` since (a task spawned from a task) does it take the general path.
    #[inline(never)]
    pub fn yield_switch(&mut self, context: usize) -> Option<usize> {
        let c = self.current;
        if c == NO_TASK {
            return None;
        }
        let tcb = &mut self.tcbs[usize::from(c) % N];
        if tcb.flags & LOCK_DEPTH != 0 {
            return None;
        }
        tcb.context = context;
        let prio = tcb.priority;
        if self.ready.any_above(prio) {
            return Some(self.yield_general(c, context));
        }
        // The running task is among the highest: rotate its level.
        let Some(next) = self.ready.rotate(TaskId(c), prio) else {
            return Some(context);
        };
        tcb.state = TaskState::Ready;
        let n = &mut self.tcbs[next.index() % N];
        n.state = TaskState::Running;
        self.current = next.0;
        self.stats.context_switches = self.stats.context_switches.wrapping_add(1);
        Some(n.context)
    }

    /// The rare case of [`yield_switch`](Self::yield_switch): a higher level is ready, so
    /// the full `yield_now` and `schedule` decide (kept out of line so the fast path needs
    /// no stack frame).
    #[cold]
    #[inline(never)]
    fn yield_general(&mut self, c: u8, context: usize) -> usize {
        let tcb = &mut self.tcbs[usize::from(c) % N];
        tcb.state = TaskState::Ready;
        self.ready.push_back(TaskId(c), tcb.priority);
        match self.schedule() {
            Some(t) => self.tcbs[t.index() % N].context,
            None => context,
        }
    }

    /// Wakes a sleeping task before its time; it goes to the tail of its level. Returns
    /// `false` when the task was not sleeping. (A device interrupt usually
    /// [`notify`](Self::notify)s a waiting task instead, which cannot lose a wake-up.)
    pub fn wake(&mut self, task: TaskId) -> bool {
        let Some(tcb) = self.tcbs.get_mut(task.index()) else {
            return false;
        };
        if tcb.state != TaskState::Sleeping {
            return false;
        }
        self.timers.remove(task);
        tcb.state = TaskState::Ready;
        self.ready.push_back(task, tcb.priority);
        true
    }

    /// Puts the running task to wait for a [`notify`](Self::notify), with no time limit. A
    /// notification that arrived since its last wait is consumed instead and the task keeps
    /// running, so a wake-up sent between "the queue is empty" and "wait" is never lost.
    /// Follow with [`schedule`](Self::schedule).
    #[inline(never)]
    pub fn wait(&mut self) -> Result<(), KernelError> {
        let c = self.running_unlocked()?;
        let tcb = &mut self.tcbs[c];
        if tcb.flags & NOTIFIED != 0 {
            tcb.flags &= !NOTIFIED;
        } else {
            tcb.state = TaskState::Waiting;
        }
        Ok(())
    }

    /// Notifies `task` (from an interrupt handler or another task): a waiting task becomes
    /// ready at the tail of its level; any other task keeps the notification for its next
    /// [`wait`](Self::wait) (notifications do not count: several make one). Returns whether
    /// the task was woken. Follow with [`schedule`](Self::schedule).
    ///
    /// This is the first half of the interrupt-to-task path, so it is written for speed: the
    /// queue insertion is inlined and indices are reduced modulo `N` (ids are below `N`).
    #[inline(never)]
    pub fn notify(&mut self, task: TaskId) -> bool {
        if task.index() >= N {
            return false;
        }
        let tcb = &mut self.tcbs[task.index() % N];
        match tcb.state {
            TaskState::Waiting => {
                tcb.state = TaskState::Ready;
                self.ready.push_back_inline(task, tcb.priority);
                true
            }
            TaskState::Free => false,
            _ => {
                tcb.flags |= NOTIFIED;
                false
            }
        }
    }

    /// [`notify`](Self::notify) for interrupt handlers, with the scheduling decision folded
    /// in: when the woken task is above the running one and above every ready task (the
    /// usual case of a device waking its task), it becomes the running task at once
    /// (the preempted one goes to the head of its level), without a trip through the
    /// ready queue; otherwise it is queued, and [`schedule_if_needed`](Self::schedule_if_needed)
    /// decides. The result is exactly that of `notify` followed by
    /// [`schedule`](Self::schedule) (the host tests check it against the reference
    /// model).
    ///
    /// The caller must have saved the running task's context (the platform's trap entry
    /// does) and must resume [`current`](Self::current) afterwards: this may change it.
    #[inline(never)]
    pub fn notify_preempting(&mut self, task: TaskId) -> bool {
        if task.index() >= N {
            return false;
        }
        let w = task.index() % N;
        let state = self.tcbs[w].state;
        if state != TaskState::Waiting {
            if state != TaskState::Free {
                self.tcbs[w].flags |= NOTIFIED;
            }
            return false;
        }
        let p = self.tcbs[w].priority;
        let cur = self.current;
        let (above, running) = match cur {
            NO_TASK => (true, false),
            c => {
                let t = &self.tcbs[usize::from(c) % N];
                (p > t.effective, t.state == TaskState::Running)
            }
        };
        if above && !self.ready.any_at_or_above(p) && (running || cur == NO_TASK) {
            if running {
                let t = &mut self.tcbs[usize::from(cur) % N];
                t.state = TaskState::Ready;
                self.ready.push_front_inline(TaskId(cur), t.effective);
            }
            self.tcbs[w].state = TaskState::Running;
            self.current = task.0;
            self.stats.context_switches = self.stats.context_switches.wrapping_add(1);
        } else {
            self.tcbs[w].state = TaskState::Ready;
            self.ready.push_back_inline(task, p);
            self.resched |= above;
        }
        true
    }

    /// Whether a [`notify_preempting`](Self::notify_preempting) left the decision to
    /// [`schedule`](Self::schedule).
    #[inline(always)]
    pub fn needs_schedule(&self) -> bool {
        self.resched
    }

    /// Runs [`schedule`](Self::schedule) if a [`notify_preempting`](Self::notify_preempting)
    /// left the decision to it; returns the running task.
    #[inline(always)]
    pub fn schedule_if_needed(&mut self) -> Option<TaskId> {
        if self.resched {
            self.schedule()
        } else {
            self.current()
        }
    }

    /// Handles the timer interrupt at `now_ticks`: wakes every task whose time has come, in
    /// wake-up order (ties in the order they went to sleep), each to the tail of its level.
    /// Returns how many were woken. Follow with [`schedule`](Self::schedule) and re-arm.
    #[inline(never)]
    pub fn on_timer_interrupt(&mut self, now_ticks: u32) -> u32 {
        let mut woken = 0;
        while let Some(t) = self.timers.pop_due(now_ticks) {
            let tcb = &mut self.tcbs[t.index()];
            tcb.state = TaskState::Ready;
            self.ready.push_back(t, tcb.priority);
            woken += 1;
        }
        self.stats.timer_interrupts = self.stats.timer_interrupts.wrapping_add(1);
        if woken == 0 {
            self.stats.idle_tick_interrupts = self.stats.idle_tick_interrupts.wrapping_add(1);
        }
        woken
    }
}
