//! Virtual time for testing whatever drives an executor: a clock that moves only when
//! told ([`VirtualClock`]) and lanes that run a step at once but let it end a given
//! number of nanoseconds later on that clock ([`VirtualLanes`]). Waiting on the lanes
//! moves the clock to the next step's end, so a loop that sleeps through
//! [`crate::sched::Executor::wait`] runs minutes of device time in milliseconds, with the
//! same decisions as on threads and no sleeping.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use mmsched_core::arbiter::JobId;
use mmsched_core::time::{Clock, Nanos};

use super::exec::{StepLanes, TaskInfo};
use super::work::Work;
use super::worker::{Completion, run_step};

/// A clock shared between threads that moves only forward and only when told.
#[derive(Debug, Clone, Default)]
pub struct VirtualClock(Arc<AtomicU64>);

impl VirtualClock {
    /// A clock standing at `start_nanos`.
    pub fn new(start_nanos: Nanos) -> Self {
        Self(Arc::new(AtomicU64::new(start_nanos)))
    }

    /// Moves the clock to `at_nanos` if that is later than now (it never goes back).
    pub fn set(&self, at_nanos: Nanos) {
        self.0.fetch_max(at_nanos, Ordering::SeqCst);
    }

    /// Moves the clock forward by `delta_nanos`.
    pub fn advance(&self, delta_nanos: Nanos) {
        self.set(self.now_nanos().saturating_add(delta_nanos));
    }
}

impl Clock for VirtualClock {
    fn now_nanos(&self) -> Nanos {
        self.0.load(Ordering::SeqCst)
    }
}

/// Where and when a step starts on the virtual lanes: what a cost that depends on the
/// work beside it (two models sharing a memory bus, a background load taking the cores
/// the workers leave) needs to know.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepStart {
    /// The lane it runs on.
    pub lane: usize,
    /// When it starts, on the virtual clock.
    pub start_nanos: Nanos,
    /// The lanes running a step at that moment, this one included (bit `i`: lane `i`;
    /// lanes past 63 are not shown).
    pub busy_lanes: u64,
}

impl StepStart {
    /// Whether lane `lane` runs a step as this one starts.
    pub fn is_busy(&self, lane: usize) -> bool {
        lane < 64 && self.busy_lanes & (1 << lane) != 0
    }
}

/// How long a step takes in virtual time, from what the executor knows of its job and
/// where and when it starts. The step's work has run (at once) before this is asked, so
/// a simulated model can leave the cost it drew for the lanes to read.
pub type StepCost = Box<dyn FnMut(&TaskInfo, &StepStart) -> Nanos + Send>;

/// Lanes in virtual time: a step's work runs at once on the caller's thread (fake work
/// that returns without computing), and the step ends `cost(info)` later on the clock.
/// Threads granted to a step do not shorten it.
pub struct VirtualLanes {
    clock: VirtualClock,
    cost: StepCost,
    busy_until: Vec<Nanos>,
    running: Vec<Completion>,
}

impl std::fmt::Debug for VirtualLanes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VirtualLanes")
            .field("lanes", &self.busy_until.len())
            .field("running", &self.running.len())
            .finish()
    }
}

impl VirtualLanes {
    /// `lanes` lanes on `clock`, steps taking `cost`.
    pub fn new(lanes: usize, clock: VirtualClock, cost: StepCost) -> Self {
        Self {
            clock,
            cost,
            busy_until: vec![0; lanes.max(1)],
            running: Vec::new(),
        }
    }
}

impl StepLanes for VirtualLanes {
    fn start(
        &mut self,
        lane: usize,
        job: JobId,
        info: &TaskInfo,
        work: Box<dyn Work>,
        _threads: usize,
    ) -> Result<(), Box<dyn Work>> {
        let Some(&busy_until) = self.busy_until.get(lane) else {
            return Err(work);
        };
        // The step runs now, taking no virtual time; its times are the lane's.
        let mut step = run_step(lane, job, work, &self.clock);
        // A lane runs one step at a time: a step started while another runs queues.
        step.started_nanos = step.started_nanos.max(busy_until);
        let start_nanos = step.started_nanos;
        let busy_lanes = self
            .busy_until
            .iter()
            .enumerate()
            .filter(|&(i, &until)| i == lane || until > start_nanos)
            .fold(0u64, |mask, (i, _)| match i {
                0..64 => mask | (1 << i),
                _ => mask,
            });
        let at = StepStart {
            lane,
            start_nanos,
            busy_lanes,
        };
        step.ended_nanos = start_nanos.saturating_add((self.cost)(info, &at));
        if let Some(busy_until) = self.busy_until.get_mut(lane) {
            *busy_until = step.ended_nanos;
        }
        self.running.push(step);
        Ok(())
    }

