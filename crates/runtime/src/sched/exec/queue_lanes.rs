//! The shared-queue baselines (`fifo`, `static-priority`) on lanes given from outside —
//! virtual lanes, for a simulated run ([`crate::sched::virtual_time::VirtualLanes`]). The
//! queue, its order and the restricted audio lane are [`super::SharedQueue`]'s; where a
//! worker thread of it takes the next job as soon as it is free, here each lane free at a
//! poll takes it, which on a virtual clock is the same moment. So a simulation compares
//! mmsched with the baselines on the same lanes, inputs and step costs.

use std::time::Duration;

use mmsched_core::arbiter::{ClassId, JobId};
use mmsched_core::time::Nanos;

use super::queue::{Front, State};
use super::{ExecEvent, Executor, QueueOrder, SchedulerKind, StepLanes, Task, done_event};
use crate::sched::lanes::LaneLayout;

/// A shared queue drained by `L`'s lanes. See the [module docs](self).
pub struct LaneQueue<L: StepLanes> {
    front: Front,
    state: State,
    restricted: Vec<bool>,
    lanes: L,
}

impl<L: StepLanes> std::fmt::Debug for LaneQueue<L> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LaneQueue")
            .field("order", &self.front.order)
            .field("in_flight", &self.front.infos.len())
            .finish()
    }
}

impl<L: StepLanes> LaneQueue<L> {
    /// The queue in `order` on `lanes`, laid out as `layout` (its restricted lanes take only
    /// their classes).
    pub fn new(order: QueueOrder, layout: &LaneLayout, lanes: L) -> Self {
        let n = layout.lanes.len().max(1);
        Self {
            front: Front::new(order, layout),
            state: State::for_lanes(n),
            restricted: (0..n)
                .map(|i| layout.restricted.iter().any(|(w, _)| *w == i))
                .collect(),
            lanes,
        }
    }

    /// Every free lane takes the next job it may run.
    fn dispatch(&mut self) {
        for lane in 0..self.state.running.len() {
            if self.state.running[lane] {
                continue;
            }
            let Some((job, work)) = self.state.take(self.restricted[lane]) else {
                continue;
            };
            let Some(info) = self.front.infos.get(&job).copied() else {
                continue;
            };
            self.state.running[lane] = true;
            if self.lanes.start(lane, job, &info, work, 1).is_err() {
                // A lane that cannot take work: the job is reported shed at the next poll.
                self.state.running[lane] = false;
            }
        }
    }
}

impl<L: StepLanes> Executor for LaneQueue<L> {
    fn kind(&self) -> SchedulerKind {
        self.front.kind()
    }

    fn class(&mut self, name: &str) -> ClassId {
        self.front.class(name)
    }

    fn submit(&mut self, _now_nanos: Nanos, task: Task) -> JobId {
        let id = self.front.enqueue(task, &mut self.state);
        self.dispatch();
        id
    }

    fn poll(&mut self, _now_nanos: Nanos, out: &mut Vec<ExecEvent>) {
        for c in self.lanes.finished() {
            if let Some(r) = self.state.running.get_mut(c.lane) {
                *r = false;
            }
            if let Some(info) = self.front.infos.remove(&c.job) {
                out.push(done_event(c, info));
            }
        }
        self.dispatch();
    }

    fn wait(&mut self, timeout: Duration) {
        self.lanes.wait(timeout);
    }

    fn in_flight(&self) -> usize {
        self.front.infos.len()
    }

    fn occupancy(&self, _now_nanos: Nanos) -> Vec<f64> {
        self.state
            .running
            .iter()
            .map(|&r| if r { 1.0 } else { 0.0 })
            .collect()
    }

    fn decision_nanos(&self) -> u64 {
        0
    }

    fn notes(&self) -> Vec<String> {
        self.lanes.notes()
    }
}
