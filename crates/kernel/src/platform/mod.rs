//! The boundary between the kernel's rules and a machine.
//!
//! A platform provides one thing the kernel needs, a [`Timer`], and turns its traps into
//! [`Event`]s for [`dispatch`]. Because the RISC-V trap handler and the host platform both
//! go through `dispatch`, the host tests run the exact event handling the MCU runs; only the
//! register save/restore and the CSR accesses are RISC-V specific.

use crate::kernel::{Kernel, KernelError};
use crate::task::TaskId;

pub mod host;
#[cfg(target_arch = "riscv32")]
pub mod riscv;

/// A one-shot alarm on a free-running 32-bit tick counter.
///
/// One method reads the counter, one arms (or disarms) the single compare register; there is
/// deliberately no periodic mode, so a platform cannot make the kernel tick.
pub trait Timer {
    /// The current tick count (wraps around at 2³²).
    fn now_ticks(&self) -> u32;
    /// Raise the timer interrupt once the counter reaches `at_ticks` (at once if it already
    /// has), or never for `None`. Replaces any earlier alarm.
    fn set_alarm(&mut self, at_ticks: Option<u32>);
}

/// Something that happened and needs a scheduling decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// The timer's alarm fired.
    TimerInterrupt,
    /// The running task asks to sleep for this many ticks.
    SleepFor(u32),
    /// The running task asks to sleep until this tick.
    SleepUntil(u32),
    /// The running task yields to its peers.
    Yield,
    /// The running task waits for a notification.
    Wait,
    /// The running task notifies a task (which runs at once if it is the highest).
    Notify(TaskId),
    /// Nothing changed, only pick the task to run (used once, to enter the first task).
    Reschedule,
}

/// Applies `event` to the kernel, re-arms the timer when the timer queue changed, and
/// returns the task to run next (`None`: idle). A refused call leaves the caller running.
pub fn dispatch<const N: usize, T: Timer>(
    kernel: &mut Kernel<N>,
    timer: &mut T,
    event: Event,
) -> Result<Option<TaskId>, KernelError> {
    let result = match event {
        Event::TimerInterrupt => {
            kernel.on_timer_interrupt(timer.now_ticks());
            timer.set_alarm(kernel.next_alarm());
            Ok(())
        }
        Event::SleepFor(ticks) => kernel.sleep_for(timer.now_ticks(), ticks).map(|()| {
            timer.set_alarm(kernel.next_alarm());
        }),
        Event::SleepUntil(at) => kernel.sleep_until(timer.now_ticks(), at).map(|()| {
            timer.set_alarm(kernel.next_alarm());
        }),
        // The path the RISC-V yield fast path takes, so the host tests cover it.
        Event::Yield => match kernel.current() {
            Some(t) => {
                let context = kernel.tcb(t).context;
                match kernel.yield_switch(context) {
                    Some(_) => Ok(()),
                    // Refused: the general call says why (a lock is held).
                    None => kernel.yield_now(),
                }
            }
            None => Err(KernelError::NoCurrentTask),
        },
        Event::Wait => kernel.wait(),
        Event::Notify(task) => {
            kernel.notify_preempting(task);
            Ok(())
        }
        Event::Reschedule => Ok(()),
    };
    let next = kernel.schedule();
    result.map(|()| next)
}
