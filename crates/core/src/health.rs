//! The health loop (S3) as one pure step function: a window's measurements in, the LDTI,
//! its level and the remedies in force out.
//!
//! The runtime (`mmsched run`), the simulator (`mmsched sim run`, `sim soak`) and the MCU
//! kernel's health hook all call [`HealthController::step`], so an index value, a level and
//! a remedy mean the same thing everywhere. The controller never reads a clock (the caller
//! passes `now`), never does I/O, and never allocates after construction; with
//! [`HealthController::with_buffer`] it does not allocate at all (the adaptive window lives
//! in a caller-given array), which is what a `no_std` target without a heap uses.
//!
//! ## Inputs
//!
//! [`Measurements`] over the caller's sliding window: the worst P99 latency over its
//! reference (an SLA, or a job's idle-device P99) as a ratio, the largest clock drift in
//! ppm, and the share of jobs served in time. The latency term of the index is one-sided
//! (see [`crate::ldti`]).
//!
//! ## Remedies
//!
//! The levels' actions of S3, as the runtime carries them out:
//!
//! - *degraded*: the camera runs at down to `1 / CAMERA_RATE_DIVISOR` of its rate
//!   ([`Remedies::camera_scaled`]: every second frame is dropped while the vision branch
//!   is behind) and missing audio packets are re-requested
//!   ([`Remedies::retransmit`]);
//! - *critical*: the breaker opens on the heaviest branch ([`heaviest_branch`]) and that
//!   branch answers from the last good result, marked stale ([`Remedies::use_cache`]).
//!
//! A remedy switches on at once and off only after its level has not been seen for the
//! configured recovery time ([`RECOVERY_NANOS`] by default), so one good window does not
//! undo it. The policy's `[ldti.actions]` switches disable remedies; adaptive threshold
//! compensation scales the level thresholds when the policy enables it.

use alloc::vec::Vec;

use crate::ldti::{self, AdaptiveThreshold, LdtiBreakdown, LdtiInputs, Level};
use crate::policy::LdtiPolicy;
use crate::time::Nanos;

/// How long a level must stay unseen before its remedies are withdrawn.
pub const RECOVERY_NANOS: Nanos = 1_000_000_000;

/// The camera's rate under [`Remedies::camera_scaled`] is divided by up to this: every
/// second frame is dropped, but only while the vision branch is losing frames anyway — at
/// least `1 / CAMERA_RATE_DIVISOR` of its last [`LOSS_WINDOW`] frames that ended were shed
/// or late ([`RecentLosses::behind`]).
///
/// Why that condition: dropping every second frame costs the branch half its frames, so it
/// pays only when about half are lost anyway; then the frames kept get the CPU the dropped
/// ones would have wasted. The index is measured over a sliding window and stays degraded
/// for a while after a burst has passed, and one late frame (a load spike) says little:
/// dropping frames while the branch mostly keeps up loses them for nothing. (An earlier
/// frame still in work is no sign either: with several workers and a frame costing about
/// its period, one usually is.)
pub const CAMERA_RATE_DIVISOR: u32 = 2;

/// How many of the vision branch's last ended frames [`RecentLosses`] weighs: about a
/// quarter of a second at 15 fps, longer than one load spike.
pub const LOSS_WINDOW: u32 = 4;

/// Whether each of the last [`LOSS_WINDOW`] frames that ended was lost (shed or late).
/// The runtime and the simulator keep one for the vision branch. Frames not yet seen
/// count as not lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RecentLosses {
    /// Bit i: whether the frame that ended i frames ago was lost.
    lost: u8,
}

impl RecentLosses {
    /// Records how a frame ended: `lost` if it was shed or late.
    pub fn record(&mut self, lost: bool) {
        let mask = (1u8 << LOSS_WINDOW) - 1;
        self.lost = ((self.lost << 1) | u8::from(lost)) & mask;
    }

