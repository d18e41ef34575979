//! The simulation's timeline: events in time order, and the loop that takes every event
//! due at one instant into one decision step of the scheduling core.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use mmsched_core::Clock;
use mmsched_core::scheduler::SchedEvent;
use mmsched_core::time::Nanos;

use super::setup::SimRun;

/// After the inputs stop, work already released runs to its end for at most this long, so
/// a run does not count jobs in flight as lost.
const DRAIN_NANOS: Nanos = 60_000_000_000;

/// Something that happens at an instant of the simulation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Ev {
    /// A stream's next sample (index into the stream list).
    Tick(usize),
    /// A booked request arrives on the device (key into the booked requests).
    Arrive(u64),
    /// A request's next step goes to the scheduler.
    Step(u64),
    /// A shed step (key into the booked requests), its retry due at the time given, is
    /// looked at again.
    Retry(u64, Nanos),
    /// A worker finished a step.
    Finish(u32, u64),
    /// The health loop evaluates.
    Health,
}

/// Events by time, then in the order they were pushed.
#[derive(Debug, Default)]
pub(super) struct EventQueue {
    heap: BinaryHeap<Reverse<(Nanos, u64, Ev)>>,
    seq: u64,
}

impl EventQueue {
    /// `ev` happens at `at`.
    pub(super) fn push(&mut self, at: Nanos, ev: Ev) {
        self.seq += 1;
        self.heap.push(Reverse((at, self.seq, ev)));
    }

    fn peek(&self) -> Option<(Nanos, Ev)> {
        self.heap.peek().map(|Reverse((at, _, ev))| (*at, *ev))
    }

    fn pop(&mut self) {
        self.heap.pop();
    }
}

impl SimRun<'_, '_> {
    /// Runs every event until the queue is empty or the drain after the inputs is over.
    pub(super) fn run_to_end(&mut self) {
        let drain_until = self.duration_nanos.saturating_add(DRAIN_NANOS);
        while let Some((at, ev)) = self.queue.peek() {
            if at >= drain_until {
                break;
            }
            if at >= self.duration_nanos && matches!(ev, Ev::Tick(_) | Ev::Health | Ev::Retry(..)) {
                // The inputs, the health loop and retries have stopped.
                self.queue.pop();
                continue;
            }
            self.clock.advance_to(at);
            self.instant(self.clock.now_nanos());
        }
    }

    /// Every event due at `now`, also those it causes at `now`, in one decision step.
    fn instant(&mut self, now: Nanos) {
        if !self.battery_sent {
            self.events
                .push(SchedEvent::Battery(self.cond.battery_fraction));
            self.battery_sent = true;
        }
        while let Some((at, ev)) = self.queue.peek() {
            if at != now {
                break;
            }
            self.queue.pop();
            let stopped = now >= self.duration_nanos;
            match ev {
                // The inputs, the health loop and retries have stopped (a request waiting to
                // retry stays unfinished, as in the runtime's drain).
                Ev::Tick(_) | Ev::Health | Ev::Retry(..) if stopped => {}
                Ev::Health => self.on_health(now),
                Ev::Tick(i) => self.on_tick(i, now),
                Ev::Arrive(id) => self.on_arrive(id, now),
                Ev::Step(id) => self.submit_step(id, now),
                Ev::Retry(id, retry_at) => self.on_retry(id, retry_at, now),
                Ev::Finish(worker, id) => self.on_finish(worker, id, now),
            }
        }
        // Steps handed over by a decision (a shed request freed its place) need another.
        while !self.events.is_empty() {
            self.decide(now);
        }
    }

    /// The health loop evaluates (and the next evaluation is due one period later).
    fn on_health(&mut self, now: Nanos) {
        let Some(h) = self.health.as_deref_mut() else {
            return;
        };
        let before = h.changes.len();
        h.evaluate(now);
        self.queue.push(now + h.period_nanos(), Ev::Health);
        for c in &h.changes[before..] {
            note(&mut self.trace, || {
                format!(
                    "{:>10} health {} ({})",
                    now / 1000,
                    c.action,
                    c.level.as_str()
                )
            });
        }
    }
}

/// Appends a golden-trace line to `trace`, if a trace is kept.
pub(super) fn note(trace: &mut Option<&mut Vec<String>>, line: impl FnOnce() -> String) {
    if let Some(t) = trace.as_deref_mut() {
        t.push(line());
    }
}
