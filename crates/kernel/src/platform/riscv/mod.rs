//! The RISC-V platform layer (RV32IMAC, machine mode, QEMU `virt` memory map): start-up,
//! trap entry and context switch, the machine timer, device interrupts through the PLIC
//! ([`irq`]), shared resources under the priority ceiling ([`resource`]), the UART
//! ([`uart`]) and the exit device.
//!
//! This module and its children hold **all** of the kernel's `unsafe` code, each block with
//! the reason it is sound. The design keeps that reasoning short:
//!
//! - one hart, machine mode only; every task runs with interrupts enabled;
//! - the kernel state is touched only (a) inside the trap handler, where the hardware has
//!   cleared `mstatus.MIE`, or (b) inside [`critical`], which clears it: so accesses never
//!   overlap;
//! - a task enters the kernel only through `ecall`, so a task switch always happens in the
//!   trap handler, on a full register frame saved on the task's own stack.
//!
//! # Context switch
//!
//! `_mmk_trap` saves a frame on the interrupted stack (128 bytes, keeping `sp` 16-byte
//! aligned), calls [`mmk_trap_rust`] with the frame's address and the trap cause, and
//! restores the frame whose address it returns. Switching tasks is therefore returning
//! another task's saved stack pointer. An interrupt can strike anywhere, so its frame holds
//! every register the code may use (`ra`, `t0`–`t6`, `s0`–`s11`, `a0`–`a7`, `mepc`). A
//! task enters through `ecall` only from the syscall wrappers, which tell the compiler that
//! every register it may allocate except `s0` and `s1` (which LLVM reserves) is clobbered:
//! the compiler keeps only what is live across the call, and the frame of a voluntary
//! switch holds just `s0`, `s1`, `mepc` and the result. A frame word records which kind it
//! is. `gp` and `tp` are not used by the kernel or by Rust code here and are not saved.
//!
//! A yield takes a fast path: `_mmk_trap` recognises it and calls [`mmk_yield_rust`], which
//! asks [`Kernel::yield_switch`] to rotate the running task's level (no find-first-set, no
//! stack frame) and restores the frame it answers.

#![allow(unsafe_code)]

pub mod irq;
pub mod resource;
pub mod uart;

use core::alloc::{GlobalAlloc, Layout};
use core::arch::{asm, global_asm};
use core::cell::UnsafeCell;
use core::fmt::{self, Write};
use core::mem::size_of;
use core::ptr::{read_volatile, write_volatile};

pub use irq::{Isr, enable_irq};
pub use resource::Resource;
pub use uart::Uart;

use super::{Event, Timer, dispatch};
use crate::kernel::{Kernel, KernelError, Stats};
use crate::ready::ReadyQueue;
use crate::task::{Priority, TaskId, Tcb};
use crate::timer::TimerQueue;

/// Task capacity of the MCU kernel.
pub const MAX_TASKS: usize = 8;
/// Stack size of each task, in bytes (the trap frame of 128 bytes included).
pub const TASK_STACK_BYTES: usize = 2048;
/// Machine-timer frequency of the QEMU `virt` board, in ticks per millisecond (10 MHz).
pub const TICKS_PER_MILLI: u32 = 10_000;

/// The kernel as instantiated on the MCU.
pub type McuKernel = Kernel<MAX_TASKS>;

// QEMU `virt` memory map.
const CLINT_MTIMECMP: usize = 0x0200_4000;
const CLINT_MTIME: usize = 0x0200_BFF8;
const TEST_DEVICE: usize = 0x0010_0000;

const MCAUSE_MACHINE_TIMER: usize = 0x8000_0007;
const MCAUSE_ECALL_M: usize = 11;
const FRAME_WORDS: usize = 32;
const FRAME_A0: usize = 6; // x10: 1 (ra) + (10 − 5)
const FRAME_A1: usize = 7;
const FRAME_MEPC: usize = 28;
const FRAME_KIND: usize = 29; // 0: interrupt (all registers), 1: ecall (callee-saved only)

