//! Every SCHED_FIFO and timer rule of the kernel, driven through the host platform (the same
//! `dispatch` the RISC-V trap handler uses) with a fake timer that the tests advance.

use mmsched_kernel::platform::host::HostMcu;
use mmsched_kernel::{Kernel, KernelError, Priority, TaskId, TaskState};

fn p(level: u8) -> Priority {
    Priority::new(level).expect("level in 0..=31")
}

#[test]
fn fifo_order_within_a_level() {
    let mut m = HostMcu::<4>::new(0);
    let a = m.spawn(p(5)).unwrap();
    let b = m.spawn(p(5)).unwrap();
    let c = m.spawn(p(5)).unwrap();
    assert_eq!(m.start(), Some(a), "first spawned runs first");
    assert_eq!(m.yield_now().unwrap(), Some(b));
    assert_eq!(m.yield_now().unwrap(), Some(c));
    assert_eq!(m.yield_now().unwrap(), Some(a), "a yield goes to the tail");
    // Tasks woken at the same tick run in the order they went to sleep.
    assert_eq!(m.sleep_for(100).unwrap(), Some(b)); // a sleeps
    assert_eq!(m.sleep_until(100).unwrap(), Some(c)); // b sleeps, same deadline
    assert_eq!(m.sleep_for(100).unwrap(), None); // c sleeps, same deadline
    assert_eq!(
        m.advance(100, |_, _| {}),
        1,
        "one interrupt for one instant"
    );
    assert_eq!(m.current(), Some(a));
    assert_eq!(m.sleep_for(50).unwrap(), Some(b));
    assert_eq!(m.sleep_for(50).unwrap(), Some(c));
}

#[test]
fn a_running_task_keeps_the_cpu_against_its_own_level() {
    let mut m = HostMcu::<3>::new(0);
    let a = m.spawn(p(5)).unwrap();
    let b = m.spawn(p(5)).unwrap();
    assert_eq!(m.start(), Some(a));
    assert_eq!(m.sleep_for(10).unwrap(), Some(b));
    m.advance(20, |_, _| {});
    assert_eq!(m.current(), Some(b), "a woke at its level: no preemption");
    assert_eq!(m.yield_now().unwrap(), Some(a));
}

#[test]
fn a_higher_level_preempts_and_the_preempted_task_resumes_first() {
    let mut m = HostMcu::<4>::new(0);
    let hi = m.spawn(p(20)).unwrap();
    let lo1 = m.spawn(p(3)).unwrap();
    let lo2 = m.spawn(p(3)).unwrap();
    assert_eq!(m.start(), Some(hi));
    assert_eq!(m.sleep_for(500).unwrap(), Some(lo1));
    let mut seen = Vec::new();
    m.advance(499, |t, next| seen.push((t, next)));
    assert!(seen.is_empty());
    assert_eq!(m.current(), Some(lo1));
    m.advance(1, |t, next| seen.push((t, next)));
    assert_eq!(
        seen,
        [(500, Some(hi))],
        "woken at its tick, it preempts at once"
    );
    assert_eq!(m.kernel.tcb(lo1).state(), TaskState::Ready);
    // The preempted task is at the head of its level, before its peer.
    let order: Vec<TaskId> = m.kernel.ready_queue().level(p(3)).collect();
    assert_eq!(order, [lo1, lo2]);
    assert_eq!(m.sleep_for(500).unwrap(), Some(lo1));
}

#[test]
fn wake_up_order_follows_the_timer_queue() {
    let mut m = HostMcu::<4>::new(1_000);
    let ids: Vec<TaskId> = (0..4).map(|_| m.spawn(p(7)).unwrap()).collect();
    let mut m2 = m;
    m2.start();
    // Each sleeps for a different time, not in order of spawning; each wake-up gets its
    // own interrupt at its own tick, and the woken task sleeps long again.
    for ticks in [40, 10, 30, 20] {
        m2.sleep_for(ticks).unwrap();
    }
    let mut ticks_seen = Vec::new();
    let mut order = Vec::new();
    m2.advance(10, |t, _| ticks_seen.push(t));
    while let Some(t) = m2.current() {
        order.push(t);
        m2.sleep_for(1_000).unwrap();
        m2.advance(10, |t, _| ticks_seen.push(t));
    }
    assert_eq!(order, [ids[1], ids[3], ids[2], ids[0]]);
    assert_eq!(ticks_seen[..4], [1_010, 1_020, 1_030, 1_040]);
}

