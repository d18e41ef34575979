//! LDTI, the Latency–Drift–Throughput Imbalance index (S3): one number for the health of the
//! "death triangle", its three levels, the actions each level calls for, and the adaptive
//! threshold compensation used on long runs.
//!
//! ```text
//! LDTI = α · min(1, max(0, P99 − L₀) / L₀) + β · min(1, |D| / 1000 ppm) + γ · (1 − min(1, T / T_max))
//! ```
//!
//! Each term is clamped into [0, 1] so that, with weights summing to 1, the index stays in
//! [0, 1] and the level table of S3 covers every value.
//!
//! **The latency term is one-sided.** L₀ is the latency budget (a stream's SLA, or the
//! reference P99 of a job on an idle device), and the index measures how close the device
//! is to missing deadlines. A P99 *below* L₀ is not a symptom: a two-sided `|P99 − L₀|`
//! would call a lightly loaded device unhealthy, and worse, it would rise when a remedy
//! works (the breaker sheds the heaviest branch, latency falls below L₀, the index goes up
//! again), which makes the levels flap. Every user of the index — the runtime, the
//! simulator and the MCU hook — evaluates it here, through [`evaluate`], so there is one
//! definition.
//!
//! The health loop built on the index (levels over time, remedies, recovery) is
//! [`crate::health::HealthController`].

use alloc::vec::Vec;
use serde::{Deserialize, Serialize};

/// The weights α (latency), β (drift) and γ (throughput) of the index.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LdtiWeights {
    /// α: weight of the P99 latency offset.
    pub alpha: f64,
    /// β: weight of the clock drift.
    pub beta: f64,
    /// γ: weight of the throughput shortfall.
    pub gamma: f64,
}

impl Default for LdtiWeights {
    fn default() -> Self {
        Self {
            alpha: 0.4,
            beta: 0.35,
            gamma: 0.25,
        }
    }
}

/// One set of measurements to evaluate the index on.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct LdtiInputs {
    /// Measured P99 latency, in nanoseconds.
    pub latency_p99_nanos: u64,
    /// Reference latency L₀, in nanoseconds (must be > 0 for the latency term to count).
    pub latency_ref_nanos: u64,
    /// Estimated clock drift rate, in parts per million (sign ignored).
    pub drift_ppm: f64,
    /// Measured throughput, in any unit (jobs/s, tokens/s).
    pub throughput: f64,
    /// The maximum throughput in the same unit (must be > 0 for the term to count).
    pub throughput_max: f64,
}

/// The index and its three normalised, weighted terms (for traces and dashboards).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct LdtiBreakdown {
    /// α · latency term.
    pub latency: f64,
    /// β · drift term.
    pub drift: f64,
    /// γ · throughput term.
    pub throughput: f64,
    /// The sum of the three: the index itself.
    pub value: f64,
}

/// Drift in ppm that maps to a full drift term of 1.
pub const DRIFT_FULL_SCALE_PPM: f64 = 1000.0;

fn unit(x: f64) -> f64 {
    // NaN (from 0/0 on degenerate inputs) counts as "no signal", not as a failure.
    if x.is_nan() { 0.0 } else { x.clamp(0.0, 1.0) }
}

/// Evaluates the index, term by term. Degenerate references (L₀ = 0, T_max ≤ 0) make their
/// term 0 rather than infinite: an unset reference must not raise the alarm on its own.
pub fn evaluate(weights: &LdtiWeights, inputs: &LdtiInputs) -> LdtiBreakdown {
    let latency_term = if inputs.latency_ref_nanos == 0 {
        0.0
    } else {
        // One-sided: only a P99 beyond the reference counts (see the module docs).
        let over = inputs
            .latency_p99_nanos
            .saturating_sub(inputs.latency_ref_nanos) as f64;
        unit(over / inputs.latency_ref_nanos as f64)
    };
    let drift_term = unit(libm::fabs(inputs.drift_ppm) / DRIFT_FULL_SCALE_PPM);
    let throughput_term = if inputs.throughput_max > 0.0 {
        1.0 - unit(inputs.throughput / inputs.throughput_max)
    } else {
        0.0
    };
    let latency = weights.alpha * latency_term;
    let drift = weights.beta * drift_term;
    let throughput = weights.gamma * throughput_term;
    LdtiBreakdown {
        latency,
        drift,
        throughput,
        value: latency + drift + throughput,
    }
}

