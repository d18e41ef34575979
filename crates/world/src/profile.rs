//! Device latency profile files: reading and writing the one format
//! ([`mmsched_core::profile::DeviceProfile`]) that `mmsched profile` writes, `mmsched run`
//! takes its cost priors from, the simulator draws job costs from, and a scenario's
//! `[device] profile` names.
//!
//! Which profile: an explicit file (`--profile`, or the scenario's `[device] profile`), else
//! `$MMSCHED_HOME/profile.json` when it exists (measured on this device), else the shipped,
//! clearly labelled reference profile `profiles/reference-2core.json`.
//!
//! The simulator uses the `jobs` section: one job's P50, P95 and P99 per job kind; a cost is
//! drawn from the log-normal distribution with that median and P99, and the scheduler is
//! told the P95 (what the runtime's cost model converges to).

use std::path::{Path, PathBuf};

use mmsched_core::profile::{DeviceProfile, ProfileProblem};
use rand::Rng;
use rand_distr::{Distribution, StandardNormal};

/// The shipped reference profile.
pub const REFERENCE_PROFILE: &str = include_str!("../../../profiles/reference-2core.json");

/// Where the reference profile lives in the repository (named in outputs).
pub const REFERENCE_PATH: &str = "profiles/reference-2core.json";

/// Latency of one job of one kind, milliseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelLatency {
    /// Median.
    pub p50_ms: f64,
    /// 95th percentile (the scheduler's predicted cost).
    pub p95_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// Cost multiplier while another model computes on the other core (1: none, or not
    /// measured).
    pub corun_factor: f64,
}

/// A device latency profile and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    /// The document.
    pub doc: DeviceProfile,
    /// Where it was read from (a path, or the reference's).
    pub source: String,
}

/// Errors of profile files.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// Unreadable or unwritable file.
    #[error("cannot access latency profile {path}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// Not a profile.
    #[error(
        "latency profile {path} is not valid: {reason} (re-create it with `mmsched profile`, or see profiles/reference-2core.json for the format)"
    )]
    Format {
        /// The file.
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// A kind the scenario needs is missing.
    #[error(
        "latency profile {source_name} has no job cost for kind `{kind}` (it has: {have}); run `mmsched profile` with the models of that kind installed"
    )]
    MissingKind {
        /// Where the profile came from.
        source_name: String,
        /// The missing kind.
        kind: String,
        /// The kinds present.
        have: String,
    },
}

impl Profile {
    /// Parses a profile document; `source` names it in errors.
    pub fn parse(text: &str, source: &str) -> Result<Profile, ProfileError> {
        let format = |reason: String| ProfileError::Format {
            path: source.to_string(),
            reason,
        };
        let doc: DeviceProfile = serde_json::from_str(text).map_err(|e| format(e.to_string()))?;
        doc.validate()
            .map_err(|e: ProfileProblem| format(e.to_string()))?;
        Ok(Profile {
            doc,
            source: source.to_string(),
        })
    }

    /// The shipped reference profile.
    pub fn reference() -> Profile {
        Profile::parse(REFERENCE_PROFILE, &format!("{REFERENCE_PATH} (reference)"))
            .expect("the shipped profile is valid")
    }

