//! The four executors with closure work: ordering, preemption at token steps, shedding and
//! lane restrictions. Work records what ran in a shared log; nothing depends on timing but
//! ordering, which a gate (a job that waits until the test opens it) makes deterministic.

use std::sync::mpsc::{Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mmsched_core::Modality;
use mmsched_core::arbiter::ClassId;
use mmsched_core::policy::Policy;
use mmsched_core::time::{Clock, MonotonicClock, Nanos};

use super::*;
use crate::sched::lanes::{LaneLayout, class_lane, standard_lanes};
use crate::sched::work::StepOutcome;

const MS: Nanos = 1_000_000;

type Log = Arc<Mutex<Vec<String>>>;

/// Work that logs `name` and finishes.
fn logs(log: &Log, name: &str) -> Box<dyn Work> {
    let (log, name) = (Arc::clone(log), name.to_string());
    Box::new(move || {
        log.lock().expect("log").push(name.clone());
        Ok(StepOutcome::Finished)
    })
}

/// Work that waits until the returned sender sends (or is dropped), then finishes.
fn gate() -> (Box<dyn Work>, Sender<()>) {
    let (tx, rx) = channel::<()>();
    let rx = Mutex::new(rx);
    let work = Box::new(move || {
        let _ = rx
            .lock()
            .expect("gate")
            .recv_timeout(Duration::from_secs(10));
        Ok(StepOutcome::Finished)
    });
    (work, tx)
}

/// Work that logs `name#i` for steps 1 ..= steps, yielding after every step but the last.
fn steps(log: &Log, name: &str, steps: u32) -> Box<dyn Work> {
    let (log, name) = (Arc::clone(log), name.to_string());
    let mut i = 0;
    Box::new(move || {
        i += 1;
        log.lock().expect("log").push(format!("{name}#{i}"));
        Ok(if i < steps {
            StepOutcome::Yield
        } else {
            StepOutcome::Finished
        })
    })
}

fn task(class: ClassId, modality: Modality, deadline: Nanos, work: Box<dyn Work>) -> Task {
    Task {
        info: TaskInfo {
            class,
            modality,
            deadline_nanos: deadline,
            predicted_cost_nanos: MS,
            importance: 0.5,
            committed: false,
            tag: 0,
        },
        work,
    }
}

/// Polls until `done` jobs ended (done, shed or pruned) or 10 s passed; a job that
/// yields is resubmitted after `on_yield` (the main loop's part). Returns the events.
fn drive(
    exec: &mut dyn Executor,
    clock: &MonotonicClock,
    done: usize,
    on_yield: &mut dyn FnMut(&mut dyn Executor, Nanos),
) -> Vec<ExecEvent> {
    let mut all = Vec::new();
    let mut ended = 0;
    let limit = clock.now_nanos() + 10_000 * MS;
    while ended < done && clock.now_nanos() < limit {
        let mut out = Vec::new();
        let now = clock.now_nanos();
        exec.poll(now, &mut out);
        for ev in out {
            match ev {
                ExecEvent::Done {
                    outcome: Ok(StepOutcome::Yield),
                    work,
                    info,
                    ..
                } => {
                    on_yield(exec, now);
                    exec.submit(now, Task { info, work });
                }
                other => {
                    ended += 1;
                    all.push(other);
                }
            }
        }
        exec.wait(Duration::from_millis(2));
    }
    assert_eq!(ended, done, "jobs did not end in 10 s");
    all
}

fn logged(log: &Log) -> Vec<String> {
    log.lock().expect("log").clone()
}

/// One general worker and the audio worker, plain threads.
fn one_worker() -> LaneLayout {
    standard_lanes(1, false, &[])
}

fn queue(order: QueueOrder) -> (SharedQueue, MonotonicClock) {
    let clock = MonotonicClock::new();
    let q = SharedQueue::new(
        order,
        &one_worker(),
        clock,
        #[cfg(target_os = "linux")]
        None,
    );
    (q, clock)
}

#[test]
fn fifo_runs_jobs_in_arrival_order() {
    let (mut q, clock) = queue(QueueOrder::Fifo);
    let (text, image) = (q.class("llm"), q.class("vision"));
    let log = Log::default();
    let (blocker, open) = gate();
    q.submit(0, task(image, Modality::Image, 0, blocker));
    // Wait until the worker holds the blocker, so the rest queue behind it.
    std::thread::sleep(Duration::from_millis(20));
    for (i, (c, m)) in [(text, Modality::Text), (image, Modality::Image)]
        .into_iter()
        .cycle()
        .take(4)
        .enumerate()
    {
        q.submit(0, task(c, m, 0, logs(&log, &i.to_string())));
    }
    drop(open);
    drive(&mut q, &clock, 5, &mut |_, _| {});
    assert_eq!(logged(&log), ["0", "1", "2", "3"]);
    assert_eq!(q.kind(), SchedulerKind::Fifo);
    assert_eq!(q.in_flight(), 0);
}

#[test]
fn static_priority_runs_audio_then_vision_then_text() {
    let (mut q, clock) = queue(QueueOrder::StaticPriority);
    let (text, image, asr) = (q.class("llm"), q.class("vision"), q.class("asr"));
    let log = Log::default();
    let (blocker, open) = gate();
    q.submit(0, task(image, Modality::Image, 0, blocker));
    std::thread::sleep(Duration::from_millis(20));
    q.submit(0, task(text, Modality::Text, 0, logs(&log, "text")));
    q.submit(0, task(image, Modality::Image, 0, logs(&log, "vision")));
    q.submit(0, task(asr, Modality::Audio, 0, logs(&log, "asr")));
    drop(open);
    drive(&mut q, &clock, 4, &mut |_, _| {});
    assert_eq!(logged(&log), ["asr", "vision", "text"]);
}

#[test]
fn the_queues_audio_worker_runs_only_voice_activity() {
    let (mut q, clock) = queue(QueueOrder::Fifo);
    let (image, vad) = (q.class("vision"), q.class("vad"));
    let log = Log::default();
    let (blocker, open) = gate();
    q.submit(0, task(image, Modality::Image, 0, blocker));
    std::thread::sleep(Duration::from_millis(20));
    q.submit(0, task(image, Modality::Image, 0, logs(&log, "vision")));
    q.submit(0, task(vad, Modality::Audio, 0, logs(&log, "vad")));
    // The general worker is held: the chunk runs on the audio worker, the frame waits.
    let first = drive(&mut q, &clock, 1, &mut |_, _| {});
    assert!(
        matches!(first[..], [ExecEvent::Done { worker: 1, .. }]),
        "{first:?}"
    );
    assert_eq!(logged(&log), ["vad"]);
    drop(open);
    let rest = drive(&mut q, &clock, 2, &mut |_, _| {});
    assert!(
        rest.iter()
            .all(|e| matches!(e, ExecEvent::Done { worker: 0, .. })),
        "the audio worker never takes a frame: {rest:?}"
    );
}

#[test]
fn os_threads_give_every_model_its_own_thread() {
    let clock = MonotonicClock::new();
    let mut t = ThreadPerModel::new(
        clock,
        Box::new(|class: &str| class_lane(class, 2, false, &[])),
        #[cfg(target_os = "linux")]
        None,
    );
    let (image, text) = (t.class("vision"), t.class("llm"));
    let log = Log::default();
    let (blocker, open) = gate();
    t.submit(0, task(image, Modality::Image, 0, blocker));
    t.submit(0, task(image, Modality::Image, 0, logs(&log, "vision")));
    t.submit(0, task(text, Modality::Text, 0, logs(&log, "llm")));
    // The vision thread is held; the text thread runs on.
    drive(&mut t, &clock, 1, &mut |_, _| {});
    assert_eq!(logged(&log), ["llm"]);
    drop(open);
    drive(&mut t, &clock, 2, &mut |_, _| {});
    assert_eq!(logged(&log), ["llm", "vision"]);
    assert!(t.mmsched().is_none(), "a baseline has no mmsched controls");
}

fn mmsched(no_shedding: bool) -> (MmschedExecutor<MonotonicClock>, MonotonicClock) {
    mmsched_granting(no_shedding, 1)
}

/// mmsched on one general worker (and the audio worker), granting steps up to
/// `max_thread_grant` threads.
fn mmsched_granting(
    no_shedding: bool,
    max_thread_grant: usize,
) -> (MmschedExecutor<MonotonicClock>, MonotonicClock) {
    mmsched_granting_on(one_worker(), no_shedding, max_thread_grant)
}

/// [`mmsched_granting`] on `layout`'s workers.
fn mmsched_granting_on(
    layout: LaneLayout,
    no_shedding: bool,
    max_thread_grant: usize,
) -> (MmschedExecutor<MonotonicClock>, MonotonicClock) {
    let clock = MonotonicClock::new();
    let setup = MmschedSetup {
        restricted: layout
            .restricted
            .iter()
            .map(|(w, c)| (*w as u32, c.clone()))
            .collect(),
        lanes: layout.lanes,
        record_steps: false,
        no_shedding,
        max_thread_grant,
        at_risk_cpu_weight: None,
    };
    let e = MmschedExecutor::new(
        &Policy::default(),
        &setup,
        clock,
        #[cfg(target_os = "linux")]
        None,
    )
    .expect("valid set-up");
    (e, clock)
}

#[test]
fn mmsched_runs_the_earliest_deadline_first() {
    let (mut e, clock) = mmsched(false);
    let image = e.class("vision");
    let log = Log::default();
    let (blocker, open) = gate();
    let now = clock.now_nanos();
    e.submit(now, task(image, Modality::Image, now + 5_000 * MS, blocker));
    drive_started(&mut e, &clock);
    for (name, due) in [("late", 4_000), ("early", 2_000), ("middle", 3_000)] {
        e.submit(
            now,
            task(image, Modality::Image, now + due * MS, logs(&log, name)),
        );
    }
    drop(open);
    drive(&mut e, &clock, 4, &mut |_, _| {});
    assert_eq!(logged(&log), ["early", "middle", "late"]);
}

/// Polls once so the executor starts what it can.
fn drive_started(e: &mut dyn Executor, clock: &MonotonicClock) {
    let mut out = Vec::new();
    e.poll(clock.now_nanos(), &mut out);
    assert!(out.is_empty(), "{out:?}");
    std::thread::sleep(Duration::from_millis(20));
}

#[test]
fn mmsched_preempts_text_generation_at_a_token_step() {
    let (mut e, clock) = mmsched(false);
    let (image, text) = (e.class("vision"), e.class("llm"));
    let log = Log::default();
    let now = clock.now_nanos();
    e.submit(
        now,
        task(
            text,
            Modality::Text,
            now + 8_000 * MS,
            steps(&log, "llm", 3),
        ),
    );
    // After the first token a frame due sooner arrives: it runs before the next token.
    let mut frame = Some(logs(&log, "vision"));
    drive(&mut e, &clock, 2, &mut |exec, now| {
        if let Some(w) = frame.take() {
            exec.submit(now, task(image, Modality::Image, now + 1_000 * MS, w));
        }
    });
    assert_eq!(logged(&log), ["llm#1", "vision", "llm#2", "llm#3"]);
}

#[test]
fn mmsched_gives_a_yielded_worker_to_the_next_token_when_it_is_due_first() {
    let (mut e, clock) = mmsched(false);
    let (image, text) = (e.class("vision"), e.class("llm"));
    let log = Log::default();
    // The first token waits for the gate, so the frame queues behind it.
    let (first, open) = gate();
    let mut tokens = steps(&log, "llm", 3);
    let mut gated = Some(first);
    let work: Box<dyn Work> = Box::new(move || {
        if let Some(mut g) = gated.take() {
            g.step()?;
            tokens.step()?;
            return Ok(StepOutcome::Yield);
        }
        tokens.step()
    });
    let now = clock.now_nanos();
    e.submit(now, task(text, Modality::Text, now + 500 * MS, work));
    drive_started(&mut e, &clock);
    e.submit(
        clock.now_nanos(),
        task(
            image,
            Modality::Image,
            now + 8_000 * MS,
            logs(&log, "vision"),
        ),
    );
    drive_started(&mut e, &clock);
    drop(open);
    // The frame was queued when the first token ended, but the next token is due first:
    // it gets the worker, not the frame.
    drive(&mut e, &clock, 2, &mut |_, _| {});
    assert_eq!(logged(&log), ["llm#1", "llm#2", "llm#3", "vision"]);
}

/// Starts a job of `class` (predicted 10 ms) that holds the one general worker until the
/// returned sender drops; returns when it was submitted.
fn hold_the_worker(
    e: &mut MmschedExecutor<MonotonicClock>,
    clock: &MonotonicClock,
    class: ClassId,
) -> (Nanos, Sender<()>) {
    let (blocker, open) = gate();
    let now = clock.now_nanos();
    let mut t = task(class, Modality::Image, now + 5_000 * MS, blocker);
    t.info.predicted_cost_nanos = 10 * MS;
    e.submit(now, t);
    drive_started(e, clock);
    (now, open)
}

#[test]
fn mmsched_sheds_what_cannot_make_its_deadline_unless_told_not_to() {
    for no_shedding in [false, true] {
        let (mut e, clock) = mmsched(no_shedding);
        let image = e.class("vision");
        let (now, open) = hold_the_worker(&mut e, &clock, image);
        // Two 40 ms jobs due in 70 ms on one general worker: one does not fit (and the
        // other still does if the step comes up to 30 ms later).
        let due = clock.now_nanos() + 70 * MS;
        for _ in 0..2 {
            let mut t = task(
                image,
                Modality::Image,
                due,
                Box::new(|| Ok(StepOutcome::Finished)),
            );
            t.info.predicted_cost_nanos = 40 * MS;
            e.submit(now, t);
        }
        drop(open);
        let events = drive(&mut e, &clock, 3, &mut |_, _| {});
        let shed = events
            .iter()
            .filter(|e| matches!(e, ExecEvent::Shed { .. }))
            .count();
        assert_eq!(shed, usize::from(!no_shedding), "{events:?}");
    }
}

#[test]
fn mmsched_sheds_a_frame_rather_than_a_committed_text_step() {
    let (mut e, clock) = mmsched(false);
    let (image, text) = (e.class("vision"), e.class("llm"));
    let (now, open) = hold_the_worker(&mut e, &clock, image);
    // A frame (importance 0.9) and a later step of a text request (0.1), 40 ms each, due
    // in 70 ms on one worker: one must go, and it is the frame, since shedding the step
    // would throw away the request's earlier steps.
    let due = clock.now_nanos() + 70 * MS;
    let log = Log::default();
    for (class, modality, importance, committed, name) in [
        (image, Modality::Image, 0.9, false, "vision"),
        (text, Modality::Text, 0.1, true, "llm"),
    ] {
        let mut t = task(class, modality, due, logs(&log, name));
        t.info.predicted_cost_nanos = 40 * MS;
        t.info.importance = importance;
        t.info.committed = committed;
        e.submit(now, t);
    }
    drop(open);
    let events = drive(&mut e, &clock, 3, &mut |_, _| {});
    let shed: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            ExecEvent::Shed { info, .. } => Some(info.modality),
            _ => None,
        })
        .collect();
    assert_eq!(shed, [Modality::Image], "{events:?}");
    assert_eq!(logged(&log), ["llm"]);
}

