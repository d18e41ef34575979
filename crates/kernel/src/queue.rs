//! A fixed-capacity single-producer, single-consumer queue, for handing data from an
//! interrupt handler to a task (or between two tasks) without a lock and without a heap.
//!
//! The producer owns the tail counter and the consumer the head counter; each only reads
//! the other's. Both are free-running `u32` counters (the fill level is their wrapping
//! difference), so all `N` slots are usable. A slot is written before the tail that
//! publishes it (release) and read after the tail is seen (acquire), and it is given back
//! only after it was read; so the queue is correct between an interrupt handler and a task
//! on one hart as well as between two threads. The items are atomics (`u8`, `u16` or `u32`
//! words) so that no `unsafe` code is needed.
//!
//! # Overflow policy: the newest item is dropped, and counted
//!
//! An interrupt handler cannot wait for room, and overwriting the oldest item would change
//! data the consumer may be reading. So [`SpscQueue::push`] on a full queue leaves the
//! queue as it is, hands the item back and adds one to [`SpscQueue::dropped`]. The consumer
//! sees every item it is given in order and learns from the counter how many were lost.

use core::sync::atomic::{AtomicU8, AtomicU16, AtomicU32, Ordering};

/// An atomic word that can be a queue slot.
pub trait Slot: Sync {
    /// The item type.
    type Item: Copy;
    /// An empty slot.
    const EMPTY: Self;
    /// Reads the slot.
    fn get(&self) -> Self::Item;
    /// Writes the slot.
    fn set(&self, item: Self::Item);
}

macro_rules! slot {
    ($atomic:ty, $item:ty) => {
        impl Slot for $atomic {
            type Item = $item;
            const EMPTY: Self = <$atomic>::new(0);
            #[inline(always)]
            fn get(&self) -> $item {
                self.load(Ordering::Relaxed)
            }
            #[inline(always)]
            fn set(&self, item: $item) {
                self.store(item, Ordering::Relaxed)
            }
        }
    };
}

slot!(AtomicU8, u8);
slot!(AtomicU16, u16);
slot!(AtomicU32, u32);

/// A queue of `N` items (`N` ≥ 1; a power of two makes the index a mask).
#[derive(Debug)]
pub struct SpscQueue<S: Slot, const N: usize> {
    slots: [S; N],
    /// Items taken so far (written by the consumer only).
    head: AtomicU32,
    /// Items accepted so far (written by the producer only).
    tail: AtomicU32,
    /// Items refused because the queue was full (written by the producer only).
    dropped: AtomicU32,
}

/// A queue of bytes (e.g. received by a UART).
pub type ByteQueue<const N: usize> = SpscQueue<AtomicU8, N>;
/// A queue of 32-bit words (e.g. sensor samples or event codes).
pub type WordQueue<const N: usize> = SpscQueue<AtomicU32, N>;

impl<S: Slot, const N: usize> Default for SpscQueue<S, N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<S: Slot, const N: usize> SpscQueue<S, N> {
    /// An empty queue (usable in a `static`).
    pub const fn new() -> Self {
        assert!(N > 0 && N <= 1 << 31, "a queue holds 1 to 2^31 items");
        Self {
            slots: [const { S::EMPTY }; N],
            head: AtomicU32::new(0),
            tail: AtomicU32::new(0),
            dropped: AtomicU32::new(0),
        }
    }

    /// The capacity.
    pub const fn capacity(&self) -> usize {
        N
    }

    /// Producer side: appends `item`, or, when the queue is full, leaves it unchanged,
    /// counts the loss and hands `item` back.
    #[inline(never)]
    pub fn push(&self, item: S::Item) -> Result<(), S::Item> {
        let tail = self.tail.load(Ordering::Relaxed);
        let head = self.head.load(Ordering::Acquire);
        if tail.wrapping_sub(head) as usize >= N {
            let d = self.dropped.load(Ordering::Relaxed);
            self.dropped.store(d.wrapping_add(1), Ordering::Relaxed);
            return Err(item);
        }
        self.slots[tail as usize % N].set(item);
        self.tail.store(tail.wrapping_add(1), Ordering::Release);
        Ok(())
    }

    /// Consumer side: takes the oldest item, if any.
    #[inline(never)]
    pub fn pop(&self) -> Option<S::Item> {
        let head = self.head.load(Ordering::Relaxed);
        let tail = self.tail.load(Ordering::Acquire);
        if head == tail {
            return None;
        }
        let item = self.slots[head as usize % N].get();
        self.head.store(head.wrapping_add(1), Ordering::Release);
        Some(item)
    }

    /// Items waiting (a snapshot: the other side may be changing it).
    pub fn len(&self) -> usize {
        let tail = self.tail.load(Ordering::Acquire);
        tail.wrapping_sub(self.head.load(Ordering::Acquire)) as usize
    }

    /// Whether no item is waiting (a snapshot).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Items accepted since the start (wraps at 2³²).
    pub fn pushed(&self) -> u32 {
        self.tail.load(Ordering::Acquire)
    }

    /// Items dropped because the queue was full, since the start (wraps at 2³²).
    pub fn dropped(&self) -> u32 {
        self.dropped.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fifo_then_full_drops_the_newest() {
        let q = ByteQueue::<4>::new();
        assert_eq!(q.pop(), None);
        for b in 1..=4 {
            assert_eq!(q.push(b), Ok(()));
        }
        assert_eq!(q.push(5), Err(5));
        assert_eq!(q.push(6), Err(6));
        assert_eq!((q.len(), q.dropped(), q.pushed()), (4, 2, 4));
        assert_eq!(q.pop(), Some(1));
        assert_eq!(q.push(7), Ok(()));
        let rest: Vec<u8> = core::iter::from_fn(|| q.pop()).collect();
        assert_eq!(rest, [2, 3, 4, 7]);
        assert!(q.is_empty());
    }

    #[test]
    fn odd_capacity_and_words() {
        let q = WordQueue::<3>::new();
        for round in 0..10u32 {
            assert_eq!(q.push(round), Ok(()));
            assert_eq!(q.push(round + 100), Ok(()));
            assert_eq!(q.pop(), Some(round));
            assert_eq!(q.pop(), Some(round + 100));
        }
        assert_eq!(q.capacity(), 3);
        assert_eq!(q.dropped(), 0);
    }
}
