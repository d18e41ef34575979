//! The scheduling policy: one document, checked once, then only valid values.
//!
//! A [`PolicySpec`] is what a user writes (a TOML file or a JSON body; every field optional,
//! unknown fields rejected). [`Policy::try_from`] checks every field and returns either a
//! `Policy` — which can only hold valid values, so nothing downstream re-validates — or
//! *all* the problems at once, each naming the field, the value and the allowed range.

use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use serde::{Deserialize, Serialize};

use crate::ldti::{ActionSwitches, LdtiWeights, LevelThresholds};
use crate::rungs::{Rungs, RungsSpec};

/// The only policy document version this build reads.
pub const POLICY_VERSION: u32 = 1;

/// Importance γ of the built-in job classes when a policy does not list them.
pub const DEFAULT_IMPORTANCE: [(&str, f64); 4] = [
    ("vision", 0.92),
    ("vad", 0.60),
    ("asr", 0.70),
    ("llm", 0.50),
];

/// How admitted jobs are ordered for dispatch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub enum DispatchRule {
    /// Earliest deadline first: optimal on one preemptive worker while utilisation ≤ 1.
    #[default]
    Edf,
    /// Highest priority score first (S2's score used directly; not deadline-monotone).
    Score,
}

/// The policy document as written: every field optional, defaults filled in on validation.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct PolicySpec {
    /// Document format version; must be 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u32>,
    /// A free-form name shown in traces and status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Priority arbitration (S2).
    #[serde(default)]
    pub arbiter: ArbiterSpec,
    /// Semantic importance γ ∈ [0, 1] per job class (e.g. `vision`, `vad`, `asr`, `llm`);
    /// the key `default` applies to classes not listed.
    #[serde(default)]
    pub importance: BTreeMap<String, f64>,
    /// The time-slot table (S1).
    #[serde(default)]
    pub slots: SlotsSpec,
    /// The health index and its actions (S3).
    #[serde(default)]
    pub ldti: LdtiSpec,
    /// Modality routing gates (S4).
    #[serde(default)]
    pub routing: RoutingSpec,
    /// Quality rungs per model, richest first: the cheaper ways a job may run when its
    /// full quality would miss its deadline.
    #[serde(default)]
    pub rungs: RungsSpec,
}

/// `[arbiter]` section.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ArbiterSpec {
    /// Weight of the normalised urgency 1/δ (default 0.45).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight_deadline: Option<f64>,
    /// Weight of the semantic importance γ (default 0.35).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight_importance: Option<f64>,
    /// Weight of the battery fraction η/η_max (default 0.20).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight_battery: Option<f64>,
    /// Battery fraction below which heavy classes are disabled (default 0.15).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub battery_saver_below: Option<f64>,
    /// SLA-violation risk above which the deadline weight is boosted (default 0.8).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub risk_boost_above: Option<f64>,
    /// The boosted deadline weight (default 0.6).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub risk_boost_deadline_weight: Option<f64>,
    /// Dispatch order for admitted jobs: `edf` (default) or `score`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dispatch: Option<DispatchRule>,
    /// Job classes disabled in battery-saver mode (default `["llm"]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heavy_classes: Option<Vec<String>>,
}

/// `[slots]` section.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct SlotsSpec {
    /// Length of one slot in microseconds, 10 ..= 1 000 000 (default 1000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slot_len_micros: Option<u64>,
    /// Number of slots in the reservation horizon, 16 ..= 16 777 216 (default 65 536).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub horizon_slots: Option<u64>,
}

/// `[ldti]` section.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct LdtiSpec {
    /// α, weight of the latency term (default 0.4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alpha: Option<f64>,
    /// β, weight of the drift term (default 0.35).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub beta: Option<f64>,
    /// γ, weight of the throughput term (default 0.25).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gamma: Option<f64>,
    /// Index at which the level becomes degraded (default 0.25).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub degraded_at: Option<f64>,
    /// Index at which the level becomes critical (default 0.6).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub critical_at: Option<f64>,
    /// Evaluations per second, 1 ..= 10 000 (default 120).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evaluate_hz: Option<u32>,
    /// Adaptive threshold compensation.
    #[serde(default)]
    pub adaptive: AdaptiveSpec,
    /// Which actions are taken at each level.
    #[serde(default)]
    pub actions: ActionsSpec,
}

