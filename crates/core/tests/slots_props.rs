//! Model-based property tests of the slot table: every operation is replayed on a naive
//! model (a list of reservations, scanned slot by slot) and the two must agree.
#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

use mmsched_core::Modality;
use mmsched_core::slots::{
    HorizonEvent, ReservationId, SlotError, SlotState, SlotTable, SlotTableConfig,
};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Reserve {
        offset: u64,
        len: u32,
        modality: usize,
    },
    ReserveAt {
        offset: u64,
        len: u32,
    },
    Release(usize),
    Activate(usize),
    Complete(usize),
    Stale(usize),
    Advance(u64),
}

fn op(horizon: u32) -> impl Strategy<Value = Op> {
    let h = u64::from(horizon);
    let max_len = (horizon / 2 + 1).max(1);
    prop_oneof![
        4 => (0..h + 2, 1..=max_len, 0..5usize)
            .prop_map(|(offset, len, modality)| Op::Reserve { offset, len, modality }),
        2 => (0..h + 2, 1..=max_len).prop_map(|(offset, len)| Op::ReserveAt { offset, len }),
        2 => any::<usize>().prop_map(Op::Release),
        2 => any::<usize>().prop_map(Op::Activate),
        1 => any::<usize>().prop_map(Op::Complete),
        1 => any::<usize>().prop_map(Op::Stale),
        1 => (0..h + 3).prop_map(Op::Advance),
    ]
}

#[derive(Debug, Clone, Copy)]
struct ModelRes {
    id: ReservationId,
    start: u64,
    len: u64,
    active: bool,
}

struct Model {
    base: u64,
    horizon: u64,
    live: Vec<ModelRes>,
    dead: Vec<ReservationId>,
}

impl Model {
    fn end(&self) -> u64 {
        self.base + self.horizon
    }
    fn holder(&self, slot: u64) -> Option<&ModelRes> {
        self.live
            .iter()
            .find(|r| r.start <= slot && slot < r.start + r.len)
    }
    fn free(&self, start: u64, len: u64) -> bool {
        start + len <= self.end() && (start..start + len).all(|s| self.holder(s).is_none())
    }
    /// The naive first fit: try every start in order.
    fn first_fit(&self, from: u64, len: u64) -> Option<u64> {
        (from..self.end()).find(|&s| self.free(s, len))
    }
    fn take(&mut self, id: ReservationId) -> ModelRes {
        let i = self.live.iter().position(|r| r.id == id).unwrap();
        self.dead.push(id);
        self.live.swap_remove(i)
    }
}

fn check_agree(t: &SlotTable, m: &Model) -> Result<(), TestCaseError> {
    prop_assert_eq!(t.base_slot(), m.base);
    prop_assert_eq!(t.live_reservations() as usize, m.live.len());
    // No two live reservations overlap (in the model they are kept disjoint by
    // construction; check it anyway, since the model is driven by the table's answers).
    for (i, a) in m.live.iter().enumerate() {
        for b in &m.live[i + 1..] {
            prop_assert!(a.start + a.len <= b.start || b.start + b.len <= a.start);
        }
    }
    // Every slot is in exactly the state the model says, held by the same reservation.
    for slot in m.base..m.end() {
        let want = m.holder(slot);
        let got = t.occupant(slot).unwrap();
        prop_assert_eq!(got.map(|r| r.id), want.map(|r| r.id), "slot {}", slot);
        let want_state = match want {
            None => SlotState::Idle,
            Some(r) if r.active => SlotState::Active,
            Some(_) => SlotState::Reserved,
        };
        prop_assert_eq!(t.state(slot).unwrap(), want_state, "slot {}", slot);
    }
    for r in &m.live {
        let got = t.reservation(r.id).unwrap();
        prop_assert_eq!((got.start_slot, u64::from(got.len_slots)), (r.start, r.len));
    }
    Ok(())
}

fn pick(m: &Model, i: usize) -> Option<ModelRes> {
    (!m.live.is_empty()).then(|| m.live[i % m.live.len()])
}