#[test]
fn mmsched_keeps_its_audio_worker_for_voice_activity() {
    let (mut e, clock) = mmsched(false);
    let (image, vad) = (e.class("vision"), e.class("vad"));
    let log = Log::default();
    let (blocker, open) = gate();
    let now = clock.now_nanos();
    e.submit(now, task(image, Modality::Image, now + 5_000 * MS, blocker));
    drive_started(&mut e, &clock);
    e.submit(
        now,
        task(
            image,
            Modality::Image,
            now + 4_000 * MS,
            logs(&log, "vision"),
        ),
    );
    e.submit(
        now,
        task(vad, Modality::Audio, now + 4_000 * MS, logs(&log, "vad")),
    );
    let first = drive(&mut e, &clock, 1, &mut |_, _| {});
    assert!(
        matches!(first[..], [ExecEvent::Done { worker: 1, .. }]),
        "{first:?}"
    );
    drop(open);
    drive(&mut e, &clock, 2, &mut |_, _| {});
    assert_eq!(logged(&log), ["vad", "vision"]);
    assert!(e.mmsched().is_some());
}

/// Work that records the threads each step was granted and takes `step_ms` a step.
struct Granted {
    grants: Arc<Mutex<Vec<usize>>>,
    granted: usize,
    step_ms: u64,
}

