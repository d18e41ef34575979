//! Unit tests of the slot table: the state machine, conflicts, rolling, standing
//! reservations. Model-based property tests are in `tests/slots_props.rs`.

use super::*;
use crate::Modality::{Audio, Image, Text};

fn table(horizon: u32) -> SlotTable {
    SlotTable::new(
        SlotTableConfig {
            slot_len_micros: 1000,
            horizon_slots: horizon,
            max_reservations: horizon,
            max_standing: 4,
        },
        0,
    )
    .unwrap()
}

#[test]
fn reserve_takes_the_first_fit() {
    let mut t = table(16);
    let a = t.reserve(Image, 0, 4).unwrap();
    assert_eq!(
        (a.start_slot, a.len_slots, a.state),
        (0, 4, SlotState::Reserved)
    );
    let b = t.reserve(Audio, 2, 2).unwrap();
    assert_eq!(b.start_slot, 4);
    t.release(a.id).unwrap();
    let c = t.reserve(Text, 0, 3).unwrap();
    assert_eq!(c.start_slot, 0, "released slots are reusable");
    let d = t.reserve(Text, 0, 2).unwrap();
    assert_eq!(d.start_slot, 6, "slot 3 alone is too short; 4..6 taken");
    assert_eq!(t.state(3).unwrap(), SlotState::Idle);
    assert_eq!(t.state(4).unwrap(), SlotState::Reserved);
    assert_eq!(t.occupant(5).unwrap().unwrap().id, b.id);
}

#[test]
fn next_booking_finds_the_first_booking_within_the_span() {
    let mut t = table(16);
    let a = t.reserve_at(Image, 6, 2).unwrap();
    t.reserve_at(Text, 9, 2).unwrap();
    assert_eq!(t.next_booking(0, 6).unwrap(), None, "slots 0..6 are idle");
    assert_eq!(t.next_booking(0, 7).unwrap().map(|r| r.id), Some(a.id));
    assert_eq!(t.next_booking(7, 1).unwrap().map(|r| r.id), Some(a.id));
    assert_eq!(t.next_booking(8, 1).unwrap(), None);
    assert!(t.next_booking(16, 1).is_err(), "outside the horizon");
}

#[test]
fn state_machine_happy_path() {
    let mut t = table(8);
    let r = t.reserve(Audio, 1, 2).unwrap();
    assert_eq!(t.state(1).unwrap(), SlotState::Reserved);
    let r = t.activate(r.id).unwrap();
    assert_eq!(r.state, SlotState::Active);
    assert_eq!(t.state(2).unwrap(), SlotState::Active);
    let done = t.complete(r.id).unwrap();
    assert_eq!(done.state, SlotState::Idle);
    assert_eq!(t.state(1).unwrap(), SlotState::Idle);
    assert_eq!(t.live_reservations(), 0);
}

#[test]
fn activating_an_active_reservation_is_illegal() {
    let mut t = table(8);
    let r = t.reserve(Audio, 0, 1).unwrap();
    t.activate(r.id).unwrap();
    let e = t.activate(r.id).unwrap_err();
    assert_eq!(
        e,
        SlotError::IllegalTransition {
            id: r.id,
            state: SlotState::Active,
            action: Transition::Activate
        }
    );
    assert!(e.to_string().contains("it is ACTIVE"), "{e}");
}

#[test]
fn completing_a_reserved_reservation_is_illegal() {
    let mut t = table(8);
    let r = t.reserve(Audio, 0, 1).unwrap();
    let e = t.complete(r.id).unwrap_err();
    assert_eq!(
        e,
        SlotError::IllegalTransition {
            id: r.id,
            state: SlotState::Reserved,
            action: Transition::Complete
        }
    );
    assert!(e.to_string().contains("only a ACTIVE") || e.to_string().contains("ACTIVE"));
    assert_eq!(t.state(0).unwrap(), SlotState::Reserved, "nothing changed");
}

