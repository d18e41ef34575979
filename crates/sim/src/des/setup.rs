//! One simulated run's state, and its set-up: the scheduling core in the runtime's lane
//! layout, the streams at random phases, the camera's standing reservation, the health
//! loop's first evaluation, an empty report per class.

use std::collections::BTreeMap;

use mmsched_core::Modality;
use mmsched_core::arbiter::ClassId;
use mmsched_core::health::RecentLosses;
use mmsched_core::layout::{self, Layout};
use mmsched_core::places::Places;
use mmsched_core::scheduler::{Decision, SchedEvent, Scheduler};
use mmsched_core::time::Nanos;
use mmsched_scenario::StreamKind;
use rand::RngExt;

use super::events::{Ev, EventQueue};
use super::report::{ClassReport, DesReport};
use super::requests::Booked;
use super::streams::Lane;
use super::{Conditions, Simulator};
use crate::clock::VirtualClock;
use crate::health_loop::HealthLoop;
use mmsched_world::rng::{SeededRng, stream_rng};

/// Streams start at a random phase below this (or their period), so they do not all tick
/// together.
const MAX_PHASE_NANOS: Nanos = 1_000_000_000;

/// How many jobs of class `name` the models of `mmsched run` can run at once on `workers`
/// general lanes (its `Engines::capacity`): an OCR pipeline per worker; one VAD and one
/// Whisper, which keep state from job to job; one text session (`run` loads one).
fn places_of(name: &str, workers: u32) -> usize {
    match name {
        "vision" => workers as usize,
        _ => 1,
    }
}

/// Everything one simulated run changes as it goes.
pub(super) struct SimRun<'r, 'a> {
    pub(super) sim: &'r Simulator<'a>,
    pub(super) cond: &'r Conditions,
    /// Inputs arrive and the health loop evaluates until then.
    pub(super) duration_nanos: Nanos,
    /// Simulated time, moved from event to event.
    pub(super) clock: VirtualClock,
    pub(super) health: Option<&'r mut HealthLoop>,
    /// The golden-trace lines, if asked for.
    pub(super) trace: Option<&'r mut Vec<String>>,
    pub(super) rng: SeededRng,
    pub(super) layout: Layout,
    pub(super) sched: Scheduler,
    /// The scheduler's class of each of the simulator's classes.
    pub(super) class_ids: Vec<ClassId>,
    pub(super) lanes: Vec<Lane>,
    pub(super) queue: EventQueue,
    /// Which compute lanes are running a job (the audio lane's tiny jobs aside).
    pub(super) computing: Vec<bool>,
    /// Booked requests, by the scheduler's id of their current step.
    pub(super) booked: BTreeMap<u64, Booked>,
    /// Per class: the model's places, and the requests waiting for one (by id).
    pub(super) places: Vec<Places<u64>>,
    /// The last id given to a step.
    pub(super) next_id: u64,
    /// Per class: every latency, ms, in completion order.
    pub(super) latencies: Vec<Vec<f64>>,
    /// Per class: which of its last jobs that ended were shed or late (the camera's
    /// remedy acts only while its branch is behind, as in the runtime).
    pub(super) losses: Vec<RecentLosses>,
    /// Per class: the counts so far.
    pub(super) reports: Vec<ClassReport>,
    /// Decision steps taken.
    pub(super) steps: u64,
    /// What happened at the current instant, for the scheduler.
    pub(super) events: Vec<SchedEvent>,
    /// What it decided.
    pub(super) decisions: Vec<Decision>,
    /// Whether the scheduler has been told the battery level.
    pub(super) battery_sent: bool,
}

impl<'r, 'a> SimRun<'r, 'a> {
    /// A run of `sim` for `duration_nanos` under `cond`, seeded with `seed`; `None` when
    /// the scheduling core refuses the device's layout.
    pub(super) fn new(
        sim: &'r Simulator<'a>,
        seed: u64,
        duration_nanos: Nanos,
        cond: &'r Conditions,
        health: Option<&'r mut HealthLoop>,
        trace: Option<&'r mut Vec<String>>,
    ) -> Option<Self> {
        let cores = sim.scenario.device().workers.unwrap_or(2);
        let layout = Layout::new(cores);
        let mut sched = Scheduler::new(&sim.policy, layout.lanes(), 0).ok()?;
        layout.apply(&mut sched).ok()?;
        let class_ids = sim.classes.iter().map(|(n, _)| sched.class(n)).collect();
        let classes = sim.classes.len();
        let mut run = Self {
            sim,
            cond,
            duration_nanos,
            clock: VirtualClock::new(0),
            health,
            trace,
            rng: stream_rng(seed, 0xDE5),
            layout,
            sched,
            class_ids,
            lanes: sim.lanes(cond),
            queue: EventQueue::default(),
            computing: vec![false; layout.lanes() as usize],
            booked: BTreeMap::new(),
            places: sim
                .classes
                .iter()
                .map(|(name, _)| Places::new(places_of(name, layout.compute_workers)))
                .collect(),
            next_id: 0,
            latencies: vec![Vec::new(); classes],
            losses: vec![RecentLosses::default(); classes],
            reports: sim.empty_reports(),
            steps: 0,
            events: Vec::new(),
            decisions: Vec::new(),
            battery_sent: false,
        };
        run.start_streams();
        if let Some(h) = run.health.as_deref_mut() {
            h.reset_windows(classes);
            run.queue.push(0, Ev::Health);
        }
        Some(run)
    }

    /// Each stream's first tick at a random phase, and the camera's standing reservation.
    fn start_streams(&mut self) {
        for i in 0..self.lanes.len() {
            let period = self.lanes[i].period_nanos;
            if period == Nanos::MAX {
                continue;
            }
            let phase = self.rng.random_range(0..period.min(MAX_PHASE_NANOS));
            self.queue.push(phase, Ev::Tick(i));
            let lane = &self.lanes[i];
            if lane.kind == StreamKind::Camera
                && let Some(&c) = lane.classes.first()
            {
                // The camera's standing reservation, booked as the runtime books it: each
                // frame's slot as long as its predicted cost, the frame due its SLA after
                // it arrives. (A refusal leaves the camera without reserved slots, as in
                // the runtime.)
                let _ = layout::book_stream(
                    &mut self.sched,
                    self.class_ids[c],
                    Modality::Image,
                    phase + lane.latency_nanos,
                    lane.period_nanos,
                    self.sim.predicted_nanos(c, self.cond),
                    Some(lane.sla_nanos),
                );
            }
        }
    }

    /// The report at the end of the run.
    pub(super) fn into_report(self) -> DesReport {
        let seconds = self.duration_nanos as f64 / 1e9;
        let mut report = DesReport {
            simulated: true,
            seconds,
            classes: BTreeMap::new(),
            steps: self.steps,
            latencies_ms: BTreeMap::new(),
        };
        let per_class = self.reports.into_iter().zip(self.latencies);
        for ((name, _), (mut r, lat)) in self.sim.classes.iter().zip(per_class) {
            r.close(seconds, &lat);
            report.classes.insert(name.clone(), r);
            report.latencies_ms.insert(name.clone(), lat);
        }
        report
    }
}