#[test]
fn no_lost_wake_ups_across_the_counter_wrap() {
    let start = u32::MAX - 50;
    let mut m = HostMcu::<3>::new(start);
    let a = m.spawn(p(9)).unwrap();
    let b = m.spawn(p(9)).unwrap();
    let c = m.spawn(p(9)).unwrap();
    m.start();
    m.sleep_for(100).unwrap(); // a: wakes after the wrap, at tick 49
    m.sleep_for(20).unwrap(); // b: wakes before it
    m.sleep_until(0).unwrap(); // c: exactly at the wrap
    let mut woken = Vec::new();
    m.advance(200, |t, next| woken.push((t, next)));
    assert_eq!(
        woken,
        [(u32::MAX - 30, Some(b)), (0, Some(b)), (49, Some(b))],
        "three wake-ups, each at its tick, none lost at the wrap"
    );
    let mut ready: Vec<TaskId> = m.kernel.ready_queue().level(p(9)).collect();
    ready.insert(0, m.current().unwrap());
    assert_eq!(ready, [b, c, a]);
}

#[test]
fn a_late_sleep_or_a_late_interrupt_loses_nothing() {
    let mut m = HostMcu::<2>::new(100);
    let a = m.spawn(p(1)).unwrap();
    m.start();
    // A deadline already reached is not a sleep: the task keeps running.
    assert_eq!(m.sleep_until(100).unwrap(), Some(a));
    assert_eq!(m.sleep_until(90).unwrap(), Some(a));
    assert_eq!(m.timer.alarm(), None);
    // An interrupt delivered late (say it was masked) still wakes the task.
    m.sleep_for(10).unwrap();
    assert_eq!(m.current(), None);
    assert_eq!(m.kernel.on_timer_interrupt(100 + 10 + 5_000), 1);
    assert_eq!(m.kernel.schedule(), Some(a));
    assert_eq!(m.kernel.stats().idle_tick_interrupts, 0);
}

#[test]
fn tickless_one_interrupt_per_wake_up_instant_and_none_when_idle() {
    let mut m = HostMcu::<3>::new(0);
    for _ in 0..3 {
        m.spawn(p(4)).unwrap();
    }
    m.start();
    for _ in 0..3 {
        m.sleep_for(1_000_000).unwrap();
    }
    assert_eq!(
        m.timer.alarm(),
        Some(1_000_000),
        "armed for the next wake-up only"
    );
    assert_eq!(
        m.advance(999_999, |_, _| {}),
        0,
        "no tick while everyone sleeps"
    );
    assert_eq!(m.advance(1, |_, _| {}), 1, "exactly one interrupt at T");
    let stats = m.kernel.stats();
    assert_eq!(stats.timer_interrupts, 1);
    assert_eq!(stats.idle_tick_interrupts, 0);
    // Nobody sleeps: the timer is off and time passes without interrupts.
    for _ in 0..3 {
        m.yield_now().unwrap();
    }
    assert_eq!(m.timer.alarm(), None);
    assert_eq!(m.advance(u32::MAX, |_, _| {}), 0);
}

#[test]
fn explicit_wake_goes_to_the_tail_and_cancels_the_timer() {
    let mut m = HostMcu::<3>::new(0);
    let hi = m.spawn(p(9)).unwrap();
    let lo = m.spawn(p(1)).unwrap();
    m.start();
    m.sleep_for(1_000).unwrap();
    assert_eq!(m.current(), Some(lo));
    assert_eq!(
        m.wake(hi),
        Some(hi),
        "an early wake preempts like a timed one"
    );
    assert_eq!(m.timer.alarm(), None, "its timer is cancelled");
    assert!(!m.kernel.wake(hi), "a running task cannot be woken");
    assert_eq!(m.advance(5_000, |_, _| {}), 0);
}

#[test]
fn refused_calls_say_why() {
    let mut m = HostMcu::<1>::new(0);
    assert_eq!(m.yield_now(), Err(KernelError::NoCurrentTask));
    m.spawn(p(0)).unwrap();
    assert_eq!(
        m.spawn(p(0)),
        Err(KernelError::TooManyTasks { capacity: 1 })
    );
    m.start();
    let err = m.sleep_for(u32::MAX).unwrap_err();
    assert_eq!(err, KernelError::SleepTooLong { ticks: u32::MAX });
    assert!(err.to_string().contains("shorter steps"));
    assert_eq!(Priority::new(32), None);
}

#[test]
fn a_yield_runs_a_higher_level_spawned_since_the_last_decision() {
    // A running task spawns a higher-priority task (spawning does not reschedule); its
    // yield must run that task, not rotate its own level.
    let mut m = HostMcu::<3>::new(0);
    let a = m.spawn(p(4)).unwrap();
    let b = m.spawn(p(4)).unwrap();
    assert_eq!(m.start(), Some(a));
    let hi = m.spawn(p(6)).unwrap();
    assert_eq!(m.yield_now().unwrap(), Some(hi));
    m.sleep_for(10).unwrap();
    assert_eq!(m.current(), Some(b), "b was ahead of the yielding a");
    assert_eq!(m.yield_now().unwrap(), Some(a));
}

