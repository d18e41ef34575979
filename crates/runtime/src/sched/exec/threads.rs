//! The `os-threads` baseline: one thread per model (job class), each draining its own
//! first-come queue. Nobody decides across models: the operating system's scheduler
//! shares the cores among the threads — what most multimodal applications do today.

use std::collections::HashMap;
use std::sync::mpsc::{Sender, channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use mmsched_core::arbiter::{ClassId, JobId};
use mmsched_core::time::{Clock, Nanos};

use super::{ClassNames, Completions, ExecEvent, Executor, SchedulerKind, Task, TaskInfo};
use crate::sched::work::Work;
use crate::sched::worker::{Completion, LaneConfig, run_step};

/// Where a class thread takes its jobs from.
type JobSender = Sender<(JobId, Box<dyn Work>)>;

/// How each model's thread is set up, by class name.
pub type ClassLanes = Box<dyn Fn(&str) -> LaneConfig + Send>;

/// One thread per class. See the [module docs](self).
pub struct ThreadPerModel<C: Clock> {
    clock: C,
    lane_config: ClassLanes,
    #[cfg(target_os = "linux")]
    cgroups: Option<crate::platform::cgroup::CgroupHandle>,
    notes: Vec<String>,
    threads: HashMap<ClassId, (JobSender, JoinHandle<()>)>,
    busy: Arc<Mutex<Vec<bool>>>,
    lane_of: HashMap<ClassId, usize>,
    done_tx: Sender<Completion>,
    done: Completions,
    infos: HashMap<JobId, TaskInfo>,
    classes: ClassNames,
    next_id: u64,
}

impl<C: Clock> std::fmt::Debug for ThreadPerModel<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ThreadPerModel")
            .field("threads", &self.threads.len())
            .field("in_flight", &self.infos.len())
            .finish()
    }
}

impl<C: Clock + Clone + Send + 'static> ThreadPerModel<C> {
    /// No threads yet: each class gets its thread when it is named ([`Executor::class`]),
    /// set up as `lane_config` says for the class's name (pinning, real time, resource
    /// group; see [`crate::sched::lanes::class_lane`]).
    pub fn new(
        clock: C,
        lane_config: ClassLanes,
        #[cfg(target_os = "linux")] cgroups: Option<crate::platform::cgroup::CgroupHandle>,
    ) -> Self {
        let (done_tx, done) = channel();
        Self {
            clock,
            lane_config,
            #[cfg(target_os = "linux")]
            cgroups,
            notes: Vec::new(),
            threads: HashMap::new(),
            busy: Arc::new(Mutex::new(Vec::new())),
            lane_of: HashMap::new(),
            done_tx,
            done: Completions::new(done),
            infos: HashMap::new(),
            classes: ClassNames::default(),
            next_id: 0,
        }
    }

    /// The thread of `class` (started on first use, set up for `name`).
    fn sender(&mut self, class: ClassId, name: &str) -> &JobSender {
        let lane = self.lane_of.len();
        let lane = *self.lane_of.entry(class).or_insert(lane);
        let clock = self.clock.clone();
        let done = self.done_tx.clone();
        let busy = Arc::clone(&self.busy);
        let lane_config = &self.lane_config;
        #[cfg(target_os = "linux")]
        let cgroups = self.cgroups.clone();
        let notes = &mut self.notes;
        &self
            .threads
            .entry(class)
            .or_insert_with(|| {
                let (tx, rx) = channel::<(JobId, Box<dyn Work>)>();
                let (note_tx, note_rx) = channel::<String>();
                let config = lane_config(name);
                set_busy(&busy, lane, false);
                let handle = std::thread::spawn(move || {
                    #[cfg(target_os = "linux")]
                    crate::sched::worker::setup_lane(lane, &config, cgroups.as_ref(), &note_tx);
                    #[cfg(not(target_os = "linux"))]
                    let _ = &config;
                    drop(note_tx);
                    for (job, work) in rx {
                        set_busy(&busy, lane, true);
                        let c = run_step(lane, job, work, &clock);
                        set_busy(&busy, lane, false);
                        if done.send(c).is_err() {
                            return;
                        }
                    }
                });
                // The set-up's notes, once it is done (the thread drops its sender).
                notes.extend(note_rx.iter());
                (tx, handle)
            })
            .0
    }
}

fn set_busy(busy: &Mutex<Vec<bool>>, lane: usize, value: bool) {
    let mut b = busy.lock().unwrap_or_else(|p| p.into_inner());
    if b.len() <= lane {
        b.resize(lane + 1, false);
    }
    b[lane] = value;
}

impl<C: Clock> Drop for ThreadPerModel<C> {
    fn drop(&mut self) {
        let threads: Vec<_> = self.threads.drain().map(|(_, t)| t).collect();
        for (tx, handle) in threads {
            drop(tx);
            let _ = handle.join();
        }
    }
}

impl<C: Clock + Clone + Send + 'static> Executor for ThreadPerModel<C> {
    fn kind(&self) -> SchedulerKind {
        SchedulerKind::OsThreads
    }

    fn class(&mut self, name: &str) -> ClassId {
        let id = self.classes.id(name);
        self.sender(id, name);
        id
    }

    fn submit(&mut self, _now_nanos: Nanos, task: Task) -> JobId {
        let id = JobId(self.next_id);
        self.next_id += 1;
        self.infos.insert(id, task.info);
        let name = self.classes.name(task.info.class).to_string();
        if self
            .sender(task.info.class, &name)
            .send((id, task.work))
            .is_err()
        {
            // The class thread is gone (it cannot be, short of a panic in a model): the
            // job is reported as shed at the next poll.
            self.infos.remove(&id);
        }
        id
    }

    fn poll(&mut self, _now_nanos: Nanos, out: &mut Vec<ExecEvent>) {
        self.done.report(&mut self.infos, out);
    }

    fn wait(&mut self, timeout: Duration) {
        self.done.wait(timeout);
    }

    fn in_flight(&self) -> usize {
        self.infos.len()
    }

    fn occupancy(&self, _now_nanos: Nanos) -> Vec<f64> {
        self.busy
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .map(|&b| if b { 1.0 } else { 0.0 })
            .collect()
    }

    fn decision_nanos(&self) -> u64 {
        0
    }

    fn notes(&self) -> Vec<String> {
        let mut notes =
            vec!["os-threads: one thread per model, the OS decides who runs".to_string()];
        notes.extend(self.notes.iter().cloned());
        notes
    }
}