#[test]
fn releasing_an_active_reservation_is_illegal() {
    let mut t = table(8);
    let r = t.reserve(Audio, 0, 1).unwrap();
    t.activate(r.id).unwrap();
    let e = t.release(r.id).unwrap_err();
    assert_eq!(
        e,
        SlotError::IllegalTransition {
            id: r.id,
            state: SlotState::Active,
            action: Transition::Release
        }
    );
    assert_eq!(t.state(0).unwrap(), SlotState::Active);
}

#[test]
fn transitions_from_idle_are_illegal() {
    let mut t = table(8);
    let r = t.reserve(Audio, 0, 1).unwrap();
    t.release(r.id).unwrap();
    // The slots are IDLE again: IDLE → ACTIVE, IDLE → IDLE (twice) are refused.
    assert_eq!(t.activate(r.id), Err(SlotError::NotLive(r.id)));
    assert_eq!(t.release(r.id), Err(SlotError::NotLive(r.id)));
    assert_eq!(t.complete(r.id), Err(SlotError::NotLive(r.id)));
    // The record is recycled, but the old id stays dead.
    let again = t.reserve(Audio, 0, 1).unwrap();
    assert_ne!(again.id, r.id);
    assert_eq!(t.activate(r.id), Err(SlotError::NotLive(r.id)));
    assert!(t.activate(again.id).is_ok());
    let done = t.complete(again.id).unwrap();
    assert_eq!(t.complete(done.id), Err(SlotError::NotLive(done.id)));
}

#[test]
fn conflict_names_the_blocker_and_the_next_fit() {
    let mut t = table(16);
    let a = t.reserve(Image, 2, 3).unwrap(); // 2..5
    let e = t.reserve_at(Audio, 1, 3).unwrap_err();
    let SlotError::Conflict(c) = e.clone() else {
        panic!("{e}")
    };
    let b = c.blocker.unwrap();
    assert_eq!((b.slot, b.reservation, b.modality), (2, a.id, Image));
    assert_eq!(c.fit_slot, Some(5));
    let msg = e.to_string();
    assert!(msg.contains("slot 2 is held by reservation #"), "{msg}");
    assert!(msg.contains("image"), "{msg}");
    assert!(msg.contains("fit at slot 5"), "{msg}");
}

#[test]
fn failed_first_fit_reports_an_earlier_fit() {
    let mut t = table(8);
    t.reserve(Image, 4, 4).unwrap(); // 4..8
    let e = t.reserve(Audio, 3, 2).unwrap_err();
    let SlotError::Conflict(c) = e else { panic!() };
    assert_eq!(c.blocker.unwrap().slot, 4);
    assert_eq!(c.fit_slot, Some(0), "fits earlier than asked");
    let mut t = table(8);
    t.reserve(Image, 0, 8).unwrap();
    let SlotError::Conflict(c) = t.reserve(Audio, 0, 1).unwrap_err() else {
        panic!()
    };
    assert_eq!(c.fit_slot, None);
    assert!(
        SlotError::Conflict(c)
            .to_string()
            .contains("no 1 contiguous free slots")
    );
}

#[test]
fn requests_past_the_horizon_end() {
    let mut t = table(8);
    let SlotError::Conflict(c) = t.reserve_at(Text, 6, 3).unwrap_err() else {
        panic!()
    };
    assert_eq!(c.blocker, None);
    assert!(
        SlotError::Conflict(c)
            .to_string()
            .contains("past the horizon end")
    );
    assert!(matches!(
        t.reserve(Text, 8, 1),
        Err(SlotError::OutsideHorizon { slot: 8, .. })
    ));
    assert_eq!(t.reserve(Text, 0, 0), Err(SlotError::ZeroLength));
    assert!(matches!(
        t.reserve(Text, 0, 9),
        Err(SlotError::LongerThanHorizon { .. })
    ));
    assert!(matches!(t.state(9), Err(SlotError::OutsideHorizon { .. })));
}

