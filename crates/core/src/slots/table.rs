//! The slot table itself: the ring of slots, the reservation records and the transitions.

use alloc::vec;
use alloc::vec::Vec;

use super::error::{Blocker, SlotConflict, SlotError, Transition};
use super::standing::StandingEntry;
use super::tree::{FREE, FreeRunTree, MAX_OWNER};
use super::{
    HorizonEvent, Reservation, ReservationId, SlotId, SlotState, SlotTableConfig, StandingId,
};
use crate::Modality;
use crate::time::{NANOS_PER_MICRO, Nanos};

/// End of the free-record chain.
const NO_ENTRY: u32 = u32::MAX;

/// One reservation record; records are preallocated and recycled through a free chain.
#[derive(Debug, Clone, Copy)]
pub(super) struct Entry {
    pub(super) generation: u32,
    pub(super) live: bool,
    pub(super) active: bool,
    pub(super) modality: Modality,
    pub(super) start: SlotId,
    pub(super) len: u32,
    pub(super) standing: Option<StandingId>,
    next_free: u32,
}

/// The S1 slot table: a rolling horizon of equal slots with reservations on it.
///
/// Slot `s` lives at position `s mod horizon_slots` of a ring, so rolling the horizon
/// forward only frees the positions behind the base; nothing is copied. See the module
/// docs for the state machine.
#[derive(Debug, Clone)]
pub struct SlotTable {
    pub(super) tree: FreeRunTree,
    pub(super) horizon: u32,
    pub(super) base: SlotId,
    /// Position of `base` in the ring (`base % horizon`), kept so that locating a slot is
    /// a subtraction, not a 64-bit division.
    base_phys: u32,
    slot_len_micros: u64,
    pub(super) entries: Vec<Entry>,
    free_head: u32,
    live: u32,
    pub(super) standing: Vec<StandingEntry>,
}

impl SlotTable {
    /// A table whose horizon starts at slot `base_slot`, every slot IDLE.
    pub fn new(config: SlotTableConfig, base_slot: SlotId) -> Result<Self, SlotError> {
        let bad = |field, reason| Err(SlotError::InvalidConfig { field, reason });
        if config.slot_len_micros == 0 || config.slot_len_micros > u64::MAX / NANOS_PER_MICRO {
            return bad(
                "slot_len_micros",
                "must be at least 1 µs (and fit in u64 nanoseconds)",
            );
        }
        if config.horizon_slots == 0 || config.horizon_slots > SlotTableConfig::MAX_HORIZON_SLOTS {
            return bad("horizon_slots", "must be from 1 to 2^26");
        }
        if config.max_reservations == 0
            || config.max_reservations > SlotTableConfig::MAX_RESERVATIONS
        {
            return bad("max_reservations", "must be from 1 to 2^28");
        }
        if config.max_standing > SlotTableConfig::MAX_STANDING {
            return bad("max_standing", "must be at most 2^16");
        }
        if base_slot
            .checked_add(u64::from(config.horizon_slots))
            .is_none()
        {
            return bad("base_slot", "the horizon must end before slot 2^64");
        }
        debug_assert!(config.max_reservations < MAX_OWNER);
        let mut entries = vec![
            Entry {
                generation: 0,
                live: false,
                active: false,
                modality: Modality::Log,
                start: 0,
                len: 0,
                standing: None,
                next_free: NO_ENTRY,
            };
            config.max_reservations as usize
        ];
        for (i, e) in entries.iter_mut().enumerate() {
            e.next_free = if i + 1 < config.max_reservations as usize {
                i as u32 + 1
            } else {
                NO_ENTRY
            };
        }
        Ok(SlotTable {
            tree: FreeRunTree::new(config.horizon_slots),
            horizon: config.horizon_slots,
            base: base_slot,
            base_phys: (base_slot % u64::from(config.horizon_slots)) as u32,
            slot_len_micros: config.slot_len_micros,
            entries,
            free_head: 0,
            live: 0,
            standing: vec![StandingEntry::EMPTY; config.max_standing as usize],
        })
    }

    /// First slot of the horizon.
    pub fn base_slot(&self) -> SlotId {
        self.base
    }

    /// First slot past the horizon.
    pub fn end_slot(&self) -> SlotId {
        self.base + u64::from(self.horizon)
    }

    /// Slots in the horizon.
    pub fn horizon_slots(&self) -> u32 {
        self.horizon
    }

    /// Length of one slot in microseconds.
    pub fn slot_len_micros(&self) -> u64 {
        self.slot_len_micros
    }

    /// The slot containing device time `at_nanos`.
    pub fn slot_at(&self, at_nanos: Nanos) -> SlotId {
        at_nanos / (self.slot_len_micros * NANOS_PER_MICRO)
    }