impl Work for Granted {
    fn step(&mut self) -> Result<StepOutcome, WorkError> {
        self.grants.lock().expect("grants").push(self.granted);
        std::thread::sleep(Duration::from_millis(self.step_ms));
        Ok(StepOutcome::Finished)
    }

    fn grant_threads(&mut self, threads: usize) {
        self.granted = threads;
    }
}

#[test]
fn mmsched_withholds_thread_grants_after_a_granted_step_overran_beside_another() {
    let (mut e, clock) = mmsched_granting(false, 2);
    let (text, vad) = (e.class("llm"), e.class("vad"));
    let grants = Arc::new(Mutex::new(Vec::new()));
    let lone = |step_ms| Granted {
        grants: Arc::clone(&grants),
        granted: 0,
        step_ms,
    };
    let due = |clock: &MonotonicClock| clock.now_nanos() + 5_000 * MS;
    // A lone step with nothing booked is granted both threads. It is predicted to cost
    // 1 ms and takes 60, alone: a long step, not a lost bet.
    e.submit(
        clock.now_nanos(),
        task(text, Modality::Text, due(&clock), Box::new(lone(60))),
    );
    drive(&mut e, &clock, 1, &mut |_, _| {});
    // The next one is granted both threads again, overruns, and a voice-activity chunk
    // starts on the audio worker while it runs: the bet lost.
    e.submit(
        clock.now_nanos(),
        task(text, Modality::Text, due(&clock), Box::new(lone(60))),
    );
    drive_started(&mut e, &clock);
    let log = Log::default();
    e.submit(
        clock.now_nanos(),
        task(vad, Modality::Audio, due(&clock), logs(&log, "vad")),
    );
    drive(&mut e, &clock, 2, &mut |_, _| {});
    assert_eq!(logged(&log), ["vad"]);
    // While grants are withheld, the next lone step gets one thread.
    e.submit(
        clock.now_nanos(),
        task(text, Modality::Text, due(&clock), Box::new(lone(0))),
    );
    drive(&mut e, &clock, 1, &mut |_, _| {});
    assert_eq!(*grants.lock().expect("grants"), [2, 2, 1]);
    let note = e.thread_grant_note().expect("steps were granted");
    assert!(
        note.starts_with("thread grants: 2 step(s) granted more than one thread, 1 took longer"),
        "{note}"
    );
}

