//! Device latency profiles: what one job of each model kind costs on the device.
//!
//! The simulator draws job costs from a profile: `$MMSCHED_HOME/profile.json` when it
//! exists (measured on the device), else the shipped, clearly labelled reference profile
//! `profiles/reference-2core.json` (figures from the project's model measurements on a
//! 2-core machine). Format:
//!
//! ```json
//! { "label": "…", "device": "…",
//!   "models": { "vision": { "p50_ms": 71.5, "p99_ms": 95.0, "unit": "frame" }, … } }
//! ```
//!
//! Keys of `models` are the model kinds `vision`, `vad`, `asr`, `llm`. A cost is drawn
//! from the log-normal distribution with that median and P99.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rand::Rng;
use rand_distr::{Distribution, StandardNormal};
use serde::{Deserialize, Serialize};

/// The shipped reference profile.
pub const REFERENCE_PROFILE: &str = include_str!("../../../profiles/reference-2core.json");

/// Latency of one job of one model kind.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ModelLatency {
    /// Median, ms.
    pub p50_ms: f64,
    /// 99th percentile, ms.
    pub p99_ms: f64,
}

/// A device latency profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    /// What this profile is and where its numbers come from.
    pub label: String,
    /// The device it describes.
    #[serde(default)]
    pub device: String,
    /// Per model kind.
    pub models: BTreeMap<String, ModelEntry>,
}

/// One entry of `models`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelEntry {
    /// Median, ms.
    pub p50_ms: f64,
    /// 99th percentile, ms.
    pub p99_ms: f64,
    /// What one job is.
    #[serde(default)]
    pub unit: String,
}

/// Errors of profile loading.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// Unreadable file.
    #[error("cannot read latency profile {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// Not a profile.
    #[error(
        "latency profile {path} is not valid: {reason} (expected {{\"label\": …, \"models\": {{\"vision\": {{\"p50_ms\": …, \"p99_ms\": …}}, …}}}})"
    )]
    Format {
        /// The file.
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// A kind the scenario needs is missing.
    #[error("latency profile `{label}` has no entry for model kind `{kind}` (it has: {have})")]
    MissingKind {
        /// The profile label.
        label: String,
        /// The missing kind.
        kind: String,
        /// The kinds present.
        have: String,
    },
}

impl Profile {
    /// Parses a profile document; `path` names it in errors.
    pub fn parse(text: &str, path: &str) -> Result<Profile, ProfileError> {
        let p: Profile = serde_json::from_str(text).map_err(|e| ProfileError::Format {
            path: path.to_string(),
            reason: e.to_string(),
        })?;
        for (k, m) in &p.models {
            if !(m.p50_ms.is_finite() && m.p50_ms > 0.0 && m.p99_ms >= m.p50_ms) {
                return Err(ProfileError::Format {
                    path: path.to_string(),
                    reason: format!(
                        "models.{k}: need 0 < p50_ms ≤ p99_ms, got {} / {}",
                        m.p50_ms, m.p99_ms
                    ),
                });
            }
        }
        Ok(p)
    }

    /// The shipped reference profile.
    pub fn reference() -> Profile {
        Profile::parse(REFERENCE_PROFILE, "profiles/reference-2core.json")
            .expect("the shipped profile is valid")
    }

    /// `$MMSCHED_HOME/profile.json` (home given) if it exists, else the reference profile.
    /// Returns the profile and where it came from.
    pub fn load_default(mmsched_home: Option<&Path>) -> Result<(Profile, String), ProfileError> {
        if let Some(home) = mmsched_home {
            let path = home.join("profile.json");
            if path.exists() {
                let text = std::fs::read_to_string(&path).map_err(|source| ProfileError::Io {
                    path: path.clone(),
                    source,
                })?;
                let p = Profile::parse(&text, &path.display().to_string())?;
                return Ok((p, path.display().to_string()));
            }
        }
        Ok((
            Profile::reference(),
            "profiles/reference-2core.json (reference)".into(),
        ))
    }

    /// Loads a profile file.
    pub fn load(path: &Path) -> Result<Profile, ProfileError> {
        let text = std::fs::read_to_string(path).map_err(|source| ProfileError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Profile::parse(&text, &path.display().to_string())
    }

    /// The latency of a model kind.
    pub fn latency(&self, kind: &str) -> Result<ModelLatency, ProfileError> {
        self.models
            .get(kind)
            .map(|m| ModelLatency {
                p50_ms: m.p50_ms,
                p99_ms: m.p99_ms,
            })
            .ok_or_else(|| ProfileError::MissingKind {
                label: self.label.chars().take(40).collect(),
                kind: kind.to_string(),
                have: self.models.keys().cloned().collect::<Vec<_>>().join(", "),
            })
    }
}

impl ModelLatency {
    /// Draws one cost in nanoseconds: log-normal with this median and P99.
    pub fn sample_nanos<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        let sigma = (self.p99_ms / self.p50_ms).ln() / 2.326_347_874;
        let z: f64 = StandardNormal.sample(rng);
        (self.p50_ms * (sigma * z).exp() * 1e6).round().max(1.0) as u64
    }

    /// The median in nanoseconds (the scheduler's predicted cost).
    pub fn predicted_nanos(&self) -> u64 {
        (self.p50_ms * 1e6).round().max(1.0) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::stream_rng;
    use crate::stats::quantile;

    #[test]
    fn reference_profile_loads_and_samples_its_quantiles() {
        let p = Profile::reference();
        assert!(p.label.starts_with("REFERENCE"));
        let v = p.latency("vision").expect("vision present");
        let mut rng = stream_rng(3, 3);
        let mut xs: Vec<f64> = (0..100_000)
            .map(|_| v.sample_nanos(&mut rng) as f64 / 1e6)
            .collect();
        assert!((quantile(&mut xs, 0.5) - 71.5).abs() < 1.0);
        assert!((quantile(&mut xs, 0.99) - 95.0).abs() < 2.5);
        assert!(p.latency("tts").unwrap_err().to_string().contains("vision"));
    }

    #[test]
    fn bad_profiles_are_errors() {
        assert!(Profile::parse("{}", "x").is_err());
        let e = Profile::parse(
            r#"{"label":"x","models":{"vad":{"p50_ms":2,"p99_ms":1}}}"#,
            "x",
        );
        assert!(e.unwrap_err().to_string().contains("models.vad"));
    }
}
