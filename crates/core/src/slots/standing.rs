//! Standing (periodic) reservations for streaming modalities: every `period_slots` slots,
//! `len_slots` slots, renewed as the horizon rolls.
//!
//! Occurrence k always starts at exactly `first_start_slot + k · period_slots`: an
//! occurrence is booked at that exact place or skipped (reported), never shifted, so a
//! stream's slots never drift against the timeline.

use super::error::SlotError;
use super::table::SlotTable;
use super::{HorizonEvent, SlotId, StandingId};
use crate::Modality;

/// One standing-reservation record.
#[derive(Debug, Clone, Copy)]
pub(super) struct StandingEntry {
    generation: u32,
    live: bool,
    modality: Modality,
    first: SlotId,
    period: u64,
    len: u32,
    /// Index of the next occurrence not yet booked (or skipped).
    next_k: u64,
}

impl StandingEntry {
    pub(super) const EMPTY: StandingEntry = StandingEntry {
        generation: 0,
        live: false,
        modality: Modality::Log,
        first: 0,
        period: 1,
        len: 1,
        next_k: 0,
    };

    /// Start of occurrence `k`, if it is on the timeline.
    fn start_of(&self, k: u64) -> Option<SlotId> {
        k.checked_mul(self.period)
            .and_then(|o| self.first.checked_add(o))
    }
}

/// A snapshot of one standing reservation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StandingReservation {
    /// Its id.
    pub id: StandingId,
    /// The modality of every occurrence.
    pub modality: Modality,
    /// Start of occurrence 0.
    pub first_start_slot: SlotId,
    /// Slots from one occurrence's start to the next one's.
    pub period_slots: u64,
    /// Slots per occurrence.
    pub len_slots: u32,
    /// Start of the next occurrence not yet booked (it lies past the horizon).
    pub next_start_slot: Option<SlotId>,
}

impl SlotTable {
    /// Books `len_slots` slots every `period_slots` slots for `modality`, occurrence k at
    /// exactly `first_start_slot + k · period_slots`. The occurrences inside the horizon
    /// are booked now, all or none (a conflict names what is in the way of the first one
    /// that does not fit); later ones are booked by [`SlotTable::advance_to`] as they
    /// enter the horizon, and an occurrence whose slots are taken then is skipped and
    /// reported, never moved.
    pub fn reserve_periodic(
        &mut self,
        modality: Modality,
        first_start_slot: SlotId,
        period_slots: u64,
        len_slots: u32,
    ) -> Result<StandingId, SlotError> {
        if len_slots == 0 || period_slots < u64::from(len_slots) {
            return Err(SlotError::InvalidPeriod {
                period_slots,
                len_slots,
            });
        }
        if len_slots > self.horizon {
            return Err(SlotError::LongerThanHorizon {
                len_slots,
                horizon_slots: self.horizon,
            });
        }
        if first_start_slot < self.base {
            self.check_inside(first_start_slot)?;
        }
        let Some(index) = self.standing.iter().position(|s| !s.live) else {
            return Err(SlotError::TooManyStanding {
                capacity: self.standing.len() as u32,
            });
        };
        let id = StandingId {
            index: index as u32,
            generation: self.standing[index].generation,
        };
        let mut entry = StandingEntry {
            generation: id.generation,
            live: true,
            modality,
            first: first_start_slot,
            period: period_slots,
            len: len_slots,
            next_k: 0,
        };
        while let Some(start) = entry.start_of(entry.next_k) {
            if start.saturating_add(u64::from(len_slots)) > self.end_slot() {
                break;
            }
            if let Err(e) = self.reserve_exact(modality, start, len_slots, Some(id)) {
                self.release_occurrences(&entry, id);
                return Err(e);
            }
            entry.next_k += 1;
        }
        self.standing[index] = entry;
        Ok(id)
    }

    /// Stops renewing a standing reservation and releases its RESERVED occurrences; an
    /// ACTIVE occurrence keeps running until completed.
    pub fn cancel_standing(&mut self, id: StandingId) -> Result<(), SlotError> {
        let entry = self.standing_entry(id)?;
        self.release_occurrences(&entry, id);
        let s = &mut self.standing[id.index as usize];
        s.live = false;
        s.generation = s.generation.wrapping_add(1);
        Ok(())
    }

    /// A live standing reservation by id.
    pub fn standing(&self, id: StandingId) -> Result<StandingReservation, SlotError> {
        let e = self.standing_entry(id)?;
        Ok(StandingReservation {
            id,
            modality: e.modality,
            first_start_slot: e.first,
            period_slots: e.period,
            len_slots: e.len,
            next_start_slot: e.start_of(e.next_k),
        })
    }

    fn standing_entry(&self, id: StandingId) -> Result<StandingEntry, SlotError> {
        match self.standing.get(id.index as usize) {
            Some(s) if s.live && s.generation == id.generation => Ok(*s),
            _ => Err(SlotError::UnknownStanding(id)),
        }
    }

    /// Releases the RESERVED occurrences of `entry` still in the horizon, newest first.
    fn release_occurrences(&mut self, entry: &StandingEntry, id: StandingId) {
        let mut k = entry.next_k;
        while k > 0 {
            k -= 1;
            let Some(start) = entry.start_of(k) else {
                continue;
            };
            if start < self.base {
                break;
            }
            if let Ok(Some(r)) = self.occupant(start)
                && r.standing == Some(id)
                && r.start_slot == start
                && r.state != super::SlotState::Active
                && let Ok(index) = self.live_index(r.id)
            {
                self.release_index(index);
            }
        }
    }

    /// Books the occurrences that entered the horizon, reporting the ones that cannot be.
    pub(super) fn renew_standing(&mut self, on_event: &mut impl FnMut(HorizonEvent)) {
        for index in 0..self.standing.len() {
            let mut entry = self.standing[index];
            if !entry.live {
                continue;
            }
            let id = StandingId {
                index: index as u32,
                generation: entry.generation,
            };
            while let Some(start) = entry.start_of(entry.next_k) {
                if start.saturating_add(u64::from(entry.len)) > self.end_slot() {
                    break;
                }
                if start < self.base {
                    // The horizon jumped past these occurrences: skip them in one step.
                    let behind = self.base - entry.first;
                    let k_next = behind.div_ceil(entry.period);
                    on_event(HorizonEvent::OccurrencesSkipped {
                        standing: id,
                        start_slot: start,
                        count: k_next - entry.next_k,
                        blocker: None,
                    });
                    entry.next_k = k_next;
                    continue;
                }
                if let Err(e) = self.reserve_exact(entry.modality, start, entry.len, Some(id)) {
                    let blocker = match e {
                        SlotError::Conflict(c) => c.blocker,
                        _ => None,
                    };
                    on_event(HorizonEvent::OccurrencesSkipped {
                        standing: id,
                        start_slot: start,
                        count: 1,
                        blocker,
                    });
                }
                entry.next_k += 1;
            }
            self.standing[index] = entry;
        }
    }
}
