//! Where artifacts live: the cache root (`$MMSCHED_HOME`, default `~/.cache/mmsched`) and
//! the fixed layout below it.

use std::path::{Path, PathBuf};

use crate::artifact::{Arch, Artifact};

/// Environment variable naming the cache root.
pub const HOME_VAR: &str = "MMSCHED_HOME";

/// The cache root: `$MMSCHED_HOME`, else `~/.cache/mmsched`, else `./.mmsched` when no
/// home directory is known.
pub fn cache_dir() -> PathBuf {
    if let Some(home) = std::env::var_os(HOME_VAR).filter(|v| !v.is_empty()) {
        return PathBuf::from(home);
    }
    match std::env::home_dir() {
        Some(h) => h.join(".cache").join("mmsched"),
        None => PathBuf::from(".mmsched"),
    }
}

/// Resolves artifact paths under one cache root, for the binaries of one architecture
/// (this machine's unless told otherwise: a cache can be filled here for a device).
///
/// Why a value and not only free functions: tests and the fetcher work on an explicit
/// root (a temporary directory) without touching the process environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelPaths {
    root: PathBuf,
    arch: Arch,
}

impl ModelPaths {
    /// Paths under the default cache root ([`cache_dir`]).
    pub fn from_env() -> Self {
        Self::new(cache_dir())
    }

    /// Paths under an explicit root, for this machine's architecture.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into(),
            arch: Arch::native(),
        }
    }

    /// The same cache, for the binaries of `arch` (its native library and checksums).
    pub fn for_arch(self, arch: Arch) -> Self {
        Self { arch, ..self }
    }

    /// The cache root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The architecture whose files these paths name.
    pub fn arch(&self) -> Arch {
        self.arch
    }

    /// Where `artifact` lives in this cache (ignores per-artifact overrides).
    pub fn cached(&self, artifact: Artifact) -> PathBuf {
        self.root.join(artifact.relative_path_for(self.arch))
    }

    /// The sha256 the cached `artifact` must have for this architecture.
    pub fn sha256(&self, artifact: Artifact) -> &'static str {
        artifact.sha256_for(self.arch)
    }

    /// Where `artifact` is read from: the user's own file if its override variable
    /// ([`Artifact::override_var`]) is set, else the cache path.
    pub fn path_of(&self, artifact: Artifact) -> PathBuf {
        match std::env::var_os(artifact.override_var()).filter(|v| !v.is_empty()) {
            Some(p) => PathBuf::from(p),
            None => self.cached(artifact),
        }
    }

    /// The path of `artifact` if the file exists, else an error naming the fetch command.
    pub fn require(&self, artifact: Artifact) -> Result<PathBuf, MissingModel> {
        let path = self.path_of(artifact);
        if path.is_file() {
            Ok(path)
        } else {
            Err(MissingModel { artifact, path })
        }
    }
}

/// Where `artifact` is read from under the default cache root (see [`ModelPaths::path_of`]).
pub fn path_of(artifact: Artifact) -> PathBuf {
    ModelPaths::from_env().path_of(artifact)
}

/// The path of `artifact` under the default cache root, or an error naming the fetch command.
pub fn require(artifact: Artifact) -> Result<PathBuf, MissingModel> {
    ModelPaths::from_env().require(artifact)
}

/// A model file that is not in the cache.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "model `{}` not found at {}: run `mmsched models fetch` (or `mmsched models fetch --only {}`), \
     or set {} to your own file",
    artifact.name(), path.display(), artifact.name(), artifact.override_var()
)]
pub struct MissingModel {
    /// The artifact that is missing.
    pub artifact: Artifact,
    /// Where it was looked for.
    pub path: PathBuf,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_is_under_the_root() {
        let p = ModelPaths::new("/x");
        assert_eq!(
            p.cached(Artifact::Gemma3),
            PathBuf::from("/x/models/gemma3-270m/gemma-3-270m-q4_k_m.gguf")
        );
        assert_eq!(
            p.cached(Artifact::Beckett),
            PathBuf::from("/x/testdata/beckett.wav")
        );
    }

    #[test]
    fn a_cache_for_another_architecture_names_its_own_library() {
        let x86 = ModelPaths::new("/x").for_arch(Arch::X86_64);
        let arm = ModelPaths::new("/x").for_arch(Arch::Aarch64);
        assert_eq!(
            arm.cached(Artifact::OnnxRuntime),
            PathBuf::from("/x/lib/aarch64/libonnxruntime.so.1.32.0")
        );
        assert_ne!(
            x86.cached(Artifact::OnnxRuntime),
            arm.cached(Artifact::OnnxRuntime)
        );
        assert_ne!(
            x86.sha256(Artifact::OnnxRuntime),
            arm.sha256(Artifact::OnnxRuntime)
        );
        assert_eq!(x86.cached(Artifact::Gemma3), arm.cached(Artifact::Gemma3));
    }

    #[test]
    fn missing_model_names_the_fetch_command() {
        let dir = tempfile::tempdir().expect("tempdir");
        let err = ModelPaths::new(dir.path())
            .require(Artifact::PpocrDet)
            .expect_err("empty cache");
        let msg = err.to_string();
        assert!(msg.contains("mmsched models fetch"), "{msg}");
        assert!(msg.contains("ppocr-det"), "{msg}");
    }
}
