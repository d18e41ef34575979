//! Write-then-rename files: a cache file is either complete and verified, or absent.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::fetch::FetchError;

/// A file being written under a temporary name in its final directory. Dropping it
/// without [`AtomicFile::commit`] removes the temporary file.
#[derive(Debug)]
pub(crate) struct AtomicFile {
    tmp: PathBuf,
    dest: PathBuf,
    out: Option<BufWriter<File>>,
    hasher: Sha256,
}

impl AtomicFile {
    /// Starts writing `dest` (creating its directory) under a hidden temporary name
    /// in the same directory, so the final rename never crosses file systems.
    pub(crate) fn create(dest: &Path) -> Result<Self, FetchError> {
        let dir = dest.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(|e| FetchError::io("create directory", dir, e))?;
        let name = dest
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "artifact".to_owned());
        let tmp = dir.join(format!(".{name}.partial-{}", std::process::id()));
        let file = File::create(&tmp).map_err(|e| FetchError::io("create", &tmp, e))?;
        Ok(Self {
            tmp,
            dest: dest.to_path_buf(),
            out: Some(BufWriter::with_capacity(1 << 20, file)),
            hasher: Sha256::new(),
        })
    }

    /// Appends bytes.
    pub(crate) fn write_all(&mut self, buf: &[u8]) -> Result<(), FetchError> {
        self.hasher.update(buf);
        match self.out.as_mut() {
            Some(out) => out
                .write_all(buf)
                .map_err(|e| FetchError::io("write", &self.tmp, e)),
            None => Ok(()),
        }
    }

    /// Checks the sha256 of what was written against `expected`, then flushes, syncs and
    /// renames the file into place. On a mismatch the temporary file is removed.
    pub(crate) fn commit(mut self, expected_sha256: &str) -> Result<PathBuf, FetchError> {
        let got = hex::encode(std::mem::take(&mut self.hasher).finalize());
        if got != expected_sha256 {
            return Err(FetchError::ChecksumMismatch {
                file: self.dest.clone(),
                expected: expected_sha256.to_owned(),
                got,
            });
        }
        if let Some(out) = self.out.take() {
            let file = out
                .into_inner()
                .map_err(|e| FetchError::io("write", &self.tmp, e.into_error()))?;
            file.sync_all()
                .map_err(|e| FetchError::io("sync", &self.tmp, e))?;
        }
        std::fs::rename(&self.tmp, &self.dest)
            .map_err(|e| FetchError::io("rename into place", &self.dest, e))?;
        Ok(self.dest.clone())
    }
}

/// Writes `bytes` to `dest` whole or not at all: under a temporary name in its directory,
/// synced, then renamed into place (a cache file another process may be reading).
pub fn write_whole(dest: &Path, bytes: &[u8]) -> Result<PathBuf, FetchError> {
    let mut file = AtomicFile::create(dest)?;
    file.write_all(bytes)?;
    file.commit(&crate::hash::sha256_hex(bytes))
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        // After a successful commit the temporary name no longer exists; otherwise this
        // removes the half-written file. Nothing useful can be done if removal fails.
        self.out.take();
        let _ = std::fs::remove_file(&self.tmp);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::sha256_hex;

    #[test]
    fn commit_renames_and_leaves_no_temp() {
        let dir = tempfile::tempdir().expect("tempdir");
        let dest = dir.path().join("sub/out.bin");
        let mut f = AtomicFile::create(&dest).expect("create");
        f.write_all(b"hello ").expect("write");
        f.write_all(b"world").expect("write");
        f.commit(&sha256_hex(b"hello world")).expect("commit");
        assert_eq!(std::fs::read(&dest).expect("read"), b"hello world");
        let names: Vec<_> = std::fs::read_dir(dest.parent().expect("parent"))
            .expect("list")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names.len(), 1);
    }

    #[test]
    fn mismatch_leaves_nothing_behind() {
        let dir = tempfile::tempdir().expect("tempdir");
        let dest = dir.path().join("out.bin");
        let mut f = AtomicFile::create(&dest).expect("create");
        f.write_all(b"corrupt").expect("write");
        let err = f.commit(&sha256_hex(b"expected")).expect_err("mismatch");
        let msg = err.to_string();
        assert!(msg.contains("out.bin") && msg.contains("expected"), "{msg}");
        assert_eq!(std::fs::read_dir(dir.path()).expect("list").count(), 0);
    }

    #[test]
    fn dropping_without_commit_removes_the_temp_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let dest = dir.path().join("out.bin");
        {
            let mut f = AtomicFile::create(&dest).expect("create");
            f.write_all(b"half").expect("write");
        }
        assert_eq!(std::fs::read_dir(dir.path()).expect("list").count(), 0);
    }
}