/// System call numbers (in `a0`; the argument is in `a1`, the result comes back in `a0`).
mod sys {
    pub const RESCHEDULE: usize = 0;
    pub const YIELD: usize = 1;
    pub const SLEEP_FOR: usize = 2;
    pub const SLEEP_UNTIL: usize = 3;
    pub const WAIT: usize = 4;
    pub const NOTIFY: usize = 5;
}

global_asm!(
    // Start-up: stack, zeroed .bss, then the firmware's `mmk_main`.
    ".section .text.mmk_start, \"ax\"",
    ".global _start",
    ".type _start, @function",
    "_start:",
    "  la sp, _stack_top",
    "  la t0, __bss_start",
    "  la t1, __bss_end",
    "1: bgeu t0, t1, 2f",
    "  sw zero, 0(t0)",
    "  addi t0, t0, 4",
    "  j 1b",
    "2: la t0, _mmk_trap",
    "  csrw mtvec, t0",
    "  call mmk_main",
    "3: j 3b",
    ".size _start, . - _start",
    // Trap entry and context switch: save the frame, ask the kernel, restore a frame.
    // s0, s1 and mepc are always saved. An `ecall` frame (kind 1) stops there: the syscall
    // wrappers declare every other register clobbered (all caller-saved ones and s2-s11),
    // so only the result in a0 travels back, and those registers are free scratch once the
    // trap is known to be synchronous. A yield (a0 = 1, which is also kind 1) takes the
    // fast path: `mmk_yield_rust` rotates the level's list and answers the frame to restore
    // in a0 (a1 = 0: no task is running, take the general path). Other syscalls save a0 and
    // a1 (number and argument) for `mmk_trap_rust`. An interrupt frame (kind 0) holds every
    // register but gp and tp.
    ".section .text.mmk_trap, \"ax\"",
    ".global _mmk_trap",
    ".type _mmk_trap, @function",
    ".align 2",
    "_mmk_trap:",
    "  addi sp, sp, -128",
    "  sw x8, 16(sp)",
    "  sw x9, 20(sp)",
    "  csrr s0, mcause",
    "  bltz s0, 2f",
    "  csrr t0, mepc",
    "  addi t0, t0, 4",
    "  sw t0, 112(sp)",
    "  li t1, 1",
    "  sw t1, 116(sp)",
    "  bne a0, t1, 3f",
    "  sw zero, 24(sp)",
    "  mv a0, sp",
    "  call mmk_yield_rust",
    "  beqz a1, 6f",
    "4: mv sp, a0",
    "  lw t0, 112(sp)",
    "  csrw mepc, t0",
    "  lw x8, 16(sp)",
    "  lw x9, 20(sp)",
    "  lw t0, 116(sp)",
    "  beqz t0, _mmk_trap_irq",
    "  lw a0, 24(sp)",
    "  addi sp, sp, 128",
    "  mret",
    "6: li a0, 1",
    "3: sw a0, 24(sp)",
    "  sw a1, 28(sp)",
    "5: mv a0, sp",
    "  mv a1, s0",
    "  call mmk_trap_rust",
    "  j 4b",
    ".size _mmk_trap, . - _mmk_trap",
    // The interrupt-only parts, out of the syscall path: the rest of the restore, then the
    // save of every register but s0 and s1.
    ".global _mmk_trap_irq",
    ".type _mmk_trap_irq, @function",
    "_mmk_trap_irq:",
    "  lw x1, 0(sp)",
    "  lw x6, 8(sp)",
    "  lw x7, 12(sp)",
    "  lw x10, 24(sp)",
    "  lw x11, 28(sp)",
    "  lw x12, 32(sp)",
    "  lw x13, 36(sp)",
    "  lw x14, 40(sp)",
    "  lw x15, 44(sp)",
    "  lw x16, 48(sp)",
    "  lw x17, 52(sp)",
    "  lw x18, 56(sp)",
    "  lw x19, 60(sp)",
    "  lw x20, 64(sp)",
    "  lw x21, 68(sp)",
    "  lw x22, 72(sp)",
    "  lw x23, 76(sp)",
    "  lw x24, 80(sp)",
    "  lw x25, 84(sp)",
    "  lw x26, 88(sp)",
    "  lw x27, 92(sp)",
    "  lw x28, 96(sp)",
    "  lw x29, 100(sp)",
    "  lw x30, 104(sp)",
    "  lw x31, 108(sp)",
    "  lw x5, 4(sp)",
    "  addi sp, sp, 128",
    "  mret",
    "2: sw x1, 0(sp)",
    "  sw x5, 4(sp)",
    "  sw x6, 8(sp)",
    "  sw x7, 12(sp)",
    "  sw x10, 24(sp)",
    "  sw x11, 28(sp)",
    "  sw x12, 32(sp)",
    "  sw x13, 36(sp)",
    "  sw x14, 40(sp)",
    "  sw x15, 44(sp)",
    "  sw x16, 48(sp)",
    "  sw x17, 52(sp)",
    "  sw x18, 56(sp)",
    "  sw x19, 60(sp)",
    "  sw x20, 64(sp)",
    "  sw x21, 68(sp)",
    "  sw x22, 72(sp)",
    "  sw x23, 76(sp)",
    "  sw x24, 80(sp)",
    "  sw x25, 84(sp)",
    "  sw x26, 88(sp)",
    "  sw x27, 92(sp)",
    "  sw x28, 96(sp)",
    "  sw x29, 100(sp)",
    "  sw x30, 104(sp)",
    "  sw x31, 108(sp)",
    "  csrr t0, mepc",
    "  sw t0, 112(sp)",
    "  sw zero, 116(sp)",
    // A device interrupt (mcause 0x8000000b: bit 3 set, unlike the timer's 7) takes its own
    // short path, in assembly so that no Rust frame is built around the handler call: s2 and
    // s3 are free here (saved in the frame); s2 holds the PLIC context at 0x0c20_0000, whose
    // claim/complete register is at +4. `mmk_irq_begin` records the frame and answers the
    // kernel's address; the PLIC claim names the source, whose handler (an `extern "C"`
    // function taking the kernel's address) runs; the source is completed; `mmk_irq_end`
    // answers the frame of the task to run.
    "  andi t0, s0, 8",
    "  beqz t0, 5b",
    "  mv a0, sp",
    "  call mmk_irq_begin",
    "  lui s2, 0x0c200",
    "  lw s3, 4(s2)",
    "  andi t0, s3, 15",
    "  slli t0, t0, 2",
    "  lui t1, %hi(MMK_IRQ_HANDLERS)",
    "  add t0, t0, t1",
    "  lw t0, %lo(MMK_IRQ_HANDLERS)(t0)",
    "  beqz t0, 7f",
    "  jalr t0",
    "7: sw s3, 4(s2)",
    "  call mmk_irq_end",
    "  j 4b",
    ".size _mmk_trap_irq, . - _mmk_trap_irq",
);

