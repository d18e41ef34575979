//! Shared resources under the immediate priority ceiling protocol (IPCP).
//!
//! Every resource has a **ceiling**: the highest priority of the tasks that lock it, or
//! [`Ceiling::INTERRUPTS`] when an interrupt handler uses it too. A task that locks it runs
//! at the ceiling until it unlocks ([`Kernel::lock`], [`Kernel::unlock`]), and it is
//! preempted only by levels strictly above that. This gives, on one core:
//!
//! - **mutual exclusion without waiting**: no other user of the resource can start while
//!   it is held (every user's priority is at most the ceiling), so a lock never has to
//!   wait, and a task never blocks on a lock;
//! - **no deadlock**: nothing ever waits for a lock, so no cycle of waiters can form;
//! - **bounded blocking**: a task of priority `p` is delayed by lower tasks for at most
//!   one critical section — the longest of those with a ceiling ≥ `p` — once per
//!   activation, because a lower task can only be inside such a section if it entered it
//!   before the task became ready (after that, the task or something above it runs);
//! - **no cost when uncontended**: locking is raising a number in the running task's
//!   control block and unlocking is restoring it; the kernel is entered only when a
//!   higher task became ready during the section and must now run.
//!
//! A task may not sleep, wait or yield inside a critical section (the kernel refuses with
//! [`KernelError::LockHeld`]): that would stretch the section without bound. Sections nest
//! (a task may lock a second resource inside the first) as long as they end in reverse
//! order, which the closure-based API of the platforms guarantees.
//!
//! The platforms wrap the value itself (`platform::riscv::Resource`): a resource with the
//! interrupt ceiling is locked with interrupts masked, so the handler never sees it half
//! written, and the handler reaches it without any lock of its own.

use crate::kernel::{Kernel, KernelError};
use crate::task::{LOCK_DEPTH, PRIORITY_LEVELS, Priority};

/// The ceiling of a shared resource: a task level in `0..=31`, or [`Ceiling::INTERRUPTS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Ceiling(u8);

impl Ceiling {
    /// The ceiling of a resource an interrupt handler uses: above every task level. A
    /// task holds it with interrupts masked.
    pub const INTERRUPTS: Ceiling = Ceiling(PRIORITY_LEVELS as u8);

    /// The ceiling of a resource used only by tasks, the highest of whose priorities is
    /// `highest_user`.
    pub const fn task(highest_user: Priority) -> Ceiling {
        Ceiling(highest_user.level())
    }

    /// The ceiling of a resource shared by `users` (the highest of their priorities; the
    /// lowest level for none), so that it can be computed from the priorities it protects.
    pub const fn of(users: &[Priority]) -> Ceiling {
        let mut c = 0;
        let mut i = 0;
        while i < users.len() {
            if users[i].level() > c {
                c = users[i].level();
            }
            i += 1;
        }
        Ceiling(c)
    }

    /// Whether interrupt handlers share the resource.
    pub const fn masks_interrupts(self) -> bool {
        self.0 >= PRIORITY_LEVELS as u8
    }

    /// The task level a holder runs at: the ceiling, or the top level for the interrupt
    /// ceiling (interrupts being masked as well, nothing else can run).
    pub const fn level(self) -> Priority {
        match Priority::new(self.0) {
            Some(p) => p,
            None => Priority::MAX,
        }
    }

    /// The ceiling as a number (`32` for [`Ceiling::INTERRUPTS`]).
    pub const fn value(self) -> u8 {
        self.0
    }
}

impl<const N: usize> Kernel<N> {
    /// Enters a critical section of a resource with `ceiling`: the running task now runs at
    /// the ceiling (or stays higher, when it already is). Returns the level to give back to
    /// [`unlock`](Self::unlock). Refused when no task runs, or when the task's own priority
    /// is above the ceiling (the ceiling would not keep it and its peers apart).
    #[inline(always)]
    pub fn lock(&mut self, ceiling: Ceiling) -> Result<Priority, KernelError> {
        let c = self.running()?;
        let tcb = &mut self.tcbs_mut()[c];
        let level = ceiling.level();
        if tcb.priority > level {
            return Err(KernelError::CeilingTooLow {
                ceiling: ceiling.value(),
                priority: tcb.priority.level(),
            });
        }
        if tcb.flags & LOCK_DEPTH == LOCK_DEPTH {
            return Err(KernelError::LocksTooDeep);
        }
        let before = tcb.effective;
        tcb.effective = before.max(level);
        tcb.flags += 1;
        Ok(before)
    }

    /// Leaves the innermost critical section of the running task, back to `before` (what
    /// its [`lock`](Self::lock) returned). Returns `true` when a level above `before`
    /// became ready during the section: the caller must then reschedule
    /// ([`schedule`](Self::schedule)) so that task runs now. Without a running task, or
    /// outside a section, nothing happens.
    #[inline(always)]
    pub fn unlock(&mut self, before: Priority) -> bool {
        let Ok(c) = self.running() else {
            return false;
        };
        let tcb = &mut self.tcbs_mut()[c];
        if tcb.flags & LOCK_DEPTH == 0 {
            return false;
        }
        tcb.flags -= 1;
        tcb.effective = before;
        self.ready_queue().any_above(before)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(l: u8) -> Priority {
        Priority::new(l).unwrap()
    }

    #[test]
    fn ceilings_of_users_and_interrupts() {
        assert_eq!(Ceiling::of(&[p(3), p(25), p(10)]), Ceiling::task(p(25)));
        assert_eq!(Ceiling::of(&[]).level(), Priority::MIN);
        assert!(Ceiling::INTERRUPTS.masks_interrupts());
        assert!(!Ceiling::task(Priority::MAX).masks_interrupts());
        assert_eq!(Ceiling::INTERRUPTS.level(), Priority::MAX);
        assert!(Ceiling::INTERRUPTS > Ceiling::task(Priority::MAX));
    }

    #[test]
    fn lock_raises_and_unlock_restores() {
        let mut k = Kernel::<3>::new();
        let lo = k.spawn(p(2)).unwrap();
        let hi = k.spawn(p(9)).unwrap();
        // Only `lo` runs (hi "sleeps" by never having been scheduled: make it wait).
        assert_eq!(k.schedule(), Some(hi));
        k.wait().unwrap();
        assert_eq!(k.schedule(), Some(lo));
        let before = k.lock(Ceiling::task(p(9))).unwrap();
        assert_eq!(before, p(2));
        assert_eq!(k.tcb(lo).effective_priority(), p(9));
        // A notification makes `hi` ready, but it does not preempt the section.
        assert!(k.notify(hi));
        assert_eq!(k.schedule(), Some(lo));
        assert_eq!(k.wait(), Err(KernelError::LockHeld));
        assert_eq!(k.yield_now(), Err(KernelError::LockHeld));
        assert_eq!(k.yield_switch(0), None);
        assert!(k.unlock(before), "hi is pending");
        assert_eq!(k.tcb(lo).effective_priority(), p(2));
        assert_eq!(k.schedule(), Some(hi));
    }

    #[test]
    fn a_ceiling_below_the_caller_is_refused() {
        let mut k = Kernel::<1>::new();
        k.spawn(p(9)).unwrap();
        k.schedule();
        assert_eq!(
            k.lock(Ceiling::task(p(8))),
            Err(KernelError::CeilingTooLow {
                ceiling: 8,
                priority: 9
            })
        );
        assert_eq!(k.tcb(crate::TaskId(0)).locks_held(), 0);
        assert!(!k.unlock(p(9)), "unlock outside a section does nothing");
    }
}