/// The three health levels of S3.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// LDTI below the degraded threshold: nothing to do.
    Stable,
    /// Occasional timeouts and sync jitter.
    Degraded,
    /// Risk of service loss.
    Critical,
}

impl Level {
    /// The lowercase name used in JSON output and metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Stable => "stable",
            Level::Degraded => "degraded",
            Level::Critical => "critical",
        }
    }
}

/// Where the levels start.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LevelThresholds {
    /// LDTI at and above which the device is degraded (default 0.25).
    pub degraded_at: f64,
    /// LDTI at and above which the device is critical (default 0.6).
    pub critical_at: f64,
}

impl Default for LevelThresholds {
    fn default() -> Self {
        Self {
            degraded_at: 0.25,
            critical_at: 0.6,
        }
    }
}

impl LevelThresholds {
    /// The level of an index value: `[0, degraded_at)` stable, `[degraded_at, critical_at)`
    /// degraded, `[critical_at, ∞)` critical.
    pub fn classify(&self, ldti: f64) -> Level {
        if ldti >= self.critical_at {
            Level::Critical
        } else if ldti >= self.degraded_at {
            Level::Degraded
        } else {
            Level::Stable
        }
    }

    /// Both thresholds multiplied by `factor` (the adaptive compensation factor).
    pub fn scaled(&self, factor: f64) -> Self {
        Self {
            degraded_at: self.degraded_at * factor,
            critical_at: self.critical_at * factor,
        }
    }
}

/// What the runtime should do at a level: the actions of S3, as data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "level", rename_all = "lowercase")]
pub enum HealthAction {
    /// Nothing to do.
    Stable,
    /// Scale the frequency of periodic streams down, and re-request late packets.
    Degraded {
        /// Lower the rate / resolution of periodic streams.
        scale_frequency: bool,
        /// Re-request late or lost packets from history.
        retransmit: bool,
    },
    /// Open the circuit breaker on the heaviest branch and answer from a local cache.
    Critical {
        /// Stop feeding the heaviest branch.
        circuit_break: bool,
        /// Answer from the last good result, marked stale.
        use_cache: bool,
    },
}

impl HealthAction {
    /// The level this action belongs to.
    pub fn level(&self) -> Level {
        match self {
            HealthAction::Stable => Level::Stable,
            HealthAction::Degraded { .. } => Level::Degraded,
            HealthAction::Critical { .. } => Level::Critical,
        }
    }
}

/// Which actions the policy enables at each level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActionSwitches {
    /// Degraded: scale periodic stream frequency.
    pub scale_frequency: bool,
    /// Degraded: retransmit late packets.
    pub retransmit: bool,
    /// Critical: circuit-break the heaviest branch.
    pub circuit_break: bool,
    /// Critical: answer from the result cache.
    pub use_cache: bool,
}

impl Default for ActionSwitches {
    fn default() -> Self {
        Self {
            scale_frequency: true,
            retransmit: true,
            circuit_break: true,
            use_cache: true,
        }
    }
}

impl ActionSwitches {
    /// The action for a level, with the switched-off parts cleared.
    pub fn action_for(&self, level: Level) -> HealthAction {
        match level {
            Level::Stable => HealthAction::Stable,
            Level::Degraded => HealthAction::Degraded {
                scale_frequency: self.scale_frequency,
                retransmit: self.retransmit,
            },
            Level::Critical => HealthAction::Critical {
                circuit_break: self.circuit_break,
                use_cache: self.use_cache,
            },
        }
    }
}

/// Logistic function.
fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + libm::exp(-x))
}

/// Adaptive threshold compensation for long runs (S3).
///
/// Keeps a sliding window of recent index values and, on every update, computes
/// `base = 0.85 + 0.15 · sigmoid(variance / 0.3)` and the smoothed factor
/// `factor = base · (1 − a) + previous · a`. The level thresholds are multiplied by the
/// factor: a calm window (low variance) pulls them down to about 92.5 % so that a slow,
/// steady decay is acted on earlier; a noisy window lets them return towards 100 % so that
/// noise does not make the levels flap.
///
/// The window lives in a buffer `B` given at construction and never grows: `Vec<f64>` for
/// [`AdaptiveThreshold::new`], or a fixed array through [`AdaptiveThreshold::with_buffer`]
/// on a target without an allocator (the window is then at most the array's length).
#[derive(Debug, Clone)]
pub struct AdaptiveThreshold<B = Vec<f64>> {
    window: B,
    capacity: usize,
    len: usize,
    next: usize,
    sum: f64,
    sum_sq: f64,
    smoothing: f64,
    factor: f64,
}