    /// Device time at which `slot` starts (saturating at the end of the timeline).
    pub fn slot_start_nanos(&self, slot: SlotId) -> Nanos {
        slot.saturating_mul(self.slot_len_micros * NANOS_PER_MICRO)
    }

    /// Live (RESERVED or ACTIVE) reservations.
    pub fn live_reservations(&self) -> u32 {
        self.live
    }

    /// Live reservations the table can hold.
    pub fn capacity(&self) -> u32 {
        self.entries.len() as u32
    }

    /// Books `len_slots` contiguous IDLE slots for `modality` at the first place they fit
    /// at or after `earliest_start` (a start before the horizon means "as soon as
    /// possible"). O(log horizon + len_slots / 64).
    pub fn reserve(
        &mut self,
        modality: Modality,
        earliest_start: SlotId,
        len_slots: u32,
    ) -> Result<Reservation, SlotError> {
        self.check_len(len_slots)?;
        let from = earliest_start.max(self.base);
        self.check_inside(from)?;
        match self.first_fit(from, len_slots) {
            Some(start) => {
                self.check_room()?;
                Ok(self.book(modality, start, len_slots, None))
            }
            None => Err(self.conflict(modality, from, len_slots, self.base)),
        }
    }

    /// Books exactly the slots `start_slot..start_slot + len_slots` for `modality`, or
    /// fails with a conflict naming what is in the way and the first fit after
    /// `start_slot`. O(log horizon + len_slots / 64).
    pub fn reserve_at(
        &mut self,
        modality: Modality,
        start_slot: SlotId,
        len_slots: u32,
    ) -> Result<Reservation, SlotError> {
        self.reserve_exact(modality, start_slot, len_slots, None)
    }

    pub(super) fn reserve_exact(
        &mut self,
        modality: Modality,
        start_slot: SlotId,
        len_slots: u32,
        standing: Option<StandingId>,
    ) -> Result<Reservation, SlotError> {
        self.check_len(len_slots)?;
        self.check_inside(start_slot)?;
        let fits_horizon = start_slot + u64::from(len_slots) <= self.end_slot();
        if fits_horizon && self.first_taken(start_slot, len_slots).is_none() {
            self.check_room()?;
            Ok(self.book(modality, start_slot, len_slots, standing))
        } else {
            Err(self.conflict(modality, start_slot, len_slots, start_slot))
        }
    }

    /// Cancels a booking that has not started: RESERVED → IDLE. Returns the reservation
    /// as it now is (state IDLE).
    pub fn release(&mut self, id: ReservationId) -> Result<Reservation, SlotError> {
        self.end(id, Transition::Release)
    }

    /// Fires a reservation: RESERVED → ACTIVE. Activation before the start slot is
    /// allowed (a work-conserving dispatcher may start early); the slots stay booked.
    pub fn activate(&mut self, id: ReservationId) -> Result<Reservation, SlotError> {
        let index = self.live_index(id)?;
        let e = &mut self.entries[index as usize];
        if e.active {
            return Err(SlotError::IllegalTransition {
                id,
                state: SlotState::Active,
                action: Transition::Activate,
            });
        }
        e.active = true;
        Ok(self.view(index))
    }

    /// Ends the work of an ACTIVE reservation: ACTIVE → IDLE. Returns the reservation as
    /// it now is (state IDLE).
    pub fn complete(&mut self, id: ReservationId) -> Result<Reservation, SlotError> {
        self.end(id, Transition::Complete)
    }

    /// The state of `slot`, which must be inside the horizon. O(1 + d / 64) for a slot `d`
    /// slots past the start of its reservation.
    pub fn state(&self, slot: SlotId) -> Result<SlotState, SlotError> {
        Ok(self.occupant(slot)?.map_or(SlotState::Idle, |r| r.state))
    }

    /// The reservation holding `slot` (inside the horizon), if any. O(1 + d / 64) for a
    /// slot `d` slots past the start of its reservation.
    pub fn occupant(&self, slot: SlotId) -> Result<Option<Reservation>, SlotError> {
        self.check_inside(slot)?;
        let owner = self.tree.owner_at(self.phys(slot));
        Ok((owner != FREE).then(|| self.view(owner)))
    }

    /// The first booking holding a slot of `from..from + len` (clipped to the horizon),
    /// if any; `from` must be inside the horizon. O(log horizon + len / 64).
    pub fn next_booking(&self, from: SlotId, len: u32) -> Result<Option<Reservation>, SlotError> {
        self.check_inside(from)?;
        match self.first_taken(from, len) {
            Some(slot) => self.occupant(slot),
            None => Ok(None),
        }
    }