/// The machine timer of the CLINT, used as a one-shot alarm (never periodic).
#[derive(Debug)]
pub struct MachineTimer;

fn read_mtime() -> u64 {
    // SAFETY: CLINT registers of the `virt` board; reads have no side effects. The high
    // word is read twice so a carry between the two halves cannot tear the value.
    unsafe {
        loop {
            let hi = read_volatile((CLINT_MTIME + 4) as *const u32);
            let lo = read_volatile(CLINT_MTIME as *const u32);
            if read_volatile((CLINT_MTIME + 4) as *const u32) == hi {
                return (u64::from(hi) << 32) | u64::from(lo);
            }
        }
    }
}

fn write_mtimecmp(at: u64) {
    // SAFETY: hart 0's compare register. Writing the high word to all-ones first means no
    // intermediate value can be below `mtime` and raise a spurious interrupt.
    unsafe {
        write_volatile((CLINT_MTIMECMP + 4) as *mut u32, u32::MAX);
        write_volatile(CLINT_MTIMECMP as *mut u32, at as u32);
        write_volatile((CLINT_MTIMECMP + 4) as *mut u32, (at >> 32) as u32);
    }
}

impl Timer for MachineTimer {
    fn now_ticks(&self) -> u32 {
        // SAFETY: as in `read_mtime`; the low word alone is the kernel's wrapping clock.
        unsafe { read_volatile(CLINT_MTIME as *const u32) }
    }

