//! The device latency profile (S8): one format for what `mmsched profile` measures, what
//! `mmsched run` takes its cost priors from, what the simulator draws job costs from, and
//! what a scenario's `[device] profile` names. The shipped reference profile
//! (`profiles/reference-2core.json`) is a file of this format too.
//!
//! ```json
//! {
//!   "format_version": 1,
//!   "label": "…",
//!   "device": {"arch": "x86_64", "os": "linux", "cpu_model": "…", "logical_cores": 2},
//!   "entries": [
//!     {"model": "ppocr-v4-det", "engine": "tract", "input": "320x320", "threads": 1,
//!      "warmup_runs": 3, "runs": 20, "memory_bytes": 4745517,
//!      "stages": {"pre":  {"p50_nanos": …, "p95_nanos": …, "p99_nanos": …, "mean_nanos": …, "max_nanos": …},
//!                 "exec": {…}, "post": {…}, "total": {…}}}
//!   ],
//!   "jobs": {
//!     "vision": {"p50_nanos": …, "p95_nanos": …, "p99_nanos": …, "unit": "…", "from": "…"}, …
//!   },
//!   "rungs": {
//!     "vision": [
//!       {"name": "det320", "params": "det_long_side=320", "engine": "ort", "threads": 1,
//!        "jobs": 24, "job": {"p50_nanos": …, …},
//!        "steps": {"detect": {"per_job": 1.0, "unit": "…", "stats": {"p50_nanos": …, …}},
//!                  "recognize": {"per_job": 3.5, "unit": "one line", "stats": {…}}},
//!        "accuracy": {"inputs": "…", "samples": 24, "correct": 0.96, "accuracy": 0.98,
//!                     "cer": 0.004}}, …
//!     ],
//!     "asr": [ … ]
//!   }
//! }
//! ```
//!
//! `entries` are the raw measurements per (model, engine, input size). `jobs` are the costs
//! of one *scheduler job* per job kind (`vision`, `vad`, `asr`, `llm`) as `mmsched run`
//! makes them — what a scheduler predicts and a simulator draws — each naming the entry it
//! was derived from. `rungs` (absent in profiles written before rungs existed) holds, per
//! job kind, each quality rung the policy declares ([`crate::rungs`]), in the policy's order:
//! the cost of one job at that rung, of each kind of step it runs in, and its accuracy on
//! inputs whose truth is known. Only types and pure functions live here; reading and writing files is
//! the simulator's (`mmsched_world::profile`) and measuring is the backends'.

use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use serde::{Deserialize, Serialize};

use crate::time::Nanos;

/// Version of the profile format.
pub const FORMAT_VERSION: u32 = 1;

/// The job kinds a profile's `jobs` section may describe.
pub const JOB_KINDS: [&str; 4] = ["vision", "vad", "asr", "llm"];

/// Percentiles of one stage, nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Percentiles {
    /// Median.
    pub p50_nanos: Nanos,
    /// 95th percentile.
    pub p95_nanos: Nanos,
    /// 99th percentile.
    pub p99_nanos: Nanos,
    /// Mean.
    pub mean_nanos: Nanos,
    /// Largest sample.
    pub max_nanos: Nanos,
}

/// Percentiles of every stage and of the total.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct StageStats {
    /// Pre-processing.
    pub pre: Percentiles,
    /// Execution.
    pub exec: Percentiles,
    /// Post-processing.
    pub post: Percentiles,
    /// All three stages of one job.
    pub total: Percentiles,
}

/// One measured (model, engine, input size) combination.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfileEntry {
    /// The backend's name, e.g. `ppocr-v4-det`.
    pub model: String,
    /// The engine, e.g. `tract`, `ort`, `candle`.
    pub engine: String,
    /// A label for the input size, e.g. `320x320`, `chunk512`, `w320`.
    pub input: String,
    /// Threads the engine was allowed.
    pub threads: u32,
    /// Untimed runs before measuring.
    pub warmup_runs: u32,
    /// Timed runs.
    pub runs: u32,
    /// Memory held by the loaded model, bytes.
    pub memory_bytes: u64,
    /// Latency percentiles per stage.
    pub stages: StageStats,
}

/// The device the profile was measured on.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct DeviceInfo {
    /// CPU architecture.
    pub arch: String,
    /// Operating system.
    pub os: String,
    /// CPU model name, if known.
    pub cpu_model: String,
    /// Logical cores visible to the process.
    pub logical_cores: u32,
}