#[test]
fn capacity_is_fixed_up_front() {
    let mut t = SlotTable::new(
        SlotTableConfig {
            slot_len_micros: 10,
            horizon_slots: 8,
            max_reservations: 2,
            max_standing: 0,
        },
        0,
    )
    .unwrap();
    t.reserve(Text, 0, 1).unwrap();
    t.reserve(Text, 0, 1).unwrap();
    assert_eq!(
        t.reserve(Text, 0, 1),
        Err(SlotError::TooManyReservations { capacity: 2 })
    );
    assert_eq!(
        t.reserve_periodic(Audio, 0, 4, 1),
        Err(SlotError::TooManyStanding { capacity: 0 })
    );
}

#[test]
fn invalid_config_is_refused() {
    let ok = SlotTableConfig {
        slot_len_micros: 10,
        horizon_slots: 8,
        max_reservations: 8,
        max_standing: 1,
    };
    for bad in [
        SlotTableConfig {
            slot_len_micros: 0,
            ..ok
        },
        SlotTableConfig {
            horizon_slots: 0,
            ..ok
        },
        SlotTableConfig {
            max_reservations: 0,
            ..ok
        },
    ] {
        assert!(matches!(
            SlotTable::new(bad, 0),
            Err(SlotError::InvalidConfig { .. })
        ));
    }
    let t = SlotTable::new(
        SlotTableConfig::from_policy(crate::policy::Policy::default().slots()),
        0,
    )
    .unwrap();
    assert_eq!(t.horizon_slots(), 65_536);
    assert_eq!(t.slot_at(2_500_000), 2, "1 ms slots");
    assert_eq!(t.slot_start_nanos(3), 3_000_000);
}

#[test]
fn rolling_expires_unfired_and_trims_active() {
    let mut t = table(8);
    let unfired = t.reserve(Image, 0, 2).unwrap(); // 0..2
    let running = t.reserve(Audio, 2, 4).unwrap(); // 2..6
    let overran = t.reserve(Text, 6, 1).unwrap(); // 6..7
    t.activate(running.id).unwrap();
    t.activate(overran.id).unwrap();
    let mut events = Vec::new();
    t.advance_to(4, |e| events.push(e));
    assert_eq!(events.len(), 1);
    assert!(matches!(events[0], HorizonEvent::Expired(r) if r.id == unfired.id));
    let r = t.reservation(running.id).unwrap();
    assert_eq!(
        (r.start_slot, r.len_slots, r.state),
        (4, 2, SlotState::Active)
    );
    assert_eq!(t.end_slot(), 12);
    // Slots 8..12 are new and free, although they share ring positions with 0..4.
    assert_eq!(t.reserve(Text, 8, 4).unwrap().start_slot, 8);
    events.clear();
    t.advance_to(6, |e| events.push(e));
    assert_eq!(events.len(), 1, "{events:?}");
    assert!(matches!(events[0], HorizonEvent::Overran(r) if r.id == running.id));
    assert_eq!(t.reservation(overran.id).unwrap().state, SlotState::Active);
    assert_eq!(t.complete(running.id), Err(SlotError::NotLive(running.id)));
    // Going back is a no-op.
    t.advance_to(3, |_| panic!("nothing retires"));
    assert_eq!(t.base_slot(), 6);
}

#[test]
fn reservations_may_wrap_around_the_ring() {
    let mut t = table(8);
    t.advance_to(5, |_| {});
    // Horizon 5..13 lives at ring positions 5,6,7,0,1,2,3,4.
    let r = t.reserve(Image, 6, 4).unwrap();
    assert_eq!((r.start_slot, r.end_slot()), (6, 10));
    let r2 = t.reserve(Audio, 5, 2).unwrap();
    assert_eq!(r2.start_slot, 10, "5 alone is too short");
    assert_eq!(t.state(9).unwrap(), SlotState::Reserved);
    assert_eq!(t.state(12).unwrap(), SlotState::Idle);
    t.release(r.id).unwrap();
    assert_eq!(t.reserve(Text, 5, 5).unwrap().start_slot, 5);
}

