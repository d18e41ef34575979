//! The kernel against a reference model, on random task sets and random sequences of
//! sleeps, yields, early wakes, waits and notifications, critical sections and passing time.
//!
//! The model states the SCHED_FIFO and immediate-priority-ceiling rules in the most direct
//! way (a `VecDeque` per level, a plain list of sleepers with 64-bit absolute wake-up times,
//! a stack of held resources per task, no bitmaps, no wrapping arithmetic). The kernel runs
//! through the host platform on a 32-bit tick counter that starts at a random point, often
//! just before the wrap. After every step, and at every timer interrupt, the running task,
//! the order of every ready level and the number of timer interrupts must agree.
//!
//! The model itself is then held to the properties the ceiling protocol promises, checked
//! at every instant and over passing time:
//!
//! - mutual exclusion: a task that locks a resource never finds another holder;
//! - while a lower-priority task runs and a higher one is ready, the lower one is inside a
//!   section whose ceiling reaches the higher one's priority;
//! - bounded blocking: per activation (from becoming ready until it sleeps or waits) a task
//!   is blocked by at most one critical section of lower-priority tasks, for no longer than
//!   that section has run.

use std::collections::{BTreeSet, HashMap, VecDeque};

use mmsched_kernel::platform::host::HostMcu;
use mmsched_kernel::{Ceiling, KernelError, Priority, TaskId};
use proptest::prelude::*;

const N: usize = 6;
const RESOURCES: usize = 3;

#[derive(Debug, Clone)]
enum Op {
    Sleep(u32),
    Yield,
    Wake(usize),
    Advance(u32),
    Lock(usize),
    Unlock,
    Wait,
    /// An interrupt handler notifies a task.
    Notify(usize),
    /// The running task notifies a task.
    TaskNotify(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0u32..300).prop_map(Op::Sleep),
        2 => Just(Op::Yield),
        1 => (0..N).prop_map(Op::Wake),
        3 => (0u32..400).prop_map(Op::Advance),
        3 => (0..RESOURCES).prop_map(Op::Lock),
        2 => Just(Op::Unlock),
        1 => Just(Op::Wait),
        2 => (0..N).prop_map(Op::Notify),
        1 => (0..N).prop_map(Op::TaskNotify),
    ]
}

/// A shared resource: which tasks use it, and whether an interrupt handler does.
#[derive(Debug, Clone)]
struct Resource {
    users: Vec<bool>,
    interrupt: bool,
}

impl Resource {
    fn ceiling(&self, prio: &[u8]) -> Ceiling {
        if self.interrupt {
            return Ceiling::INTERRUPTS;
        }
        let users: Vec<Priority> = prio
            .iter()
            .zip(&self.users)
            .filter(|(_, u)| **u)
            .filter_map(|(&p, _)| Priority::new(p))
            .collect();
        Ceiling::of(&users)
    }
}

/// One held resource: which, the level before locking it, and the section's id.
#[derive(Debug, Clone, Copy)]
struct Held {
    resource: usize,
    before: u8,
    section: u64,
}

#[derive(Debug, Default)]
struct Model {
    prio: Vec<u8>,
    effective: Vec<u8>,
    ready: Vec<VecDeque<usize>>,
    current: Option<usize>,
    /// (absolute wake-up time, order of going to sleep, task)
    sleepers: Vec<(u64, u64, usize)>,
    sleep_seq: u64,
    waiting: Vec<bool>,
    notified: Vec<bool>,
    now: u64,
    interrupts: u32,
    ceilings: Vec<Ceiling>,
    held: Vec<Vec<Held>>,
    next_section: u64,
    /// Run time of each critical section so far.
    section_run: HashMap<u64, u64>,
    /// Per task, in the current activation: the sections that blocked it, and for how long.
    blockers: Vec<BTreeSet<u64>>,
    blocked_time: Vec<u64>,
}

impl Model {
    fn new(prio: &[u8], resources: &[Resource]) -> Self {
        let n = prio.len();
        let mut m = Model {
            prio: prio.to_vec(),
            effective: prio.to_vec(),
            ready: vec![VecDeque::new(); 32],
            waiting: vec![false; n],
            notified: vec![false; n],
            ceilings: resources.iter().map(|r| r.ceiling(prio)).collect(),
            held: vec![Vec::new(); n],
            blockers: vec![BTreeSet::new(); n],
            blocked_time: vec![0; n],
            ..Model::default()
        };
        for (t, &p) in prio.iter().enumerate() {
            m.ready[usize::from(p)].push_back(t);
        }
        m
    }

    fn highest(&self) -> Option<usize> {
        (0..32).rev().find(|&l| !self.ready[l].is_empty())
    }

    fn schedule(&mut self) {
        if let Some(c) = self.current {
            let eff = usize::from(self.effective[c]);
            match self.highest() {
                Some(h) if h > eff => {
                    self.ready[eff].push_front(c);
                    self.current = None;
                }
                _ => return,
            }
        }
        self.current = self.highest().and_then(|l| self.ready[l].pop_front());
    }