/// `[ldti.adaptive]` section.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct AdaptiveSpec {
    /// Whether thresholds are re-calibrated from the window variance (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Sliding-window length in evaluations, 2 ..= 100 000 (default 120).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<u32>,
    /// Smoothing a ∈ [0, 1) (default 0.25).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub smoothing: Option<f64>,
}

/// `[ldti.actions]` section.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ActionsSpec {
    /// Degraded: lower periodic stream rates (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale_frequency: Option<bool>,
    /// Degraded: re-request late packets (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retransmit: Option<bool>,
    /// Critical: circuit-break the heaviest branch (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub circuit_break: Option<bool>,
    /// Critical: answer from the result cache (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub use_cache: Option<bool>,
}

/// `[routing]` section.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct RoutingSpec {
    /// Whether information gates may skip branches (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Frames whose variance of the Laplacian (on 0..255 luma) is below this are blurred
    /// and skip vision inference (default 30.0, ≥ 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blur_min_laplacian_var: Option<f64>,
    /// Frames whose mean luma (0..255) is below this are dark and skip vision (default 20.0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dark_max_mean_luma: Option<f64>,
    /// VAD speech probability at and above which audio is sent to ASR (default 0.5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vad_speech_threshold: Option<f64>,
}

/// One problem found in a policy document.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{field} = {value}: {reason}")]
pub struct FieldError {
    /// Dotted path of the field, e.g. `arbiter.weight_deadline`.
    pub field: String,
    /// The offending value as written.
    pub value: String,
    /// What is allowed instead.
    pub reason: String,
}

/// Every problem found in a policy document (never empty).
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyErrors(pub Vec<FieldError>);

impl core::fmt::Display for PolicyErrors {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl core::error::Error for PolicyErrors {}

/// Validated arbitration settings.
#[derive(Debug, Clone, PartialEq)]
pub struct ArbiterPolicy {
    /// Weight of normalised urgency.
    pub weight_deadline: f64,
    /// Weight of importance.
    pub weight_importance: f64,
    /// Weight of battery fraction.
    pub weight_battery: f64,
    /// Battery fraction below which heavy classes are disabled.
    pub battery_saver_below: f64,
    /// Risk above which the deadline weight is boosted.
    pub risk_boost_above: f64,
    /// The boosted deadline weight.
    pub risk_boost_deadline_weight: f64,
    /// Dispatch order.
    pub dispatch: DispatchRule,
    /// Classes disabled in battery-saver mode.
    pub heavy_classes: Vec<String>,
}

/// Validated slot settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotsPolicy {
    /// Slot length in microseconds.
    pub slot_len_micros: u64,
    /// Horizon in slots.
    pub horizon_slots: u64,
}

/// Validated health-index settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LdtiPolicy {
    /// Term weights.
    pub weights: LdtiWeights,
    /// Level thresholds.
    pub thresholds: LevelThresholds,
    /// Evaluations per second.
    pub evaluate_hz: u32,
    /// Whether adaptive compensation is on.
    pub adaptive_enabled: bool,
    /// Adaptive window length.
    pub adaptive_window: u32,
    /// Adaptive smoothing.
    pub adaptive_smoothing: f64,
    /// Enabled actions.
    pub actions: ActionSwitches,
}

/// Validated routing settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RoutingPolicy {
    /// Whether gates may skip branches.
    pub enabled: bool,
    /// Blur gate: minimum variance of the Laplacian.
    pub blur_min_laplacian_var: f64,
    /// Darkness gate: minimum mean luma.
    pub dark_max_mean_luma: f64,
    /// VAD gate threshold.
    pub vad_speech_threshold: f64,
}

/// The longest policy `name` (it is shown in status lines, traces and metrics labels).
pub const MAX_NAME_CHARS: usize = 128;

/// A policy that holds only valid values. Obtain one with `Policy::try_from(spec)` or
/// [`Policy::default`].
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    name: String,
    arbiter: ArbiterPolicy,
    importance: BTreeMap<String, f64>,
    default_importance: f64,
    slots: SlotsPolicy,
    ldti: LdtiPolicy,
    routing: RoutingPolicy,
    rungs: Rungs,
}