    fn set_alarm(&mut self, at_ticks: Option<u32>) {
        match at_ticks {
            None => write_mtimecmp(u64::MAX),
            Some(at) => {
                // Extend the 32-bit wake-up time to the 64-bit counter: it lies within 2³¹
                // ticks of now, ahead or (if already due) behind.
                let now = read_mtime();
                let ahead = at.wrapping_sub(now as u32) as i32;
                write_mtimecmp(now.wrapping_add_signed(i64::from(ahead.max(0))));
            }
        }
    }
}

/// Everything the platform keeps: the kernel, the idle context and the timer.
struct Global {
    kernel: McuKernel,
    idle_context: usize,
    timer: MachineTimer,
}

#[repr(C, align(16))]
struct Stacks([[u8; TASK_STACK_BYTES]; MAX_TASKS]);

/// Interior mutability for state that is only touched with interrupts off (see the module
/// docs): the one invariant that makes the `Sync` below sound.
#[repr(transparent)]
struct IrqCell<T>(UnsafeCell<T>);

// SAFETY: single hart; accessed only in the trap handler or inside `critical`, both with
// interrupts disabled, so no two accesses overlap.
unsafe impl<T> Sync for IrqCell<T> {}

static STATE: IrqCell<Global> = IrqCell(UnsafeCell::new(Global {
    kernel: Kernel::new(),
    idle_context: 0,
    timer: MachineTimer,
}));

static STACKS: IrqCell<Stacks> =
    IrqCell(UnsafeCell::new(Stacks([[0; TASK_STACK_BYTES]; MAX_TASKS])));

/// RAM layout of the kernel state, for `mmsched kernel-size`: a non-loaded section (it
/// costs no ROM or RAM) holding a magic, then sizes in bytes of the kernel, its TCB array,
/// ready queue and timer queue, the platform state, and the task capacity.
#[used]
#[unsafe(link_section = ".mmk_layout")]
static LAYOUT: [u32; 7] = [
    0x314b_4d4d, // "MMK1"
    size_of::<McuKernel>() as u32,
    size_of::<[Tcb; MAX_TASKS]>() as u32,
    size_of::<ReadyQueue<MAX_TASKS>>() as u32,
    size_of::<TimerQueue<MAX_TASKS>>() as u32,
    size_of::<Global>() as u32,
    MAX_TASKS as u32,
];

/// Runs `f` with machine interrupts disabled (and restores the previous state).
pub fn critical<R>(f: impl FnOnce() -> R) -> R {
    let mstatus: usize;
    // SAFETY: clearing MIE (bit 3) only masks interrupts; `csrrci` returns the old value.
    unsafe { asm!("csrrci {0}, mstatus, 8", out(reg) mstatus) };
    let r = f();
    if mstatus & 8 != 0 {
        // SAFETY: re-enables interrupts exactly when they were enabled on entry.
        unsafe { asm!("csrsi mstatus, 8") };
    }
    r
}

/// The kernel, for code that runs with interrupts masked (inside [`critical`] or a trap).
///
/// # Safety
///
/// Interrupts must be masked and the caller must not hold another reference to the state.
unsafe fn kernel_unchecked() -> &'static mut McuKernel {
    // SAFETY: guaranteed by the caller (see `IrqCell`).
    unsafe { &mut (*STATE.0.get()).kernel }
}

fn with_state<R>(f: impl FnOnce(&mut Global) -> R) -> R {
    critical(|| {
        // SAFETY: interrupts are off and no trap handler runs, so this is the only
        // reference to the state (see `IrqCell`). `f` cannot trap into the kernel: `ecall`
        // is only issued by the syscall wrappers, which do not run inside `with_state`.
        f(unsafe { &mut *STATE.0.get() })
    })
}

