//! The scheduler loop on real worker threads running real CPU work.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use mmsched_core::Modality;
use mmsched_core::policy::Policy;
use mmsched_core::time::{Clock, MonotonicClock, NANOS_PER_MILLI, NANOS_PER_SEC};
use mmsched_runtime::sched::{
    Dispatcher, Event, LaneConfig, SchedulerLoop, StepOutcome, Work, WorkError,
};

/// Real work: hashes for `iterations` rounds (a stand-in for a model's arithmetic, not a
/// sleep), counting its steps.
fn spin_work(iterations: u64, steps: u64, counter: Arc<AtomicU64>) -> Box<dyn Work> {
    let mut left = steps;
    Box::new(move || -> Result<StepOutcome, WorkError> {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for i in 0..iterations {
            h = (h ^ i).wrapping_mul(0x100_0000_01b3);
        }
        std::hint::black_box(h);
        counter.fetch_add(1, Ordering::SeqCst);
        left -= 1;
        Ok(if left == 0 {
            StepOutcome::Finished
        } else {
            StepOutcome::Yield
        })
    })
}

#[test]
fn frames_and_token_steps_share_two_pinned_lanes() {
    let clock = MonotonicClock::new();
    let mut dispatcher = Dispatcher::new(&Policy::default(), 2, clock.now_nanos()).expect("builds");
    let vision = dispatcher.class("vision", 2 * NANOS_PER_MILLI);
    let llm = dispatcher.class("llm", NANOS_PER_MILLI);
    let lanes: Vec<LaneConfig> = mmsched_runtime::platform::rt::available_cpus()
        .into_iter()
        .take(2)
        .map(|cpu| LaneConfig {
            cpu: Some(cpu),
            ..LaneConfig::default()
        })
        .chain(std::iter::repeat_with(LaneConfig::default))
        .take(2)
        .collect();
    let mut sched = SchedulerLoop::new(dispatcher, &lanes, clock, None);
    assert!(
        sched.notes().iter().all(|n| n.contains("pinned to CPU")),
        "{:?}",
        sched.notes()
    );
    let submit = sched.submitter();
    let tokens = Arc::new(AtomicU64::new(0));
    let frames = Arc::new(AtomicU64::new(0));
    let now = clock.now_nanos();
    submit
        .send(Event::Submit {
            class: llm,
            modality: Modality::Text,
            deadline_nanos: now + 60 * NANOS_PER_SEC,
            work: spin_work(20_000, 32, Arc::clone(&tokens)),
        })
        .expect("loop listens");
    for k in 0..10 {
        submit
            .send(Event::Submit {
                class: vision,
                modality: Modality::Image,
                deadline_nanos: now + (k + 1) * 100 * NANOS_PER_MILLI + 30 * NANOS_PER_SEC,
                work: spin_work(50_000, 1, Arc::clone(&frames)),
            })
            .expect("loop listens");
    }
    let failing: Box<dyn Work> =
        Box::new(|| -> Result<StepOutcome, WorkError> { Err(WorkError("broken model".into())) });
    submit
        .send(Event::Submit {
            class: vision,
            modality: Modality::Image,
            deadline_nanos: now + 60 * NANOS_PER_SEC,
            work: failing,
        })
        .expect("loop listens");
    sched
        .run_until(now + 120 * NANOS_PER_SEC, Duration::from_millis(200))
        .expect("runs");
    assert_eq!(
        tokens.load(Ordering::SeqCst),
        32,
        "every decode step ran once"
    );
    assert_eq!(frames.load(Ordering::SeqCst), 10);
    assert_eq!(sched.failures(), 1);
    let stats = *sched.dispatcher().stats().get(&llm).expect("llm counted");
    assert_eq!((stats.jobs, stats.completed, stats.steps), (1, 1, 32));
    let v = *sched
        .dispatcher()
        .stats()
        .get(&vision)
        .expect("vision counted");
    assert_eq!(
        (v.jobs, v.completed, v.deadline_misses, v.shed),
        (11, 10, 0, 0)
    );
    assert!(sched.dispatcher().is_idle());
}

/// Lanes join their class's resource group and the audio lane runs SCHED_FIFO, where the
/// machine permits; the groups are gone afterwards.
#[cfg(target_os = "linux")]
#[test]
fn lanes_join_resource_groups_and_run_real_time_where_permitted() {
    use mmsched_runtime::platform::cgroup::{self, CgroupFs, standard_classes};
    let fs = CgroupFs::system()
        .with_group_name(&format!("mmsched-loop-{}", std::process::id()))
        .expect("valid name");
    let (set, status) = cgroup::setup(&fs, &standard_classes()).expect("no unexpected error");
    let Some(set) = set else {
        println!("skipped: {status}");
        return;
    };
    let dirs = set.created_dirs();
    let clock = MonotonicClock::new();
    let mut dispatcher = Dispatcher::new(&Policy::default(), 2, clock.now_nanos()).expect("builds");
    let audio = dispatcher.class("audio", NANOS_PER_MILLI);
    let lanes = vec![
        LaneConfig {
            cpu: Some(0),
            fifo_priority: Some(20),
            cgroup_class: Some("audio".into()),
        },
        LaneConfig {
            cpu: None,
            fifo_priority: None,
            cgroup_class: Some("vision".into()),
        },
    ];
    let mut sched = SchedulerLoop::new(dispatcher, &lanes, clock, Some(set.handle()));
    let notes = sched.notes().join("\n");
    println!("{notes}");
    assert!(notes.contains("lane 0: in resource group audio"), "{notes}");
    assert!(
        notes.contains("lane 1: in resource group vision"),
        "{notes}"
    );
    assert!(
        notes.contains("SCHED_FIFO priority 20") || notes.contains("not permitted"),
        "{notes}"
    );
    let count = Arc::new(AtomicU64::new(0));
    let now = clock.now_nanos();
    let submit = sched.submitter();
    for k in 0..5 {
        submit
            .send(Event::Submit {
                class: audio,
                modality: Modality::Audio,
                deadline_nanos: now + (k + 1) * 20 * NANOS_PER_MILLI + 10 * NANOS_PER_SEC,
                work: spin_work(10_000, 1, Arc::clone(&count)),
            })
            .expect("loop listens");
    }
    sched
        .run_until(now + 60 * NANOS_PER_SEC, Duration::from_millis(200))
        .expect("runs");
    assert_eq!(count.load(Ordering::SeqCst), 5);
    drop(sched);
    let report = set.cleanup();
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    for d in dirs {
        assert!(!d.exists(), "{} left behind", d.display());
    }
}
