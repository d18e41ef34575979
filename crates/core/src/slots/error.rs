//! What can go wrong with the slot table, each error saying what was in the way.

use core::fmt;

use super::{ReservationId, SlotId, SlotState, StandingId};
use crate::Modality;

/// An operation on a reservation, named in [`SlotError::IllegalTransition`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transition {
    /// RESERVED → ACTIVE ([`super::SlotTable::activate`]).
    Activate,
    /// ACTIVE → IDLE ([`super::SlotTable::complete`]).
    Complete,
    /// RESERVED → IDLE ([`super::SlotTable::release`]).
    Release,
}

impl Transition {
    /// The verb, as used in messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Transition::Activate => "activate",
            Transition::Complete => "complete",
            Transition::Release => "release",
        }
    }

    /// The only state this operation starts from.
    pub fn from_state(self) -> SlotState {
        match self {
            Transition::Activate | Transition::Release => SlotState::Reserved,
            Transition::Complete => SlotState::Active,
        }
    }
}

/// The reservation holding a slot that a request needed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Blocker {
    /// The first slot of the request that was taken.
    pub slot: SlotId,
    /// The reservation holding it.
    pub reservation: ReservationId,
    /// Its modality.
    pub modality: Modality,
    /// Whether it is RESERVED or ACTIVE.
    pub state: SlotState,
}

/// A request for contiguous slots that could not be met.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotConflict {
    /// The modality that asked.
    pub modality: Modality,
    /// The start that was asked for (exact for `reserve_at`, earliest for `reserve`).
    pub start_slot: SlotId,
    /// How many contiguous slots were asked for.
    pub len_slots: u32,
    /// What holds the first taken slot of `start_slot..start_slot + len_slots`; `None`
    /// when those slots are free but run past the end of the horizon.
    pub blocker: Option<Blocker>,
    /// Where `len_slots` free slots would fit: for `reserve_at`, the first fit at or after
    /// `start_slot`; for `reserve` (which already searched there), the first fit anywhere
    /// in the horizon, i.e. earlier than asked. `None` when nothing fits.
    pub fit_slot: Option<SlotId>,
    /// The first slot past the horizon at the time of the request.
    pub horizon_end_slot: SlotId,
}

impl fmt::Display for SlotConflict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "slot conflict: {} slots for {} at slot {}: ",
            self.len_slots, self.modality, self.start_slot
        )?;
        match self.blocker {
            Some(b) => write!(
                f,
                "slot {} is held by {} ({}, {})",
                b.slot, b.reservation, b.modality, b.state
            )?,
            None => write!(
                f,
                "the request runs past the horizon end (slot {})",
                self.horizon_end_slot
            )?,
        }
        match self.fit_slot {
            Some(s) => write!(f, "; {} free slots fit at slot {s}", self.len_slots),
            None => write!(
                f,
                "; no {} contiguous free slots before the horizon end (slot {}): release \
                 reservations or wait for the horizon to roll",
                self.len_slots, self.horizon_end_slot
            ),
        }
    }
}

/// Errors of the slot table.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SlotError {
    /// The requested slots are taken or out of reach.
    #[error("{0}")]
    Conflict(SlotConflict),
    /// The reservation was released, completed or expired (its slots are IDLE), or never
    /// existed.
    #[error(
        "{0} is not live: it was released, completed or expired (its slots are IDLE); \
         reserve again"
    )]
    NotLive(ReservationId),
    /// The operation does not start from the reservation's current state.
    #[error(
        "cannot {} {id}: it is {state}, and only a {} reservation can be {}d",
        action.as_str(), action.from_state(), action.as_str()
    )]
    IllegalTransition {
        /// The reservation.
        id: ReservationId,
        /// Its current state.
        state: SlotState,
        /// The refused operation.
        action: Transition,
    },
    /// A slot outside the current horizon `base_slot..end_slot`.
    #[error(
        "slot {slot} is outside the horizon (slots {base_slot}..{end_slot}): ask for a slot \
         inside it, or advance the table first"
    )]
    OutsideHorizon {
        /// The slot asked about.
        slot: SlotId,
        /// First slot of the horizon.
        base_slot: SlotId,
        /// First slot past the horizon.
        end_slot: SlotId,
    },
    /// A reservation of zero slots.
    #[error("a reservation needs at least 1 slot, got 0")]
    ZeroLength,
    /// A reservation longer than the whole horizon.
    #[error(
        "{len_slots} slots do not fit in a horizon of {horizon_slots} slots: use a longer \
         horizon (slots.horizon_slots) or split the work"
    )]
    LongerThanHorizon {
        /// Slots asked for.
        len_slots: u32,
        /// Slots in the horizon.
        horizon_slots: u32,
    },
    /// Every reservation record is in use.
    #[error(
        "all {capacity} reservation records are in use: release or complete some, or build \
         the table with a larger max_reservations"
    )]
    TooManyReservations {
        /// The table's capacity.
        capacity: u32,
    },
    /// A standing reservation whose period is shorter than its length or zero.
    #[error(
        "a standing reservation needs 1 ≤ len_slots ≤ period_slots, got len_slots \
         {len_slots} and period_slots {period_slots}"
    )]
    InvalidPeriod {
        /// The period asked for.
        period_slots: u64,
        /// The occurrence length asked for.
        len_slots: u32,
    },
    /// Every standing-reservation record is in use.
    #[error(
        "all {capacity} standing reservations are in use: cancel one, or build the table \
         with a larger max_standing"
    )]
    TooManyStanding {
        /// The table's capacity.
        capacity: u32,
    },
    /// The standing reservation was cancelled or never existed.
    #[error("{0} is not live: it was cancelled")]
    UnknownStanding(StandingId),
    /// The table cannot be built with these settings.
    #[error("invalid slot table setting {field}: {reason}")]
    InvalidConfig {
        /// The setting.
        field: &'static str,
        /// What is allowed.
        reason: &'static str,
    },
}