    /// How many of the last [`LOSS_WINDOW`] frames were lost.
    pub fn count(&self) -> u32 {
        self.lost.count_ones()
    }

    /// Whether the branch is behind: at least `1 / CAMERA_RATE_DIVISOR` of the window lost.
    pub fn behind(&self) -> bool {
        self.count() * CAMERA_RATE_DIVISOR >= LOSS_WINDOW
    }
}

/// Whether the camera's frame number `nth` (0 for the first) is dropped under `remedies`;
/// `behind` says whether the vision branch is behind ([`RecentLosses::behind`]), asked
/// only when it matters (see [`CAMERA_RATE_DIVISOR`]). The runtime and the simulator both
/// ask this, so they drop the same frames.
pub fn camera_drops(remedies: &Remedies, nth: u64, behind: impl FnOnce() -> bool) -> bool {
    let divisor = u64::from(CAMERA_RATE_DIVISOR);
    remedies.camera_scaled && nth % divisor == divisor - 1 && behind()
}

/// What the caller measured over its window, for one step.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Measurements {
    /// Worst P99 latency over its reference, e.g. P99 / SLA (`None`: no samples).
    pub latency_ratio: Option<f64>,
    /// Largest estimated clock drift among the streams, ppm (sign ignored).
    pub drift_ppm: f64,
    /// Share of the window's jobs served in time, 0 … 1.
    pub served_fraction: f64,
    /// Whether the caller's own work exceeds what its lanes can serve ([`OwnLoad`]);
    /// `None` where the caller cannot tell (the remedies then act on the level alone).
    pub own_overload: Option<bool>,
}

/// The caller's own load over its window, as its measured step costs say: what its lanes
/// were busy with, what is handed to them and not yet done, and what they can serve.
///
/// Why this and not the index alone: the index reads lateness, and lateness has two
/// causes. Either the caller took on more work than its lanes can serve (its own
/// overload: dropping or breaking work frees lanes for the rest), or its steps ran slower
/// than usual because another program took CPU (a neighbour: the lanes are not full, and
/// a dropped frame frees nothing the kept ones lack; they stay as slow). Only the first
/// is a reason for the remedies that keep work from the models ([`Remedies::camera_scaled`],
/// [`Remedies::breaker_open`]). A neighbour's slowdown still counts here, through the
/// measured step costs: steps that take longer keep the lanes busier and make the work
/// handed to them dearer, so a neighbour that leaves too little CPU for the caller's work
/// does make it overloaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OwnLoad {
    /// Lane time the caller's steps took inside the window (measured), ns.
    pub busy_nanos: u64,
    /// Predicted cost of the steps handed to the lanes and not yet ended (queued or
    /// running), ns.
    pub outstanding_nanos: u64,
    /// What the lanes can serve in the window: lanes × window, ns.
    pub capacity_nanos: u64,
}

impl OwnLoad {
    /// Whether the work exceeds the lanes: busy the whole window with more waiting.
    pub fn overloaded(&self) -> bool {
        self.busy_nanos.saturating_add(self.outstanding_nanos) > self.capacity_nanos
    }
}

/// The remedies in force.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Remedies {
    /// The camera runs at down to `1 / CAMERA_RATE_DIVISOR` of its rate (degraded,
    /// `scale_frequency`; see [`CAMERA_RATE_DIVISOR`] for when a frame is dropped).
    pub camera_scaled: bool,
    /// Missing audio packets are re-requested (degraded, `retransmit`).
    pub retransmit: bool,
    /// The heaviest branch's breaker is open (critical, `circuit_break`).
    pub breaker_open: bool,
    /// The broken branch answers from the result cache, marked stale (critical, `use_cache`).
    pub use_cache: bool,
}

/// One remedy, for naming changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Remedy {
    /// [`Remedies::camera_scaled`].
    CameraScaled,
    /// [`Remedies::retransmit`].
    Retransmit,
    /// [`Remedies::breaker_open`].
    BreakerOpen,
    /// [`Remedies::use_cache`].
    UseCache,
}