/// Creates a task running `entry` at `priority`, on its own stack. Call before [`start`].
pub fn spawn(priority: Priority, entry: fn() -> !) -> Result<TaskId, KernelError> {
    with_state(|g| {
        let id = g.kernel.spawn(priority)?;
        let stacks = STACKS.0.get() as *mut u8;
        // SAFETY: each task id owns one stack (ids are unique and < MAX_TASKS, checked by
        // `spawn`); the initial frame is written at its 16-byte aligned top, inside it.
        let frame = unsafe {
            let top = stacks.add((id.index() + 1) * TASK_STACK_BYTES);
            let frame = top.sub(FRAME_WORDS * 4) as *mut usize;
            for w in 0..FRAME_WORDS {
                frame.add(w).write(0);
            }
            frame.add(FRAME_MEPC).write(entry as usize);
            // A new task starts like a task returning from a syscall.
            frame.add(FRAME_KIND).write(1);
            frame
        };
        g.kernel.tcb_mut(id).context = frame as usize;
        Ok(id)
    })
}

/// Starts scheduling: enables the timer interrupt and interrupts, enters the first task
/// and makes the calling context the idle loop (`wfi` until the next interrupt).
pub fn start() -> ! {
    MachineTimer.set_alarm(None);
    // SAFETY: enables the machine timer interrupt (mie.MTIE, bit 7) and then interrupts
    // globally; the trap vector was installed by `_start`.
    unsafe {
        asm!("csrs mie, {0}", in(reg) 1usize << 7);
        asm!("csrsi mstatus, 8");
    }
    syscall(sys::RESCHEDULE, 0);
    loop {
        // SAFETY: waits for an interrupt; no memory effects.
        unsafe { asm!("wfi", options(nomem, nostack)) };
    }
}

fn syscall(number: usize, arg: usize) -> usize {
    let mut a0 = number;
    // SAFETY: traps into `_mmk_trap`, which restores `sp`, `s0`, `s1` and `a0` (the result)
    // before returning here, possibly after other tasks ran; every other register the
    // compiler allocates (all caller-saved ones and `s2`-`s11`) is declared clobbered, so
    // the compiler keeps only what is live across the call, and the kernel need not save
    // it. (`s0` and `s1` cannot be declared: LLVM reserves them as frame and base pointer.)
    unsafe {
        asm!(
            "ecall",
            inout("a0") a0,
            in("a1") arg,
            out("s2") _,
            out("s3") _,
            out("s4") _,
            out("s5") _,
            out("s6") _,
            out("s7") _,
            out("s8") _,
            out("s9") _,
            out("s10") _,
            out("s11") _,
            clobber_abi("C"),
        )
    };
    a0
}

// The only refusal a task's sleep can get is a sleep beyond the wrap-around-safe range
// (a task is always current when it calls), so the result is one bit.
fn sleep_result(code: usize, ticks: u32) -> Result<(), KernelError> {
    match code {
        0 => Ok(()),
        _ => Err(KernelError::SleepTooLong { ticks }),
    }
}

/// Sleeps the calling task for `ticks` machine-timer ticks.
pub fn sleep_for(ticks: u32) -> Result<(), KernelError> {
    sleep_result(syscall(sys::SLEEP_FOR, ticks as usize), ticks)
}

/// Sleeps the calling task until the tick counter reaches `at_ticks` (for drift-free
/// periodic tasks: add the period to the previous wake-up time).
pub fn sleep_until(at_ticks: u32) -> Result<(), KernelError> {
    let ticks = at_ticks.wrapping_sub(now_ticks());
    sleep_result(syscall(sys::SLEEP_UNTIL, at_ticks as usize), ticks)
}

/// Gives the CPU to the next ready task of the same level, if any. Refused inside a
/// critical section.
pub fn yield_now() -> Result<(), KernelError> {
    match syscall(sys::YIELD, 0) {
        0 => Ok(()),
        _ => Err(KernelError::LockHeld),
    }
}

/// Waits until the task is notified ([`Isr::notify`] from an interrupt handler, or
/// [`notify`] from a task); returns at once if a notification came since the last wait.
/// Refused inside a critical section.
pub fn wait() -> Result<(), KernelError> {
    match syscall(sys::WAIT, 0) {
        0 => Ok(()),
        _ => Err(KernelError::LockHeld),
    }
}

