//! The time-slot reservation layer (S1).
//!
//! Device time is cut into equal slots of `slot_len_micros` on one global timeline: slot
//! `s` covers `[s · len, (s + 1) · len)` and its id is the logical timestamp `s`. A
//! [`SlotTable`] holds a rolling horizon of `horizon_slots` slots starting at a base slot;
//! [`SlotTable::advance_to`] moves the base forward and retires the slots behind it.
//!
//! Every slot is in exactly one state:
//!
//! ```text
//!            reserve / reserve_at          activate               complete
//!   IDLE ───────────────────────────▶ RESERVED ─────────▶ ACTIVE ──────────▶ IDLE
//!     ▲                                   │
//!     └──────────── release ──────────────┘
//! ```
//!
//! Every other transition is refused with [`SlotError::IllegalTransition`] (or
//! [`SlotError::NotLive`] for a reservation whose slots are already IDLE). A reservation of
//! `n` slots moves through the states as one unit.
//!
//! Finding contiguous free slots is O(log N) in the horizon length: a bitmap of free
//! slots, with a segment tree over its 64-slot words that keeps, per node, the longest
//! free run and the free runs at both edges (see `tree.rs`). Booking and freeing `n`
//! slots is O(log N + n / 64). All memory is allocated when the table is built;
//! reserving, releasing and advancing never allocate.
//!
//! The modality of a reservation is recorded and reported (in conflicts, events and
//! queries); no timing decision ever depends on it.

mod error;
mod standing;
mod table;
mod tree;

pub use error::{Blocker, SlotConflict, SlotError, Transition};
pub use standing::StandingReservation;
pub use table::SlotTable;

use core::fmt;

use crate::Modality;
use crate::policy::SlotsPolicy;

/// A slot's logical timestamp: slot `s` starts at `s · slot_len_micros` on the device
/// timeline.
pub type SlotId = u64;

/// The state of one slot (and of the reservation holding it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SlotState {
    /// Free.
    Idle,
    /// Booked, not yet running.
    Reserved,
    /// Resources in use: the reservation was fired.
    Active,
}

impl SlotState {
    /// `IDLE`, `RESERVED` or `ACTIVE`.
    pub fn as_str(self) -> &'static str {
        match self {
            SlotState::Idle => "IDLE",
            SlotState::Reserved => "RESERVED",
            SlotState::Active => "ACTIVE",
        }
    }
}

impl fmt::Display for SlotState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Names one reservation. Ids are never reused for a different reservation: once a
/// reservation ends, its id is refused with [`SlotError::NotLive`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ReservationId {
    index: u32,
    generation: u32,
}

impl ReservationId {
    /// A number unique among the reservations of one table (for traces and logs).
    pub fn as_u64(self) -> u64 {
        (u64::from(self.generation) << 32) | u64::from(self.index)
    }
}

impl fmt::Display for ReservationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "reservation #{}.{}", self.index, self.generation)
    }
}

/// Names one standing (periodic) reservation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StandingId {
    index: u32,
    generation: u32,
}

impl fmt::Display for StandingId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "standing reservation #{}.{}",
            self.index, self.generation
        )
    }
}

/// A snapshot of one reservation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reservation {
    /// Its id.
    pub id: ReservationId,
    /// The modality it was booked for (recorded, never branched on).
    pub modality: Modality,
    /// Its first slot. An ACTIVE reservation overlapping the base when the horizon rolls
    /// is trimmed, so this can move forward.
    pub start_slot: SlotId,
    /// How many contiguous slots it holds.
    pub len_slots: u32,
    /// RESERVED or ACTIVE while live; IDLE in the value returned by `release` and
    /// `complete`.
    pub state: SlotState,
    /// The standing reservation it is an occurrence of, if any.
    pub standing: Option<StandingId>,
}

impl Reservation {
    /// The first slot after it.
    pub fn end_slot(&self) -> SlotId {
        self.start_slot + u64::from(self.len_slots)
    }
}

/// Something that happened to reservations while the horizon rolled forward
/// ([`SlotTable::advance_to`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HorizonEvent {
    /// A RESERVED reservation whose start slot passed without being activated: its slots
    /// are freed and its id is no longer live.
    Expired(Reservation),
    /// An ACTIVE reservation whose last slot passed before it was completed: the work
    /// overran its booking. Its slots are freed and its id is no longer live.
    Overran(Reservation),
    /// Occurrences of a standing reservation that could not be booked. Occurrences never
    /// move, so a taken occurrence is skipped rather than shifted.
    OccurrencesSkipped {
        /// The standing reservation.
        standing: StandingId,
        /// Start of the first skipped occurrence.
        start_slot: SlotId,
        /// How many consecutive occurrences were skipped (more than 1 only when the
        /// horizon jumped past them).
        count: u64,
        /// What held the slots, when that was the reason.
        blocker: Option<Blocker>,
    },
}

/// How to build a [`SlotTable`]. All memory is sized from this up front.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotTableConfig {
    /// Length of one slot in microseconds (≥ 1).
    pub slot_len_micros: u64,
    /// Slots in the rolling horizon, 1 ..= 2^26.
    pub horizon_slots: u32,
    /// Live reservations the table can hold at once, 1 ..= 2^28.
    pub max_reservations: u32,
    /// Standing reservations the table can hold at once, ≤ 2^16.
    pub max_standing: u32,
}

impl SlotTableConfig {
    /// Largest horizon a table accepts.
    pub const MAX_HORIZON_SLOTS: u32 = 1 << 26;
    /// Largest number of reservation records.
    pub const MAX_RESERVATIONS: u32 = 1 << 28;
    /// Largest number of standing-reservation records.
    pub const MAX_STANDING: u32 = 1 << 16;

    /// The settings of a policy's `[slots]` section, with room for
    /// `min(horizon_slots, 65 536)` live reservations and 64 standing ones.
    pub fn from_policy(slots: &SlotsPolicy) -> Self {
        let horizon_slots = u32::try_from(slots.horizon_slots).unwrap_or(u32::MAX);
        SlotTableConfig {
            slot_len_micros: slots.slot_len_micros,
            horizon_slots,
            max_reservations: horizon_slots.min(1 << 16),
            max_standing: 64,
        }
    }
}

#[cfg(test)]
mod tests;