/// `Op::Reserve`: the first fit from `offset`, on both.
fn reserve(
    t: &mut SlotTable,
    m: &mut Model,
    horizon: u32,
    offset: u64,
    len: u32,
    modality: usize,
) -> Result<(), TestCaseError> {
    let len = len.min(horizon);
    let from = m.base + offset;
    let got = t.reserve(Modality::ALL[modality], from, len);
    if from >= m.end() {
        let outside = matches!(got, Err(SlotError::OutsideHorizon { .. }));
        prop_assert!(outside);
        return Ok(());
    }
    match (got, m.first_fit(from, u64::from(len))) {
        (Ok(r), Some(want)) => {
            prop_assert_eq!(r.start_slot, want, "reserve finds the first fit");
            prop_assert_eq!(r.modality, Modality::ALL[modality]);
            m.live.push(ModelRes {
                id: r.id,
                start: want,
                len: u64::from(len),
                active: false,
            });
        }
        (Err(SlotError::Conflict(c)), None) => {
            prop_assert_eq!(c.fit_slot, m.first_fit(m.base, u64::from(len)));
            let want_blocker = (from..(from + u64::from(len)).min(m.end()))
                .find_map(|s| m.holder(s).map(|r| (s, r.id)));
            prop_assert_eq!(c.blocker.map(|b| (b.slot, b.reservation)), want_blocker);
        }
        (got, want) => prop_assert!(false, "table {:?}, model {:?}", got, want),
    }
    Ok(())
}

/// `Op::ReserveAt`: exactly at `offset`, or the conflict, on both.
fn reserve_at(
    t: &mut SlotTable,
    m: &mut Model,
    horizon: u32,
    offset: u64,
    len: u32,
) -> Result<(), TestCaseError> {
    let len = len.min(horizon);
    let start = m.base + offset;
    let got = t.reserve_at(Modality::Text, start, len);
    if start >= m.end() {
        let outside = matches!(got, Err(SlotError::OutsideHorizon { .. }));
        prop_assert!(outside);
        return Ok(());
    }
    match got {
        Ok(r) => {
            prop_assert!(m.free(start, u64::from(len)));
            m.live.push(ModelRes {
                id: r.id,
                start,
                len: u64::from(len),
                active: false,
            });
        }
        Err(SlotError::Conflict(c)) => {
            prop_assert!(!m.free(start, u64::from(len)));
            prop_assert_eq!(c.fit_slot, m.first_fit(start, u64::from(len)));
        }
        Err(e) => prop_assert!(false, "{}", e),
    }
    Ok(())
}

/// `Op::Advance`: the horizon moves; what expired and what overran agree.
fn advance(t: &mut SlotTable, m: &mut Model, delta: u64) -> Result<(), TestCaseError> {
    let to = m.base + delta;
    let mut events = vec![];
    t.advance_to(to, |e| events.push(e));
    let mut expired = vec![];
    let mut overran = vec![];
    for r in m.live.clone() {
        if !r.active && r.start < to {
            expired.push(m.take(r.id).id);
        } else if r.active && r.start + r.len <= to {
            overran.push(m.take(r.id).id);
        } else if r.active && r.start < to {
            let x = m.live.iter_mut().find(|x| x.id == r.id).unwrap();
            x.len = r.start + r.len - to;
            x.start = to;
        }
    }
    m.base = m.base.max(to);
    let mut got_expired: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            HorizonEvent::Expired(r) => Some(r.id),
            _ => None,
        })
        .collect();
    let mut got_overran: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            HorizonEvent::Overran(r) => Some(r.id),
            _ => None,
        })
        .collect();
    expired.sort();
    overran.sort();
    got_expired.sort();
    got_overran.sort();
    prop_assert_eq!(got_expired, expired);
    prop_assert_eq!(got_overran, overran);
    Ok(())
}