/// [`Granted`] whose class runs its calls one at a time (a shared batch decoder).
struct Serial(Granted);

impl Work for Serial {
    fn step(&mut self) -> Result<StepOutcome, WorkError> {
        self.0.step()
    }

    fn grant_threads(&mut self, threads: usize) {
        self.0.grant_threads(threads);
    }

    fn one_call_at_a_time(&self) -> bool {
        true
    }
}

#[test]
fn a_step_whose_class_runs_one_call_at_a_time_takes_every_thread_beside_its_own_class() {
    let (mut e, clock) = mmsched_granting(false, 2);
    let (text, vision) = (e.class("llm"), e.class("vision"));
    let grants = Arc::new(Mutex::new(Vec::new()));
    let granted = || Granted {
        grants: Arc::clone(&grants),
        granted: 0,
        step_ms: 0,
    };
    let due = |clock: &MonotonicClock| clock.now_nanos() + 5_000 * MS;
    // Two text requests of one batch decoder: each step is granted both threads.
    for _ in 0..2 {
        e.submit(
            clock.now_nanos(),
            task(
                text,
                Modality::Text,
                due(&clock),
                Box::new(Serial(granted())),
            ),
        );
    }
    drive(&mut e, &clock, 2, &mut |_, _| {});
    assert_eq!(*grants.lock().expect("grants"), [2, 2]);
    // Two with sessions of their own compute side by side: one thread each until alone.
    grants.lock().expect("grants").clear();
    for _ in 0..2 {
        e.submit(
            clock.now_nanos(),
            task(text, Modality::Text, due(&clock), Box::new(granted())),
        );
    }
    drive(&mut e, &clock, 2, &mut |_, _| {});
    assert_eq!(grants.lock().expect("grants")[0], 1);
    // A job of another class keeps a serial step to one thread.
    grants.lock().expect("grants").clear();
    e.submit(
        clock.now_nanos(),
        task(
            text,
            Modality::Text,
            due(&clock),
            Box::new(Serial(granted())),
        ),
    );
    e.submit(
        clock.now_nanos(),
        task(vision, Modality::Image, due(&clock), Box::new(granted())),
    );
    drive(&mut e, &clock, 2, &mut |_, _| {});
    assert_eq!(grants.lock().expect("grants")[0], 1);
}

