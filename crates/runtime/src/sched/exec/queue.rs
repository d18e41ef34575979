//! The shared-queue baselines: `fifo` (first come, first served) and `static-priority`
//! (a fixed priority per modality, first come within it). Workers take the next job
//! themselves; nothing is shed, nothing is preempted.
//!
//! A worker may be restricted to some job classes (the audio worker of
//! [`crate::sched::lanes::standard_lanes`]): jobs of those classes wait in a queue of
//! their own, which the restricted worker drains; a general worker takes whichever of the
//! two queues' heads comes first in the order, so a chunk never waits for the audio
//! worker while a general worker idles.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Sender, channel};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use mmsched_core::Modality;
use mmsched_core::arbiter::{ClassId, JobId};
use mmsched_core::time::{Clock, Nanos};

use super::{
    ClassNames, Completions, ExecEvent, Executor, IDLE_POLL, SchedulerKind, Task, TaskInfo,
};
use crate::sched::lanes::LaneLayout;
use crate::sched::work::Work;
use crate::sched::worker::{Completion, LaneConfig, run_step};

/// The order of the shared queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueOrder {
    /// Oldest job first.
    Fifo,
    /// Audio, then vision, then text, then the rest; oldest first within a modality.
    StaticPriority,
}

pub(super) fn priority(order: QueueOrder, modality: Modality) -> u8 {
    match order {
        QueueOrder::Fifo => 0,
        QueueOrder::StaticPriority => match modality {
            Modality::Audio => 0,
            Modality::Image => 1,
            Modality::Imu => 2,
            Modality::Text => 3,
            Modality::Log => 4,
        },
    }
}

pub(super) type Key = Reverse<(u8, u64)>;

#[derive(Default)]
pub(super) struct State {
    /// Jobs any worker may take.
    pub(super) general: BinaryHeap<Key>,
    /// Jobs of the classes a restricted worker runs.
    pub(super) dedicated: BinaryHeap<Key>,
    pub(super) works: HashMap<u64, (JobId, Box<dyn Work>)>,
    pub(super) running: Vec<bool>,
    closed: bool,
}

impl State {
    /// An empty queue for `lanes` workers, none running.
    pub(super) fn for_lanes(lanes: usize) -> Self {
        Self {
            running: vec![false; lanes],
            ..Self::default()
        }
    }

    /// The next job for a worker: a restricted one takes only dedicated jobs; a general
    /// one the head that comes first.
    pub(super) fn take(&mut self, restricted: bool) -> Option<(JobId, Box<dyn Work>)> {
        let from_dedicated = restricted
            || match (self.general.peek(), self.dedicated.peek()) {
                (Some(g), Some(d)) => d > g,
                (None, Some(_)) => true,
                _ => false,
            };
        let Reverse((_, seq)) = if from_dedicated {
            self.dedicated.pop()?
        } else {
            self.general.pop()?
        };
        self.works.remove(&seq)
    }
}

/// What both queue executors keep in front of their queue: its order, the classes of the
/// restricted workers, the job numbers and what each job is.
pub(super) struct Front {
    pub(super) order: QueueOrder,
    /// Class names the restricted workers run.
    dedicated_names: Vec<String>,
    dedicated: Vec<ClassId>,
    pub(super) infos: HashMap<JobId, TaskInfo>,
    classes: ClassNames,
    next_id: u64,
}

impl Front {
    /// The front of a queue in `order` whose restricted workers run `layout`'s classes.
    pub(super) fn new(order: QueueOrder, layout: &LaneLayout) -> Self {
        Self {
            order,
            dedicated_names: layout
                .restricted
                .iter()
                .flat_map(|(_, c)| c.iter().cloned())
                .collect(),
            dedicated: Vec::new(),
            infos: HashMap::new(),
            classes: ClassNames::default(),
            next_id: 0,
        }
    }

    /// The scheduler it is.
    pub(super) fn kind(&self) -> SchedulerKind {
        match self.order {
            QueueOrder::Fifo => SchedulerKind::Fifo,
            QueueOrder::StaticPriority => SchedulerKind::StaticPriority,
        }
    }

    /// The class called `name`, noted as dedicated if a restricted worker runs it.
    pub(super) fn class(&mut self, name: &str) -> ClassId {
        let id = self.classes.id(name);
        if self.dedicated_names.iter().any(|n| n == name) && !self.dedicated.contains(&id) {
            self.dedicated.push(id);
        }
        id
    }

    /// Puts `task` into `state`'s queues, in order.
    pub(super) fn enqueue(&mut self, task: Task, state: &mut State) -> JobId {
        let id = JobId(self.next_id);
        let seq = self.next_id;
        self.next_id += 1;
        self.infos.insert(id, task.info);
        let key = Reverse((priority(self.order, task.info.modality), seq));
        if self.dedicated.contains(&task.info.class) {
            state.dedicated.push(key);
        } else {
            state.general.push(key);
        }
        state.works.insert(seq, (id, task.work));
        id
    }
}

struct Shared {
    state: Mutex<State>,
    ready: Condvar,
    /// Wall time the workers spent choosing their next job (holding the queue's lock).
    decision_nanos: AtomicU64,
}

