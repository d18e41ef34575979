//! A bounded, lock-free, multi-producer single-consumer ring of fixed-size events.
//!
//! The design is Dmitry Vyukov's bounded queue: every slot carries a sequence number that
//! says whose turn it is. A producer claims a position with one compare-and-swap on the
//! shared tail, writes the payload words, and publishes them with a release store of the
//! slot's sequence; the consumer waits for that sequence, reads, and hands the slot back
//! one lap later. The payload is stored in atomic words, so the whole ring is safe Rust:
//! there is no `unsafe` and no torn read is possible, and the orderings are checked by
//! loom (`tests/loom.rs`).
//!
//! A full ring never blocks a producer: the event is dropped and counted. Workers must
//! not wait on the tracer.

use crate::sync::{AtomicU64, AtomicUsize, Ordering};

/// Pads a value to its own cache line so producers and the consumer do not false-share.
#[derive(Debug)]
#[repr(align(64))]
struct Padded<T>(T);

#[derive(Debug)]
struct Slot<const W: usize> {
    /// `pos` when free for the producer at `pos`; `pos + 1` when holding that event.
    seq: AtomicUsize,
    words: [AtomicU64; W],
}

/// The ring: `W` 64-bit words per event, a power-of-two number of slots.
#[derive(Debug)]
pub struct Ring<const W: usize> {
    slots: Box<[Slot<W>]>,
    mask: usize,
    /// Next position a producer claims (total events accepted).
    tail: Padded<AtomicUsize>,
    /// Next position the consumer reads. Only the consumer writes it.
    head: Padded<AtomicUsize>,
    dropped: Padded<AtomicU64>,
}

impl<const W: usize> Ring<W> {
    /// A ring with room for `capacity` events, rounded up to a power of two (at least 2).
    pub fn new(capacity: usize) -> Self {
        let cap = capacity.max(2).next_power_of_two();
        let slots = (0..cap)
            .map(|i| Slot {
                seq: AtomicUsize::new(i),
                words: std::array::from_fn(|_| AtomicU64::new(0)),
            })
            .collect();
        Self {
            slots,
            mask: cap - 1,
            tail: Padded(AtomicUsize::new(0)),
            head: Padded(AtomicUsize::new(0)),
            dropped: Padded(AtomicU64::new(0)),
        }
    }

    /// Slots in the ring.
    pub fn capacity(&self) -> usize {
        self.mask + 1
    }

    /// Events dropped because the ring was full.
    pub fn dropped(&self) -> u64 {
        self.dropped.0.load(Ordering::Relaxed)
    }

    /// Events accepted so far (consumed or still queued).
    pub fn accepted(&self) -> u64 {
        self.tail.0.load(Ordering::Relaxed) as u64
    }

    /// Offers one event. Never blocks: returns `false` (and counts a drop) if the ring is
    /// full. Safe to call from any number of threads at once.
    pub fn push(&self, event: &[u64; W]) -> bool {
        let mut pos = self.tail.0.load(Ordering::Relaxed);
        loop {
            let slot = &self.slots[pos & self.mask];
            let seq = slot.seq.load(Ordering::Acquire);
            // Signed distance between the slot's turn and ours (wrapping arithmetic).
            let diff = seq.wrapping_sub(pos) as isize;
            if diff == 0 {
                match self.tail.0.compare_exchange_weak(
                    pos,
                    pos.wrapping_add(1),
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => {
                        for (dst, src) in slot.words.iter().zip(event) {
                            dst.store(*src, Ordering::Relaxed);
                        }
                        // Publishes the payload to the consumer's acquire load.
                        slot.seq.store(pos.wrapping_add(1), Ordering::Release);
                        return true;
                    }
                    Err(current) => pos = current,
                }
            } else if diff < 0 {
                // The slot still holds an event from the previous lap: full.
                self.dropped.0.fetch_add(1, Ordering::Relaxed);
                return false;
            } else {
                // Another producer took this position; try the new tail.
                pos = self.tail.0.load(Ordering::Relaxed);
            }
        }
    }

    /// Takes the oldest published event, if any.
    ///
    /// Only one thread may consume (the [`crate::recorder::Drain`] owns the only handle);
    /// with several consumers events could be read twice, though never torn.
    pub fn pop(&self) -> Option<[u64; W]> {
        let pos = self.head.0.load(Ordering::Relaxed);
        let slot = &self.slots[pos & self.mask];
        let seq = slot.seq.load(Ordering::Acquire);
        if seq != pos.wrapping_add(1) {
            // Empty, or the producer of this position has not published yet.
            return None;
        }
        let out = std::array::from_fn(|i| slot.words[i].load(Ordering::Relaxed));
        // Hands the slot to the producer one lap ahead; orders our reads before its writes.
        slot.seq
            .store(pos.wrapping_add(self.mask + 1), Ordering::Release);
        self.head.0.store(pos.wrapping_add(1), Ordering::Relaxed);
        Some(out)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn fifo_until_full_then_counts_drops() {
        let ring = Ring::<2>::new(3);
        assert_eq!(ring.capacity(), 4);
        for i in 0..4u64 {
            assert!(ring.push(&[i, i * 10]));
        }
        assert!(!ring.push(&[9, 9]));
        assert_eq!(ring.dropped(), 1);
        assert_eq!(ring.pop(), Some([0, 0]));
        assert!(ring.push(&[4, 40]));
        let rest: Vec<_> = std::iter::from_fn(|| ring.pop()).collect();
        assert_eq!(rest, vec![[1, 10], [2, 20], [3, 30], [4, 40]]);
        assert_eq!(ring.accepted(), 5);
    }
}