impl Remedy {
    /// Every remedy, in the order changes are reported.
    pub const ALL: [Remedy; 4] = [
        Remedy::CameraScaled,
        Remedy::Retransmit,
        Remedy::BreakerOpen,
        Remedy::UseCache,
    ];

    /// What switching it on or off is called in logs and traces.
    pub fn describe(self, on: bool) -> &'static str {
        match (self, on) {
            (Remedy::CameraScaled, true) => "camera rate halved",
            (Remedy::CameraScaled, false) => "camera rate restored",
            (Remedy::Retransmit, true) => "audio retransmission on",
            (Remedy::Retransmit, false) => "audio retransmission off",
            (Remedy::BreakerOpen, true) => "breaker opened on the heaviest branch",
            (Remedy::BreakerOpen, false) => "breaker closed",
            (Remedy::UseCache, true) => "answers from cache",
            (Remedy::UseCache, false) => "cache answers off",
        }
    }
}

impl Remedies {
    /// Whether `remedy` is in force.
    pub fn get(&self, remedy: Remedy) -> bool {
        match remedy {
            Remedy::CameraScaled => self.camera_scaled,
            Remedy::Retransmit => self.retransmit,
            Remedy::BreakerOpen => self.breaker_open,
            Remedy::UseCache => self.use_cache,
        }
    }

    /// The remedies that differ between `self` and `next`, with their state in `next`.
    pub fn changes(self, next: Remedies) -> impl Iterator<Item = (Remedy, bool)> {
        Remedy::ALL
            .into_iter()
            .filter(move |&r| self.get(r) != next.get(r))
            .map(move |r| (r, next.get(r)))
    }
}

/// The branch an open breaker stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Branch {
    /// Camera frames (vision jobs).
    Vision,
    /// Utterances (speech recognition jobs).
    Speech,
}

/// The heaviest branch: the one whose jobs take longer on average (speech wins ties); vision
/// when there is no speech branch.
pub fn heaviest_branch(vision_mean_ms: f64, speech_mean_ms: f64, has_speech: bool) -> Branch {
    if has_speech && speech_mean_ms >= vision_mean_ms {
        Branch::Speech
    } else {
        Branch::Vision
    }
}

/// The outcome of one step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HealthStep {
    /// The index and its terms.
    pub ldti: LdtiBreakdown,
    /// The adaptive threshold factor in force (1 without compensation).
    pub factor: f64,
    /// The level under the (scaled) thresholds.
    pub level: Level,
    /// The remedies in force after this step.
    pub remedies: Remedies,
    /// The remedies in force before it.
    pub previous: Remedies,
}

impl HealthStep {
    /// The remedies this step switched on (`true`) or off (`false`).
    pub fn changes(&self) -> impl Iterator<Item = (Remedy, bool)> {
        self.previous.changes(self.remedies)
    }
}

/// The health loop's state. See the module docs.
#[derive(Debug, Clone)]
pub struct HealthController<B = Vec<f64>> {
    policy: LdtiPolicy,
    recovery_nanos: Nanos,
    adaptive: AdaptiveThreshold<B>,
    level: Level,
    remedies: Remedies,
    /// Last time each level (by index) or a worse one was seen.
    last_seen: [Option<Nanos>; 3],
    /// Last time the caller's own overload was seen, or reported unknown.
    last_own_overload: Option<Nanos>,
}

impl HealthController<Vec<f64>> {
    /// A controller following `policy` (the `[ldti]` section), with its adaptive window
    /// allocated once, here.
    pub fn new(policy: &LdtiPolicy) -> Self {
        let window = policy.adaptive_window as usize;
        Self::with_buffer(policy, alloc::vec![0.0; window.max(2)])
    }
}

