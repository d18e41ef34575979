//! The tickless timer queue: sleeping tasks sorted by wake-up time.
//!
//! There is no periodic tick. The kernel only ever asks the hardware for one interrupt, at
//! [`TimerQueue::next_deadline`]; when it fires, every task whose time has come is woken and
//! the timer is re-armed for the new head (or switched off when nobody sleeps).
//!
//! Time is a free-running 32-bit tick counter (the low word of the machine timer) compared
//! with wrapping arithmetic, as Linux compares jiffies: `a` is before `b` when
//! `(a − b) mod 2³²`, read as a signed number, is negative. This stays correct across the
//! counter's wrap-around as long as every wake-up lies less than 2³¹ ticks ahead
//! ([`MAX_SLEEP_TICKS`]), which keeps the queue's arithmetic 32-bit on RV32.

use crate::task::{NO_TASK, TaskId};

/// The longest sleep the wrap-around-safe comparison can represent, in ticks.
pub const MAX_SLEEP_TICKS: u32 = i32::MAX as u32;

/// `true` when tick `a` comes strictly before tick `b` (wrap-around safe).
pub fn tick_before(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

/// `true` when the wake-up time `deadline_ticks` has been reached at `now_ticks`.
pub fn tick_reached(deadline_ticks: u32, now_ticks: u32) -> bool {
    !tick_before(now_ticks, deadline_ticks)
}

/// The timer queue for up to `N` tasks: a sorted intrusive list, earliest first; tasks with
/// equal wake-up times keep the order in which they went to sleep.
#[derive(Debug, Clone)]
pub struct TimerQueue<const N: usize> {
    head: u8,
    next: [u8; N],
    deadline_ticks: [u32; N],
}

impl<const N: usize> Default for TimerQueue<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> TimerQueue<N> {
    /// An empty queue.
    pub const fn new() -> Self {
        Self {
            head: NO_TASK,
            next: [NO_TASK; N],
            deadline_ticks: [0; N],
        }
    }

    /// The earliest wake-up time, which is what the hardware timer should be armed for.
    pub fn next_deadline(&self) -> Option<u32> {
        match self.head {
            NO_TASK => None,
            h => Some(self.deadline_ticks[usize::from(h)]),
        }
    }

    /// The wake-up time `task` was queued with (meaningful only while it is queued).
    pub fn deadline_of(&self, task: TaskId) -> u32 {
        self.deadline_ticks[task.index()]
    }

    /// Queues `task` to wake at `deadline_ticks`, after any task with the same wake-up time.
    #[inline(never)]
    pub fn insert(&mut self, task: TaskId, deadline_ticks: u32) {
        self.deadline_ticks[task.index()] = deadline_ticks;
        let mut prev = NO_TASK;
        let mut cur = self.head;
        while cur != NO_TASK && !tick_before(deadline_ticks, self.deadline_ticks[usize::from(cur)])
        {
            prev = cur;
            cur = self.next[usize::from(cur)];
        }
        self.next[task.index()] = cur;
        match prev {
            NO_TASK => self.head = task.0,
            p => self.next[usize::from(p)] = task.0,
        }
    }

    /// Takes `task` out of the queue (an early, explicit wake); `false` if it was not queued.
    #[inline(never)]
    pub fn remove(&mut self, task: TaskId) -> bool {
        let mut prev = NO_TASK;
        let mut cur = self.head;
        while cur != NO_TASK {
            if cur == task.0 {
                let n = self.next[usize::from(cur)];
                match prev {
                    NO_TASK => self.head = n,
                    p => self.next[usize::from(p)] = n,
                }
                return true;
            }
            prev = cur;
            cur = self.next[usize::from(cur)];
        }
        false
    }

    /// Removes and returns the earliest task if its wake-up time has been reached at
    /// `now_ticks`; call until `None` to wake everything that is due.
    #[inline(never)]
    pub fn pop_due(&mut self, now_ticks: u32) -> Option<TaskId> {
        let h = self.head;
        if h == NO_TASK || !tick_reached(self.deadline_ticks[usize::from(h)], now_ticks) {
            return None;
        }
        self.head = self.next[usize::from(h)];
        Some(TaskId(h))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapping_comparison() {
        assert!(tick_before(1, 2));
        assert!(tick_before(u32::MAX - 5, 3), "3 comes after the wrap");
        assert!(!tick_before(3, u32::MAX - 5));
        assert!(tick_reached(5, 5));
        assert!(tick_reached(u32::MAX, 2));
        assert!(!tick_reached(2, u32::MAX));
    }

    #[test]
    fn sorted_with_fifo_ties_and_removal() {
        let mut q = TimerQueue::<4>::new();
        q.insert(TaskId(0), 30);
        q.insert(TaskId(1), 10);
        q.insert(TaskId(2), 30);
        q.insert(TaskId(3), 20);
        assert_eq!(q.next_deadline(), Some(10));
        assert!(q.remove(TaskId(3)));
        assert!(!q.remove(TaskId(3)));
        assert_eq!(q.pop_due(9), None);
        assert_eq!(q.pop_due(100), Some(TaskId(1)));
        assert_eq!(q.pop_due(100), Some(TaskId(0)));
        assert_eq!(q.pop_due(100), Some(TaskId(2)));
        assert_eq!(q.pop_due(100), None);
        assert_eq!(q.next_deadline(), None);
    }

    #[test]
    fn order_holds_across_the_wrap() {
        let mut q = TimerQueue::<3>::new();
        q.insert(TaskId(0), 5); // after the wrap
        q.insert(TaskId(1), u32::MAX - 1); // before it
        q.insert(TaskId(2), 0); // exactly at it
        assert_eq!(q.pop_due(u32::MAX), Some(TaskId(1)));
        assert_eq!(q.pop_due(u32::MAX), None);
        assert_eq!(q.pop_due(7), Some(TaskId(2)));
        assert_eq!(q.pop_due(7), Some(TaskId(0)));
    }
}