#[test]
fn a_long_jump_retires_everything() {
    let mut t = table(8);
    let a = t.reserve(Image, 0, 2).unwrap();
    let b = t.reserve(Image, 3, 2).unwrap();
    t.activate(b.id).unwrap();
    let mut events = Vec::new();
    t.advance_to(100, |e| events.push(e));
    assert_eq!(events.len(), 2);
    assert!(events.contains(&HorizonEvent::Expired(t_view(a))));
    assert_eq!(t.live_reservations(), 0);
    assert_eq!(t.reserve(Text, 0, 8).unwrap().start_slot, 100);
}

fn t_view(r: Reservation) -> Reservation {
    r
}

#[test]
fn standing_reservations_renew_without_drift() {
    let mut t = table(10);
    let s = t.reserve_periodic(Audio, 1, 4, 2).unwrap();
    // Occurrences 1..3, 5..7 fit in 0..10; 9..11 does not yet.
    assert_eq!(t.occupant(1).unwrap().unwrap().standing, Some(s));
    assert_eq!(t.occupant(5).unwrap().unwrap().start_slot, 5);
    assert_eq!(t.state(9).unwrap(), SlotState::Idle);
    assert_eq!(t.standing(s).unwrap().next_start_slot, Some(9));
    let mut events = Vec::new();
    t.advance_to(1, |e| events.push(e));
    let r = t.occupant(9).unwrap().unwrap();
    assert_eq!((r.start_slot, r.standing), (9, Some(s)));
    // Another stream whose occurrence 13 collides with occurrence 13..15 of the first:
    // the later booking is skipped, never shifted.
    let other = t.reserve_periodic(Image, 3, 10, 1).unwrap();
    t.advance_to(4, |e| events.push(e));
    let r13 = t.occupant(13).unwrap().unwrap();
    assert_eq!(r13.standing, Some(other));
    t.advance_to(5, |e| events.push(e));
    let skipped: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            HorizonEvent::OccurrencesSkipped {
                standing,
                start_slot,
                blocker,
                ..
            } => Some((*standing, *start_slot, blocker.map(|b| b.reservation))),
            _ => None,
        })
        .collect();
    assert_eq!(skipped, vec![(s, 13, Some(r13.id))]);
    t.advance_to(9, |e| events.push(e));
    assert_eq!(t.occupant(17).unwrap().unwrap().start_slot, 17);
    assert_eq!(t.occupant(17).unwrap().unwrap().standing, Some(s));
    t.cancel_standing(s).unwrap();
    assert_eq!(t.state(17).unwrap(), SlotState::Idle);
    assert_eq!(t.standing(s), Err(SlotError::UnknownStanding(s)));
    assert_eq!(t.cancel_standing(s), Err(SlotError::UnknownStanding(s)));
}

#[test]
fn standing_reservation_is_all_or_nothing() {
    let mut t = table(12);
    let a = t.reserve_at(Image, 8, 1).unwrap();
    let e = t.reserve_periodic(Audio, 0, 4, 2).unwrap_err();
    let SlotError::Conflict(c) = e else {
        panic!("{e}")
    };
    assert_eq!(c.blocker.unwrap().reservation, a.id);
    assert_eq!(
        t.live_reservations(),
        1,
        "the occurrences booked first were undone"
    );
    assert_eq!(
        t.reserve_periodic(Audio, 0, 1, 2),
        Err(SlotError::InvalidPeriod {
            period_slots: 1,
            len_slots: 2
        })
    );
}

#[test]
fn standing_skips_in_bulk_after_a_long_jump() {
    let mut t = table(8);
    let s = t.reserve_periodic(Audio, 0, 2, 1).unwrap();
    let mut events = Vec::new();
    t.advance_to(101, |e| events.push(e));
    let skipped: u64 = events
        .iter()
        .map(|e| match e {
            HorizonEvent::OccurrencesSkipped { count, .. } => *count,
            _ => 0,
        })
        .sum();
    // Occurrences 8, 10, …, 100 were never in the horizon.
    assert_eq!(skipped, 47);
    assert_eq!(t.occupant(102).unwrap().unwrap().standing, Some(s));
    assert_eq!(t.state(101).unwrap(), SlotState::Idle);
}
