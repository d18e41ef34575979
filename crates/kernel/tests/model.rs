//! The kernel against a reference model, on random task sets and random sequences of
//! sleeps, yields, early wakes and passing time.
//!
//! The model states the SCHED_FIFO rules in the most direct way (a `VecDeque` per level,
//! a plain list of sleepers with 64-bit absolute wake-up times, no bitmaps, no wrapping
//! arithmetic). The kernel runs through the host platform on a 32-bit tick counter that
//! starts at a random point, often just before the wrap. After every step the running task,
//! the order of every ready level and the number of timer interrupts must agree.

use std::collections::VecDeque;

use mmsched_kernel::platform::host::HostMcu;
use mmsched_kernel::{KernelError, Priority, TaskId};
use proptest::prelude::*;

const N: usize = 6;

#[derive(Debug, Clone)]
enum Op {
    Sleep(u32),
    Yield,
    Wake(usize),
    Advance(u32),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0u32..300).prop_map(Op::Sleep),
        2 => Just(Op::Yield),
        1 => (0..N).prop_map(Op::Wake),
        3 => (0u32..400).prop_map(Op::Advance),
    ]
}

#[derive(Debug, Default)]
struct Model {
    prio: Vec<u8>,
    ready: Vec<VecDeque<usize>>,
    current: Option<usize>,
    /// (absolute wake-up time, order of going to sleep, task)
    sleepers: Vec<(u64, u64, usize)>,
    sleep_seq: u64,
    now: u64,
    interrupts: u32,
}

impl Model {
    fn new(prio: &[u8]) -> Self {
        let mut m = Model {
            prio: prio.to_vec(),
            ready: vec![VecDeque::new(); 32],
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
            match self.highest() {
                Some(h) if h > usize::from(self.prio[c]) => {
                    self.ready[usize::from(self.prio[c])].push_front(c);
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

    fn step(&mut self, op: &Op) {
        match *op {
            Op::Sleep(ticks) => {
                if let Some(c) = self.current
                    && ticks > 0
                {
                    self.sleepers
                        .push((self.now + u64::from(ticks), self.sleep_seq, c));
                    self.sleep_seq += 1;
                    self.current = None;
                }
            }
            Op::Yield => {
                if let Some(c) = self.current.take() {
                    self.make_ready(c);
                }
            }
            Op::Wake(t) => {
                if let Some(i) = self.sleepers.iter().position(|s| s.2 == t) {
                    self.sleepers.remove(i);
                    self.make_ready(t);
                }
            }
            Op::Advance(ticks) => {
                let end = self.now + u64::from(ticks);
                while let Some(&(at, _, _)) = self.sleepers.iter().min() {
                    if at > end {
                        break;
                    }
                    self.now = at;
                    self.sleepers.sort();
                    while self.sleepers.first().is_some_and(|s| s.0 <= self.now) {
                        let (_, _, t) = self.sleepers.remove(0);
                        self.make_ready(t);
                    }
                    self.interrupts += 1;
                    self.schedule();
                }
                self.now = end;
            }
        }
        self.schedule();
    }
}

fn apply(mcu: &mut HostMcu<N>, op: &Op, ids: &[TaskId]) {
    let r = match *op {
        Op::Sleep(ticks) => mcu.sleep_for(ticks).map(|_| ()),
        Op::Yield => mcu.yield_now().map(|_| ()),
        Op::Wake(t) => {
            if let Some(&id) = ids.get(t) {
                mcu.wake(id);
            }
            Ok(())
        }
        Op::Advance(ticks) => {
            mcu.advance(ticks, |_, _| {});
            Ok(())
        }
    };
    match r {
        Ok(()) | Err(KernelError::NoCurrentTask) => {}
        Err(e) => panic!("unexpected refusal {e}"),
    }
}

fn start_tick() -> impl Strategy<Value = u32> {
    prop_oneof![Just(0u32), (u32::MAX - 2_000)..=u32::MAX, any::<u32>()]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn kernel_decisions_match_the_model(
        prios in prop::collection::vec(0u8..32, 1..=N),
        ops in prop::collection::vec(op(), 0..120),
        start in start_tick(),
    ) {
        let mut mcu = HostMcu::<N>::new(start);
        let ids: Vec<TaskId> = prios
            .iter()
            .map(|&l| mcu.spawn(Priority::new(l).unwrap()).unwrap())
            .collect();
        let mut model = Model::new(&prios);
        mcu.start();
        model.schedule();
        for op in &ops {
            apply(&mut mcu, op, &ids);
            model.step(op);
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
