//! The interrupt-to-task queue against a `VecDeque` model (random pushes and pops), and
//! across two threads (a producer and a consumer running at once).

use std::collections::VecDeque;
use std::sync::Arc;

use mmsched_kernel::queue::{ByteQueue, WordQueue};
use proptest::prelude::*;

const CAP: usize = 5;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn queue_matches_the_model(ops in prop::collection::vec(prop::option::of(any::<u8>()), 0..300)) {
        let q = ByteQueue::<CAP>::new();
        let mut model = VecDeque::new();
        let mut dropped = 0u32;
        for op in ops {
            match op {
                Some(b) => {
                    let r = q.push(b);
                    if model.len() < CAP {
                        model.push_back(b);
                        prop_assert_eq!(r, Ok(()));
                    } else {
                        dropped += 1;
                        prop_assert_eq!(r, Err(b), "full: the newest is refused");
                    }
                }
                None => prop_assert_eq!(q.pop(), model.pop_front()),
            }
            prop_assert_eq!(q.len(), model.len());
            prop_assert_eq!(q.dropped(), dropped);
        }
    }
}

#[test]
fn producer_and_consumer_threads_lose_and_reorder_nothing() {
    const ITEMS: u32 = 20_000;
    let q = Arc::new(WordQueue::<64>::new());
    let producer = {
        let q = Arc::clone(&q);
        std::thread::spawn(move || {
            for i in 0..ITEMS {
                while q.push(i).is_err() {
                    std::thread::yield_now();
                }
            }
        })
    };
    let mut next = 0;
    while next < ITEMS {
        match q.pop() {
            Some(v) => {
                assert_eq!(v, next, "items arrive in order, none lost");
                next += 1;
            }
            None => std::thread::yield_now(),
        }
    }
    producer.join().unwrap();
    assert_eq!(q.pop(), None);
    assert_eq!(q.pushed(), ITEMS);
}