/// The cost of one scheduler job of a kind.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct JobCost {
    /// Median, nanoseconds.
    pub p50_nanos: Nanos,
    /// 95th percentile (what a scheduler predicts).
    pub p95_nanos: Nanos,
    /// 99th percentile.
    pub p99_nanos: Nanos,
    /// What one job is.
    #[serde(default)]
    pub unit: String,
    /// Where the figures come from (an entry `model/engine/input`, and how it was scaled).
    #[serde(default)]
    pub from: String,
    /// How much longer a job takes while another model computes on the other core (median
    /// with a neighbour over median alone, measured back to back by `mmsched profile`):
    /// the interference of two jobs on shared caches and memory. None: not measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub corun_factor: Option<f64>,
}

/// The cost of one kind of step of a job run in steps.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct StepCost {
    /// Steps of this kind one job runs, on average (e.g. decoded tokens per utterance).
    pub per_job: f64,
    /// What one step is (e.g. `one line`, `one encoder block`, `one token`).
    #[serde(default)]
    pub unit: String,
    /// Percentiles of one step.
    pub stats: Percentiles,
}

/// How often a rung's results are right, on inputs whose truth is known (scored by
/// [`crate::score`]).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RungAccuracy {
    /// What was scored (e.g. `24 generated signs 640x360, 70 lines`).
    pub inputs: String,
    /// Inputs scored (frames, utterances).
    pub samples: u32,
    /// Share of inputs whose result is correct, 0..=1 (OCR: every true line read exactly,
    /// case- and space-insensitive; speech: a word error rate of at most 0.1).
    pub correct: f64,
    /// Mean accuracy, 0..=1: OCR the share of true lines read exactly; speech 1 − WER
    /// (each utterance's floored at 0), averaged over utterances.
    pub accuracy: f64,
    /// OCR: character error rate over every true line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cer: Option<f64>,
    /// Speech: mean word error rate over the utterances.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wer: Option<f64>,
}

/// One quality rung measured on this device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RungProfile {
    /// The rung's name in the policy.
    pub name: String,
    /// Its parameters as the policy declared them when measured (e.g. `det_long_side=320`,
    /// `span=audio`); a rung whose parameters changed since needs measuring again.
    pub params: String,
    /// The engine it ran on (e.g. `ort`, `ggml-q8`).
    pub engine: String,
    /// Threads each step was granted.
    pub threads: u32,
    /// Jobs timed.
    pub jobs: u32,
    /// Cost of one whole job (every step of it, back to back).
    pub job: Percentiles,
    /// Cost per kind of step (`detect`, `recognize`; `mel`, `encoder-stem`,
    /// `encoder-layers`, `encoder-cross`, `encoder`, `decode`).
    #[serde(default)]
    pub steps: BTreeMap<String, StepCost>,
    /// How often its results are right.
    pub accuracy: RungAccuracy,
}

impl RungProfile {
    /// The cost of one step of `kind`, if this rung runs such steps.
    pub fn step(&self, kind: &str) -> Option<&StepCost> {
        self.steps.get(kind)
    }

    /// What is wrong with it, if anything.
    fn problem(&self) -> Option<String> {
        let ordered = |p: &Percentiles| {
            p.p50_nanos > 0 && p.p50_nanos <= p.p95_nanos && p.p95_nanos <= p.p99_nanos
        };
        let fraction = |v: f64| v.is_finite() && (0.0..=1.0).contains(&v);
        let rate = |v: Option<f64>| v.is_none_or(|v| v.is_finite() && v >= 0.0);
        let a = &self.accuracy;
        if self.jobs == 0 || !ordered(&self.job) {
            Some(format!(
                "its job cost needs jobs > 0 and 0 < p50_nanos ≤ p95_nanos ≤ p99_nanos, got {} jobs, {} / {} / {}",
                self.jobs, self.job.p50_nanos, self.job.p95_nanos, self.job.p99_nanos
            ))
        } else if let Some((kind, _)) = self
            .steps
            .iter()
            .find(|(_, s)| !(ordered(&s.stats) && s.per_job.is_finite() && s.per_job > 0.0))
        {
            Some(format!(
                "step `{kind}` needs per_job > 0 and 0 < p50_nanos ≤ p95_nanos ≤ p99_nanos"
            ))
        } else if !fraction(a.correct) || !fraction(a.accuracy) || !rate(a.cer) || !rate(a.wer) {
            Some(format!(
                "accuracy needs correct and accuracy in 0..=1 and cer, wer ≥ 0, got {} / {} / {:?} / {:?}",
                a.correct, a.accuracy, a.cer, a.wer
            ))
        } else {
            None
        }
    }
}