    fn make_ready(&mut self, t: usize) {
        self.ready[usize::from(self.prio[t])].push_back(t);
    }

    /// The running task goes to sleep or waits: its activation ends.
    fn block_current(&mut self, c: usize) {
        self.current = None;
        self.blockers[c].clear();
        self.blocked_time[c] = 0;
    }

    fn ready_tasks(&self) -> Vec<usize> {
        self.ready.iter().flatten().copied().collect()
    }

    /// The section of the running task `c` that blocks ready task `t` (its outermost one
    /// whose ceiling reaches `t`'s priority), if `c` is lower than `t`.
    fn blocker_of(&self, c: usize, t: usize) -> Option<u64> {
        if self.prio[c] >= self.prio[t] {
            return None;
        }
        let held = self.held[c]
            .iter()
            .find(|h| self.ceilings[h.resource].level().level() >= self.prio[t]);
        assert!(
            held.is_some(),
            "task {c} (priority {}) runs while task {t} (priority {}) is ready, outside any section that reaches it",
            self.prio[c],
            self.prio[t]
        );
        held.map(|h| h.section)
    }

    /// Checks the instantaneous properties and records who blocks whom.
    fn observe(&mut self) {
        let Some(c) = self.current else {
            assert!(self.ready_tasks().is_empty(), "idle with ready tasks");
            return;
        };
        for t in self.ready_tasks() {
            if let Some(s) = self.blocker_of(c, t) {
                self.blockers[t].insert(s);
                assert!(
                    self.blockers[t].len() <= 1,
                    "task {t} blocked by two critical sections in one activation"
                );
            }
        }
    }

    /// `dt` ticks pass with the current state.
    fn run_for(&mut self, dt: u64) {
        let Some(c) = self.current else { return };
        for h in &self.held[c] {
            *self.section_run.entry(h.section).or_default() += dt;
        }
        for t in self.ready_tasks() {
            if let Some(s) = self.blocker_of(c, t) {
                self.blocked_time[t] += dt;
                assert!(
                    self.blocked_time[t] <= self.section_run[&s],
                    "task {t} blocked longer than the section that blocks it has run"
                );
            }
        }
    }

    /// Applies `op`; returns the task scheduled after each timer interrupt it delivered.
    fn step(&mut self, op: &Op) -> Vec<Option<usize>> {
        let mut after_interrupts = Vec::new();
        let locked = self.current.is_some_and(|c| !self.held[c].is_empty());
        match *op {
            Op::Sleep(ticks) => {
                if let Some(c) = self.current
                    && ticks > 0
                    && !locked
                {
                    self.sleepers
                        .push((self.now + u64::from(ticks), self.sleep_seq, c));
                    self.sleep_seq += 1;
                    self.block_current(c);
                }
            }
            Op::Yield => {
                if let Some(c) = self.current
                    && !locked
                {
                    self.current = None;
                    self.make_ready(c);
                }
            }
            Op::Wait => {
                if let Some(c) = self.current
                    && !locked
                {
                    if self.notified[c] {
                        self.notified[c] = false;
                    } else {
                        self.waiting[c] = true;
                        self.block_current(c);
                    }
                }
            }
            Op::Wake(t) => {
                if let Some(i) = self.sleepers.iter().position(|s| s.2 == t) {
                    self.sleepers.remove(i);
                    self.make_ready(t);
                }
            }
            Op::TaskNotify(_) if self.current.is_none() => {}
            Op::Notify(t) | Op::TaskNotify(t) => {
                if t < self.prio.len() {
                    if self.waiting[t] {
                        self.waiting[t] = false;
                        self.make_ready(t);
                    } else {
                        self.notified[t] = true;
                    }
                }
            }
            Op::Lock(r) => {
                if let Some(c) = self.current {
                    let ceiling = self.ceilings[r].level().level();
                    if self.held[c].iter().all(|h| h.resource != r) && self.prio[c] <= ceiling {
                        for (t, held) in self.held.iter().enumerate() {
                            assert!(
                                held.iter().all(|h| h.resource != r),
                                "task {c} locks resource {r}, which task {t} holds"
                            );
                        }
                        let section = self.next_section;
                        self.next_section += 1;
                        self.section_run.insert(section, 0);
                        self.held[c].push(Held {
                            resource: r,
                            before: self.effective[c],
                            section,
                        });
                        self.effective[c] = self.effective[c].max(ceiling);
                    }
                }
            }
            Op::Unlock => {
                if let Some(c) = self.current
                    && let Some(h) = self.held[c].pop()
                {
                    self.effective[c] = h.before;
                }
            }
            Op::Advance(ticks) => {
                let end = self.now + u64::from(ticks);
                while let Some(&(at, _, _)) = self.sleepers.iter().min() {
                    if at > end {
                        break;
                    }
                    self.run_for(at - self.now);
                    self.now = at;
                    self.sleepers.sort();
                    while self.sleepers.first().is_some_and(|s| s.0 <= self.now) {
                        let (_, _, t) = self.sleepers.remove(0);
                        self.make_ready(t);
                    }
                    self.interrupts += 1;
                    self.schedule();
                    self.observe();
                    after_interrupts.push(self.current);
                }
                self.run_for(end - self.now);
                self.now = end;
            }
        }
        self.schedule();
        self.observe();
        after_interrupts
    }
}