#[test]
fn a_step_of_a_batch_waiting_beside_a_granted_call_of_its_batch_does_not_withhold_grants() {
    // Two general workers, so the second request's step starts beside the first's.
    let (mut e, clock) = mmsched_granting_on(standard_lanes(2, false, &[]), false, 2);
    let text = e.class("llm");
    let grants = Arc::new(Mutex::new(Vec::new()));
    let serial = |step_ms| {
        Box::new(Serial(Granted {
            grants: Arc::clone(&grants),
            granted: 0,
            step_ms,
        }))
    };
    let due = |clock: &MonotonicClock| clock.now_nanos() + 5_000 * MS;
    // A request of a batch leads a call on both threads and overruns its prediction while
    // another request of the batch starts its step beside it (which waits for that call).
    e.submit(
        clock.now_nanos(),
        task(text, Modality::Text, due(&clock), serial(60)),
    );
    drive_started(&mut e, &clock);
    e.submit(
        clock.now_nanos(),
        task(text, Modality::Text, due(&clock), serial(0)),
    );
    drive(&mut e, &clock, 2, &mut |_, _| {});
    // The next lone step is still granted both threads: no bet was lost.
    e.submit(
        clock.now_nanos(),
        task(text, Modality::Text, due(&clock), serial(0)),
    );
    drive(&mut e, &clock, 1, &mut |_, _| {});
    assert_eq!(*grants.lock().expect("grants"), [2, 2, 2]);
    let note = e.thread_grant_note().expect("steps were granted");
    assert!(note.contains(", 0 took longer"), "{note}");
}
