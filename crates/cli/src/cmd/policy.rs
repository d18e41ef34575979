//! `mmsched policy …`: check a policy file, print the effective policy, print the schema.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Subcommand;
use mmsched_core::policy::{Policy, PolicySpec};

use crate::policy_file;

#[derive(Debug, Subcommand)]
pub enum PolicyCommand {
    /// Validate a policy file (TOML, or JSON by extension). Exit 0 when valid; otherwise
    /// print every problem with its field, value and allowed range, and exit 1.
    Check {
        /// The policy file to check.
        file: PathBuf,
        /// Print the result as JSON: {"valid": bool, "errors": [...]}.
        #[arg(long)]
        json: bool,
    },
    /// Print the effective policy (all defaults filled in) as JSON.
    Show {
        /// The policy file; the built-in defaults when omitted.
        file: Option<PathBuf>,
    },
    /// Print the JSON Schema of the policy document.
    Schema,
}

pub fn run(cmd: PolicyCommand) -> Result<ExitCode> {
    match cmd {
        PolicyCommand::Check { file, json } => match policy_file::load(&file) {
            Ok(p) => {
                if json {
                    outln!(
                        "{}",
                        serde_json::json!({"valid": true, "name": p.name(), "errors": []})
                    );
                } else {
                    outln!("{}: valid policy \"{}\"", file.display(), p.name());
                }
                Ok(ExitCode::SUCCESS)
            }
            Err(e) => {
                if json {
                    outln!(
                        "{}",
                        serde_json::json!({"valid": false, "errors": [format!("{e:#}")]})
                    );
                } else {
                    eprintln!("error: {e:#}");
                }
                Ok(ExitCode::FAILURE)
            }
        },
        PolicyCommand::Show { file } => {
            let p = match file {
                Some(f) => policy_file::load(&f)?,
                None => Policy::default(),
            };
            outln!("{}", serde_json::to_string_pretty(&p.to_spec())?);
            Ok(ExitCode::SUCCESS)
        }
        PolicyCommand::Schema => {
            outln!("{}", schema_json()?);
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// The policy document's JSON Schema, pretty-printed (kept in `schema/policy.schema.json`).
pub fn schema_json() -> Result<String> {
    let schema = schemars::schema_for!(PolicySpec);
    Ok(serde_json::to_string_pretty(&schema)?)
}

#[cfg(test)]
mod tests {
    /// The checked-in schema must match the policy types. `MMSCHED_BLESS=1` rewrites it.
    #[test]
    fn checked_in_schema_is_current() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../schema/policy.schema.json"
        );
        let current = format!("{}\n", super::schema_json().unwrap());
        if std::env::var_os("MMSCHED_BLESS").is_some() {
            std::fs::write(path, &current).unwrap();
        }
        let on_disk = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            on_disk == current,
            "schema/policy.schema.json is stale: run `MMSCHED_BLESS=1 cargo test -p mmsched checked_in_schema` and commit it"
        );
    }
}