/// Notifies `task` from a task (see [`Kernel::notify`]); a woken task of a higher level
/// runs at once.
pub fn notify(task: TaskId) {
    // Through the trap, so the kernel may hand the CPU to the task at once, as from an
    // interrupt handler.
    syscall(sys::NOTIFY, task.index());
}

/// Asks the kernel to pick the task to run (after a change it could not act on itself).
fn reschedule() {
    syscall(sys::RESCHEDULE, 0);
}

/// The current tick count (low 32 bits of `mtime`).
pub fn now_ticks() -> u32 {
    MachineTimer.now_ticks()
}

/// The kernel's counters.
pub fn stats() -> Stats {
    with_state(|g| g.kernel.stats())
}

/// Instructions retired so far (`minstret`, low 32 bits): under QEMU's `-icount` this is an
/// exact instruction count.
pub fn instructions_retired() -> u32 {
    let n: u32;
    // SAFETY: reads a counter CSR; no side effects.
    unsafe { asm!("csrr {0}, minstret", out(reg) n, options(nomem, nostack)) };
    n
}

/// The trap handler proper, called by `_mmk_trap` with the saved frame: turns the trap into
/// an [`Event`], lets the kernel decide, and returns the frame to restore.
#[unsafe(no_mangle)]
extern "C" fn mmk_trap_rust(frame: *mut usize, mcause: usize) -> *mut usize {
    // SAFETY: the hardware cleared MIE on trap entry, so this is the only access to the
    // state (see `IrqCell`); `frame` is the 128-byte frame `_mmk_trap` just saved.
    let g = unsafe { &mut *STATE.0.get() };
    match g.kernel.current() {
        Some(t) => g.kernel.tcb_mut(t).context = frame as usize,
        None => g.idle_context = frame as usize,
    }
    let event = if mcause == MCAUSE_MACHINE_TIMER {
        Event::TimerInterrupt
    } else if mcause == MCAUSE_ECALL_M {
        // SAFETY: in-bounds words of the saved frame (`_mmk_trap` already advanced the
        // saved `mepc` past the 4-byte `ecall`).
        let (number, arg) = unsafe { (*frame.add(FRAME_A0), *frame.add(FRAME_A1)) };
        match number {
            sys::YIELD => Event::Yield,
            sys::SLEEP_FOR => Event::SleepFor(arg as u32),
            sys::SLEEP_UNTIL => Event::SleepUntil(arg as u32),
            sys::WAIT => Event::Wait,
            sys::NOTIFY => Event::Notify(TaskId::from_index(arg as u8)),
            _ => Event::Reschedule,
        }
    } else {
        fatal(mcause)
    };
    let result = dispatch(&mut g.kernel, &mut g.timer, event);
    if mcause == MCAUSE_ECALL_M {
        // SAFETY: as above; the caller's `a0` carries the result back.
        unsafe { *frame.add(FRAME_A0) = usize::from(result.is_err()) };
    }
    match g.kernel.current() {
        Some(t) => g.kernel.tcb(t).context as *mut usize,
        None => g.idle_context as *mut usize,
    }
}

/// The start of the device-interrupt path (see `_mmk_trap`): records `frame` as the
/// interrupted task's (or idle loop's) context and answers the kernel's address, which the
/// trap passes to the source's handler.
#[unsafe(no_mangle)]
extern "C" fn mmk_irq_begin(frame: *mut usize) -> *mut McuKernel {
    // SAFETY: as in `mmk_trap_rust`: interrupts are off in the trap handler, so this is the
    // only access to the state.
    let g = unsafe { &mut *STATE.0.get() };
    if !g.kernel.save_context(frame as usize) {
        g.idle_context = frame as usize;
    }
    &mut g.kernel
}

