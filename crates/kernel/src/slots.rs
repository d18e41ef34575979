//! Fixed-capacity slot booking for the MCU: the time-slot layer of S1 without a heap.
//!
//! Device time is cut into equal slots with consecutive ids. The book covers a sliding
//! window of `H` slots, `[now_slot, now_slot + H)`, stored as a ring. Each slot follows the
//! S1 state machine IDLE → RESERVED (booked) → ACTIVE (fired when its time comes) → IDLE
//! (released or completed). [`SlotBook::reserve`] books `n` contiguous idle slots first-fit
//! at or after a given start, exactly as the Linux side does; the modality is recorded for
//! arbitration only, and no timing rule looks at it.
//!
//! The search is a linear scan of the window, which for the small horizons an MCU books
//! ahead (tens of slots) is a handful of byte compares; it skips past each busy slot it
//! meets, so it looks at every slot at most once.

use core::fmt;

use mmsched_core::Modality;

/// The state of one slot (S1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlotState {
    /// Free.
    Idle,
    /// Booked, not yet running.
    Reserved,
    /// Its time has come and its resources are in use.
    Active,
}

/// A booking: `len` contiguous slots from `start_slot`, for one modality.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reservation {
    /// The first slot's id.
    pub start_slot: u32,
    /// How many slots.
    pub len: u32,
    /// Who booked them (recorded for arbitration, never used for timing).
    pub modality: Modality,
}

/// Why a booking call was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlotError {
    /// No `len` contiguous idle slots at or after `earliest_slot` inside the window.
    Conflict {
        /// The requested earliest start.
        earliest_slot: u32,
        /// The requested length.
        len: u32,
    },
    /// A booking of zero slots, or longer than the window.
    BadLength {
        /// The requested length.
        len: u32,
        /// The window size `H`.
        horizon: u32,
    },
    /// The slot is outside the window `[now_slot, now_slot + H)`.
    OutsideWindow {
        /// The slot asked about.
        slot: u32,
    },
    /// The slot is not in the state the transition starts from.
    WrongState {
        /// The slot asked about.
        slot: u32,
        /// Its state.
        state: SlotState,
    },
}

impl fmt::Display for SlotError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SlotError::Conflict { earliest_slot, len } => write!(
                f,
                "slot conflict: no {len} contiguous free slots at or after slot {earliest_slot} within the booking window"
            ),
            SlotError::BadLength { len, horizon } => write!(
                f,
                "a booking of {len} slots is not possible: book between 1 and {horizon} slots"
            ),
            SlotError::OutsideWindow { slot } => {
                write!(f, "slot {slot} is outside the booking window")
            }
            SlotError::WrongState { slot, state } => {
                write!(
                    f,
                    "slot {slot} is {state:?}, which does not allow this transition"
                )
            }
        }
    }
}

/// The slot book for a window of `H` slots.
#[derive(Debug, Clone)]
pub struct SlotBook<const H: usize> {
    now_slot: u32,
    state: [SlotState; H],
    owner: [Option<Modality>; H],
}

impl<const H: usize> Default for SlotBook<H> {
    fn default() -> Self {
        Self::new(0)
    }
}

impl<const H: usize> SlotBook<H> {
    /// An empty book whose window starts at `now_slot`.
    pub const fn new(now_slot: u32) -> Self {
        assert!(
            H > 0 && H <= u32::MAX as usize,
            "the window needs at least one slot"
        );
        Self {
            now_slot,
            state: [SlotState::Idle; H],
            owner: [None; H],
        }
    }

    /// The first slot of the window (the current slot).
    pub fn now_slot(&self) -> u32 {
        self.now_slot
    }

    fn index(&self, slot: u32) -> Result<usize, SlotError> {
        let offset = slot.wrapping_sub(self.now_slot);
        if (offset as usize) < H {
            Ok(slot as usize % H)
        } else {
            Err(SlotError::OutsideWindow { slot })
        }
    }

    /// The state of `slot` (outside the window: an error).
    pub fn state(&self, slot: u32) -> Result<SlotState, SlotError> {
        Ok(self.state[self.index(slot)?])
    }

    /// Who holds `slot`, if anyone.
    pub fn owner(&self, slot: u32) -> Result<Option<Modality>, SlotError> {
        Ok(self.owner[self.index(slot)?])
    }