impl Default for Policy {
    fn default() -> Self {
        Policy::try_from(PolicySpec::default())
            .unwrap_or_else(|_| unreachable!("defaults are valid"))
    }
}

impl Policy {
    /// The policy's name (`default` if none was given).
    pub fn name(&self) -> &str {
        &self.name
    }
    /// Arbitration settings.
    pub fn arbiter(&self) -> &ArbiterPolicy {
        &self.arbiter
    }
    /// Slot settings.
    pub fn slots(&self) -> &SlotsPolicy {
        &self.slots
    }
    /// Health-index settings.
    pub fn ldti(&self) -> &LdtiPolicy {
        &self.ldti
    }
    /// Routing settings.
    pub fn routing(&self) -> &RoutingPolicy {
        &self.routing
    }
    /// Quality rungs per model, richest first.
    pub fn rungs(&self) -> &Rungs {
        &self.rungs
    }
    /// Importance γ of a job class (the `default` entry, or 0.5, when it is not listed).
    pub fn importance(&self, class: &str) -> f64 {
        self.importance
            .get(class)
            .copied()
            .unwrap_or(self.default_importance)
    }
    /// Whether `class` is switched off at battery fraction `battery` (battery saver).
    pub fn is_pruned(&self, class: &str, battery: f64) -> bool {
        battery < self.arbiter.battery_saver_below
            && self.arbiter.heavy_classes.iter().any(|c| c == class)
    }

    /// The fully written-out document of this policy (every field present): what the
    /// policy API returns and what round-trips back into an equal `Policy`.
    pub fn to_spec(&self) -> PolicySpec {
        let mut importance = self.importance.clone();
        importance.insert("default".to_string(), self.default_importance);
        PolicySpec {
            version: Some(POLICY_VERSION),
            name: Some(self.name.clone()),
            arbiter: ArbiterSpec {
                weight_deadline: Some(self.arbiter.weight_deadline),
                weight_importance: Some(self.arbiter.weight_importance),
                weight_battery: Some(self.arbiter.weight_battery),
                battery_saver_below: Some(self.arbiter.battery_saver_below),
                risk_boost_above: Some(self.arbiter.risk_boost_above),
                risk_boost_deadline_weight: Some(self.arbiter.risk_boost_deadline_weight),
                dispatch: Some(self.arbiter.dispatch),
                heavy_classes: Some(self.arbiter.heavy_classes.clone()),
            },
            importance,
            slots: SlotsSpec {
                slot_len_micros: Some(self.slots.slot_len_micros),
                horizon_slots: Some(self.slots.horizon_slots),
            },
            ldti: LdtiSpec {
                alpha: Some(self.ldti.weights.alpha),
                beta: Some(self.ldti.weights.beta),
                gamma: Some(self.ldti.weights.gamma),
                degraded_at: Some(self.ldti.thresholds.degraded_at),
                critical_at: Some(self.ldti.thresholds.critical_at),
                evaluate_hz: Some(self.ldti.evaluate_hz),
                adaptive: AdaptiveSpec {
                    enabled: Some(self.ldti.adaptive_enabled),
                    window: Some(self.ldti.adaptive_window),
                    smoothing: Some(self.ldti.adaptive_smoothing),
                },
                actions: ActionsSpec {
                    scale_frequency: Some(self.ldti.actions.scale_frequency),
                    retransmit: Some(self.ldti.actions.retransmit),
                    circuit_break: Some(self.ldti.actions.circuit_break),
                    use_cache: Some(self.ldti.actions.use_cache),
                },
            },
            routing: RoutingSpec {
                enabled: Some(self.routing.enabled),
                blur_min_laplacian_var: Some(self.routing.blur_min_laplacian_var),
                dark_max_mean_luma: Some(self.routing.dark_max_mean_luma),
                vad_speech_threshold: Some(self.routing.vad_speech_threshold),
            },
            rungs: self.rungs.to_spec(),
        }
    }
}

/// Collects field errors while a spec is checked.
struct Checker {
    errors: Vec<FieldError>,
}

impl Checker {
    fn fail(&mut self, field: &str, value: impl core::fmt::Display, reason: impl Into<String>) {
        self.errors.push(FieldError {
            field: field.to_string(),
            value: value.to_string(),
            reason: reason.into(),
        });
    }