/// The end of the device-interrupt path: lets the kernel decide if a handler's
/// notification left it to (usually the handler already switched to the woken task) and
/// answers the frame of the task to run.
#[unsafe(no_mangle)]
extern "C" fn mmk_irq_end() -> *mut usize {
    // SAFETY: as in `mmk_irq_begin`; the handler's reference to the kernel has ended.
    let g = unsafe { &mut *STATE.0.get() };
    if g.kernel.needs_schedule() {
        return irq_reschedule();
    }
    g.kernel.current_context().unwrap_or(g.idle_context) as *mut usize
}

/// The rare end of the device-interrupt path: the kernel decides (kept out of line, so
/// the usual path needs no stack frame).
#[cold]
#[inline(never)]
fn irq_reschedule() -> *mut usize {
    // SAFETY: as in `mmk_irq_begin`.
    let g = unsafe { &mut *STATE.0.get() };
    g.kernel.schedule();
    g.kernel.current_context().unwrap_or(g.idle_context) as *mut usize
}

/// The answer of [`mmk_yield_rust`], returned in `a0` and `a1`.
#[repr(C)]
struct YieldAnswer {
    /// The frame to restore (`a0`).
    frame: *mut usize,
    /// 0: no task is running, take the general path; `frame` is meaningless (`a1`).
    handled: usize,
}

/// The yield fast path, called by `_mmk_trap` for a yield `ecall` with the saved frame (its
/// result word already 0): one call into the kernel, which rotates the running task's level
/// and answers with the frame to restore. A yield from no task (the idle context) is
/// refused through the general handler (`handled` 0), which reports the error in the frame.
#[unsafe(no_mangle)]
extern "C" fn mmk_yield_rust(frame: *mut usize) -> YieldAnswer {
    // SAFETY: as in `mmk_trap_rust`: interrupts are off in the trap handler, so this is the
    // only access to the state.
    let g = unsafe { &mut *STATE.0.get() };
    match g.kernel.yield_switch(frame as usize) {
        Some(context) => YieldAnswer {
            frame: context as *mut usize,
            handled: 1,
        },
        None => YieldAnswer { frame, handled: 0 },
    }
}

fn fatal(mcause: usize) -> ! {
    let mut uart = Uart;
    let _ = writeln!(uart, "kernel: unexpected trap, mcause={mcause:#x}");
    exit(2)
}

/// Writes one formatted line to the UART with interrupts off, so lines from tasks of
/// different priorities never interleave.
pub fn log(args: fmt::Arguments<'_>) {
    critical(|| {
        let mut uart = Uart;
        let _ = uart.write_fmt(args);
        let _ = uart.write_str("\n");
    });
}

/// Ends the QEMU run through the SiFive test device: `0` passes, anything else fails with
/// that code.
pub fn exit(code: u16) -> ! {
    let value = if code == 0 {
        0x5555
    } else {
        (u32::from(code) << 16) | 0x3333
    };
    // SAFETY: the test device's finisher register; writing it stops the machine.
    unsafe { write_volatile(TEST_DEVICE as *mut u32, value) };
    loop {
        // SAFETY: waits; the machine is already stopping.
        unsafe { asm!("wfi", options(nomem, nostack)) };
    }
}

/// A global allocator for firmware that has no heap: every allocation fails, so an
/// accidental allocation is caught at once rather than corrupting memory. (`mmsched-core`
/// links `alloc` for its std users; the kernel and the LDTI hook never allocate.)
#[derive(Debug)]
pub struct NoHeap;

// SAFETY: returning null is the documented way to report allocation failure.
unsafe impl GlobalAlloc for NoHeap {
    unsafe fn alloc(&self, _layout: Layout) -> *mut u8 {
        core::ptr::null_mut()
    }

    unsafe fn dealloc(&self, _ptr: *mut u8, _layout: Layout) {}
}

/// Names the firmware's entry point, called by `_start` once `.bss` is zeroed and the trap
/// vector installed: `mmsched_kernel::mcu_entry!(main);` with `fn main() -> !`.
#[macro_export]
macro_rules! mcu_entry {
    ($main:path) => {
        #[unsafe(export_name = "mmk_main")]
        extern "C" fn __mmk_main() -> ! {
            let main: fn() -> ! = $main;
            main()
        }
    };
}