/// Replays `ops` on a table and on the naive model, checking they agree after each one.
fn replay(horizon: u32, base: u64, ops: Vec<Op>) -> Result<(), TestCaseError> {
    let config = SlotTableConfig {
        slot_len_micros: 500,
        horizon_slots: horizon,
        max_reservations: horizon,
        max_standing: 0,
    };
    let mut t = SlotTable::new(config, base).unwrap();
    let mut m = Model {
        base,
        horizon: u64::from(horizon),
        live: vec![],
        dead: vec![],
    };
    for op in ops {
        match op {
            Op::Reserve {
                offset,
                len,
                modality,
            } => reserve(&mut t, &mut m, horizon, offset, len, modality)?,
            Op::ReserveAt { offset, len } => reserve_at(&mut t, &mut m, horizon, offset, len)?,
            Op::Release(i) => {
                if let Some(r) = pick(&m, i) {
                    let got = t.release(r.id);
                    if r.active {
                        let illegal = matches!(got, Err(SlotError::IllegalTransition { .. }));
                        prop_assert!(illegal);
                    } else {
                        prop_assert_eq!(got.unwrap().state, SlotState::Idle);
                        m.take(r.id);
                    }
                }
            }
            Op::Activate(i) => {
                if let Some(r) = pick(&m, i) {
                    let got = t.activate(r.id);
                    if r.active {
                        let illegal = matches!(got, Err(SlotError::IllegalTransition { .. }));
                        prop_assert!(illegal);
                    } else {
                        prop_assert_eq!(got.unwrap().state, SlotState::Active);
                        m.live.iter_mut().find(|x| x.id == r.id).unwrap().active = true;
                    }
                }
            }
            Op::Complete(i) => {
                if let Some(r) = pick(&m, i) {
                    let got = t.complete(r.id);
                    if r.active {
                        prop_assert!(got.is_ok());
                        m.take(r.id);
                    } else {
                        let illegal = matches!(got, Err(SlotError::IllegalTransition { .. }));
                        prop_assert!(illegal);
                    }
                }
            }
            Op::Stale(i) => {
                if !m.dead.is_empty() {
                    let id = m.dead[i % m.dead.len()];
                    prop_assert_eq!(t.activate(id), Err(SlotError::NotLive(id)));
                    prop_assert_eq!(t.release(id), Err(SlotError::NotLive(id)));
                    prop_assert_eq!(t.complete(id), Err(SlotError::NotLive(id)));
                }
            }
            Op::Advance(delta) => advance(&mut t, &mut m, delta)?,
        }
        check_agree(&t, &m)?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn table_agrees_with_a_naive_model(
        horizon in 1u32..64,
        base in 0u64..100,
        ops in prop::collection::vec(op(64), 1..120),
    ) {
        replay(horizon, base, ops)?;
    }

    /// Horizons spanning several 64-slot words, with runs crossing word boundaries.
    #[test]
    fn table_agrees_with_a_naive_model_on_longer_horizons(
        horizon in 64u32..400,
        base in 0u64..1000,
        ops in prop::collection::vec(op(400), 1..120),
    ) {
        replay(horizon, base, ops)?;
    }

    #[test]
    fn standing_reservations_never_drift(
        horizon in 4u32..40,
        streams in prop::collection::vec((0u64..30, 1u64..12, 1u32..4), 1..4),
        steps in prop::collection::vec((0u64..9, 0u64..40, 1u32..4), 1..40),
    ) {
        let config = SlotTableConfig {
            slot_len_micros: 1000,
            horizon_slots: horizon,
            max_reservations: horizon,
            max_standing: 4,
        };
        let mut t = SlotTable::new(config, 0).unwrap();
        let mut made = vec![];
        for (first, period, len) in streams {
            let len = len.min(horizon);
            let period = period.max(u64::from(len));
            if let Ok(id) = t.reserve_periodic(Modality::Audio, first, period, len) {
                made.push((id, first, period, len));
            }
        }
        let mut skipped = std::collections::HashSet::new();
        for (advance, offset, len) in steps {
            let to = t.base_slot() + advance;
            t.advance_to(to, |e| {
                if let HorizonEvent::OccurrencesSkipped { standing, start_slot, count, .. } = e {
                    for k in 0..count {
                        let period = made.iter().find(|m| m.0 == standing).unwrap().2;
                        skipped.insert((standing, start_slot + k * period));
                    }
                }
            });
            // Ordinary traffic in between (it may take only slots no occurrence holds).
            let _ = t.reserve(Modality::Image, t.base_slot() + offset, len.min(horizon));
            for &(id, first, period, len) in &made {
                // Every occurrence inside the horizon sits exactly at first + k·P, or was
                // reported skipped.
                let mut start = first;
                while start + u64::from(len) <= t.end_slot() {
                    if start >= t.base_slot() {
                        let holder = t.occupant(start).unwrap();
                        let booked = holder.is_some_and(|r| r.standing == Some(id)
                            && r.start_slot == start && r.len_slots == len);
                        prop_assert!(booked || skipped.contains(&(id, start)),
                            "occurrence at {} of {:?}: {:?}", start, id, holder);
                    }
                    start += period;
                }
            }
            for slot in t.base_slot()..t.end_slot() {
                if let Some(r) = t.occupant(slot).unwrap()
                    && let Some(id) = r.standing
                {
                    let &(_, first, period, len) = made.iter().find(|m| m.0 == id).unwrap();
                    prop_assert_eq!((r.start_slot - first) % period, 0, "drifted");
                    prop_assert_eq!(r.len_slots, len);
                }
            }
        }
    }
}