    /// A float in `[lo, hi]` (finite), or the default.
    fn unit_range(&mut self, field: &str, v: Option<f64>, default: f64, lo: f64, hi: f64) -> f64 {
        match v {
            None => default,
            Some(x) if x.is_finite() && x >= lo && x <= hi => x,
            Some(x) => {
                self.fail(
                    field,
                    crate::text::number(x),
                    format!(
                        "must be a number from {} to {}",
                        crate::text::number(lo),
                        crate::text::number(hi)
                    ),
                );
                default
            }
        }
    }

    /// An integer in `[lo, hi]`, or the default.
    fn int_range<T>(&mut self, field: &str, v: Option<T>, default: T, lo: T, hi: T) -> T
    where
        T: PartialOrd + Copy + core::fmt::Display,
    {
        match v {
            None => default,
            Some(x) if x >= lo && x <= hi => x,
            Some(x) => {
                self.fail(
                    field,
                    x,
                    format!("must be a whole number from {lo} to {hi}"),
                );
                default
            }
        }
    }

    fn weights_sum(&mut self, fields: &str, ws: &[f64]) {
        let sum: f64 = ws.iter().sum();
        if (sum - 1.0).abs() > 1e-6 {
            let shown = if sum.abs() < 1e9 {
                format!("{sum:.6}")
            } else {
                crate::text::number(sum)
            };
            self.fail(
                fields,
                format!("{shown} (sum)"),
                "the weights must add up to 1",
            );
        }
    }
}

impl Checker {
    /// The arbiter's weights and thresholds.
    fn arbiter(&mut self, a: &ArbiterSpec) -> ArbiterPolicy {
        let arbiter = ArbiterPolicy {
            weight_deadline: self.unit_range(
                "arbiter.weight_deadline",
                a.weight_deadline,
                0.45,
                0.0,
                1.0,
            ),
            weight_importance: self.unit_range(
                "arbiter.weight_importance",
                a.weight_importance,
                0.35,
                0.0,
                1.0,
            ),
            weight_battery: self.unit_range(
                "arbiter.weight_battery",
                a.weight_battery,
                0.20,
                0.0,
                1.0,
            ),
            battery_saver_below: self.unit_range(
                "arbiter.battery_saver_below",
                a.battery_saver_below,
                0.15,
                0.0,
                1.0,
            ),
            risk_boost_above: self.unit_range(
                "arbiter.risk_boost_above",
                a.risk_boost_above,
                0.8,
                0.0,
                1.0,
            ),
            risk_boost_deadline_weight: self.unit_range(
                "arbiter.risk_boost_deadline_weight",
                a.risk_boost_deadline_weight,
                0.6,
                0.0,
                1.0,
            ),
            dispatch: a.dispatch.unwrap_or_default(),
            heavy_classes: a
                .heavy_classes
                .clone()
                .unwrap_or_else(|| alloc::vec!["llm".to_string()]),
        };
        self.weights_sum(
            "arbiter.weight_deadline + weight_importance + weight_battery",
            &[
                arbiter.weight_deadline,
                arbiter.weight_importance,
                arbiter.weight_battery,
            ],
        );
        for (i, class) in arbiter.heavy_classes.iter().enumerate() {
            if class.trim().is_empty() {
                self.fail(
                    &format!("arbiter.heavy_classes[{i}]"),
                    "\"\"",
                    "a class name must not be empty",
                );
            }
        }
        arbiter
    }

    /// The importance of each class (the document's over the reference ones) and the
    /// default for classes without one.
    fn importance(&mut self, spec: &BTreeMap<String, f64>) -> (BTreeMap<String, f64>, f64) {
        // Reference importances (S2 examples: an AR annotation frame 0.92); the document's
        // entries override them.
        let mut importance: BTreeMap<String, f64> = DEFAULT_IMPORTANCE
            .iter()
            .map(|&(class, v)| (class.to_string(), v))
            .collect();
        let mut default_importance = 0.5;
        for (class, &v) in spec {
            let field = format!("importance.{}", crate::text::shorten(class, 40));
            let v = self.unit_range(&field, Some(v), 0.5, 0.0, 1.0);
            if class == "default" {
                default_importance = v;
            } else {
                importance.insert(class.clone(), v);
            }
        }
        (importance, default_importance)
    }