/// A device latency profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceProfile {
    /// [`FORMAT_VERSION`] when written.
    pub format_version: u32,
    /// What this profile is (e.g. "measured by mmsched profile", or a reference's source).
    #[serde(default)]
    pub label: String,
    /// Where it was measured.
    pub device: DeviceInfo,
    /// One entry per (model, engine, input).
    #[serde(default)]
    pub entries: Vec<ProfileEntry>,
    /// One job's cost per job kind (`vision`, `vad`, `asr`, `llm`).
    #[serde(default)]
    pub jobs: BTreeMap<String, JobCost>,
    /// Per job kind, each quality rung's cost and accuracy, richest first (absent in
    /// profiles measured before rungs existed).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub rungs: BTreeMap<String, Vec<RungProfile>>,
}

/// What is wrong with a profile.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProfileProblem {
    /// Another format version.
    #[error("format version {found} (this build reads {FORMAT_VERSION})")]
    Version {
        /// The version in the file.
        found: u32,
    },
    /// A co-run factor that is not a slowdown.
    #[error("job {kind}: corun_factor {factor} must be a number from 1 to 100")]
    BadCorun {
        /// The job kind.
        kind: String,
        /// The factor found, as written.
        factor: String,
    },
    /// A job cost that is not a cost.
    #[error("jobs.{kind}: need 0 < p50_nanos ≤ p95_nanos ≤ p99_nanos, got {p50} / {p95} / {p99}")]
    BadCost {
        /// The job kind.
        kind: String,
        /// Median.
        p50: Nanos,
        /// P95.
        p95: Nanos,
        /// P99.
        p99: Nanos,
    },
    /// A job kind nobody schedules: not built in, and not a name a model of your own can
    /// have.
    #[error(
        "jobs.{kind}: unknown job kind (known: vision, vad, asr, llm, or the name of a model of your own: letters, digits, `-`, `_`)"
    )]
    UnknownKind {
        /// The job kind.
        kind: String,
    },
    /// A rung's figures that cannot be right.
    #[error("rungs.{kind} `{name}`: {reason}")]
    BadRung {
        /// The job kind (or the unknown kind found).
        kind: String,
        /// The rung's name.
        name: String,
        /// What is wrong.
        reason: String,
    },
}

/// Whether `name` can be a model of your own's class (as the runtime's class table
/// accepts it): 1 to 40 letters, digits, `-` or `_`.
fn is_own_model_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 40
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

impl DeviceProfile {
    /// An empty profile of `device`.
    pub fn empty(device: DeviceInfo) -> Self {
        Self {
            format_version: FORMAT_VERSION,
            label: String::new(),
            device,
            entries: Vec::new(),
            jobs: BTreeMap::new(),
            rungs: BTreeMap::new(),
        }
    }

    /// Checks the version and the job costs (of the built-in kinds, and of models of your
    /// own, which `mmsched profile --model` measures under their name).
    pub fn validate(&self) -> Result<(), ProfileProblem> {
        if self.format_version != FORMAT_VERSION {
            return Err(ProfileProblem::Version {
                found: self.format_version,
            });
        }
        for (kind, c) in &self.jobs {
            if !JOB_KINDS.contains(&kind.as_str()) && !is_own_model_name(kind) {
                return Err(ProfileProblem::UnknownKind { kind: kind.clone() });
            }
            if !(c.p50_nanos > 0 && c.p50_nanos <= c.p95_nanos && c.p95_nanos <= c.p99_nanos) {
                return Err(ProfileProblem::BadCost {
                    kind: kind.clone(),
                    p50: c.p50_nanos,
                    p95: c.p95_nanos,
                    p99: c.p99_nanos,
                });
            }
            if let Some(f) = c.corun_factor
                && !(f.is_finite() && (1.0..=100.0).contains(&f))
            {
                return Err(ProfileProblem::BadCorun {
                    kind: kind.clone(),
                    factor: f.to_string(),
                });
            }
        }
        for (kind, rungs) in &self.rungs {
            let bad = |name: &str, reason: String| ProfileProblem::BadRung {
                kind: kind.clone(),
                name: name.to_string(),
                reason,
            };
            if !JOB_KINDS.contains(&kind.as_str()) {
                return Err(bad(
                    "",
                    "unknown job kind (known: vision, vad, asr, llm)".to_string(),
                ));
            }
            for (i, r) in rungs.iter().enumerate() {
                if rungs[..i].iter().any(|o| o.name == r.name) {
                    return Err(bad(&r.name, "measured twice".to_string()));
                }
                if let Some(reason) = r.problem() {
                    return Err(bad(&r.name, reason));
                }
            }
        }
        Ok(())
    }

