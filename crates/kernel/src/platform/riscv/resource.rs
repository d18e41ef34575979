//! Data shared between tasks, or between tasks and interrupt handlers, under the immediate
//! priority ceiling protocol ([`crate::lock`]).
//!
//! [`Resource::lock`] runs a closure on the value at the resource's ceiling. For a task
//! ceiling that is two short kernel calls with interrupts masked for a few instructions
//! each, and a `RESCHEDULE` system call at the end only when a higher task became ready
//! during the section (the contended case). For [`Ceiling::INTERRUPTS`] the whole section
//! runs with interrupts masked, which is what keeps the handler out; the handler itself
//! uses [`Resource::lock_in_isr`].

use core::arch::asm;
use core::cell::{Cell, UnsafeCell};

use super::{Isr, kernel_unchecked, reschedule};
use crate::lock::Ceiling;
use crate::task::Priority;

const MSTATUS_MIE: usize = 8;

/// A value shared under a ceiling (usable in a `static`).
#[derive(Debug)]
pub struct Resource<T> {
    ceiling: Ceiling,
    locked: Cell<bool>,
    value: UnsafeCell<T>,
}

// SAFETY: every access goes through `lock` or `lock_in_isr`. `lock` runs at the ceiling,
// which is at least the priority of every task that locks the resource (the kernel refuses
// a task above it), so none of them can run until the section ends; with the interrupt
// ceiling, interrupts are masked too, and only then may a handler use the value
// (`lock_in_isr` checks). The `locked` flag refuses a second entry from inside a section.
// So at most one `&mut T` exists at a time.
unsafe impl<T: Send> Sync for Resource<T> {}

/// What [`enter`] saved for [`leave`].
#[derive(Clone, Copy)]
struct Section {
    before: Priority,
    mstatus: usize,
}

/// Raises the running task to `ceiling` (and leaves interrupts masked for the interrupt
/// ceiling). A lock outside a task, or by a task above the ceiling, is a bug in the
/// firmware: it stops with the kernel's explanation.
#[inline(never)]
fn enter(ceiling: Ceiling) -> Section {
    let mstatus: usize;
    // SAFETY: clears mstatus.MIE and returns the previous value; masks interrupts only.
    unsafe { asm!("csrrci {0}, mstatus, 8", out(reg) mstatus) };
    // SAFETY: interrupts are masked and no other reference to the kernel is live here.
    let before = match unsafe { kernel_unchecked() }.lock(ceiling) {
        Ok(before) => before,
        Err(e) => panic!("Resource::lock: {e}"),
    };
    if !ceiling.masks_interrupts() && mstatus & MSTATUS_MIE != 0 {
        // SAFETY: re-enables interrupts exactly when they were enabled on entry.
        unsafe { asm!("csrsi mstatus, 8") };
    }
    Section { before, mstatus }
}

/// Ends the section [`enter`] began; reschedules when a higher task became ready meanwhile.
#[inline(never)]
fn leave(s: Section) {
    // SAFETY: masks interrupts (a no-op for the interrupt ceiling, already masked).
    unsafe { asm!("csrci mstatus, 8") };
    // SAFETY: interrupts are masked and no other reference to the kernel is live here.
    let pending = unsafe { kernel_unchecked() }.unlock(s.before);
    if s.mstatus & MSTATUS_MIE != 0 {
        // SAFETY: restores the interrupt state of the section's start.
        unsafe { asm!("csrsi mstatus, 8") };
    }
    if pending {
        reschedule();
    }
}

impl<T> Resource<T> {
    /// Wraps `value` with `ceiling`: [`Ceiling::of`] the priorities of the tasks that lock
    /// it, or [`Ceiling::INTERRUPTS`] when an interrupt handler uses it too.
    pub const fn new(ceiling: Ceiling, value: T) -> Self {
        Self {
            ceiling,
            locked: Cell::new(false),
            value: UnsafeCell::new(value),
        }
    }

    /// The ceiling.
    pub fn ceiling(&self) -> Ceiling {
        self.ceiling
    }

    /// Runs `f` on the value at the ceiling (from a task). `f` must not sleep, wait or
    /// yield (the kernel refuses) nor lock this resource again (which stops the firmware).
    #[inline(always)]
    pub fn lock<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        let section = enter(self.ceiling);
        let r = self.with_value(f);
        leave(section);
        r
    }

    /// Runs `f` on the value from an interrupt handler: only for a resource with the
    /// interrupt ceiling (tasks hold it with interrupts masked, so the handler never finds
    /// it half updated).
    #[inline(always)]
    pub fn lock_in_isr<R>(&self, _isr: &mut Isr<'_>, f: impl FnOnce(&mut T) -> R) -> R {
        assert!(
            self.ceiling.masks_interrupts(),
            "Resource::lock_in_isr on a resource without the interrupt ceiling"
        );
        self.with_value(f)
    }

    #[inline(always)]
    fn with_value<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        assert!(!self.locked.replace(true), "Resource locked re-entrantly");
        // SAFETY: see the `Sync` impl: the ceiling keeps every other user out and `locked`
        // was false, so this is the only reference until `f` returns.
        let r = f(unsafe { &mut *self.value.get() });
        self.locked.set(false);
        r
    }
}