    /// The slot table's geometry.
    fn slots(&mut self, s: &SlotsSpec) -> SlotsPolicy {
        SlotsPolicy {
            slot_len_micros: self.int_range(
                "slots.slot_len_micros",
                s.slot_len_micros,
                1000,
                10,
                1_000_000,
            ),
            horizon_slots: self.int_range(
                "slots.horizon_slots",
                s.horizon_slots,
                65_536,
                16,
                1 << 24,
            ),
        }
    }

    /// The LDTI's weights, thresholds, adaptation and actions.
    fn ldti(&mut self, l: &LdtiSpec) -> LdtiPolicy {
        let weights = LdtiWeights {
            alpha: self.unit_range("ldti.alpha", l.alpha, 0.4, 0.0, 1.0),
            beta: self.unit_range("ldti.beta", l.beta, 0.35, 0.0, 1.0),
            gamma: self.unit_range("ldti.gamma", l.gamma, 0.25, 0.0, 1.0),
        };
        self.weights_sum(
            "ldti.alpha + beta + gamma",
            &[weights.alpha, weights.beta, weights.gamma],
        );
        let thresholds = LevelThresholds {
            degraded_at: self.unit_range("ldti.degraded_at", l.degraded_at, 0.25, 0.0, 1.0),
            critical_at: self.unit_range("ldti.critical_at", l.critical_at, 0.6, 0.0, 1.0),
        };
        if thresholds.degraded_at >= thresholds.critical_at {
            self.fail(
                "ldti.degraded_at",
                thresholds.degraded_at,
                format!(
                    "must be below ldti.critical_at ({})",
                    thresholds.critical_at
                ),
            );
        }
        let d = ActionSwitches::default();
        LdtiPolicy {
            weights,
            thresholds,
            evaluate_hz: self.int_range("ldti.evaluate_hz", l.evaluate_hz, 120, 1, 10_000),
            adaptive_enabled: l.adaptive.enabled.unwrap_or(true),
            adaptive_window: self.int_range(
                "ldti.adaptive.window",
                l.adaptive.window,
                120,
                2,
                100_000,
            ),
            adaptive_smoothing: match l.adaptive.smoothing {
                Some(x) if !(x.is_finite() && (0.0..1.0).contains(&x)) => {
                    self.fail(
                        "ldti.adaptive.smoothing",
                        x,
                        "must be a number from 0 up to (not including) 1",
                    );
                    0.25
                }
                x => x.unwrap_or(0.25),
            },
            actions: ActionSwitches {
                scale_frequency: l.actions.scale_frequency.unwrap_or(d.scale_frequency),
                retransmit: l.actions.retransmit.unwrap_or(d.retransmit),
                circuit_break: l.actions.circuit_break.unwrap_or(d.circuit_break),
                use_cache: l.actions.use_cache.unwrap_or(d.use_cache),
            },
        }
    }

    /// The router's information gates.
    fn routing(&mut self, r: &RoutingSpec) -> RoutingPolicy {
        RoutingPolicy {
            enabled: r.enabled.unwrap_or(true),
            blur_min_laplacian_var: self.unit_range(
                "routing.blur_min_laplacian_var",
                r.blur_min_laplacian_var,
                30.0,
                0.0,
                1e9,
            ),
            dark_max_mean_luma: self.unit_range(
                "routing.dark_max_mean_luma",
                r.dark_max_mean_luma,
                20.0,
                0.0,
                255.0,
            ),
            vad_speech_threshold: self.unit_range(
                "routing.vad_speech_threshold",
                r.vad_speech_threshold,
                0.5,
                0.0,
                1.0,
            ),
        }
    }
}

impl TryFrom<PolicySpec> for Policy {
    type Error = PolicyErrors;

