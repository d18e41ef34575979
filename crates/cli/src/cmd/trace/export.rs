//! `mmsched trace export`: Perfetto/Chrome JSON and OTLP/JSON from a saved trace.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use serde_json::json;

/// Arguments of `mmsched trace export`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("format").required(true).multiple(true).args(["perfetto", "otlp_json"])))]
pub struct ExportArgs {
    /// The mmtrace NDJSON file to convert.
    file: PathBuf,
    /// Write Chrome trace-event JSON here (open it at ui.perfetto.dev or chrome://tracing).
    #[arg(long, value_name = "OUT")]
    perfetto: Option<PathBuf>,
    /// Write OTLP/JSON here: line 1 an ExportTraceServiceRequest, line 2 an
    /// ExportMetricsServiceRequest with the GenAI metrics (the OpenTelemetry Collector's
    /// file format).
    #[arg(long, value_name = "OUT")]
    otlp_json: Option<PathBuf>,
    /// Print {"records", "perfetto", "otlp_json"} as JSON.
    #[arg(long)]
    json: bool,
}

fn create(path: &Path) -> Result<BufWriter<File>> {
    let f = File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
    Ok(BufWriter::new(f))
}

/// Runs `mmsched trace export`.
pub fn run(a: ExportArgs) -> Result<ExitCode> {
    let trace = super::read(&a.file)?;
    if let Some(out) = &a.perfetto {
        let doc = mmsched_trace::export::perfetto::to_chrome_json(&trace);
        let mut w = create(out)?;
        serde_json::to_writer(&mut w, &doc)
            .with_context(|| format!("cannot write {}", out.display()))?;
        w.flush()
            .with_context(|| format!("cannot write {}", out.display()))?;
        if !a.json {
            outln!(
                "wrote {} (Perfetto/Chrome trace JSON; open it at ui.perfetto.dev)",
                out.display()
            );
        }
    }
    if let Some(out) = &a.otlp_json {
        mmsched_trace::export::otlp::write_json_lines(&trace, create(out)?)
            .with_context(|| format!("cannot write {}", out.display()))?;
        if !a.json {
            outln!(
                "wrote {} (OTLP/JSON: traces request, then metrics request)",
                out.display()
            );
        }
    }
    if a.json {
        outln!(
            "{}",
            json!({"records": trace.records.len(), "perfetto": a.perfetto, "otlp_json": a.otlp_json})
        );
    }
    Ok(ExitCode::SUCCESS)
}
