//! Checking a cached model file against its pinned sha256 before it is used: a flipped
//! byte in a GGUF or ONNX file otherwise loads and produces garbage without a word.
//!
//! Every process hashes every pinned file it loads, in full, once: bit rot changes neither
//! a file's size nor its modification time, so no remembered verdict can stand in for the
//! hash. The cost is hidden where it can be: [`ModelPaths::begin_check`] starts a file's
//! hash on a thread of its own, so a run hashes Gemma's 250 MB while it loads the smaller
//! models, and each loader waits for its own file's verdict ([`verify_file`]) before the
//! engine reads a byte of it. The hash also reads the file into the page cache the loader
//! reads it from next.
//!
//! A user's own file (`MMSCHED_MODEL_<NAME>`, or a scenario's model path outside the
//! cache) has no pinned checksum; its loader checks its header.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::UNIX_EPOCH;

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

/// One file version: a file replaced while the process runs is hashed again.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct FileVersion {
    path: PathBuf,
    size: u64,
    mtime_nanos: u128,
}

impl FileVersion {
    fn of(path: &Path) -> std::io::Result<Self> {
        let meta = std::fs::metadata(path)?;
        let mtime_nanos = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos());
        Ok(Self {
            path: path.to_path_buf(),
            size: meta.len(),
            mtime_nanos,
        })
    }
}

/// What hashing a file gave: its sha256, or the read error (kind and text: an
/// `io::Error` cannot be shared between the threads that wait for it).
type Digest = Result<String, (std::io::ErrorKind, String)>;

/// A hash under way or done, shared by everyone who asked for it.
#[derive(Debug, Default)]
struct Hashing {
    digest: Mutex<Option<Digest>>,
    done: Condvar,
}

impl Hashing {
    fn wait(&self) -> Digest {
        let mut d = self.digest.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some(digest) = d.as_ref() {
                return digest.clone();
            }
            d = self.done.wait(d).unwrap_or_else(|p| p.into_inner());
        }
    }

    fn set(&self, digest: Digest) {
        *self.digest.lock().unwrap_or_else(|p| p.into_inner()) = Some(digest);
        self.done.notify_all();
    }
}

/// The hashes of this process, by file version.
fn hashes() -> &'static Mutex<HashMap<FileVersion, Arc<Hashing>>> {
    static HASHES: OnceLock<Mutex<HashMap<FileVersion, Arc<Hashing>>>> = OnceLock::new();
    HASHES.get_or_init(Default::default)
}

/// The hash of `version`, started on a thread of its own unless this process already
/// has it (or has it under way).
fn hashing(version: FileVersion) -> Arc<Hashing> {
    let mut map = hashes().lock().unwrap_or_else(|p| p.into_inner());
    if let Some(h) = map.get(&version) {
        return Arc::clone(h);
    }
    let h = Arc::new(Hashing::default());
    map.insert(version.clone(), Arc::clone(&h));
    drop(map);
    let worker = Arc::clone(&h);
    let path = version.path.clone();
    let hash = move || {
        worker.set(sha256_file(&path, |_| {}).map_err(|e| (e.kind(), e.to_string())));
    };
    let spawned = std::thread::Builder::new()
        .name("model-sha256".into())
        .spawn(hash.clone());
    if spawned.is_err() {
        // No thread to spare: hash here, before anyone waits.
        hash();
    }
    h
}

/// A pinned file whose hash is under way ([`ModelPaths::begin_check`]).
#[derive(Debug)]
pub struct Check {
    artifact: Artifact,
    expected: &'static str,
    path: PathBuf,
    state: Result<Arc<Hashing>, std::io::Error>,
}

impl Check {
    /// Waits for the hash and compares it with the pin.
    pub fn finish(self) -> Result<PathBuf, ModelError> {
        let path = self.path;
        let hashing = self.state.map_err(|source| ModelError::Read {
            path: path.clone(),
            source,
        })?;
        let found = hashing.wait().map_err(|(kind, text)| ModelError::Read {
            path: path.clone(),
            source: std::io::Error::new(kind, text),
        })?;
        let expected = self.expected;
        if found != expected {
            return Err(ModelError::Corrupt {
                artifact: self.artifact,
                path,
                expected,
                found,
            });
        }
        Ok(path)
    }
}

