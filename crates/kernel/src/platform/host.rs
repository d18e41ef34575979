//! The host platform: a fake timer that tests advance, driving the same [`dispatch`] as the
//! RISC-V trap handler. Tests play the part of the tasks (they issue the sleeps and yields
//! the running task would) and of time (they call [`HostMcu::advance`]).

use super::{Event, Timer, dispatch};
use crate::kernel::{Kernel, KernelError};
use crate::lock::Ceiling;
use crate::task::{Priority, TaskId};
use crate::timer::tick_before;

/// A fake one-shot timer: time moves only when [`HostMcu::advance`] moves it.
#[derive(Debug, Clone, Default)]
pub struct FakeTimer {
    now_ticks: u32,
    alarm_ticks: Option<u32>,
}

impl FakeTimer {
    /// A timer standing at `now_ticks`, with no alarm.
    pub fn new(now_ticks: u32) -> Self {
        Self {
            now_ticks,
            alarm_ticks: None,
        }
    }

    /// The armed alarm, if any.
    pub fn alarm(&self) -> Option<u32> {
        self.alarm_ticks
    }
}

impl Timer for FakeTimer {
    fn now_ticks(&self) -> u32 {
        self.now_ticks
    }

    fn set_alarm(&mut self, at_ticks: Option<u32>) {
        self.alarm_ticks = at_ticks;
    }
}

/// A simulated MCU: a kernel, its fake timer and the interrupts they produce.
#[derive(Debug, Clone)]
pub struct HostMcu<const N: usize> {
    /// The kernel, as the trap handler would see it.
    pub kernel: Kernel<N>,
    /// The fake timer.
    pub timer: FakeTimer,
    /// Timer interrupts delivered so far.
    pub interrupts: u32,
}

impl<const N: usize> HostMcu<N> {
    /// A machine whose tick counter starts at `start_ticks` (start near `u32::MAX` to test
    /// the wrap-around).
    pub fn new(start_ticks: u32) -> Self {
        Self {
            kernel: Kernel::new(),
            timer: FakeTimer::new(start_ticks),
            interrupts: 0,
        }
    }

    /// The current tick.
    pub fn now_ticks(&self) -> u32 {
        self.timer.now_ticks
    }

    /// Creates a task (see [`Kernel::spawn`]).
    pub fn spawn(&mut self, priority: Priority) -> Result<TaskId, KernelError> {
        self.kernel.spawn(priority)
    }

    /// Starts scheduling; returns the first task to run.
    pub fn start(&mut self) -> Option<TaskId> {
        self.kernel.schedule()
    }

    /// The running task.
    pub fn current(&self) -> Option<TaskId> {
        self.kernel.current()
    }

    /// The running task calls `sleep_for(ticks)`; returns who runs next.
    pub fn sleep_for(&mut self, ticks: u32) -> Result<Option<TaskId>, KernelError> {
        dispatch(&mut self.kernel, &mut self.timer, Event::SleepFor(ticks))
    }

    /// The running task calls `sleep_until(at_ticks)`; returns who runs next.
    pub fn sleep_until(&mut self, at_ticks: u32) -> Result<Option<TaskId>, KernelError> {
        dispatch(
            &mut self.kernel,
            &mut self.timer,
            Event::SleepUntil(at_ticks),
        )
    }

    /// The running task yields; returns who runs next.
    pub fn yield_now(&mut self) -> Result<Option<TaskId>, KernelError> {
        dispatch(&mut self.kernel, &mut self.timer, Event::Yield)
    }

    /// The running task waits for a notification; returns who runs next.
    pub fn wait(&mut self) -> Result<Option<TaskId>, KernelError> {
        dispatch(&mut self.kernel, &mut self.timer, Event::Wait)
    }

    /// A device interrupt notifies `task` (the path the RISC-V interrupt handler takes);
    /// returns who runs next.
    pub fn notify(&mut self, task: TaskId) -> Option<TaskId> {
        self.kernel.notify_preempting(task);
        self.kernel.schedule_if_needed()
    }

    /// A task notifies `task` (through the same `dispatch` as the RISC-V system call);
    /// returns who runs next.
    pub fn notify_from_task(&mut self, task: TaskId) -> Option<TaskId> {
        let _ = dispatch(&mut self.kernel, &mut self.timer, Event::Notify(task));
        self.kernel.current()
    }

    /// The running task enters a critical section of a resource with `ceiling`; returns the
    /// level to give back to [`unlock`](Self::unlock).
    pub fn lock(&mut self, ceiling: Ceiling) -> Result<Priority, KernelError> {
        self.kernel.lock(ceiling)
    }

    /// The running task leaves its innermost critical section; when that lets a higher task
    /// run, it reschedules as the platform does. Returns who runs next.
    pub fn unlock(&mut self, before: Priority) -> Option<TaskId> {
        if self.kernel.unlock(before) {
            let _ = dispatch(&mut self.kernel, &mut self.timer, Event::Reschedule);
        }
        self.kernel.current()
    }

    /// A device interrupt wakes `task` early; returns who runs next.
    pub fn wake(&mut self, task: TaskId) -> Option<TaskId> {
        self.kernel.wake(task);
        self.timer.set_alarm(self.kernel.next_alarm());
        self.kernel.schedule()
    }

    /// Lets `ticks` pass, delivering each timer interrupt at the tick its alarm was armed
    /// for (an alarm armed in the past fires at once). `on_interrupt` sees the tick and the
    /// task scheduled after each interrupt. Returns the interrupts delivered.
    pub fn advance(
        &mut self,
        ticks: u32,
        mut on_interrupt: impl FnMut(u32, Option<TaskId>),
    ) -> u32 {
        let mut remaining = ticks;
        let mut fired = 0;
        while let Some(at) = self.timer.alarm_ticks {
            let due_in = if tick_before(at, self.timer.now_ticks) {
                0
            } else {
                at.wrapping_sub(self.timer.now_ticks)
            };
            if due_in > remaining {
                break;
            }
            remaining -= due_in;
            self.timer.now_ticks = self.timer.now_ticks.wrapping_add(due_in);
            // The compare register stays armed until the handler re-arms it.
            let next = dispatch(&mut self.kernel, &mut self.timer, Event::TimerInterrupt)
                .expect("a timer interrupt is never refused");
            self.interrupts += 1;
            fired += 1;
            on_interrupt(self.timer.now_ticks, next);
        }
        self.timer.now_ticks = self.timer.now_ticks.wrapping_add(remaining);
        fired
    }
}