impl AdaptiveThreshold<Vec<f64>> {
    /// A compensator over the last `window` values (at least 2) with smoothing `a` in
    /// [0, 1]; the window is allocated once, here.
    pub fn new(window: usize, smoothing: f64) -> Self {
        let capacity = window.max(2);
        Self::with_buffer(alloc::vec![0.0; capacity], capacity, smoothing)
    }
}

impl<B: AsRef<[f64]> + AsMut<[f64]>> AdaptiveThreshold<B> {
    /// A compensator whose window is stored in `buffer`: the last `window` values (at least
    /// 2, at most the buffer's length) with smoothing `a` in [0, 1]. Allocation-free.
    pub fn with_buffer(buffer: B, window: usize, smoothing: f64) -> Self {
        let capacity = window.max(2).min(buffer.as_ref().len());
        Self {
            window: buffer,
            capacity,
            len: 0,
            next: 0,
            sum: 0.0,
            sum_sq: 0.0,
            smoothing: smoothing.clamp(0.0, 1.0),
            factor: 1.0,
        }
    }

    /// Adds one index value and returns the new threshold factor.
    pub fn update(&mut self, ldti: f64) -> f64 {
        let ldti = unit(ldti);
        if self.capacity > 0 {
            let slot = &mut self.window.as_mut()[self.next];
            if self.len < self.capacity {
                self.len += 1;
            } else {
                let old = *slot;
                self.sum -= old;
                self.sum_sq -= old * old;
            }
            *slot = ldti;
            self.next = (self.next + 1) % self.capacity;
            self.sum += ldti;
            self.sum_sq += ldti * ldti;
        }
        let base = 0.85 + 0.15 * sigmoid(self.variance() / 0.3);
        self.factor = base * (1.0 - self.smoothing) + self.factor * self.smoothing;
        self.factor
    }

    /// Population variance of the values in the window (0 while it is empty).
    pub fn variance(&self) -> f64 {
        let n = self.len as f64;
        if n == 0.0 {
            return 0.0;
        }
        let mean = self.sum / n;
        (self.sum_sq / n - mean * mean).max(0.0)
    }

