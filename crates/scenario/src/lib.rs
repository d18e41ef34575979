//! # mmsched-scenario — the scenario file format
//!
//! A scenario says what runs on the device and what the world does to it: the `models`, the
//! sensor `streams` (rates, SLAs, importance, clocks, jitter), the `battery` curve and timed
//! `episodes` (blur, darkness, jitter, temperature, packet loss, Wi-Fi switching, load
//! spikes, vibration). The simulator (`mmsched sim soak`) and the runtime (`mmsched run`)
//! read the same files. The format is documented in `docs/scenario-format.md`.
//!
//! Parsing follows "parse, don't validate": [`Scenario::from_toml`] returns either a
//! scenario whose every value is in range, or a [`ScenarioError`] naming the line, the field
//! and the allowed values. It never panics on user input.
#![deny(missing_docs)]

mod model;
mod source_check;
mod validate;

pub use model::*;
/// A TOML table as a `[[models]]` entry holds it (`image`, `classes`).
pub use toml::Table as TomlTable;

use std::path::Path;

/// The scenarios shipped with mmsched, by name, with their file contents.
pub const BUILTIN: [(&str, &str); 3] = [
    (
        "ar-glasses",
        include_str!("../../../scenarios/ar-glasses.toml"),
    ),
    ("car", include_str!("../../../scenarios/car.toml")),
    (
        "inspection",
        include_str!("../../../scenarios/inspection.toml"),
    ),
];

/// The default scenario.
pub const DEFAULT_SCENARIO: &str = "ar-glasses";

/// The largest scenario file read (a scenario is a few KiB of TOML).
pub const SCENARIO_FILE_CAP: u64 = 1 << 20;

/// A problem with a scenario file.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// TOML syntax or a field of the wrong type / unknown field.
    #[error("{source_name}:{line}: {message}")]
    Parse {
        /// The file (or built-in name).
        source_name: String,
        /// 1-based line of the problem.
        line: usize,
        /// What is wrong, with the allowed values where serde knows them.
        message: String,
    },
    /// A value out of range or inconsistent with the rest of the file.
    #[error("{source_name}:{line}: {field} = {value}: {reason}")]
    Invalid {
        /// The file (or built-in name).
        source_name: String,
        /// 1-based line of the entry holding the field.
        line: usize,
        /// Dotted path of the field, e.g. `streams[1].importance`.
        field: String,
        /// The value given.
        value: String,
        /// Why it is wrong and what is allowed.
        reason: String,
    },
    /// The file could not be read, or is far larger than a scenario.
    #[error(transparent)]
    Read(#[from] mmsched_core::bounded::ReadCapError),
    /// Neither a built-in name nor an existing file.
    #[error("unknown scenario `{name}`: use one of {} or the path of a scenario file", BUILTIN.iter().map(|b| b.0).collect::<Vec<_>>().join(", "))]
    Unknown {
        /// What was asked for.
        name: String,
    },
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

impl Scenario {
    /// Parses and checks a scenario document. `source_name` names it in errors; relative
    /// source paths are taken from the working directory.
    pub fn from_toml(text: &str, source_name: &str) -> Result<Scenario, ScenarioError> {
        Self::from_toml_in(text, source_name, None)
    }

    /// Like [`Scenario::from_toml`], with relative source paths taken from `base_dir`
    /// (the scenario file's folder).
    pub fn from_toml_in(
        text: &str,
        source_name: &str,
        base_dir: Option<&Path>,
    ) -> Result<Scenario, ScenarioError> {
        let spec: ScenarioSpec = toml::from_str(text).map_err(|e| {
            let line = e.span().map_or(1, |s| line_of(text, s.start));
            let mut message = e.message().trim().to_string();
            // Type errors point at a value; name the key written on that line.
            if let Some((key, _)) = text.lines().nth(line - 1).and_then(|l| l.split_once('='))
                && !message.contains('`')
            {
                message = format!("{message} (field `{}`)", key.trim());
            }
            ScenarioError::Parse {
                source_name: source_name.to_string(),
                line,
                message,
            }
        })?;
        validate::check(spec, text, source_name, base_dir)
    }

    /// Loads a built-in scenario by name (`car`, `ar-glasses`, `inspection`) or a file.
    pub fn load(name_or_path: &str) -> Result<Scenario, ScenarioError> {
        if let Some((name, text)) = BUILTIN.iter().find(|b| b.0 == name_or_path) {
            return Scenario::from_toml(text, &format!("scenarios/{name}.toml"));
        }
        let path = Path::new(name_or_path);
        if !path.exists() {
            return Err(ScenarioError::Unknown {
                name: name_or_path.to_string(),
            });
        }
        let text =
            mmsched_core::bounded::read_capped_text(path, SCENARIO_FILE_CAP, "scenario file")?;
        let base = path.parent().filter(|p| !p.as_os_str().is_empty());
        Scenario::from_toml_in(&text, &path.display().to_string(), base)
    }
}
