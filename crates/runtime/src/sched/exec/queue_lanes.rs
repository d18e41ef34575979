//! The shared-queue baselines (`fifo`, `static-priority`) on lanes given from outside —
//! virtual lanes, for a simulated run ([`crate::sched::virtual_time::VirtualLanes`]). The
//! queue, its order and the restricted audio lane are [`super::SharedQueue`]'s; where a
//! worker thread of it takes the next job as soon as it is free, here each lane free at a
//! poll takes it, which on a virtual clock is the same moment. So a simulation compares
//! mmsched with the baselines on the same lanes, inputs and step costs.

use std::cmp::Reverse;
use std::collections::HashMap;
use std::time::Duration;

use mmsched_core::arbiter::{ClassId, JobId};
use mmsched_core::time::Nanos;

use super::queue::{State, priority};
use super::{
    ClassNames, ExecEvent, Executor, QueueOrder, SchedulerKind, StepLanes, Task, TaskInfo,
    done_event,
};
use crate::sched::lanes::LaneLayout;

/// A shared queue drained by `L`'s lanes. See the [module docs](self).
pub struct LaneQueue<L: StepLanes> {
    order: QueueOrder,
    dedicated_names: Vec<String>,
    dedicated: Vec<ClassId>,
    state: State,
    restricted: Vec<bool>,
    lanes: L,
    infos: HashMap<JobId, TaskInfo>,
    classes: ClassNames,
    next_id: u64,
}

impl<L: StepLanes> std::fmt::Debug for LaneQueue<L> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LaneQueue")
            .field("order", &self.order)
            .field("in_flight", &self.infos.len())
            .finish()
    }
}

impl<L: StepLanes> LaneQueue<L> {
    /// The queue in `order` on `lanes`, laid out as `layout` (its restricted lanes take only
    /// their classes).
    pub fn new(order: QueueOrder, layout: &LaneLayout, lanes: L) -> Self {
        let n = layout.lanes.len().max(1);
        Self {
            order,
            dedicated_names: layout
                .restricted
                .iter()
                .flat_map(|(_, c)| c.iter().cloned())
                .collect(),
            dedicated: Vec::new(),
            state: State::for_lanes(n),
            restricted: (0..n)
                .map(|i| layout.restricted.iter().any(|(w, _)| *w == i))
                .collect(),
            lanes,
            infos: HashMap::new(),
            classes: ClassNames::default(),
            next_id: 0,
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
            let Some(info) = self.infos.get(&job).copied() else {
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
        match self.order {
            QueueOrder::Fifo => SchedulerKind::Fifo,
            QueueOrder::StaticPriority => SchedulerKind::StaticPriority,
        }
    }

    fn class(&mut self, name: &str) -> ClassId {
        let id = self.classes.id(name);
        if self.dedicated_names.iter().any(|n| n == name) && !self.dedicated.contains(&id) {
            self.dedicated.push(id);
        }
        id
    }

    fn submit(&mut self, _now_nanos: Nanos, task: Task) -> JobId {
        let id = JobId(self.next_id);
        let seq = self.next_id;
        self.next_id += 1;
        self.infos.insert(id, task.info);
        let key = Reverse((priority(self.order, task.info.modality), seq));
        if self.dedicated.contains(&task.info.class) {
            self.state.dedicated.push(key);
        } else {
            self.state.general.push(key);
        }
        self.state.works.insert(seq, (id, task.work));
        self.dispatch();
        id
    }

    fn poll(&mut self, _now_nanos: Nanos, out: &mut Vec<ExecEvent>) {
        for c in self.lanes.finished() {
            if let Some(r) = self.state.running.get_mut(c.lane) {
                *r = false;
            }
            if let Some(info) = self.infos.remove(&c.job) {
                out.push(done_event(c, info));
            }
        }
        self.dispatch();
    }

    fn wait(&mut self, timeout: Duration) {
        self.lanes.wait(timeout);
    }

    fn in_flight(&self) -> usize {
        self.infos.len()
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
