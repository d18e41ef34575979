//! `mmsched trace validate`: every problem in a trace file, by line number.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use serde_json::json;

/// Arguments of `mmsched trace validate`.
#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// The mmtrace NDJSON file to check.
    file: PathBuf,
    /// Print at most this many problems (all are counted).
    #[arg(long, value_name = "N", default_value_t = 20)]
    max_errors: usize,
    /// Print {"file", "valid_records", "errors": [{"line", "message"}]} as JSON.
    #[arg(long)]
    json: bool,
}

/// Runs `mmsched trace validate`; exits 1 if any line is bad.
pub fn run(a: ValidateArgs) -> Result<ExitCode> {
    let v = mmsched_trace::format::validate(super::open(&a.file)?);
    if a.json {
        let errors: Vec<_> = v
            .errors
            .iter()
            .take(a.max_errors)
            .map(|e| json!({"line": e.line, "message": e.message}))
            .collect();
        outln!(
            "{}",
            json!({"file": a.file, "valid_records": v.valid_records, "error_count": v.errors.len(), "errors": errors})
        );
    } else if v.errors.is_empty() {
        outln!(
            "{}: ok, {} valid records",
            a.file.display(),
            v.valid_records
        );
    } else {
        for e in v.errors.iter().take(a.max_errors) {
            outln!("{}:{}: {}", a.file.display(), e.line, e.message);
        }
        if v.errors.len() > a.max_errors {
            outln!("… and {} more problems", v.errors.len() - a.max_errors);
        }
        outln!(
            "{}: {} bad lines, {} valid records",
            a.file.display(),
            v.errors.len(),
            v.valid_records
        );
    }
    Ok(if v.errors.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
