//! Worker threads: one per lane, pinned to a CPU, optionally real-time and in a resource
//! group, each running one step at a time and reporting back over a channel.

use std::sync::mpsc::{Receiver, Sender, channel};
use std::thread::JoinHandle;

use mmsched_core::arbiter::JobId;
use mmsched_core::time::{Clock, Nanos};

use super::work::{StepOutcome, Work, WorkError};

/// How one lane's thread is set up. Each request the OS refuses becomes a note to log
/// once; the worker then runs without it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LaneConfig {
    /// Pin the thread to this CPU.
    pub cpu: Option<usize>,
    /// Run SCHED_FIFO at this priority (1 ..= 99).
    pub fifo_priority: Option<u8>,
    /// Join this scheduler class's resource group.
    pub cgroup_class: Option<String>,
}

/// The outcome of one step, sent back by a worker.
pub struct Completion {
    /// The lane that ran it.
    pub lane: usize,
    /// The job.
    pub job: JobId,
    /// What the step did.
    pub outcome: Result<StepOutcome, WorkError>,
    /// The work, handed back for its next step.
    pub work: Box<dyn Work>,
    /// When the step started, on the device clock.
    pub started_nanos: Nanos,
    /// When it ended.
    pub ended_nanos: Nanos,
}

impl std::fmt::Debug for Completion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Completion")
            .field("lane", &self.lane)
            .field("job", &self.job)
            .field("outcome", &self.outcome)
            .field("started_nanos", &self.started_nanos)
            .field("ended_nanos", &self.ended_nanos)
            .finish()
    }
}

/// A step to run: the job, its work and the intra-op threads granted to it.
type Task = (JobId, Box<dyn Work>, usize);

/// One thread per lane.
#[derive(Debug)]
pub struct WorkerPool {
    senders: Vec<Sender<Task>>,
    handles: Vec<JoinHandle<()>>,
    notes: Vec<String>,
}

impl WorkerPool {
    /// Starts one thread per lane; completions go to `done`. `cgroups` is the resource
    /// groups' handle when they are active.
    pub fn start<C: Clock + Clone + Send + 'static>(
        lanes: &[LaneConfig],
        clock: C,
        done: Sender<Completion>,
        #[cfg(target_os = "linux")] cgroups: Option<crate::platform::cgroup::CgroupHandle>,
    ) -> Self {
        let mut senders = Vec::new();
        let mut handles = Vec::new();
        let (note_tx, note_rx) = channel::<String>();
        for (lane, config) in lanes.iter().cloned().enumerate() {
            let (tx, rx) = channel::<Task>();
            senders.push(tx);
            let done = done.clone();
            let clock = clock.clone();
            let note_tx = note_tx.clone();
            #[cfg(target_os = "linux")]
            let cgroups = cgroups.clone();
            handles.push(std::thread::spawn(move || {
                #[cfg(target_os = "linux")]
                setup_lane(lane, &config, cgroups.as_ref(), &note_tx);
                #[cfg(not(target_os = "linux"))]
                let _ = (&config, &note_tx);
                drop(note_tx);
                worker_loop(lane, config.cpu.is_some(), &rx, &clock, &done);
            }));
        }
        drop(note_tx);
        let notes = note_rx.iter().collect();
        Self {
            senders,
            handles,
            notes,
        }
    }

    /// What each lane's setup did (pinning, real-time, resource group): log these once.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Number of lanes.
    pub fn lanes(&self) -> usize {
        self.senders.len()
    }

    /// Hands a step to a lane. Returns the work if the lane's thread has gone.
    pub fn run(&self, lane: usize, job: JobId, work: Box<dyn Work>) -> Result<(), Box<dyn Work>> {
        self.run_granted(lane, job, work, 1)
    }

    /// Hands a step granted `threads` intra-op threads to a lane (the work was told with
    /// [`Work::grant_threads`]). A lane pinned to one CPU lets a step granted more than one
    /// thread run on all the process's CPUs, so that the engine's helper threads, which
    /// inherit the mask, are not stuck on the same core. Returns the work if the lane's
    /// thread has gone.
    pub fn run_granted(
        &self,
        lane: usize,
        job: JobId,
        work: Box<dyn Work>,
        threads: usize,
    ) -> Result<(), Box<dyn Work>> {
        match self.senders.get(lane) {
            Some(tx) => tx.send((job, work, threads)).map_err(|e| e.0.1),
            None => Err(work),
        }
    }
}

impl Drop for WorkerPool {
    fn drop(&mut self) {
        self.senders.clear();
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
    }
}

/// Applies a lane's set-up to the calling thread, sending one note per request.
#[cfg(target_os = "linux")]
pub(crate) fn setup_lane(
    lane: usize,
    config: &LaneConfig,
    cgroups: Option<&crate::platform::cgroup::CgroupHandle>,
    notes: &Sender<String>,
) {
    use crate::platform::{cgroup, rt};
    // Join the resource group first: a v1 cpu group must grant a real-time budget before
    // a SCHED_FIFO thread may enter it.
    if let (Some(class), Some(groups)) = (&config.cgroup_class, cgroups) {
        let note = match cgroup::current_tid()
            .map_err(|e| e.to_string())
            .and_then(|tid| groups.add_thread(class, tid).map_err(|e| e.to_string()))
        {
            Ok(()) => format!("lane {lane}: in resource group {class}"),
            Err(e) => format!("lane {lane}: not in resource group {class}: {e}"),
        };
        let _ = notes.send(note);
    }
    if let Some(cpu) = config.cpu {
        let _ = notes.send(format!("lane {lane}: {}", rt::pin_current(cpu)));
    }
    if let Some(p) = config.fifo_priority {
        let _ = notes.send(format!("lane {lane}: {}", rt::set_current_fifo(p)));
    }
}

/// Runs one step of `work` on the calling thread, timed with `clock`.
pub(crate) fn run_step<C: Clock + ?Sized>(
    lane: usize,
    job: JobId,
    mut work: Box<dyn Work>,
    clock: &C,
) -> Completion {
    let started_nanos = clock.now_nanos();
    // A panicking step (a bug) fails its job instead of killing the lane's thread, which
    // would leave every later job on the lane waiting forever.
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work.step()))
        .unwrap_or_else(|panic| {
            let message = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "no message".into());
            Err(WorkError::Panicked { message })
        });
    let ended_nanos = clock.now_nanos();
    Completion {
        lane,
        job,
        outcome,
        work,
        started_nanos,
        ended_nanos,
    }
}

pub(crate) fn worker_loop<C: Clock>(
    lane: usize,
    pinned: bool,
    rx: &Receiver<Task>,
    clock: &C,
    done: &Sender<Completion>,
) {
    while let Ok((job, work, threads)) = rx.recv() {
        #[cfg(target_os = "linux")]
        let widened = (pinned && threads > 1)
            .then(crate::platform::rt::widen_current_to_process_cpus)
            .flatten();
        #[cfg(not(target_os = "linux"))]
        let _ = (pinned, threads);
        let completion = run_step(lane, job, work, clock);
        #[cfg(target_os = "linux")]
        if let Some(saved) = &widened {
            crate::platform::rt::restore_current_mask(saved);
        }
        if done.send(completion).is_err() {
            return;
        }
    }
}
