//! Model-checks the ring's orderings with loom. Run with:
//!
//! ```sh
//! RUSTFLAGS="--cfg loom" cargo test -p mmsched-trace --test loom --release
//! ```
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use mmsched_trace::ring::Ring;

/// Two producers and the consumer race on a two-slot ring: no event is torn, duplicated or
/// lost, and accepted + dropped = attempted in every interleaving.
#[test]
fn two_producers_one_consumer() {
    loom::model(|| {
        let ring = Arc::new(Ring::<2>::new(2));
        let producers: Vec<_> = (1..=2u64)
            .map(|p| {
                let ring = ring.clone();
                thread::spawn(move || {
                    let mut ok = 0u64;
                    for i in 0..2u64 {
                        if ring.push(&[p * 10 + i, !(p * 10 + i)]) {
                            ok += 1;
                        }
                    }
                    ok
                })
            })
            .collect();
        let mut seen = Vec::new();
        for _ in 0..2 {
            if let Some([v, check]) = ring.pop() {
                assert_eq!(check, !v, "torn event");
                seen.push(v);
            }
        }
        let accepted: u64 = producers
            .into_iter()
            .map(|h| h.join().expect("producer"))
            .sum();
        while let Some([v, check]) = ring.pop() {
            assert_eq!(check, !v, "torn event");
            seen.push(v);
        }
        assert_eq!(seen.len() as u64, accepted);
        assert_eq!(accepted + ring.dropped(), 4);
        let mut sorted = seen.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), seen.len(), "an event was read twice");
        // Per-producer order is kept.
        for p in [1u64, 2] {
            let mine: Vec<_> = seen.iter().filter(|v| **v / 10 == p).collect();
            assert!(mine.windows(2).all(|w| w[0] < w[1]));
        }
    });
}