impl<B: AsRef<[f64]> + AsMut<[f64]>> HealthController<B> {
    /// A controller whose adaptive window lives in `buffer` (at most its length long):
    /// allocation-free, for targets without a heap.
    pub fn with_buffer(policy: &LdtiPolicy, buffer: B) -> Self {
        Self {
            adaptive: AdaptiveThreshold::with_buffer(
                buffer,
                policy.adaptive_window as usize,
                policy.adaptive_smoothing,
            ),
            policy: *policy,
            recovery_nanos: RECOVERY_NANOS,
            level: Level::Stable,
            remedies: Remedies::default(),
            last_seen: [None; 3],
            last_own_overload: None,
        }
    }

    /// The same controller with another recovery time (e.g. one evaluation window in a
    /// soak whose windows are minutes long).
    pub fn with_recovery_nanos(mut self, recovery_nanos: Nanos) -> Self {
        self.recovery_nanos = recovery_nanos;
        self
    }

    /// Follows a new policy from the next step on (weights, thresholds, switches; the
    /// adaptive window keeps its length).
    pub fn set_policy(&mut self, policy: &LdtiPolicy) {
        self.policy = *policy;
    }

    /// The policy in force.
    pub fn policy(&self) -> &LdtiPolicy {
        &self.policy
    }

    /// Time between two evaluations at the policy's rate, nanoseconds.
    pub fn period_nanos(&self) -> Nanos {
        1_000_000_000 / u64::from(self.policy.evaluate_hz.max(1))
    }

    /// One evaluation at `now` on `m`: the index, the level, and the remedies in force.
    pub fn step(&mut self, now: Nanos, m: &Measurements) -> HealthStep {
        let offset = m.latency_ratio.map_or(0.0, |r| {
            if r.is_finite() {
                (r - 1.0).clamp(0.0, 1e6)
            } else {
                1e6
            }
        });
        let ldti = ldti::evaluate(
            &self.policy.weights,
            &LdtiInputs {
                latency_p99_nanos: ((1.0 + offset) * 1e6) as u64,
                latency_ref_nanos: 1_000_000,
                drift_ppm: m.drift_ppm,
                throughput: m.served_fraction,
                throughput_max: 1.0,
            },
        );
        let factor = if self.policy.adaptive_enabled {
            self.adaptive.update(ldti.value)
        } else {
            1.0
        };
        let level = self.policy.thresholds.scaled(factor).classify(ldti.value);
        self.level = level;
        for seen in &mut self.last_seen[..=level as usize] {
            *seen = Some(now);
        }
        if m.own_overload != Some(false) {
            self.last_own_overload = Some(now);
        }
        let previous = self.remedies;
        self.remedies = self.remedies_at(now);
        HealthStep {
            ldti,
            factor,
            level,
            remedies: self.remedies,
            previous,
        }
    }

    fn remedies_at(&self, now: Nanos) -> Remedies {
        let recent = |l: Level| {
            self.last_seen[l as usize].is_some_and(|t| now.saturating_sub(t) < self.recovery_nanos)
        };
        let a = self.policy.actions;
        let degraded = recent(Level::Degraded);
        // The breaker opens only at a critical level, and stays open while critical was
        // seen recently.
        let critical = self.level == Level::Critical
            || (self.remedies.breaker_open && recent(Level::Critical));
        // The remedies that keep work from the models act on the caller's own overload
        // only (see [`OwnLoad`]), seen within the same recovery time as the levels.
        let own = self
            .last_own_overload
            .is_some_and(|t| now.saturating_sub(t) < self.recovery_nanos);
        Remedies {
            camera_scaled: a.scale_frequency && degraded && own,
            retransmit: a.retransmit && degraded,
            breaker_open: a.circuit_break && critical && own,
            use_cache: a.use_cache && critical && own,
        }
    }

    /// The remedies in force.
    pub fn remedies(&self) -> Remedies {
        self.remedies
    }

