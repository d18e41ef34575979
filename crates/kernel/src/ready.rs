//! The ready queue: one FIFO list per priority level and a 32-bit bitmap of non-empty levels.
//!
//! Picking the next task is a find-first-set on the bitmap and a pop from that level's list
//! head: constant time whatever the number of tasks. Level `p` is bit `31 − p`, so the
//! highest level is the *lowest* set bit, which RV32IMAC (no `clz`/`ctz` instructions)
//! finds in five instructions with a de Bruijn multiply instead of a 20-instruction
//! count-leading-zeros sequence. The lists are intrusive singly linked lists through a `next` array
//! indexed by task, so the whole queue is `2 · 32 + N + 4` bytes and never allocates.

use crate::task::{NO_TASK, PRIORITY_LEVELS, Priority, TaskId};

/// The ready queue for up to `N` tasks (`N` ≤ 255).
#[derive(Debug, Clone)]
pub struct ReadyQueue<const N: usize> {
    /// Bit `31 − p` is set when level `p` has at least one ready task.
    bitmap: u32,
    head: [u8; PRIORITY_LEVELS],
    tail: [u8; PRIORITY_LEVELS],
    next: [u8; N],
}

/// De Bruijn sequence for 32-bit find-first-set.
const DE_BRUIJN: u32 = 0x077C_B531;
/// Bit index of each de Bruijn product's top five bits.
const DE_BRUIJN_BIT: [u8; 32] = [
    0, 1, 28, 2, 29, 14, 24, 3, 30, 22, 20, 15, 25, 17, 4, 8, 31, 27, 13, 23, 21, 19, 16, 7, 26,
    12, 18, 6, 11, 5, 10, 9,
];

/// The index of the lowest set bit of a non-zero `x` (find-first-set, 0-based).
pub fn find_first_set(x: u32) -> u32 {
    let lowest = x & x.wrapping_neg();
    u32::from(DE_BRUIJN_BIT[(lowest.wrapping_mul(DE_BRUIJN) >> 27) as usize])
}

fn level_bit(p: usize) -> u32 {
    1 << (31 - p)
}

impl<const N: usize> Default for ReadyQueue<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> ReadyQueue<N> {
    /// An empty queue.
    pub const fn new() -> Self {
        Self {
            bitmap: 0,
            head: [NO_TASK; PRIORITY_LEVELS],
            tail: [NO_TASK; PRIORITY_LEVELS],
            next: [NO_TASK; N],
        }
    }

    /// The bitmap of non-empty levels (bit `31 − p` for level `p`).
    pub fn bitmap(&self) -> u32 {
        self.bitmap
    }

    fn highest_index(&self) -> usize {
        (31 - find_first_set(self.bitmap)) as usize & 31
    }

    /// The highest level with a ready task, if any.
    pub fn highest(&self) -> Option<Priority> {
        if self.bitmap == 0 {
            None
        } else {
            Priority::new(self.highest_index() as u8)
        }
    }

    /// Appends `task` at the tail of level `prio` (a task that became ready or yielded).
    #[inline(never)]
    pub fn push_back(&mut self, task: TaskId, prio: Priority) {
        self.push_back_inline(task, prio);
    }

    /// [`push_back`](Self::push_back), inlined into the interrupt-to-task path. Indices
    /// are reduced modulo `N` (ids are below `N`), which drops the bounds checks.
    #[inline(always)]
    pub(crate) fn push_back_inline(&mut self, task: TaskId, prio: Priority) {
        let p = usize::from(prio.level()) & 31;
        self.next[task.index() % N] = NO_TASK;
        match self.tail[p] {
            NO_TASK => self.head[p] = task.0,
            t => self.next[usize::from(t) % N] = task.0,
        }
        self.tail[p] = task.0;
        self.bitmap |= level_bit(p);
    }

    /// Puts `task` at the head of level `prio`: SCHED_FIFO returns a preempted task to the
    /// front of its level, so it resumes before its peers.
    #[inline(never)]
    pub fn push_front(&mut self, task: TaskId, prio: Priority) {
        self.push_front_inline(task, prio);
    }