fn lock(s: &Shared) -> MutexGuard<'_, State> {
    s.state.lock().unwrap_or_else(|p| p.into_inner())
}

/// One shared queue drained by a fixed set of workers. See the [module docs](self).
pub struct SharedQueue {
    front: Front,
    shared: Arc<Shared>,
    done: Completions,
    handles: Vec<JoinHandle<()>>,
    notes: Vec<String>,
}

impl std::fmt::Debug for SharedQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedQueue")
            .field("order", &self.front.order)
            .field("in_flight", &self.front.infos.len())
            .finish()
    }
}

impl SharedQueue {
    /// Starts one worker per lane of `layout`, taking jobs in `order`; a restricted lane
    /// takes only jobs of its classes.
    pub fn new<C: Clock + Clone + Send + 'static>(
        order: QueueOrder,
        layout: &LaneLayout,
        clock: C,
        #[cfg(target_os = "linux")] cgroups: Option<crate::platform::cgroup::CgroupHandle>,
    ) -> Self {
        let lanes = &layout.lanes;
        let shared = Arc::new(Shared {
            state: Mutex::new(State::for_lanes(lanes.len().max(1))),
            ready: Condvar::new(),
            decision_nanos: AtomicU64::new(0),
        });
        let restricted: Vec<bool> = (0..lanes.len().max(1))
            .map(|i| layout.restricted.iter().any(|(w, _)| *w == i))
            .collect();
        let (tx, done) = channel();
        let (note_tx, note_rx) = channel::<String>();
        let lanes = if lanes.is_empty() {
            vec![LaneConfig::default()]
        } else {
            lanes.to_vec()
        };
        let handles = lanes
            .into_iter()
            .enumerate()
            .map(|(lane, config)| {
                let restricted = restricted[lane];
                let shared = Arc::clone(&shared);
                let tx: Sender<Completion> = tx.clone();
                let clock = clock.clone();
                let note_tx = note_tx.clone();
                #[cfg(target_os = "linux")]
                let cgroups = cgroups.clone();
                std::thread::spawn(move || {
                    #[cfg(target_os = "linux")]
                    crate::sched::worker::setup_lane(lane, &config, cgroups.as_ref(), &note_tx);
                    #[cfg(not(target_os = "linux"))]
                    let _ = &config;
                    drop(note_tx);
                    take_loop(lane, restricted, &shared, &clock, &tx);
                })
            })
            .collect();
        drop(note_tx);
        Self {
            front: Front::new(order, layout),
            shared,
            done: Completions::new(done),
            handles,
            notes: note_rx.iter().collect(),
        }
    }
}

fn take_loop<C: Clock>(
    lane: usize,
    restricted: bool,
    shared: &Shared,
    clock: &C,
    done: &Sender<Completion>,
) {
    loop {
        let (job, work) = {
            let mut st = lock(shared);
            loop {
                if st.closed {
                    return;
                }
                let t0 = clock.now_nanos();
                let taken = st.take(restricted);
                shared
                    .decision_nanos
                    .fetch_add(clock.now_nanos().saturating_sub(t0), Ordering::Relaxed);
                if let Some(w) = taken {
                    st.running[lane] = true;
                    break w;
                }
                st = shared
                    .ready
                    .wait_timeout(st, IDLE_POLL)
                    .map(|(g, _)| g)
                    .unwrap_or_else(|p| p.into_inner().0);
            }
        };
        let c = run_step(lane, job, work, clock);
        lock(shared).running[lane] = false;
        if done.send(c).is_err() {
            return;
        }
    }
}

impl Drop for SharedQueue {
    fn drop(&mut self) {
        lock(&self.shared).closed = true;
        self.shared.ready.notify_all();
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
    }
}

impl Executor for SharedQueue {
    fn kind(&self) -> SchedulerKind {
        self.front.kind()
    }

    fn class(&mut self, name: &str) -> ClassId {
        self.front.class(name)
    }

    fn submit(&mut self, _now_nanos: Nanos, task: Task) -> JobId {
        let id = self.front.enqueue(task, &mut lock(&self.shared));
        // Wake every worker: the one that may take this job may not be the first woken.
        self.shared.ready.notify_all();
        id
    }

    fn poll(&mut self, _now_nanos: Nanos, out: &mut Vec<ExecEvent>) {
        self.done.report(&mut self.front.infos, out);
    }

    fn wait(&mut self, timeout: Duration) {
        self.done.wait(timeout);
    }

    fn in_flight(&self) -> usize {
        self.front.infos.len()
    }

    fn occupancy(&self, _now_nanos: Nanos) -> Vec<f64> {
        lock(&self.shared)
            .running
            .iter()
            .map(|&r| if r { 1.0 } else { 0.0 })
            .collect()
    }

    fn decision_nanos(&self) -> u64 {
        self.shared.decision_nanos.load(Ordering::Relaxed)
    }

    fn worker_side_decisions(&self) -> bool {
        true
    }

    fn notes(&self) -> Vec<String> {
        self.notes.clone()
    }
}
