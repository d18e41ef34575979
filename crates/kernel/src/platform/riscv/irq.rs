//! Device interrupts through the PLIC of the `virt` board: a handler per source, run in
//! the trap with interrupts masked, which hands data to tasks (an
//! [`SpscQueue`](crate::queue::SpscQueue)) and wakes them ([`Isr::notify`]).
//!
//! The path from the interrupt to the woken task is short by design: the trap saves the
//! interrupted task's registers and, in assembly, claims the source, calls its handler
//! through a table indexed by source number (`MMK_IRQ_HANDLERS`) and completes it; the
//! handler's [`Isr::notify`] hands the CPU straight to the woken task when it is the
//! highest, whose `ecall` frame (it was waiting in [`wait`](super::wait)) takes a handful of
//! loads to restore. The demo measures it with `minstret`.

use core::arch::asm;
use core::ptr::{read_volatile, write_volatile};

use super::{IrqCell, McuKernel, with_state};
use crate::task::TaskId;

const PLIC_BASE: usize = 0x0c00_0000;
/// Priority of source `n` at `PLIC_BASE + 4n`.
const PLIC_PRIORITY: usize = PLIC_BASE;
/// Enable bits of hart 0's machine-mode context.
const PLIC_ENABLE: usize = PLIC_BASE + 0x2000;
/// Priority threshold of hart 0's machine-mode context.
const PLIC_THRESHOLD: usize = PLIC_BASE + 0x20_0000;
/// `mie.MEIE`: machine external interrupts.
const MIE_EXTERNAL: usize = 1 << 11;

/// Interrupt sources a handler can be installed for: `1..MAX_IRQ_SOURCES` (the `virt`
/// board's UART is 10, its RTC 11, its virtio devices 1 to 8).
pub const MAX_IRQ_SOURCES: u32 = 16;

/// A device interrupt handler: `extern "C" fn on_uart(isr: Isr<'_>)`, called by the trap
/// code. It runs with interrupts masked and must not block.
pub type Handler = extern "C" fn(Isr<'_>);

/// The handler of each source, read by the trap code in `mod.rs` (a null entry is none).
#[unsafe(no_mangle)]
static MMK_IRQ_HANDLERS: IrqCell<[Option<Handler>; MAX_IRQ_SOURCES as usize]> = IrqCell(
    core::cell::UnsafeCell::new([None; MAX_IRQ_SOURCES as usize]),
);

/// What an interrupt handler may do to the kernel: notify (wake) tasks. It is the kernel's
/// address, passed in one register.
#[derive(Debug)]
#[repr(transparent)]
pub struct Isr<'a> {
    kernel: &'a mut McuKernel,
}

impl Isr<'_> {
    /// Wakes `task` if it waits, or leaves it a notification for its next
    /// [`wait`](super::wait). The highest ready task runs when the handler returns.
    /// Returns whether the task was woken (it was waiting).
    #[inline(always)]
    pub fn notify(&mut self, task: TaskId) -> bool {
        self.kernel.notify_preempting(task)
    }
}

/// Why a handler could not be installed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadIrqSource(pub u32);

impl core::fmt::Display for BadIrqSource {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "interrupt source {} is not supported; use 1 to {}",
            self.0,
            MAX_IRQ_SOURCES - 1
        )
    }
}

/// Installs `handler` for PLIC source `source`, enables the source (priority 1, threshold
/// 0) and machine external interrupts.
pub fn enable_irq(source: u32, handler: Handler) -> Result<(), BadIrqSource> {
    if source == 0 || source >= MAX_IRQ_SOURCES {
        return Err(BadIrqSource(source));
    }
    with_state(|_| {
        // SAFETY: interrupts are masked (`with_state`), so no trap reads the table now.
        unsafe { (*MMK_IRQ_HANDLERS.0.get())[source as usize] = Some(handler) };
        // SAFETY: PLIC registers of the `virt` board for hart 0's machine context: the
        // source's priority, its enable bit (read-modify-write of its word) and the
        // threshold; then mie.MEIE.
        unsafe {
            write_volatile((PLIC_PRIORITY + 4 * source as usize) as *mut u32, 1);
            let word = (PLIC_ENABLE + 4 * (source as usize / 32)) as *mut u32;
            write_volatile(word, read_volatile(word) | 1 << (source % 32));
            write_volatile(PLIC_THRESHOLD as *mut u32, 0);
            asm!("csrs mie, {0}", in(reg) MIE_EXTERNAL);
        }
    });
    Ok(())
}