    /// [`push_front`](Self::push_front), inlined into `Kernel::schedule`.
    #[inline(always)]
    pub(crate) fn push_front_inline(&mut self, task: TaskId, prio: Priority) {
        let p = usize::from(prio.level()) & 31;
        self.next[task.index() % N] = self.head[p];
        if self.head[p] == NO_TASK {
            self.tail[p] = task.0;
        }
        self.head[p] = task.0;
        self.bitmap |= level_bit(p);
    }

    /// Removes and returns the head of level `prio`, which must be non-empty (the caller
    /// found it with [`highest`](Self::highest)); inlined into `Kernel::schedule`.
    #[inline(always)]
    pub(crate) fn pop_level(&mut self, prio: Priority) -> TaskId {
        let p = usize::from(prio.level()) & 31;
        let t = self.head[p];
        let n = self.next[usize::from(t) % N];
        self.head[p] = n;
        if n == NO_TASK {
            self.tail[p] = NO_TASK;
            self.bitmap &= !level_bit(p);
        }
        TaskId(t)
    }

    /// Whether a level strictly above `prio` has a ready task (one mask on the bitmap: the
    /// higher levels are the lower bits).
    #[inline(always)]
    pub fn any_above(&self, prio: Priority) -> bool {
        // Shifting out bit `31 − p` and everything above leaves the higher levels' bits.
        (self.bitmap << (prio.level() & 31)) << 1 != 0
    }

    /// Whether level `prio` or a higher one has a ready task (one shift of the bitmap).
    #[inline(always)]
    pub fn any_at_or_above(&self, prio: Priority) -> bool {
        self.bitmap << (prio.level() & 31) != 0
    }

    /// The `sched_yield` of a running task with peers, in one step: appends `task` (the
    /// running task of level `prio`, which is not in the queue) at the tail of its level and
    /// removes and returns the head of that level. Returns `None` and changes nothing when the
    /// level is empty (the task has no peer and keeps running).
    ///
    /// The level is non-empty before and after, so the bitmap is untouched and no
    /// find-first-set is needed: this is the constant-time core of the yield fast path.
    ///
    /// Inlined into its one caller, [`Kernel::yield_switch`](crate::Kernel::yield_switch), so
    /// the yield fast path is one leaf function (its bytes count towards the kernel rules in
    /// `mmsched kernel-size`). Indices are reduced modulo `N` (task ids are always below
    /// `N`, so the value never changes) which lets the compiler drop the bounds checks: for
    /// a power-of-two capacity that is a single AND.
    #[inline(always)]
    pub fn rotate(&mut self, task: TaskId, prio: Priority) -> Option<TaskId> {
        let p = usize::from(prio.level()) & 31;
        let head = self.head[p];
        if head == NO_TASK {
            return None;
        }
        let after = self.next[usize::from(head) % N];
        self.next[task.index() % N] = NO_TASK;
        if after == NO_TASK {
            // `head` was alone: `task` becomes the only entry.
            self.head[p] = task.0;
        } else {
            self.head[p] = after;
            self.next[usize::from(self.tail[p]) % N] = task.0;
        }
        self.tail[p] = task.0;
        Some(TaskId(head))
    }

    /// Removes and returns the task at the head of the highest non-empty level.
    #[inline(never)]
    pub fn pop_highest(&mut self) -> Option<TaskId> {
        if self.bitmap == 0 {
            return None;
        }
        let p = self.highest_index();
        let t = self.head[p];
        let n = self.next[usize::from(t)];
        self.head[p] = n;
        if n == NO_TASK {
            self.tail[p] = NO_TASK;
            self.bitmap &= !level_bit(p);
        }
        Some(TaskId(t))
    }

