//! `mmsched models list`: what is in the cache, where, and whether it verifies.

use std::path::PathBuf;

use serde::Serialize;

use crate::artifact::Artifact;
use crate::cache::ModelPaths;
use crate::hash::sha256_file;

/// The state of one artifact in the cache.
#[derive(Debug, Clone, Serialize)]
pub struct ArtifactStatus {
    /// Artifact name.
    pub name: &'static str,
    /// What it is for.
    pub role: &'static str,
    /// Where it is read from (the override file if one is set).
    pub path: PathBuf,
    /// Whether the path is a user override instead of the cache file.
    pub overridden: bool,
    /// Whether it is only fetched on request.
    pub optional: bool,
    /// Size in bytes (0 when absent).
    pub bytes: u64,
    /// Whether the file exists.
    pub present: bool,
    /// Whether its sha256 matches the pin (`None` for overrides: they are the user's file).
    pub verified: Option<bool>,
}

/// Inspects one artifact; hashes the file when `verify` is set (a full read).
pub fn status(paths: &ModelPaths, artifact: Artifact, verify: bool) -> ArtifactStatus {
    let path = paths.path_of(artifact);
    let overridden = path != paths.cached(artifact);
    let meta = std::fs::metadata(&path).ok().filter(|m| m.is_file());
    let present = meta.is_some();
    let verified = if overridden || !present || !verify {
        None
    } else {
        Some(sha256_file(&path, |_| {}).is_ok_and(|h| h == paths.sha256(artifact)))
    };
    ArtifactStatus {
        name: artifact.name(),
        role: artifact.role(),
        path,
        overridden,
        optional: artifact.optional(),
        bytes: meta.map(|m| m.len()).unwrap_or(0),
        present,
        verified,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::sha256_hex;

    #[test]
    fn absent_present_and_corrupt() {
        let dir = tempfile::tempdir().expect("tempdir");
        let paths = ModelPaths::new(dir.path());
        let s = status(&paths, Artifact::PpocrCls, true);
        assert!(!s.present && s.verified.is_none() && s.bytes == 0);
        let p = paths.cached(Artifact::PpocrCls);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(&p, b"not the model").expect("write");
        let s = status(&paths, Artifact::PpocrCls, true);
        assert!(s.present);
        assert_eq!(s.verified, Some(false));
        assert_ne!(sha256_hex(b"not the model"), Artifact::PpocrCls.sha256());
    }
}
