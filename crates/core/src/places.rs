//! A model's places: how many jobs of one kind may be handed to the scheduler at once (the
//! model instances or sessions that can run them), and the requests beyond that waiting in
//! arrival order. A request takes a place when it is handed over and keeps it until it
//! ends — also while a shed step of it waits to compete again — so the scheduler never
//! holds more of a kind's jobs than the model can run.
//!
//! The runtime's book of jobs and the simulator both queue their requests here, so a
//! request waits, or does not, for the same reason in both.

use alloc::collections::VecDeque;

/// The places of one kind, and the requests (`T`) waiting for one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Places<T> {
    waiting: VecDeque<T>,
    taken: usize,
    capacity: usize,
}

impl<T> Places<T> {
    /// `capacity` places (at least one), none taken.
    pub fn new(capacity: usize) -> Self {
        Self {
            waiting: VecDeque::new(),
            taken: 0,
            capacity: capacity.max(1),
        }
    }

    /// A request arrives: it waits behind those that came before it.
    pub fn wait(&mut self, request: T) {
        self.waiting.push_back(request);
    }

    /// The first waiting request, if a place is free: it takes the place.
    pub fn admit(&mut self) -> Option<T> {
        if self.taken >= self.capacity {
            return None;
        }
        let request = self.waiting.pop_front()?;
        self.taken += 1;
        Some(request)
    }

    /// A request that held a place ended: the place is free.
    pub fn free(&mut self) {
        self.taken = self.taken.saturating_sub(1);
    }

    /// Places taken.
    pub fn taken(&self) -> usize {
        self.taken
    }

    /// All places.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Requests waiting.
    pub fn waiting(&self) -> usize {
        self.waiting.len()
    }

    /// Forgets the waiting requests (the runtime stops).
    pub fn clear_waiting(&mut self) {
        self.waiting.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;
    use proptest::prelude::*;

    #[test]
    fn requests_beyond_the_capacity_wait_in_arrival_order() {
        let mut p = Places::new(2);
        for r in 1..=4 {
            p.wait(r);
        }
        assert_eq!((p.admit(), p.admit(), p.admit()), (Some(1), Some(2), None));
        assert_eq!((p.taken(), p.waiting()), (2, 2));
        p.free();
        assert_eq!(
            p.admit(),
            Some(3),
            "the first to wait takes the freed place"
        );
        assert_eq!(p.admit(), None);
        p.clear_waiting();
        p.free();
        assert_eq!(p.admit(), None, "nothing waits");
        assert_eq!(Places::<u8>::new(0).capacity(), 1, "at least one place");
    }

    proptest! {
        #[test]
        fn never_more_taken_than_places_and_first_come_first_placed(
            capacity in 0usize..4,
            ops in proptest::collection::vec(0u8..3, 0..60),
        ) {
            let mut p = Places::new(capacity);
            let (mut next, mut admitted, mut held) = (0u32, Vec::new(), 0usize);
            for op in ops {
                match op {
                    0 => { p.wait(next); next += 1; }
                    1 => if let Some(r) = p.admit() { admitted.push(r); held += 1; },
                    _ => if held > 0 { p.free(); held -= 1; },
                }
                prop_assert!(p.taken() <= p.capacity());
                prop_assert_eq!(p.taken(), held);
            }
            prop_assert!(admitted.windows(2).all(|w| w[0] < w[1]), "in arrival order");
        }
    }
}