    /// Books `len` contiguous idle slots, the first run that starts at or after
    /// `earliest_slot` (or the current slot, if later) and fits in the window.
    #[inline(never)]
    pub fn reserve(
        &mut self,
        modality: Modality,
        earliest_slot: u32,
        len: u32,
    ) -> Result<Reservation, SlotError> {
        let horizon = H as u32;
        if len == 0 || len > horizon {
            return Err(SlotError::BadLength { len, horizon });
        }
        let end = u64::from(self.now_slot) + u64::from(horizon);
        let mut start = earliest_slot.max(self.now_slot);
        'search: while u64::from(start) + u64::from(len) <= end {
            for k in 0..len {
                let s = start + k;
                if self.state[s as usize % H] != SlotState::Idle {
                    start = s + 1;
                    continue 'search;
                }
            }
            for s in start..start + len {
                self.state[s as usize % H] = SlotState::Reserved;
                self.owner[s as usize % H] = Some(modality);
            }
            return Ok(Reservation {
                start_slot: start,
                len,
                modality,
            });
        }
        Err(SlotError::Conflict { earliest_slot, len })
    }

    /// RESERVED → ACTIVE: the slot's time has come and the scheduler fires it.
    pub fn activate(&mut self, slot: u32) -> Result<(), SlotError> {
        let i = self.index(slot)?;
        match self.state[i] {
            SlotState::Reserved => {
                self.state[i] = SlotState::Active;
                Ok(())
            }
            state => Err(SlotError::WrongState { slot, state }),
        }
    }

    /// RESERVED or ACTIVE → IDLE for every slot of `reservation` still in the window
    /// (release before running, or completion).
    pub fn release(&mut self, reservation: &Reservation) -> Result<(), SlotError> {
        for s in reservation.start_slot..reservation.start_slot.saturating_add(reservation.len) {
            if let Ok(i) = self.index(s) {
                if self.state[i] == SlotState::Idle {
                    return Err(SlotError::WrongState {
                        slot: s,
                        state: SlotState::Idle,
                    });
                }
                self.state[i] = SlotState::Idle;
                self.owner[i] = None;
            }
        }
        Ok(())
    }

    /// Moves the window to start at `now_slot`: slots that fall behind are done and become
    /// idle (for reuse by the ring). Returns how many of them were still only RESERVED,
    /// i.e. booked but never fired — a missed slot. Moving backwards does nothing.
    pub fn advance_to(&mut self, now_slot: u32) -> u32 {
        let mut missed = 0;
        let steps = now_slot.saturating_sub(self.now_slot).min(H as u32);
        for s in self.now_slot..self.now_slot + steps {
            let i = s as usize % H;
            if self.state[i] == SlotState::Reserved {
                missed += 1;
            }
            self.state[i] = SlotState::Idle;
            self.owner[i] = None;
        }
        self.now_slot = self.now_slot.max(now_slot);
        missed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_fit_state_machine_and_conflict() {
        let mut b = SlotBook::<8>::new(100);
        let a = b.reserve(Modality::Audio, 100, 2).unwrap();
        assert_eq!(a.start_slot, 100);
        let i = b.reserve(Modality::Imu, 101, 1).unwrap();
        assert_eq!(i.start_slot, 102, "first free slot at or after 101");
        let c = b.reserve(Modality::Image, 0, 3).unwrap();
        assert_eq!(c.start_slot, 103, "a start in the past means now");
        assert_eq!(
            b.reserve(Modality::Text, 100, 3),
            Err(SlotError::Conflict {
                earliest_slot: 100,
                len: 3
            })
        );
        assert_eq!(b.state(100), Ok(SlotState::Reserved));
        b.activate(100).unwrap();
        assert_eq!(b.state(100), Ok(SlotState::Active));
        assert!(matches!(b.activate(100), Err(SlotError::WrongState { .. })));
        b.release(&a).unwrap();
        assert_eq!(b.state(100), Ok(SlotState::Idle));
        assert_eq!(b.state(101), Ok(SlotState::Idle));
        assert_eq!(b.owner(102), Ok(Some(Modality::Imu)));
        assert_eq!(b.reserve(Modality::Text, 100, 2).unwrap().start_slot, 100);
    }

    #[test]
    fn window_slides_and_counts_missed_slots() {
        let mut b = SlotBook::<4>::new(0);
        b.reserve(Modality::Audio, 0, 2).unwrap();
        b.activate(0).unwrap();
        assert_eq!(b.advance_to(2), 1, "slot 1 was booked but never fired");
        assert!(matches!(b.state(0), Err(SlotError::OutsideWindow { .. })));
        // The ring reuses indices 0 and 1 for slots 4 and 5.
        assert_eq!(b.reserve(Modality::Audio, 2, 4).unwrap().start_slot, 2);
        assert_eq!(
            b.reserve(Modality::Audio, 0, 5),
            Err(SlotError::BadLength { len: 5, horizon: 4 })
        );
        assert!(matches!(
            b.reserve(Modality::Audio, 0, 0),
            Err(SlotError::BadLength { .. })
        ));
    }
}