    fn try_from(spec: PolicySpec) -> Result<Self, Self::Error> {
        let mut c = Checker { errors: Vec::new() };
        if let Some(v) = spec.version
            && v != POLICY_VERSION
        {
            c.fail(
                "version",
                v,
                format!("this build reads policy version {POLICY_VERSION}"),
            );
        }

        let arbiter = c.arbiter(&spec.arbiter);
        let (importance, default_importance) = c.importance(&spec.importance);
        let slots = c.slots(&spec.slots);
        let ldti = c.ldti(&spec.ldti);
        let routing = c.routing(&spec.routing);

        let rungs = Rungs::check(&spec.rungs, &mut c.errors);

        if let Some(name) = &spec.name
            && name.chars().count() > MAX_NAME_CHARS
        {
            c.fail(
                "name",
                format_args!("{:?}", crate::text::shorten(name, 40)),
                format!("a policy name has at most {MAX_NAME_CHARS} characters"),
            );
        }

        if !c.errors.is_empty() {
            return Err(PolicyErrors(c.errors));
        }
        Ok(Policy {
            name: spec.name.unwrap_or_else(|| "default".to_string()),
            arbiter,
            importance,
            default_importance,
            slots,
            ldti,
            routing,
            rungs,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(json: &str) -> Result<Policy, PolicyErrors> {
        let spec: PolicySpec = serde_json::from_str(json).expect("parses");
        Policy::try_from(spec)
    }

    #[test]
    fn a_huge_number_is_shown_shortly() {
        let errors = check(r#"{"routing":{"blur_min_laplacian_var":1e300}}"#).unwrap_err();
        assert_eq!(errors.0[0].value, "1e300");
        assert_eq!(errors.0[0].reason, "must be a number from 0 to 1e9");
    }

    #[test]
    fn a_huge_name_is_refused_and_shown_shortened() {
        let name = "n".repeat(1_000_000);
        let errors = check(&format!(r#"{{"name":"{name}"}}"#)).unwrap_err();
        assert_eq!(errors.0.len(), 1);
        assert_eq!(errors.0[0].field, "name");
        assert!(errors.0[0].value.len() < 100, "{}", errors.0[0].value.len());
        assert!(check(&format!(r#"{{"name":"{}"}}"#, "n".repeat(MAX_NAME_CHARS))).is_ok());
    }

    #[test]
    fn empty_document_gives_the_reference_defaults() {
        let p = check("{}").unwrap();
        assert_eq!(p.arbiter().weight_deadline, 0.45);
        assert_eq!(p.arbiter().weight_importance, 0.35);
        assert_eq!(p.arbiter().weight_battery, 0.20);
        assert_eq!(p.arbiter().battery_saver_below, 0.15);
        assert_eq!(p.arbiter().risk_boost_above, 0.8);
        assert_eq!(p.arbiter().risk_boost_deadline_weight, 0.6);
        assert_eq!(p.arbiter().dispatch, DispatchRule::Edf);
        assert_eq!(p.ldti().weights, LdtiWeights::default());
        assert_eq!(p.ldti().thresholds, LevelThresholds::default());
        assert_eq!(p.ldti().adaptive_smoothing, 0.25);
        assert_eq!(p, Policy::default());
    }

    #[test]
    fn spec_round_trips() {
        let p = check(r#"{"name":"x","importance":{"vision":0.92,"default":0.3},"arbiter":{"dispatch":"score"}}"#)
            .unwrap();
        assert_eq!(p.importance("vision"), 0.92);
        assert_eq!(p.importance("unknown"), 0.3);
        let again = Policy::try_from(p.to_spec()).unwrap();
        assert_eq!(p, again);
        let json = serde_json::to_string(&p.to_spec()).unwrap();
        assert_eq!(check(&json).unwrap(), p);
    }

    #[test]
    fn battery_saver_prunes_heavy_classes_only() {
        let p = Policy::default();
        assert!(p.is_pruned("llm", 0.10));
        assert!(
            !p.is_pruned("llm", 0.15),
            "the threshold itself is not below it"
        );
        assert!(!p.is_pruned("vision", 0.01));
    }

    /// Each invalid document and the error it must produce (field, value, reason fragment).
    #[test]
    fn invalid_documents_name_field_value_and_range() {
        let table: &[(&str, &str, &str, &str)] = &[
            (r#"{"version":2}"#, "version", "2", "version 1"),
            (
                r#"{"arbiter":{"weight_deadline":1.5}}"#,
                "arbiter.weight_deadline",
                "1.5",
                "from 0 to 1",
            ),
            (
                r#"{"arbiter":{"weight_deadline":0.5}}"#,
                "arbiter.weight_deadline + weight_importance + weight_battery",
                "1.050000 (sum)",
                "add up to 1",
            ),
            (
                r#"{"arbiter":{"battery_saver_below":-0.1}}"#,
                "arbiter.battery_saver_below",
                "-0.1",
                "from 0 to 1",
            ),
            (
                r#"{"arbiter":{"heavy_classes":[" "]}}"#,
                "arbiter.heavy_classes[0]",
                "\"\"",
                "must not be empty",
            ),
            (
                r#"{"importance":{"vision":2}}"#,
                "importance.vision",
                "2",
                "from 0 to 1",
            ),
            (
                r#"{"slots":{"slot_len_micros":5}}"#,
                "slots.slot_len_micros",
                "5",
                "from 10 to 1000000",
            ),
            (
                r#"{"slots":{"horizon_slots":0}}"#,
                "slots.horizon_slots",
                "0",
                "from 16 to 16777216",
            ),
            (
                r#"{"ldti":{"alpha":0.5}}"#,
                "ldti.alpha + beta + gamma",
                "1.100000 (sum)",
                "add up to 1",
            ),
            (
                r#"{"ldti":{"degraded_at":0.7}}"#,
                "ldti.degraded_at",
                "0.7",
                "below ldti.critical_at (0.6)",
            ),
            (
                r#"{"ldti":{"evaluate_hz":0}}"#,
                "ldti.evaluate_hz",
                "0",
                "from 1 to 10000",
            ),
            (
                r#"{"ldti":{"adaptive":{"window":1}}}"#,
                "ldti.adaptive.window",
                "1",
                "from 2 to 100000",
            ),
            (
                r#"{"ldti":{"adaptive":{"smoothing":1.0}}}"#,
                "ldti.adaptive.smoothing",
                "1",
                "not including",
            ),
            (
                r#"{"routing":{"dark_max_mean_luma":300}}"#,
                "routing.dark_max_mean_luma",
                "300",
                "from 0 to 255",
            ),
            (
                r#"{"routing":{"vad_speech_threshold":-1}}"#,
                "routing.vad_speech_threshold",
                "-1",
                "from 0 to 1",
            ),
        ];
        for (doc, field, value, reason) in table {
            let errs = check(doc).expect_err(doc);
            let e = errs
                .0
                .iter()
                .find(|e| e.field == *field)
                .unwrap_or_else(|| panic!("{doc}: {errs}"));
            assert_eq!(e.value, *value, "{doc}");
            assert!(e.reason.contains(reason), "{doc}: {}", e.reason);
        }
    }

    #[test]
    fn rungs_are_read_from_toml_and_their_errors_join_the_others() {
        let doc = r#"
            [[rungs.vision]]
            name = "full"
            det_long_side = 320

            [[rungs.vision]]
            name = "small"
            det_long_side = 192
            max_lines = 2

            [[rungs.asr]]
            name = "window"
            span = "window"
        "#;
        let p = Policy::try_from(toml::from_str::<PolicySpec>(doc).expect("parses")).unwrap();
        let names: Vec<&str> = p.rungs().vision().iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["full", "small"]);
        assert_eq!(p.rungs().asr().len(), 1);
        assert_eq!(Policy::try_from(p.to_spec()).unwrap(), p);
        // Left out: the default rungs.
        assert_eq!(Policy::default().rungs(), &crate::rungs::Rungs::default());
        let errs = check(
            r#"{"slots":{"slot_len_micros":1},"rungs":{"vision":[{"name":"a","det_long_side":100}]}}"#,
        )
        .unwrap_err();
        let fields: Vec<&str> = errs.0.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(
            fields,
            ["slots.slot_len_micros", "rungs.vision[0].det_long_side"]
        );
    }

    #[test]
    fn all_errors_are_reported_at_once() {
        let errs =
            check(r#"{"slots":{"slot_len_micros":1},"ldti":{"evaluate_hz":0}}"#).unwrap_err();
        assert_eq!(errs.0.len(), 2, "{errs}");
        assert!(errs.to_string().contains('\n'));
    }

    #[test]
    fn unknown_fields_are_rejected_with_the_allowed_names() {
        let err = serde_json::from_str::<PolicySpec>(r#"{"arbiter":{"weigth_deadline":0.4}}"#)
            .unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("weigth_deadline") && msg.contains("weight_deadline"),
            "{msg}"
        );
        let err = serde_json::from_str::<PolicySpec>(r#"{"arbiter":{"dispatch":"fastest"}}"#)
            .unwrap_err();
        assert!(err.to_string().contains("edf"), "{err}");
    }
}