/// Applies `op` to the kernel; `held` is the stack of levels to give back to `unlock`.
fn apply(
    mcu: &mut HostMcu<N>,
    op: &Op,
    ids: &[TaskId],
    ceilings: &[Ceiling],
    held: &mut [Vec<(usize, Priority)>],
) -> Vec<Option<usize>> {
    let current = mcu.current().map(TaskId::index);
    let locked = current.is_some_and(|c| !held[c].is_empty());
    let mut after_interrupts = Vec::new();
    let r = match *op {
        Op::Sleep(ticks) => mcu.sleep_for(ticks).map(|_| ()),
        Op::Yield => mcu.yield_now().map(|_| ()),
        Op::Wait => mcu.wait().map(|_| ()),
        Op::Wake(t) => {
            if let Some(&id) = ids.get(t) {
                mcu.wake(id);
            }
            Ok(())
        }
        Op::Notify(t) => {
            if let Some(&id) = ids.get(t) {
                mcu.notify(id);
            }
            Ok(())
        }
        Op::TaskNotify(t) => {
            if let (Some(&id), Some(_)) = (ids.get(t), current) {
                mcu.notify_from_task(id);
            }
            Ok(())
        }
        Op::Lock(r) => match current {
            Some(c) if held[c].iter().all(|h| h.0 != r) => match mcu.lock(ceilings[r]) {
                Ok(before) => {
                    held[c].push((r, before));
                    Ok(())
                }
                Err(e) => Err(e),
            },
            _ => Ok(()),
        },
        Op::Unlock => {
            if let Some(c) = current
                && let Some((_, before)) = held[c].pop()
            {
                mcu.unlock(before);
            }
            Ok(())
        }
        Op::Advance(ticks) => {
            mcu.advance(ticks, |_, next| {
                after_interrupts.push(next.map(TaskId::index))
            });
            Ok(())
        }
    };
    match r {
        Ok(()) | Err(KernelError::NoCurrentTask) => {}
        Err(KernelError::LockHeld) => assert!(locked, "LockHeld outside a section"),
        Err(KernelError::CeilingTooLow { .. }) => {
            assert!(matches!(op, Op::Lock(_)), "CeilingTooLow from {op:?}")
        }
        Err(e) => panic!("unexpected refusal {e}"),
    }
    after_interrupts
}

fn start_tick() -> impl Strategy<Value = u32> {
    prop_oneof![Just(0u32), (u32::MAX - 2_000)..=u32::MAX, any::<u32>()]
}

fn resources() -> impl Strategy<Value = Vec<Resource>> {
    prop::collection::vec(
        (
            prop::collection::vec(any::<bool>(), N),
            prop::bool::weighted(0.2),
        )
            .prop_map(|(users, interrupt)| Resource { users, interrupt }),
        RESOURCES,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn kernel_decisions_match_the_model(
        prios in prop::collection::vec(0u8..32, 1..=N),
        resources in resources(),
        ops in prop::collection::vec(op(), 0..150),
        start in start_tick(),
    ) {
        let mut mcu = HostMcu::<N>::new(start);
        let ids: Vec<TaskId> = prios
            .iter()
            .map(|&l| mcu.spawn(Priority::new(l).unwrap()).unwrap())
            .collect();
        let mut model = Model::new(&prios, &resources);
        let ceilings = model.ceilings.clone();
        let mut held = vec![Vec::new(); prios.len()];
        mcu.start();
        model.schedule();
        model.observe();
        for op in &ops {
            let kernel_interrupts = apply(&mut mcu, op, &ids, &ceilings, &mut held);
            let model_interrupts = model.step(op);
            prop_assert_eq!(kernel_interrupts, model_interrupts, "tasks run after each interrupt of {:?}", op);
            prop_assert_eq!(mcu.current().map(TaskId::index), model.current, "after {:?}", op);
            for level in 0..32u8 {
                let kernel: Vec<usize> = mcu
                    .kernel
                    .ready_queue()
                    .level(Priority::new(level).unwrap())
                    .map(TaskId::index)
                    .collect();
                let expected: Vec<usize> = model.ready[usize::from(level)].iter().copied().collect();
                prop_assert_eq!(kernel, expected, "level {} after {:?}", level, op);
            }
            for (t, &id) in ids.iter().enumerate() {
                prop_assert_eq!(
                    mcu.kernel.tcb(id).effective_priority().level(),
                    model.effective[t],
                    "effective priority of task {} after {:?}", t, op
                );
            }
            prop_assert_eq!(mcu.interrupts, model.interrupts);
            prop_assert_eq!(mcu.kernel.stats().idle_tick_interrupts, 0);
            let next_wake = model.sleepers.iter().map(|s| s.0).min();
            prop_assert_eq!(
                mcu.timer.alarm(),
                next_wake.map(|at| start.wrapping_add(at as u32)),
                "the timer is armed for exactly the next wake-up"
            );
        }
    }
}