    /// A live reservation by id.
    pub fn reservation(&self, id: ReservationId) -> Result<Reservation, SlotError> {
        Ok(self.view(self.live_index(id)?))
    }

    /// Moves the base of the horizon forward to `slot` (a slot at or before the base is a
    /// no-op: time never goes back), retiring the slots before it, then books the
    /// occurrences of standing reservations that entered the horizon.
    ///
    /// Retiring, reported through `on_event`:
    /// - a RESERVED reservation starting before `slot` was never fired: it **expires**
    ///   ([`HorizonEvent::Expired`]) and all its slots, including future ones, are freed;
    /// - an ACTIVE reservation ending at or before `slot` **overran** its booking
    ///   ([`HorizonEvent::Overran`]) and is ended;
    /// - an ACTIVE reservation that reaches past `slot` keeps running and keeps its slots
    ///   from `slot` on (its `start_slot` becomes `slot`); nothing is reported.
    ///
    /// Cost: O((k + 1) · log horizon + s / 64) for k reservations touched and s slots
    /// freed (the whole table, once, when the jump is at least a horizon long).
    pub fn advance_to(&mut self, slot: SlotId, mut on_event: impl FnMut(HorizonEvent)) {
        if slot <= self.base {
            return;
        }
        let slot = slot.min(u64::MAX - u64::from(self.horizon));
        if slot - self.base >= u64::from(self.horizon) {
            for index in 0..self.entries.len() as u32 {
                if self.entries[index as usize].live {
                    let e = self.entries[index as usize];
                    let event = if e.active {
                        HorizonEvent::Overran(self.view(index))
                    } else {
                        HorizonEvent::Expired(self.view(index))
                    };
                    self.remove(index);
                    on_event(event);
                }
            }
            self.tree.reset();
        } else {
            let mut from = self.base;
            while let Some(taken) = self.first_taken(from, (slot - from) as u32) {
                let index = self.tree.owner_at(self.phys(taken));
                let e = self.entries[index as usize];
                let end = e.start + u64::from(e.len);
                if e.active && end > slot {
                    self.assign(e.start, (slot - e.start) as u32, FREE);
                    let e = &mut self.entries[index as usize];
                    e.len = (end - slot) as u32;
                    e.start = slot;
                } else {
                    let event = if e.active {
                        HorizonEvent::Overran(self.view(index))
                    } else {
                        HorizonEvent::Expired(self.view(index))
                    };
                    self.assign(e.start, e.len, FREE);
                    self.remove(index);
                    on_event(event);
                }
                if end >= slot {
                    break;
                }
                from = end;
            }
        }
        self.base = slot;
        self.base_phys = (slot % u64::from(self.horizon)) as u32;
        self.renew_standing(&mut on_event);
    }

    // ---- internals -------------------------------------------------------------------

    fn check_len(&self, len_slots: u32) -> Result<(), SlotError> {
        if len_slots == 0 {
            return Err(SlotError::ZeroLength);
        }
        if len_slots > self.horizon {
            return Err(SlotError::LongerThanHorizon {
                len_slots,
                horizon_slots: self.horizon,
            });
        }
        Ok(())
    }

    pub(super) fn check_inside(&self, slot: SlotId) -> Result<(), SlotError> {
        if slot < self.base || slot >= self.end_slot() {
            return Err(SlotError::OutsideHorizon {
                slot,
                base_slot: self.base,
                end_slot: self.end_slot(),
            });
        }
        Ok(())
    }

    fn check_room(&self) -> Result<(), SlotError> {
        if self.free_head == NO_ENTRY {
            return Err(SlotError::TooManyReservations {
                capacity: self.capacity(),
            });
        }
        Ok(())
    }

    /// Position of `slot` (inside the horizon) in the ring.
    #[inline]
    pub(super) fn phys(&self, slot: SlotId) -> u32 {
        debug_assert!(slot >= self.base && slot - self.base < u64::from(self.horizon));
        let p = u64::from(self.base_phys) + (slot - self.base);
        let h = u64::from(self.horizon);
        (if p >= h { p - h } else { p }) as u32
    }

    /// Gives slots `start..start + len` (inside the horizon) to `owner` in the tree.
    fn assign(&mut self, start: SlotId, len: u32, owner: u32) {
        let p = self.phys(start);
        let room = self.horizon - p;
        if len <= room {
            self.tree.assign(p, p + len, owner);
        } else {
            self.tree.assign(p, self.horizon, owner);
            self.tree.assign(0, len - room, owner);
        }
    }