    /// Reads a profile file.
    pub fn load(path: &Path) -> Result<Profile, ProfileError> {
        let text = std::fs::read_to_string(path).map_err(|source| ProfileError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Profile::parse(&text, &path.display().to_string())
    }

    /// `explicit` if given, else `$MMSCHED_HOME/profile.json` (home given) if it exists,
    /// else the reference profile.
    pub fn resolve(
        explicit: Option<&Path>,
        mmsched_home: Option<&Path>,
    ) -> Result<Profile, ProfileError> {
        if let Some(p) = explicit {
            return Profile::load(p);
        }
        if let Some(home) = mmsched_home {
            let path = home.join("profile.json");
            if path.exists() {
                return Profile::load(&path);
            }
        }
        Ok(Profile::reference())
    }

    /// Writes `doc` as pretty JSON (to a temporary name, then renamed, so a reader never
    /// sees half a file).
    pub fn save(doc: &DeviceProfile, path: &Path) -> Result<(), ProfileError> {
        let io = |source| ProfileError::Io {
            path: path.to_path_buf(),
            source,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let text = serde_json::to_string_pretty(doc).map_err(|e| ProfileError::Format {
            path: path.display().to_string(),
            reason: e.to_string(),
        })?;
        let tmp = path.with_extension("json.tmp");
        std::fs::write(&tmp, text).map_err(io)?;
        std::fs::rename(&tmp, path).map_err(io)
    }

    /// Whether this is the shipped reference rather than a measurement of this device.
    pub fn is_reference(&self) -> bool {
        self.source.contains("(reference)")
    }

    /// The latency of one job of `kind`.
    pub fn latency(&self, kind: &str) -> Result<ModelLatency, ProfileError> {
        let ms = |n: u64| n as f64 / 1e6;
        self.doc
            .job(kind)
            .map(|j| ModelLatency {
                p50_ms: ms(j.p50_nanos),
                p95_ms: ms(j.p95_nanos),
                p99_ms: ms(j.p99_nanos),
                corun_factor: j.corun_factor.unwrap_or(1.0),
            })
            .ok_or_else(|| ProfileError::MissingKind {
                source_name: self.source.clone(),
                kind: kind.to_string(),
                have: self.doc.jobs.keys().cloned().collect::<Vec<_>>().join(", "),
            })
    }
}

impl ModelLatency {
    /// A latency from a single figure (a scenario's `cost_ms`): P95 and P99 at 1.2× and
    /// 1.3× the median.
    pub fn from_median_ms(ms: f64) -> Self {
        Self {
            p50_ms: ms,
            p95_ms: ms * 1.2,
            p99_ms: ms * 1.3,
            corun_factor: 1.0,
        }
    }

    /// Draws one cost in nanoseconds: log-normal with this median and P99.
    pub fn sample_nanos<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        let sigma = (self.p99_ms / self.p50_ms).max(1.0).ln() / 2.326_347_874;
        let z: f64 = StandardNormal.sample(rng);
        (self.p50_ms * (sigma * z).exp() * 1e6).round().max(1.0) as u64
    }

    /// The P95 in nanoseconds (the scheduler's predicted cost).
    pub fn p95_nanos(&self) -> u64 {
        (self.p95_ms * 1e6).round().max(1.0) as u64
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
        assert!(p.doc.label.starts_with("REFERENCE") && p.is_reference());
        let v = p.latency("vision").expect("vision present");
        let mut rng = stream_rng(3, 3);
        let mut xs: Vec<f64> = (0..100_000)
            .map(|_| v.sample_nanos(&mut rng) as f64 / 1e6)
            .collect();
        assert!((quantile(&mut xs, 0.5) - 71.5).abs() < 1.0);
        assert!((quantile(&mut xs, 0.99) - 95.0).abs() < 2.5);
        // The stated P95 is the log-normal's own (within a millisecond).
        assert!((quantile(&mut xs, 0.95) - v.p95_ms).abs() < 1.0, "{v:?}");
        let err = p.latency("tts").unwrap_err().to_string();
        assert!(
            err.contains("vision") && err.contains("mmsched profile"),
            "{err}"
        );
    }

    #[test]
    fn bad_profiles_are_errors_and_a_saved_profile_reads_back() {
        assert!(Profile::parse("{}", "x").is_err());
        let bad = REFERENCE_PROFILE.replace("\"p50_nanos\": 63000", "\"p50_nanos\": 900000");
        let e = Profile::parse(&bad, "x").unwrap_err().to_string();
        assert!(e.contains("jobs.vad"), "{e}");
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("sub/profile.json");
        let r = Profile::reference();
        Profile::save(&r.doc, &path).expect("saves");
        let back = Profile::resolve(None, Some(&dir.path().join("sub"))).expect("reads");
        assert_eq!(back.doc, r.doc);
        assert!(!back.is_reference());
        let old = r#"{"label":"x","models":{"vad":{"p50_ms":2,"p99_ms":3}}}"#;
        let e = Profile::parse(old, "old.json").unwrap_err().to_string();
        assert!(
            e.contains("old.json") && e.contains("mmsched profile"),
            "{e}"
        );
    }
}