    /// The level of the last step.
    pub fn level(&self) -> Level {
        self.level
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Policy;

    #[test]
    fn the_camera_drops_every_second_frame_only_while_scaled_and_behind() {
        let scaled = Remedies {
            camera_scaled: true,
            ..Remedies::default()
        };
        let dropped = |r: &Remedies, behind| {
            (0..6)
                .filter(|&n| camera_drops(r, n, || behind))
                .collect::<Vec<_>>()
        };
        assert_eq!(dropped(&scaled, true), [1, 3, 5]);
        assert!(dropped(&scaled, false).is_empty());
        assert!(dropped(&Remedies::default(), true).is_empty());
    }

    #[test]
    fn the_branch_is_behind_while_half_its_last_frames_were_lost() {
        let mut r = RecentLosses::default();
        assert!(!r.behind(), "nothing seen: not behind");
        r.record(true);
        assert!(
            !r.behind(),
            "one lost frame (a spike) is not half the window"
        );
        r.record(false);
        r.record(true);
        assert_eq!(r.count(), 2);
        assert!(r.behind(), "2 of the last 4 lost");
        r.record(false);
        assert!(r.behind(), "still 2 of the last 4");
        r.record(false);
        assert_eq!(r.count(), 1, "the oldest loss left the window");
        assert!(!r.behind());
    }

    const MS: Nanos = 1_000_000;

    fn m(ratio: f64, served: f64) -> Measurements {
        Measurements {
            latency_ratio: Some(ratio),
            drift_ppm: 3.0,
            served_fraction: served,
            own_overload: None,
        }
    }

    #[test]
    fn own_load_is_overloaded_only_past_the_lanes() {
        let load = |busy, outstanding| OwnLoad {
            busy_nanos: busy,
            outstanding_nanos: outstanding,
            capacity_nanos: 4_000 * MS,
        };
        assert!(
            !load(2_500 * MS, 1_000 * MS).overloaded(),
            "lanes with room"
        );
        assert!(!load(4_000 * MS, 0).overloaded(), "busy, nothing waiting");
        assert!(
            load(3_900 * MS, 400 * MS).overloaded(),
            "busy and more waiting"
        );
        assert!(!OwnLoad::default().overloaded());
    }

    #[test]
    fn lateness_without_own_overload_keeps_every_frame_and_the_breaker_closed() {
        let mut h = HealthController::new(Policy::default().ldti());
        let slow = |own| Measurements {
            own_overload: Some(own),
            ..m(5.0, 0.0)
        };
        // A neighbour slowed every job: critical, but the lanes have room.
        let s = h.step(0, &slow(false));
        assert_eq!(s.level, Level::Critical);
        assert!(s.remedies.retransmit, "retransmission drops nothing");
        assert!(!s.remedies.camera_scaled && !s.remedies.breaker_open && !s.remedies.use_cache);
        // The run's own work then exceeds its lanes: the remedies come on at once…
        let s = h.step(10 * MS, &slow(true));
        assert!(s.remedies.camera_scaled && s.remedies.breaker_open && s.remedies.use_cache);
        // …and stay for the recovery time after the overload is gone, like a level.
        let s = h.step(20 * MS, &slow(false));
        assert!(s.remedies.camera_scaled && s.remedies.breaker_open);
        let s = h.step(10 * MS + RECOVERY_NANOS, &slow(false));
        assert!(!s.remedies.camera_scaled && !s.remedies.breaker_open);
        assert_eq!(
            s.level,
            Level::Critical,
            "the index still says how late jobs are"
        );
    }

    #[test]
    fn within_the_budget_is_stable_and_overload_escalates_then_recovers() {
        let mut h = HealthController::new(Policy::default().ldti());
        let s = h.step(0, &m(0.5, 1.0));
        assert_eq!(s.level, Level::Stable);
        assert_eq!(s.ldti.latency, 0.0, "faster than the budget is no symptom");
        assert_eq!(s.changes().count(), 0);
        // P99 at 1.8× the budget and a third of the jobs late: degraded.
        let s = h.step(10 * MS, &m(1.8, 0.66));
        assert_eq!(s.level, Level::Degraded, "{s:?}");
        assert!(s.remedies.camera_scaled && s.remedies.retransmit);
        let on: Vec<_> = s.changes().collect();
        assert_eq!(
            on,
            [(Remedy::CameraScaled, true), (Remedy::Retransmit, true)]
        );
        // Far over and nothing served: critical, breaker open.
        let s = h.step(20 * MS, &m(5.0, 0.0));
        assert_eq!(s.level, Level::Critical);
        assert!(s.remedies.breaker_open && s.remedies.use_cache);
        // Healthy again: remedies stay for the recovery time, then go.
        assert!(h.step(30 * MS, &m(0.5, 1.0)).remedies.camera_scaled);
        let s = h.step(30 * MS + RECOVERY_NANOS + MS, &m(0.5, 1.0));
        assert_eq!(s.remedies, Remedies::default());
        assert_eq!(s.changes().count(), 4);
    }

    #[test]
    fn switched_off_actions_never_come_on() {
        let mut p = *Policy::default().ldti();
        p.actions.circuit_break = false;
        p.actions.retransmit = false;
        let mut h = HealthController::new(&p);
        let s = h.step(0, &m(9.0, 0.0));
        assert_eq!(s.level, Level::Critical);
        assert!(!s.remedies.breaker_open && !s.remedies.retransmit);
        assert!(s.remedies.camera_scaled && s.remedies.use_cache);
    }

    #[test]
    fn a_fixed_buffer_gives_the_same_steps() {
        let p = Policy::default();
        let mut heap = HealthController::new(p.ldti());
        let mut fixed = HealthController::with_buffer(p.ldti(), [0.0f64; 32]);
        for (i, r) in [0.2, 1.5, 3.0, 0.9, 1.2, 0.1].into_iter().enumerate() {
            let now = i as Nanos * 400 * MS;
            assert_eq!(heap.step(now, &m(r, 0.8)), fixed.step(now, &m(r, 0.8)));
        }
    }

    proptest::proptest! {
        #[test]
        fn remedies_follow_levels_switches_and_recovery(
            steps in proptest::collection::vec((0.0f64..4.0, 0.0f64..1.0, 1u64..600), 1..80),
            scale in proptest::bool::ANY,
            breaker in proptest::bool::ANY,
        ) {
            let mut p = *Policy::default().ldti();
            p.actions.scale_frequency = scale;
            p.actions.circuit_break = breaker;
            let mut h = HealthController::new(&p);
            let (mut now, mut last_critical, mut last_degraded) = (0, None, None);
            for (ratio, served, gap_ms) in steps {
                now += gap_ms * MS;
                let s = h.step(now, &m(ratio, served));
                if s.level >= Level::Degraded { last_degraded = Some(now); }
                if s.level == Level::Critical { last_critical = Some(now); }
                let recent = |t: Option<Nanos>| t.is_some_and(|t| now - t < RECOVERY_NANOS);
                proptest::prop_assert!(scale || !s.remedies.camera_scaled);
                proptest::prop_assert!(breaker || !s.remedies.breaker_open);
                proptest::prop_assert_eq!(s.remedies.retransmit, recent(last_degraded));
                if s.remedies.breaker_open {
                    proptest::prop_assert!(recent(last_critical));
                }
                if s.level == Level::Critical {
                    proptest::prop_assert_eq!(s.remedies.breaker_open, breaker);
                }
            }
        }
    }

    #[test]
    fn heaviest_branch_follows_the_means() {
        assert_eq!(heaviest_branch(70.0, 900.0, true), Branch::Speech);
        assert_eq!(heaviest_branch(70.0, 30.0, true), Branch::Vision);
        assert_eq!(heaviest_branch(70.0, 900.0, false), Branch::Vision);
    }
}