    /// The current threshold factor (1.0 before the first update).
    pub fn factor(&self) -> f64 {
        self.factor
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn inputs(p99: u64, l0: u64, drift: f64, t: f64, tmax: f64) -> LdtiInputs {
        LdtiInputs {
            latency_p99_nanos: p99,
            latency_ref_nanos: l0,
            drift_ppm: drift,
            throughput: t,
            throughput_max: tmax,
        }
    }

    #[test]
    fn matches_a_worked_example() {
        // P99 30 ms against 20 ms: ΔL/L₀ = 0.5; 200 ppm: 0.2; 80 of 100: shortfall 0.2.
        let b = evaluate(
            &LdtiWeights::default(),
            &inputs(30_000_000, 20_000_000, -200.0, 80.0, 100.0),
        );
        let expected = 0.4 * 0.5 + 0.35 * 0.2 + 0.25 * 0.2;
        assert!((b.value - expected).abs() < 1e-12, "{b:?}");
        assert_eq!(
            LevelThresholds::default().classify(b.value),
            Level::Degraded
        );
    }

    #[test]
    fn faster_than_the_reference_is_not_a_symptom() {
        let w = LdtiWeights::default();
        let fast = evaluate(&w, &inputs(5_000_000, 20_000_000, 0.0, 1.0, 1.0));
        assert_eq!(fast.latency, 0.0, "{fast:?}");
        let slow = evaluate(&w, &inputs(35_000_000, 20_000_000, 0.0, 1.0, 1.0));
        assert!((slow.latency - 0.4 * 0.75).abs() < 1e-12, "{slow:?}");
    }

    #[test]
    fn levels_switch_exactly_at_the_thresholds() {
        let t = LevelThresholds::default();
        assert_eq!(t.classify(0.0), Level::Stable);
        assert_eq!(t.classify(0.249_999_999), Level::Stable);
        assert_eq!(t.classify(0.25), Level::Degraded);
        assert_eq!(t.classify(0.599_999_999), Level::Degraded);
        assert_eq!(t.classify(0.6), Level::Critical);
        assert_eq!(t.classify(1.0), Level::Critical);
    }

    #[test]
    fn degenerate_references_do_not_raise_the_alarm() {
        let b = evaluate(&LdtiWeights::default(), &inputs(5, 0, 0.0, 0.0, 0.0));
        assert_eq!(b.value, 0.0);
        let b = evaluate(
            &LdtiWeights::default(),
            &inputs(0, 0, f64::NAN, f64::NAN, 1.0),
        );
        assert!(b.value.is_finite());
    }

    #[test]
    fn actions_follow_levels_and_switches() {
        let all = ActionSwitches::default();
        assert_eq!(all.action_for(Level::Stable), HealthAction::Stable);
        assert_eq!(
            all.action_for(Level::Critical),
            HealthAction::Critical {
                circuit_break: true,
                use_cache: true
            }
        );
        let no_retx = ActionSwitches {
            retransmit: false,
            ..all
        };
        assert_eq!(
            no_retx.action_for(Level::Degraded),
            HealthAction::Degraded {
                scale_frequency: true,
                retransmit: false
            }
        );
        assert_eq!(no_retx.action_for(Level::Degraded).level(), Level::Degraded);
    }

    #[test]
    fn adaptive_factor_follows_the_formula() {
        let mut comp = AdaptiveThreshold::new(4, 0.25);
        // Constant input: variance 0, base = 0.85 + 0.15 * 0.5 = 0.925.
        let f1 = comp.update(0.3);
        assert!((f1 - (0.925 * 0.75 + 1.0 * 0.25)).abs() < 1e-12);
        let f2 = comp.update(0.3);
        assert!((f2 - (0.925 * 0.75 + f1 * 0.25)).abs() < 1e-12);
        // Converges to the base for a calm signal.
        for _ in 0..100 {
            comp.update(0.3);
        }
        assert!((comp.factor() - 0.925).abs() < 1e-9);
    }

    #[test]
    fn a_fixed_buffer_behaves_like_the_allocated_window() {
        let mut heap = AdaptiveThreshold::new(3, 0.25);
        let mut fixed = AdaptiveThreshold::with_buffer([0.0; 8], 3, 0.25);
        for v in [0.1, 0.9, 0.4, 0.7, 0.2, 0.95] {
            assert_eq!(heap.update(v), fixed.update(v));
        }
        assert_eq!(heap.variance(), fixed.variance());
    }

    #[test]
    fn adaptive_window_slides() {
        let mut comp = AdaptiveThreshold::new(2, 0.0);
        comp.update(0.0);
        comp.update(1.0);
        assert!((comp.variance() - 0.25).abs() < 1e-12);
        comp.update(1.0);
        comp.update(1.0);
        assert!(comp.variance().abs() < 1e-12, "old values leave the window");
    }

    proptest! {
        #[test]
        fn equals_the_formula(
            p99 in 0u64..1_000_000_000, l0 in 1u64..1_000_000_000,
            drift in -5000.0f64..5000.0, t in 0.0f64..1e6, tmax in 1e-3f64..1e6,
        ) {
            let w = LdtiWeights::default();
            let b = evaluate(&w, &inputs(p99, l0, drift, t, tmax));
            let dl = ((p99 as f64 - l0 as f64).max(0.0) / l0 as f64).min(1.0);
            let d = (drift.abs() / 1000.0).min(1.0);
            let th = 1.0 - (t / tmax).min(1.0);
            let expected = 0.4 * dl + 0.35 * d + 0.25 * th;
            prop_assert!((b.value - expected).abs() < 1e-9);
            prop_assert!((0.0..=1.0 + 1e-12).contains(&b.value));
        }

        #[test]
        fn adaptive_factor_stays_in_range(values in proptest::collection::vec(-1.0f64..2.0, 1..200)) {
            let mut comp = AdaptiveThreshold::new(16, 0.25);
            for v in values {
                let f = comp.update(v);
                prop_assert!((0.85..=1.0).contains(&f), "factor {f}");
            }
        }
    }
}
