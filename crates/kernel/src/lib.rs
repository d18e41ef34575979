//! # mmsched-kernel
//!
//! The scheduler kernel for the always-on RISC-V microcontroller beside the application
//! processor (S14). It keeps the scheduling rules of the Linux side and nothing more:
//!
//! - [`task`]: fixed-capacity task control blocks ([`task::Tcb`]) and 32 priority levels;
//! - [`ready`]: the ready queue, a 32-bit bitmap over per-level FIFO lists, so picking the
//!   next task is one find-first-set and one list pop;
//! - [`timer`]: the tickless timer queue, sorted by wake-up time, with wrap-around-safe
//!   comparisons on a 32-bit tick counter: the hardware timer is only ever programmed for the
//!   next wake-up, so an idle system takes no interrupts at all;
//! - [`kernel`]: [`Kernel`], the SCHED_FIFO rules tying the three together (FIFO within a
//!   level, a higher level preempts, a preempted task goes back to the head of its level);
//! - [`lock`]: shared resources under the immediate priority ceiling protocol — no
//!   deadlock, blocking bounded by one critical section, no kernel entry when uncontended;
//! - [`queue`]: a fixed-capacity single-producer single-consumer queue from interrupt
//!   handlers to tasks (full: the newest item is dropped and counted);
//! - [`slots`]: fixed-capacity slot booking with the IDLE → RESERVED → ACTIVE → IDLE state
//!   machine and the first-fit `reserve` of the time-slot layer (S1);
//! - [`policy`]: the MCU's priorities, slot geometry and LDTI settings, derived at build
//!   time from the policy document the Linux side reads;
//! - [`health`]: the hook that evaluates the LDTI index (S3) with `mmsched-core`'s own math;
//! - [`platform`]: the only code that touches hardware — the RISC-V trap entry, context
//!   switch, machine timer, PLIC and UART (`platform::riscv`, on `riscv32` only) and a host
//!   platform with a fake timer that tests advance (`platform::host`).
//!
//! Everything outside `platform::riscv` is safe, allocation-free and deterministic: the kernel
//! never reads a clock, it is handed `now_ticks` and answers with the next alarm to program.
#![cfg_attr(not(test), no_std)]
#![deny(missing_docs)]

pub mod health;
pub mod kernel;
pub mod lock;
pub mod platform;
pub mod policy;
pub mod queue;
pub mod ready;
pub mod slots;
pub mod task;
pub mod timer;

pub use kernel::{Kernel, KernelError, Stats};
pub use lock::Ceiling;
pub use task::{Priority, TaskId, TaskState};