#[test]
fn yield_switch_hands_over_saved_contexts() {
    let mut k = Kernel::<3>::new();
    assert_eq!(k.yield_switch(7), None, "no task runs yet");
    let a = k.spawn(p(2)).unwrap();
    let b = k.spawn(p(2)).unwrap();
    k.tcb_mut(b).context = 0xb0;
    assert_eq!(k.schedule(), Some(a));
    let switches = k.stats().context_switches;
    assert_eq!(k.yield_switch(0xa0), Some(0xb0));
    assert_eq!(k.current(), Some(b));
    assert_eq!(k.tcb(a).context, 0xa0);
    assert_eq!(k.tcb(a).state(), TaskState::Ready);
    assert_eq!(k.tcb(b).state(), TaskState::Running);
    assert_eq!(k.stats().context_switches, switches + 1);
    assert_eq!(k.yield_switch(0xb1), Some(0xa0));
    // Alone at its level: the task keeps running on its own context.
    k.sleep_until(0, 100).unwrap();
    assert_eq!(k.schedule(), Some(b));
    assert_eq!(k.yield_switch(0xb2), Some(0xb2));
    assert_eq!(k.current(), Some(b));
    assert_eq!(k.stats().context_switches, switches + 3);
}

#[test]
fn a_notification_wakes_a_waiting_task_at_its_priority() {
    let mut m = HostMcu::<3>::new(0);
    let uart = m.spawn(p(28)).unwrap();
    let busy = m.spawn(p(10)).unwrap();
    assert_eq!(m.start(), Some(uart));
    assert_eq!(m.wait().unwrap(), Some(busy), "nothing pending: it waits");
    assert_eq!(m.kernel.tcb(uart).state(), TaskState::Waiting);
    assert_eq!(m.timer.alarm(), None, "a wait arms no timer");
    assert_eq!(
        m.notify(uart),
        Some(uart),
        "the interrupt preempts the busy task"
    );
    let order: Vec<TaskId> = m.kernel.ready_queue().level(p(10)).collect();
    assert_eq!(
        order,
        [busy],
        "the preempted task waits at the head of its level"
    );
    assert!(
        !m.kernel.wake(uart),
        "wake is for sleepers; a running task is not one"
    );
}

#[test]
fn a_notification_sent_before_the_wait_is_not_lost() {
    let mut m = HostMcu::<2>::new(0);
    let t = m.spawn(p(5)).unwrap();
    m.start();
    // The interrupt arrives after the task found its queue empty, before it waits.
    assert_eq!(m.notify(t), Some(t));
    assert_eq!(m.wait().unwrap(), Some(t), "the wait returns at once");
    assert_eq!(m.wait().unwrap(), None, "one notification, one wait");
    assert_eq!(m.notify(t), Some(t));
    assert_eq!(
        m.notify(t),
        Some(t),
        "a second notification of a ready task is kept"
    );
    assert_eq!(m.wait().unwrap(), Some(t));
    assert_eq!(m.wait().unwrap(), None, "notifications do not count");
}

#[test]
fn a_critical_section_defers_a_higher_task_until_it_ends() {
    use mmsched_kernel::Ceiling;
    let mut m = HostMcu::<3>::new(0);
    let sensor = m.spawn(p(25)).unwrap();
    let audio = m.spawn(p(20)).unwrap();
    let ldti = m.spawn(p(10)).unwrap();
    let buffer = Ceiling::of(&[p(25), p(10)]);
    m.start();
    m.sleep_for(100).unwrap(); // sensor
    m.sleep_for(100).unwrap(); // audio
    assert_eq!(m.current(), Some(ldti));
    let before = m.lock(buffer).unwrap();
    assert_eq!(m.sleep_for(5), Err(KernelError::LockHeld));
    // Both wake while ldti holds the buffer: neither preempts it, not even audio, which
    // does not use the buffer at all (no chain of inversions).
    let mut seen = Vec::new();
    m.advance(150, |t, next| seen.push((t, next)));
    assert_eq!(seen, [(100, Some(ldti))]);
    assert_eq!(
        m.unlock(before),
        Some(sensor),
        "the highest runs when the section ends"
    );
    m.sleep_for(100).unwrap();
    assert_eq!(m.current(), Some(audio));
    m.sleep_for(100).unwrap();
    assert_eq!(m.current(), Some(ldti));
    assert!(
        m.lock(Ceiling::task(p(5))).is_err(),
        "a ceiling below the caller is refused"
    );
}