    /// The measured rung `name` of job kind `kind`.
    pub fn rung(&self, kind: &str, name: &str) -> Option<&RungProfile> {
        self.rungs.get(kind)?.iter().find(|r| r.name == name)
    }

    /// Adds an entry, replacing any earlier one for the same (model, engine, input).
    pub fn upsert(&mut self, entry: ProfileEntry) {
        self.entries.retain(|e| {
            !(e.model == entry.model && e.engine == entry.engine && e.input == entry.input)
        });
        self.entries.push(entry);
    }

    /// The entry for this model, engine and input label.
    pub fn lookup(&self, model: &str, engine: &str, input: &str) -> Option<&ProfileEntry> {
        self.entries
            .iter()
            .find(|e| e.model == model && e.engine == engine && e.input == input)
    }

    /// Predicted cost of one run of an entry: the P95 of its total (or `None`).
    pub fn predict_p95_nanos(&self, model: &str, engine: &str, input: &str) -> Option<Nanos> {
        self.lookup(model, engine, input)
            .map(|e| e.stages.total.p95_nanos)
    }

    /// The cost of one job of `kind`, if the profile has it.
    pub fn job(&self, kind: &str) -> Option<&JobCost> {
        self.jobs.get(kind)
    }

    /// Records a job kind's cost from an entry's total, scaled by `num / den` (e.g. a 10 s
    /// clip's cost for a 2 s job: 2 / 10; a 16-token generation for one token: 1 / 17).
    /// Returns whether the entry was there.
    pub fn derive_job(
        &mut self,
        kind: &str,
        (model, engine, input): (&str, &str, &str),
        (num, den): (u64, u64),
        unit: &str,
    ) -> bool {
        let Some(e) = self.lookup(model, engine, input) else {
            return false;
        };
        let t = e.stages.total;
        let scale = |v: Nanos| (v.saturating_mul(num) / den.max(1)).max(1);
        let from = if num == den {
            format!("{model}/{engine}/{input}")
        } else {
            format!("{model}/{engine}/{input} × {num}/{den}")
        };
        let cost = JobCost {
            p50_nanos: scale(t.p50_nanos),
            p95_nanos: scale(t.p95_nanos).max(scale(t.p50_nanos)),
            p99_nanos: scale(t.p99_nanos).max(scale(t.p95_nanos)),
            unit: unit.into(),
            from,
            corun_factor: None,
        };
        self.jobs.insert(kind.into(), cost);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(model: &str, p50: Nanos, p95: Nanos, p99: Nanos) -> ProfileEntry {
        ProfileEntry {
            model: model.into(),
            engine: "tract".into(),
            input: "x".into(),
            threads: 1,
            warmup_runs: 1,
            runs: 2,
            memory_bytes: 10,
            stages: StageStats {
                total: Percentiles {
                    p50_nanos: p50,
                    p95_nanos: p95,
                    p99_nanos: p99,
                    ..Percentiles::default()
                },
                ..StageStats::default()
            },
        }
    }

    #[test]
    fn upserts_and_derives_scaled_job_costs() {
        let mut p = DeviceProfile::empty(DeviceInfo::default());
        p.upsert(entry("a", 5, 6, 7));
        p.upsert(entry("a", 10_000, 12_000, 15_000));
        assert_eq!(p.entries.len(), 1);
        assert_eq!(p.predict_p95_nanos("a", "tract", "x"), Some(12_000));
        assert!(p.derive_job("asr", ("a", "tract", "x"), (1, 5), "2 s"));
        let j = p.job("asr").expect("derived");
        assert_eq!((j.p50_nanos, j.p95_nanos, j.p99_nanos), (2000, 2400, 3000));
        assert!(j.from.contains("1/5"));
        assert!(!p.derive_job("vad", ("missing", "tract", "x"), (1, 1), ""));
        assert_eq!(p.validate(), Ok(()));
    }

    #[test]
    fn validation_names_the_problem() {
        let mut p = DeviceProfile::empty(DeviceInfo::default());
        p.jobs.insert(
            "vision".into(),
            JobCost {
                p50_nanos: 5,
                p95_nanos: 4,
                p99_nanos: 9,
                ..JobCost::default()
            },
        );
        assert!(matches!(p.validate(), Err(ProfileProblem::BadCost { .. })));
        p.jobs.clear();
        p.jobs.insert("text to speech".into(), JobCost::default());
        assert!(matches!(
            p.validate(),
            Err(ProfileProblem::UnknownKind { .. })
        ));
        // A model of your own's job cost, under its name.
        p.jobs.clear();
        let cost = JobCost {
            p50_nanos: 2,
            p95_nanos: 3,
            p99_nanos: 4,
            ..JobCost::default()
        };
        p.jobs.insert("orientation".into(), cost);
        assert_eq!(p.validate(), Ok(()));
        p.format_version = 9;
        assert!(p.validate().unwrap_err().to_string().contains("version 9"));
    }

    fn rung(name: &str) -> RungProfile {
        let p = Percentiles {
            p50_nanos: 10,
            p95_nanos: 12,
            p99_nanos: 15,
            mean_nanos: 11,
            max_nanos: 16,
        };
        RungProfile {
            name: name.into(),
            params: "det_long_side=320".into(),
            engine: "ort".into(),
            threads: 1,
            jobs: 3,
            job: p,
            steps: [(
                "detect".to_string(),
                StepCost {
                    per_job: 1.0,
                    unit: "one frame".into(),
                    stats: p,
                },
            )]
            .into_iter()
            .collect(),
            accuracy: RungAccuracy {
                inputs: "3 signs".into(),
                samples: 3,
                correct: 2.0 / 3.0,
                accuracy: 0.9,
                cer: Some(0.01),
                wer: None,
            },
        }
    }

    #[test]
    fn rungs_round_trip_and_an_old_profile_without_them_still_loads() {
        let mut p = DeviceProfile::empty(DeviceInfo::default());
        p.rungs
            .insert("vision".into(), alloc::vec![rung("det320"), rung("det256")]);
        assert_eq!(p.validate(), Ok(()));
        let json = serde_json::to_string(&p).expect("serialises");
        let back: DeviceProfile = serde_json::from_str(&json).expect("reads back");
        assert_eq!(back, p);
        let r = back.rung("vision", "det256").expect("found");
        assert_eq!(r.step("detect").map(|s| s.per_job), Some(1.0));
        assert!(back.rung("asr", "det256").is_none());
        // Written before rungs existed: no key at all.
        let old = r#"{"format_version":1,"device":{"arch":"x","os":"y","cpu_model":"z","logical_cores":2},"entries":[],"jobs":{}}"#;
        let old: DeviceProfile = serde_json::from_str(old).expect("an old profile loads");
        assert!(old.rungs.is_empty() && old.validate().is_ok());
        // And a profile without rungs writes no `rungs` key.
        let json = serde_json::to_string(&old).expect("serialises");
        assert!(!json.contains("rungs"), "{json}");
    }

    #[test]
    fn bad_rungs_are_named() {
        let mut p = DeviceProfile::empty(DeviceInfo::default());
        let mut bad = rung("det320");
        bad.accuracy.correct = 1.5;
        p.rungs.insert("vision".into(), alloc::vec![bad]);
        let e = p.validate().unwrap_err().to_string();
        assert!(
            e.contains("rungs.vision `det320`") && e.contains("accuracy"),
            "{e}"
        );
        let mut slow = rung("a");
        slow.job.p95_nanos = 5;
        p.rungs.insert("vision".into(), alloc::vec![slow]);
        assert!(p.validate().unwrap_err().to_string().contains("p95_nanos"));
        let mut step = rung("a");
        if let Some(s) = step.steps.get_mut("detect") {
            s.per_job = 0.0;
        }
        p.rungs.insert("vision".into(), alloc::vec![step]);
        assert!(p.validate().unwrap_err().to_string().contains("`detect`"));
        p.rungs
            .insert("vision".into(), alloc::vec![rung("a"), rung("a")]);
        assert!(p.validate().unwrap_err().to_string().contains("twice"));
        p.rungs.clear();
        p.rungs.insert("tts".into(), alloc::vec![rung("a")]);
        assert!(
            p.validate()
                .unwrap_err()
                .to_string()
                .contains("unknown job kind")
        );
    }
}
