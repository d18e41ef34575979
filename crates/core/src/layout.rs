//! The scheduler's worker layout, one definition for the runtime's executor and the
//! simulator: how many lanes there are, which lane is restricted to which job classes, and
//! where and how long a periodic stream's standing reservation is booked.
//!
//! - `compute_workers` general lanes (the scenario's `[device] workers`) take any job;
//! - one more lane, the **audio lane**, takes only voice-activity jobs, so a 32 ms chunk
//!   never waits behind a frame or a transcript (on Linux it runs at real-time priority);
//! - a periodic stream (the camera) holds a **standing reservation** on lane
//!   [`STANDING_LANE`] as long as one job of the stream is predicted to take: the other
//!   lanes keep whole cores for long jobs (speech recognition) that would not fit between
//!   two occurrences.

use crate::Modality;
use crate::arbiter::ClassId;
use crate::scheduler::{Scheduler, SchedulerError, StreamBooking};
use crate::slots::SlotError;
use crate::time::{NANOS_PER_MICRO, Nanos};

/// Job classes the audio lane runs.
pub const AUDIO_LANE_CLASSES: [&str; 1] = ["vad"];

/// The lane that holds periodic streams' standing reservations.
pub const STANDING_LANE: u32 = 0;

/// The lanes of one scheduler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// General lanes (at least 1).
    pub compute_workers: u32,
}

impl Layout {
    /// `compute_workers` general lanes plus the audio lane.
    pub fn new(compute_workers: u32) -> Self {
        Self {
            compute_workers: compute_workers.max(1),
        }
    }

    /// All lanes, the audio lane included.
    pub fn lanes(&self) -> u32 {
        self.compute_workers + 1
    }

    /// The audio lane's index (the last).
    pub fn audio_lane(&self) -> u32 {
        self.compute_workers
    }

    /// The restricted lanes and the classes each may run.
    pub fn restricted(&self) -> [(u32, &'static [&'static str]); 1] {
        [(self.audio_lane(), &AUDIO_LANE_CLASSES)]
    }

    /// Applies the restrictions to a scheduler of [`Layout::lanes`] workers (call right
    /// after construction, after [`Scheduler::record`] if recording).
    pub fn apply(&self, sched: &mut Scheduler) -> Result<(), SchedulerError> {
        for (lane, classes) in self.restricted() {
            let mut ids = [ClassId(0); AUDIO_LANE_CLASSES.len()];
            for (id, name) in ids.iter_mut().zip(classes) {
                *id = sched.class(name);
            }
            sched.restrict_worker(lane, &ids[..classes.len()])?;
        }
        Ok(())
    }
}

/// Books (or re-books) the standing reservation of `class`'s periodic stream on
/// [`STANDING_LANE`]: every `period_nanos` from `first_nanos`, as many slots as
/// `cost_nanos` covers (at most the period), each occurrence's job due `due_after_nanos`
/// after the occurrence starts (see [`StreamBooking`]). Returns the lane it went on.
///
/// The slot table books a stream's occurrences inside the horizon all or none, so one
/// occurrence taken now — typically by the job running on the lane when the stream is
/// re-booked because its cost moved — would refuse the whole stream and leave the lane
/// without it (and open to a long job that blocks the camera's lane for seconds). The
/// stream therefore starts at its first occurrence whose slots are free, at most one
/// horizon later; only then is the conflict returned.
pub fn book_stream(
    sched: &mut Scheduler,
    class: ClassId,
    modality: Modality,
    first_nanos: Nanos,
    period_nanos: Nanos,
    cost_nanos: Nanos,
    due_after_nanos: Option<Nanos>,
) -> Result<u32, SchedulerError> {
    let slot_nanos = sched
        .table(STANDING_LANE)
        .map_or(1, |t| (t.slot_len_micros() * NANOS_PER_MICRO).max(1));
    let len = u32::try_from(cost_nanos.div_ceil(slot_nanos).max(1)).unwrap_or(u32::MAX);
    let horizon_nanos = sched.table(STANDING_LANE).map_or(0, |t| {
        u64::from(t.horizon_slots()).saturating_mul(slot_nanos)
    });
    let last_first = first_nanos.saturating_add(horizon_nanos);
    let mut first = first_nanos;
    loop {
        let booking = StreamBooking {
            modality,
            first_nanos: first,
            period_nanos,
            len_slots: len,
            due_after_nanos,
        };
        match sched.reserve_stream(STANDING_LANE, class, booking) {
            Ok(_) => return Ok(STANDING_LANE),
            Err(SchedulerError::Slots(SlotError::Conflict(_)))
                if period_nanos > 0 && first.saturating_add(period_nanos) <= last_first =>
            {
                first += period_nanos;
            }
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Policy;

    #[test]
    fn the_audio_lane_is_the_last_and_runs_only_vad() {
        let l = Layout::new(2);
        assert_eq!((l.lanes(), l.audio_lane()), (3, 2));
        let mut s = Scheduler::new(&Policy::default(), l.lanes(), 0).expect("scheduler");
        l.apply(&mut s).expect("restrict");
        let vad = s.class("vad");
        let vision = s.class("vision");
        assert_ne!(vad, vision);
        let id = book_stream(
            &mut s,
            vision,
            Modality::Image,
            0,
            200_000_000,
            70_000_000,
            None,
        );
        assert_eq!(id.expect("booked"), STANDING_LANE);
    }

    #[test]
    fn a_stream_rebooked_over_a_running_job_starts_at_its_first_free_occurrence() {
        use crate::arbiter::{Job, JobId};
        use crate::scheduler::{Decision, SchedEvent};
        const MS: Nanos = 1_000_000;
        let l = Layout::new(1);
        let mut s = Scheduler::new(&Policy::default(), l.lanes(), 0).expect("scheduler");
        l.apply(&mut s).expect("restrict");
        let llm = s.class("llm");
        let vision = s.class("vision");
        // A 50 ms step runs on the standing lane from 0 ms.
        let step = Job {
            id: JobId(1),
            class: llm,
            modality: Modality::Text,
            deadline_nanos: 5_000 * MS,
            predicted_cost_nanos: 50 * MS,
            importance: 0.5,
            committed: false,
        };
        let mut out = Vec::new();
        s.step(0, &[SchedEvent::Arrive(step)], &mut out);
        assert!(
            matches!(out[..], [.., Decision::Start { worker: 0, .. }]),
            "{out:?}"
        );
        // Frames every 40 ms from 20 ms: the first one's slots are the step's.
        book_stream(
            &mut s,
            vision,
            Modality::Image,
            20 * MS,
            40 * MS,
            30 * MS,
            None,
        )
        .expect("booked");
        let t = s.table(STANDING_LANE).expect("lane");
        let occurrence = |ms: u64| t.occupant(t.slot_at(ms * MS)).ok().flatten();
        assert!(occurrence(60).is_some_and(|r| r.standing.is_some()));
        assert!(occurrence(100).is_some_and(|r| r.standing.is_some()));
    }
}