impl ModelPaths {
    /// Starts hashing `artifact`'s file on a thread of its own, unless this process hashed
    /// it already; `Ok(None)` for a user's own file, which has no pin. Hand the check to
    /// [`Check::finish`] before the file is used.
    pub fn begin_check(&self, artifact: Artifact) -> Result<Option<Check>, MissingModel> {
        let path = self.require(artifact)?;
        if path != self.cached(artifact) {
            return Ok(None);
        }
        let state = FileVersion::of(&path).map(hashing);
        Ok(Some(Check {
            artifact,
            expected: self.sha256(artifact),
            path,
            state,
        }))
    }

    /// The path of `artifact`, after checking a cached file against its pinned sha256 (a
    /// full hash, once per process and file version). A user's own file given through the
    /// override variable is returned unchecked.
    pub fn verified(&self, artifact: Artifact) -> Result<PathBuf, ModelError> {
        match self.begin_check(artifact)? {
            Some(check) => check.finish(),
            None => self.require(artifact).map_err(ModelError::from),
        }
    }

    /// The pinned artifact whose cache file `path` is, if it is one (compared after
    /// resolving links, so a path spelled another way is still recognised).
    pub fn pinned_at(&self, path: &Path) -> Option<Artifact> {
        let real = std::fs::canonicalize(path).ok()?;
        Artifact::ALL.into_iter().find(|&a| {
            let cached = self.cached(a);
            cached == path || std::fs::canonicalize(&cached).is_ok_and(|c| c == real)
        })
    }
}

/// Checks `path` against its pinned sha256 if it is a file of the model cache
/// (`$MMSCHED_HOME`), before an engine opens it; a file outside the cache passes (its
/// loader checks its header). Every engine calls this on every model file it loads.
pub fn verify_file(path: &Path) -> Result<(), ModelError> {
    let paths = ModelPaths::from_env();
    match paths.pinned_at(path) {
        Some(artifact) if paths.path_of(artifact) == paths.cached(artifact) => {
            paths.verified(artifact).map(drop)
        }
        _ => Ok(()),
    }
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
            msg.contains(&crate::hash::sha256_hex(b"not the recording")),
            "{msg}"
        );
    }

    #[test]
    fn a_missing_file_is_missing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let e = ModelPaths::new(dir.path()).verified(Artifact::Gemma3);
        assert!(matches!(e, Err(ModelError::Missing(_))));
    }

    #[test]
    fn a_file_changed_in_place_is_hashed_again() {
        let (_d, paths) = cache_with(b"xyz");
        assert!(paths.verified(Artifact::Beckett).is_err());
        // The pinned recording itself is not at hand here; what matters is that the new
        // content is what gets compared: a different wrong file gives its own hash.
        let f = paths.cached(Artifact::Beckett);
        std::fs::write(&f, b"xyzw").expect("rewrite");
        match paths.verified(Artifact::Beckett) {
            Err(ModelError::Corrupt { found, .. }) => {
                assert_eq!(found, crate::hash::sha256_hex(b"xyzw"));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn concurrent_checks_of_one_file_share_one_hash() {
        let (_d, paths) = cache_with(&vec![7u8; 3 << 20]);
        let checks: Vec<Check> = (0..4)
            .map(|_| {
                paths
                    .begin_check(Artifact::Beckett)
                    .expect("present")
                    .expect("cached")
            })
            .collect();
        let first = checks[0].state.as_ref().expect("hashing");
        for c in &checks[1..] {
            assert!(Arc::ptr_eq(first, c.state.as_ref().expect("hashing")));
        }
        for c in checks {
            assert!(matches!(c.finish(), Err(ModelError::Corrupt { .. })));
        }
    }

    #[test]
    fn a_cache_file_is_recognised_by_its_path_and_through_a_link() {
        let (d, paths) = cache_with(b"abc");
        let f = paths.cached(Artifact::Beckett);
        assert_eq!(paths.pinned_at(&f), Some(Artifact::Beckett));
        let link = d.path().join("elsewhere.wav");
        std::os::unix::fs::symlink(&f, &link).expect("link");
        assert_eq!(paths.pinned_at(&link), Some(Artifact::Beckett));
        assert_eq!(paths.pinned_at(Path::new("/etc/hostname")), None);
    }
}
