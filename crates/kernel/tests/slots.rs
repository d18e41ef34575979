//! The slot book against a plain model: a map from slot id to state, searched by brute
//! force. Random reserve / activate / release / advance sequences must give the same
//! answers, and no slot may ever be held by two bookings.

use std::collections::BTreeMap;

use mmsched_core::Modality;
use mmsched_kernel::slots::{Reservation, SlotBook, SlotError, SlotState};
use proptest::prelude::*;

const H: usize = 16;

#[derive(Debug, Clone)]
enum Op {
    Reserve(u8, u32, u32),
    Activate(u32),
    Release(usize),
    Advance(u32),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u8..5, 0u32..40, 0u32..6).prop_map(|(m, s, n)| Op::Reserve(m, s, n)),
        2 => (0u32..40).prop_map(Op::Activate),
        2 => (0usize..8).prop_map(Op::Release),
        1 => (0u32..6).prop_map(Op::Advance),
    ]
}

/// First fit by brute force over the window `[now, now + H)`.
fn model_first_fit(states: &BTreeMap<u32, SlotState>, now: u32, from: u32, n: u32) -> Option<u32> {
    let free = |s: u32| states.get(&s).is_none_or(|st| *st == SlotState::Idle);
    (from.max(now)..now + H as u32).find(|&s| s + n <= now + H as u32 && (s..s + n).all(free))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn slot_book_matches_the_model(ops in prop::collection::vec(op(), 0..80)) {
        let mut book = SlotBook::<H>::new(0);
        let mut states: BTreeMap<u32, SlotState> = BTreeMap::new();
        let mut bookings: Vec<Reservation> = Vec::new();
        let mut now = 0u32;
        for op in &ops {
            match *op {
                Op::Reserve(m, from, n) => {
                    let r = book.reserve(Modality::ALL[usize::from(m)], from, n);
                    if n == 0 {
                        prop_assert!(
                            matches!(r, Err(SlotError::BadLength { .. })),
                            "zero-length booking accepted"
                        );
                        continue;
                    }
                    match (r, model_first_fit(&states, now, from, n)) {
                        (Ok(res), Some(start)) => {
                            prop_assert_eq!(res.start_slot, start);
                            for s in start..start + n {
                                states.insert(s, SlotState::Reserved);
                            }
                            bookings.push(res);
                        }
                        (Err(SlotError::Conflict { .. }), None) => {}
                        (r, m) => prop_assert!(false, "kernel {:?} vs model {:?}", r, m),
                    }
                }
                Op::Activate(s) => {
                    let r = book.activate(s);
                    let in_window = s >= now && s < now + H as u32;
                    let reserved = states.get(&s) == Some(&SlotState::Reserved);
                    prop_assert_eq!(r.is_ok(), in_window && reserved);
                    if r.is_ok() {
                        states.insert(s, SlotState::Active);
                    }
                }
                Op::Release(i) => {
                    if i < bookings.len() {
                        let b = bookings.remove(i);
                        book.release(&b).unwrap();
                        for s in b.start_slot..b.start_slot + b.len {
                            states.remove(&s);
                        }
                    }
                }
                Op::Advance(d) => {
                    let missed = book.advance_to(now + d);
                    let mut model_missed = 0;
                    for s in now..now + d {
                        if states.remove(&s) == Some(SlotState::Reserved) {
                            model_missed += 1;
                        }
                    }
                    prop_assert_eq!(missed, model_missed);
                    now += d;
                    // Bookings wholly in the past are done.
                    bookings.retain(|b| b.start_slot + b.len > now);
                }
            }
            for s in now..now + H as u32 {
                let expected = states.get(&s).copied().unwrap_or(SlotState::Idle);
                prop_assert_eq!(book.state(s).unwrap(), expected, "slot {}", s);
            }
        }
    }
}
