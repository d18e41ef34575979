//! Several producers against one draining consumer: every attempted event is either drained
//! exactly once or counted as dropped, and each producer's events stay in order.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use mmsched_trace::ring::Ring;

fn run(capacity: usize, producers: u64, per_producer: u64) -> (u64, u64) {
    let ring = Arc::new(Ring::<3>::new(capacity));
    let done = Arc::new(AtomicBool::new(false));
    let consumer = {
        let ring = ring.clone();
        let done = done.clone();
        std::thread::spawn(move || {
            let mut last = vec![None::<u64>; producers as usize];
            let mut drained = 0u64;
            loop {
                let finished = done.load(Ordering::Acquire);
                while let Some([p, seq, check]) = ring.pop() {
                    assert_eq!(check, p ^ seq ^ 0xdead_beef, "torn event");
                    let slot = &mut last[p as usize];
                    assert!(slot.is_none_or(|prev| seq > prev), "producer {p} reordered");
                    *slot = Some(seq);
                    drained += 1;
                }
                if finished {
                    return drained;
                }
                std::thread::yield_now();
            }
        })
    };
    let workers: Vec<_> = (0..producers)
        .map(|p| {
            let ring = ring.clone();
            std::thread::spawn(move || {
                (0..per_producer)
                    .filter(|seq| ring.push(&[p, *seq, p ^ seq ^ 0xdead_beef]))
                    .count() as u64
            })
        })
        .collect();
    let accepted: u64 = workers
        .into_iter()
        .map(|w| w.join().expect("producer"))
        .sum();
    done.store(true, Ordering::Release);
    let drained = consumer.join().expect("consumer");
    assert_eq!(
        drained, accepted,
        "every accepted event is drained exactly once"
    );
    assert_eq!(ring.accepted(), accepted);
    assert_eq!(
        accepted + ring.dropped(),
        producers * per_producer,
        "written + dropped = attempted"
    );
    (accepted, ring.dropped())
}

#[test]
fn tiny_ring_drops_but_accounts_exactly() {
    let (_, dropped) = run(8, 4, 50_000);
    assert!(
        dropped > 0,
        "an 8-slot ring under 4 producers must overflow"
    );
}

#[test]
fn roomy_ring_accounts_exactly() {
    run(1 << 12, 4, 50_000);
}
