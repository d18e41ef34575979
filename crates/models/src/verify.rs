//! Checking a cached model file against its pinned sha256 before it is loaded: a flipped
//! byte in a GGUF or ONNX file otherwise loads and produces garbage without a word.
//!
//! Hashing Gemma's 250 MB on every start would cost about a second, so the verdict is kept:
//! one small JSON file per artifact under `<cache>/verified/`, keyed by the file's path,
//! size and modification time. A file that is replaced or touched is hashed again. A user's
//! own file (`MMSCHED_MODEL_<NAME>`) has no pinned checksum; its loader checks its header.

use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use serde::{Deserialize, Serialize};

use crate::artifact::Artifact;
use crate::cache::{MissingModel, ModelPaths};
use crate::hash::sha256_file;

/// Why a model file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// Not in the cache.
    #[error(transparent)]
    Missing(#[from] MissingModel),
    /// In the cache, but not the pinned file.
    #[error(
        "model file {} is corrupt: its sha256 is {found}, not the pinned {expected}; run `mmsched models fetch --only {}` to fetch it again",
        path.display(), artifact.name()
    )]
    Corrupt {
        /// The artifact.
        artifact: Artifact,
        /// The file.
        path: PathBuf,
        /// The pinned sha256.
        expected: &'static str,
        /// What the file hashes to.
        found: String,
    },
    /// The file could not be read.
    #[error("cannot read model file {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

/// A remembered verdict: this file, at this size and modification time, had this sha256.
#[derive(Debug, Serialize, Deserialize, PartialEq, Eq)]
struct Verdict {
    path: PathBuf,
    size: u64,
    mtime_nanos: u64,
    sha256: String,
}

impl ModelPaths {
    /// The path of `artifact`, after checking a cached file against its pinned sha256 (once
    /// per file version; the verdict is remembered under `<cache>/verified/`). A user's own
    /// file given through the override variable is returned unchecked.
    pub fn verified(&self, artifact: Artifact) -> Result<PathBuf, ModelError> {
        let path = self.require(artifact)?;
        if path != self.cached(artifact) {
            return Ok(path);
        }
        let read = |source| ModelError::Read {
            path: path.clone(),
            source,
        };
        let meta = std::fs::metadata(&path).map_err(read)?;
        let mtime_nanos = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
        let expected = self.sha256(artifact);
        let record = self.verdict_path(artifact);
        let remembered = std::fs::read(&record)
            .ok()
            .and_then(|b| serde_json::from_slice::<Verdict>(&b).ok());
        if let Some(v) = remembered
            && v.path == path
            && v.size == meta.len()
            && v.mtime_nanos == mtime_nanos
            && v.sha256 == expected
        {
            return Ok(path);
        }
        let found = sha256_file(&path, |_| {}).map_err(read)?;
        if found != expected {
            return Err(ModelError::Corrupt {
                artifact,
                path,
                expected,
                found,
            });
        }
        let verdict = Verdict {
            path: path.clone(),
            size: meta.len(),
            mtime_nanos,
            sha256: found,
        };
        // A read-only cache only costs the next start another hash, so a failed write is
        // not an error.
        let _ = remember(&record, &verdict);
        Ok(path)
    }

    fn verdict_path(&self, artifact: Artifact) -> PathBuf {
        self.root()
            .join("verified")
            .join(format!("{}.json", artifact.name()))
    }
}

/// Writes the verdict under a temporary name, then renames it into place, so concurrent
/// starts never read half a record.
fn remember(record: &Path, verdict: &Verdict) -> std::io::Result<()> {
    let dir = record.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let tmp = dir.join(format!(".verdict-{}.tmp", std::process::id()));
    std::fs::write(
        &tmp,
        serde_json::to_vec(verdict).map_err(std::io::Error::other)?,
    )?;
    std::fs::rename(&tmp, record)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cache whose "Beckett" file is `bytes` (its real sha256 is pinned, so anything
    /// else is corrupt).
    fn cache_with(bytes: &[u8]) -> (tempfile::TempDir, ModelPaths) {
        let dir = tempfile::tempdir().expect("tempdir");
        let paths = ModelPaths::new(dir.path());
        let f = paths.cached(Artifact::Beckett);
        std::fs::create_dir_all(f.parent().expect("parent")).expect("mkdir");
        std::fs::write(&f, bytes).expect("write");
        (dir, paths)
    }

    #[test]
    fn a_wrong_file_is_corrupt_and_the_message_names_the_fix() {
        let (_d, paths) = cache_with(b"not the recording");
        let e = paths.verified(Artifact::Beckett).expect_err("corrupt");
        let msg = e.to_string();
        assert!(matches!(e, ModelError::Corrupt { .. }), "{msg}");
        assert!(msg.contains("beckett.wav is corrupt"), "{msg}");
        assert!(msg.contains("mmsched models fetch --only beckett"), "{msg}");
        assert!(
            !paths.verdict_path(Artifact::Beckett).exists(),
            "no verdict is remembered for a bad file"
        );
    }

    #[test]
    fn a_missing_file_is_missing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let e = ModelPaths::new(dir.path()).verified(Artifact::Gemma3);
        assert!(matches!(e, Err(ModelError::Missing(_))));
    }

    #[test]
    fn a_remembered_verdict_holds_only_for_the_same_size_and_time() {
        let (_d, paths) = cache_with(b"xyz");
        let f = paths.cached(Artifact::Beckett);
        let meta = std::fs::metadata(&f).expect("meta");
        let mtime_nanos = meta
            .modified()
            .expect("mtime")
            .duration_since(UNIX_EPOCH)
            .expect("after 1970")
            .as_nanos() as u64;
        // A verdict as if the file had been hashed good: it is trusted without hashing.
        let good = Verdict {
            path: f.clone(),
            size: 3,
            mtime_nanos,
            sha256: Artifact::Beckett.sha256().to_string(),
        };
        remember(&paths.verdict_path(Artifact::Beckett), &good).expect("remember");
        assert_eq!(paths.verified(Artifact::Beckett).expect("trusted"), f);
        // The same file grown by a byte: the verdict no longer applies.
        std::fs::write(&f, b"xyzw").expect("rewrite");
        assert!(matches!(
            paths.verified(Artifact::Beckett),
            Err(ModelError::Corrupt { .. })
        ));
    }
}