    fn finished(&mut self) -> Vec<Completion> {
        let now = self.clock.now_nanos();
        let (done, running) = std::mem::take(&mut self.running)
            .into_iter()
            .partition(|c| c.ended_nanos <= now);
        self.running = running;
        done
    }

    fn wait(&mut self, timeout: Duration) {
        let now = self.clock.now_nanos();
        let until = now.saturating_add(u64::try_from(timeout.as_nanos()).unwrap_or(u64::MAX));
        let next_end = self.running.iter().map(|c| c.ended_nanos).min();
        match next_end {
            Some(end) if end <= now => {}
            Some(end) => self.clock.set(end.min(until)),
            None => self.clock.set(until),
        }
    }

    fn notes(&self) -> Vec<String> {
        vec![format!("{} lane(s) in virtual time", self.busy_until.len())]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::exec::{MmschedExecutor, MmschedSetup};
    use crate::sched::{ExecEvent, Executor, LaneConfig, StepOutcome, Task};
    use mmsched_core::Modality;
    use mmsched_core::policy::Policy;

    fn executor(clock: &VirtualClock, step_ms: u64) -> MmschedExecutor<VirtualClock, VirtualLanes> {
        let setup = MmschedSetup {
            lanes: vec![LaneConfig::default()],
            ..MmschedSetup::default()
        };
        let lanes = VirtualLanes::new(1, clock.clone(), Box::new(move |_, _| step_ms * 1_000_000));
        MmschedExecutor::with_lanes(&Policy::default(), &setup, clock.clone(), lanes)
            .expect("executor")
    }

    fn task(exec: &mut dyn Executor, deadline_nanos: Nanos, tag: u64) -> Task {
        Task {
            info: TaskInfo {
                class: exec.class("fake"),
                modality: Modality::Image,
                deadline_nanos,
                predicted_cost_nanos: 10_000_000,
                importance: 0.5,
                committed: false,
                tag,
            },
            work: Box::new(|| Ok(StepOutcome::Finished)),
        }
    }

    #[test]
    fn steps_end_after_their_cost_and_waiting_moves_the_clock_to_the_next_end() {
        let clock = VirtualClock::new(1_000_000_000);
        let mut exec = executor(&clock, 10);
        for tag in 0..2 {
            let t = task(&mut exec, 2_000_000_000, tag);
            exec.submit(clock.now_nanos(), t);
        }
        let mut ends = Vec::new();
        let mut events = Vec::new();
        while exec.in_flight() > 0 && clock.now_nanos() < 2_000_000_000 {
            exec.poll(clock.now_nanos(), &mut events);
            for e in events.drain(..) {
                if let ExecEvent::Done { ended_nanos, .. } = e {
                    ends.push(ended_nanos);
                }
            }
            exec.wait(Duration::from_millis(5));
        }
        // One lane: the second step starts when the first ends.
        assert_eq!(ends, vec![1_010_000_000, 1_020_000_000]);
        // Waiting jumped from end to end (plus the one wait after the last poll).
        assert_eq!(clock.now_nanos(), 1_025_000_000);
    }

    #[test]
    fn waiting_with_nothing_running_moves_the_clock_by_the_timeout() {
        let clock = VirtualClock::new(0);
        let mut lanes = VirtualLanes::new(2, clock.clone(), Box::new(|_, _| 1));
        lanes.wait(Duration::from_millis(5));
        assert_eq!(clock.now_nanos(), 5_000_000);
        clock.set(1);
        assert_eq!(clock.now_nanos(), 5_000_000, "never back");
    }
}