    /// The first taken slot of `start..start + len` (clipped to the horizon).
    pub(super) fn first_taken(&self, start: SlotId, len: u32) -> Option<SlotId> {
        let len = len.min((self.end_slot() - start) as u32);
        let p = self.phys(start);
        let room = self.horizon - p;
        if len <= room {
            return self
                .tree
                .first_taken(p, p + len)
                .map(|x| start + u64::from(x - p));
        }
        if let Some(x) = self.tree.first_taken(p, self.horizon) {
            return Some(start + u64::from(x - p));
        }
        self.tree
            .first_taken(0, len - room)
            .map(|x| start + u64::from(room) + u64::from(x))
    }

    /// The first start at or after `from` (inside the horizon) of `len` free slots that
    /// end inside the horizon. O(log horizon).
    pub(super) fn first_fit(&self, from: SlotId, len: u32) -> Option<SlotId> {
        let h = self.horizon;
        let b = self.base_phys;
        let d = (from - self.base) as u32;
        let mut run = 0;
        if d < h - b {
            // `from` lies in the ring part [b, h); the horizon continues at [0, b).
            let lo = b + d;
            if let Some(x) = self.tree.first_fit(lo, h, len, &mut run) {
                return Some(from.wrapping_add_signed(x - i64::from(lo)));
            }
            let wrap_slot = self.base + u64::from(h - b);
            self.tree
                .first_fit(0, b, len, &mut run)
                .map(|x| wrap_slot.wrapping_add_signed(x))
        } else {
            let lo = d - (h - b);
            self.tree
                .first_fit(lo, b, len, &mut run)
                .map(|x| from.wrapping_add_signed(x - i64::from(lo)))
        }
    }

    fn conflict(
        &self,
        modality: Modality,
        start_slot: SlotId,
        len_slots: u32,
        fit_from: SlotId,
    ) -> SlotError {
        let blocker = self.first_taken(start_slot, len_slots).map(|slot| {
            let index = self.tree.owner_at(self.phys(slot));
            let r = self.view(index);
            Blocker {
                slot,
                reservation: r.id,
                modality: r.modality,
                state: r.state,
            }
        });
        SlotError::Conflict(SlotConflict {
            modality,
            start_slot,
            len_slots,
            blocker,
            fit_slot: self.first_fit(fit_from, len_slots),
            horizon_end_slot: self.end_slot(),
        })
    }

    fn book(
        &mut self,
        modality: Modality,
        start: SlotId,
        len: u32,
        standing: Option<StandingId>,
    ) -> Reservation {
        let index = self.free_head;
        let e = &mut self.entries[index as usize];
        self.free_head = e.next_free;
        e.live = true;
        e.active = false;
        e.modality = modality;
        e.start = start;
        e.len = len;
        e.standing = standing;
        self.live += 1;
        self.assign(start, len, index);
        self.view(index)
    }

    /// Drops a record (its slots must already be freed) and invalidates its id.
    fn remove(&mut self, index: u32) {
        let e = &mut self.entries[index as usize];
        e.live = false;
        e.active = false;
        e.generation = e.generation.wrapping_add(1);
        e.next_free = self.free_head;
        self.free_head = index;
        self.live -= 1;
    }

    fn end(&mut self, id: ReservationId, action: Transition) -> Result<Reservation, SlotError> {
        let index = self.live_index(id)?;
        let e = self.entries[index as usize];
        let state = if e.active {
            SlotState::Active
        } else {
            SlotState::Reserved
        };
        if state != action.from_state() {
            return Err(SlotError::IllegalTransition { id, state, action });
        }
        let mut r = self.view(index);
        r.state = SlotState::Idle;
        self.assign(e.start, e.len, FREE);
        self.remove(index);
        Ok(r)
    }

    pub(super) fn live_index(&self, id: ReservationId) -> Result<u32, SlotError> {
        match self.entries.get(id.index as usize) {
            Some(e) if e.live && e.generation == id.generation => Ok(id.index),
            _ => Err(SlotError::NotLive(id)),
        }
    }

    pub(super) fn view(&self, index: u32) -> Reservation {
        let e = &self.entries[index as usize];
        Reservation {
            id: ReservationId {
                index,
                generation: e.generation,
            },
            modality: e.modality,
            start_slot: e.start,
            len_slots: e.len,
            state: if e.active {
                SlotState::Active
            } else {
                SlotState::Reserved
            },
            standing: e.standing,
        }
    }

    /// Frees a RESERVED occurrence found by its start (used when undoing standing
    /// reservations).
    pub(super) fn release_index(&mut self, index: u32) {
        let e = self.entries[index as usize];
        self.assign(e.start, e.len, FREE);
        self.remove(index);
    }
}