    /// The ready tasks of level `prio`, head first (for tests and diagnostics).
    pub fn level(&self, prio: Priority) -> impl Iterator<Item = TaskId> + '_ {
        let mut t = self.head[usize::from(prio.level())];
        core::iter::from_fn(move || {
            if t == NO_TASK {
                None
            } else {
                let id = TaskId(t);
                t = self.next[usize::from(t)];
                Some(id)
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(l: u8) -> Priority {
        Priority::new(l).unwrap()
    }

    #[test]
    fn fifo_within_a_level_and_highest_level_first() {
        let mut q = ReadyQueue::<8>::new();
        q.push_back(TaskId(0), p(3));
        q.push_back(TaskId(1), p(7));
        q.push_back(TaskId(2), p(3));
        q.push_back(TaskId(3), p(7));
        assert_eq!(q.bitmap(), (1 << (31 - 3)) | (1 << (31 - 7)));
        let order: Vec<_> = core::iter::from_fn(|| q.pop_highest()).collect();
        assert_eq!(order, [TaskId(1), TaskId(3), TaskId(0), TaskId(2)]);
        assert_eq!(q.bitmap(), 0);
        assert_eq!(q.highest(), None);
    }

    #[test]
    fn find_first_set_of_every_bit() {
        for b in 0..32 {
            assert_eq!(find_first_set(1 << b), b);
            assert_eq!(find_first_set((1 << b) | 0x8000_0000), b);
        }
    }

    #[test]
    fn push_front_goes_before_peers() {
        let mut q = ReadyQueue::<4>::new();
        q.push_back(TaskId(0), p(31));
        q.push_front(TaskId(1), p(31));
        q.push_back(TaskId(2), p(31));
        let order: Vec<_> = q.level(p(31)).collect();
        assert_eq!(order, [TaskId(1), TaskId(0), TaskId(2)]);
    }

    #[test]
    fn rotate_moves_the_runner_to_the_tail_and_pops_the_head() {
        let mut q = ReadyQueue::<4>::new();
        // Task 0 runs at level 5 (not queued); 1 and 2 wait there.
        q.push_back(TaskId(1), p(5));
        q.push_back(TaskId(2), p(5));
        assert_eq!(q.rotate(TaskId(0), p(5)), Some(TaskId(1)));
        assert_eq!(q.level(p(5)).collect::<Vec<_>>(), [TaskId(2), TaskId(0)]);
        assert_eq!(q.rotate(TaskId(1), p(5)), Some(TaskId(2)));
        assert_eq!(q.level(p(5)).collect::<Vec<_>>(), [TaskId(0), TaskId(1)]);
        assert_eq!(q.bitmap(), 1 << (31 - 5));
        // One peer: the two swap.
        let mut q = ReadyQueue::<4>::new();
        q.push_back(TaskId(3), p(0));
        assert_eq!(q.rotate(TaskId(2), p(0)), Some(TaskId(3)));
        assert_eq!(q.level(p(0)).collect::<Vec<_>>(), [TaskId(2)]);
        assert_eq!(q.pop_highest(), Some(TaskId(2)));
        assert_eq!(q.pop_highest(), None);
        // No peer: nothing changes.
        assert_eq!(q.rotate(TaskId(2), p(0)), None);
        assert_eq!(q.bitmap(), 0);
    }

    #[test]
    fn any_above_sees_only_strictly_higher_levels() {
        let mut q = ReadyQueue::<4>::new();
        q.push_back(TaskId(0), p(7));
        assert!(!q.any_above(p(7)));
        assert!(!q.any_above(p(31)));
        assert!(q.any_above(p(6)));
        assert!(q.any_above(Priority::MIN));
        q.push_back(TaskId(1), Priority::MAX);
        assert!(!q.any_above(Priority::MAX));
        assert!(q.any_above(p(30)));
    }

    #[test]
    fn extreme_levels_use_both_ends_of_the_bitmap() {
        let mut q = ReadyQueue::<2>::new();
        q.push_back(TaskId(0), Priority::MIN);
        q.push_back(TaskId(1), Priority::MAX);
        assert_eq!(q.bitmap(), 0x8000_0001);
        assert_eq!(q.pop_highest(), Some(TaskId(1)));
        assert_eq!(q.pop_highest(), Some(TaskId(0)));
        assert_eq!(q.pop_highest(), None);
    }
}
