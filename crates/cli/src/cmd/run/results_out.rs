//! `mmsched run --results FILE|-`: one NDJSON line per result, written and flushed as the
//! run produces it, so another program can follow the file (or the pipe) live.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use anyhow::{Context, Result};
use mmsched_pipeline::results::ResultRecord;

/// Where results go.
pub struct ResultsOut {
    out: Box<dyn Write>,
    shown: String,
    error: Option<std::io::Error>,
    written: u64,
}

impl ResultsOut {
    /// Results to `path`, or to standard output for `-`.
    pub fn open(path: &Path) -> Result<Self> {
        let (out, shown): (Box<dyn Write>, String) = if path == Path::new("-") {
            (Box::new(std::io::stdout()), "standard output".into())
        } else {
            let file = File::create(path).with_context(|| {
                format!(
                    "cannot create the results file {}: pass --results a writable path, or - for standard output",
                    path.display()
                )
            })?;
            (Box::new(BufWriter::new(file)), path.display().to_string())
        };
        Ok(Self {
            out,
            shown,
            error: None,
            written: 0,
        })
    }

    /// Writes one record as a line and flushes it. After a write error (a closed pipe, a
    /// full disk) nothing more is written; [`ResultsOut::finish`] reports it.
    pub fn write(&mut self, r: &ResultRecord) {
        if self.error.is_some() {
            return;
        }
        let line = r.to_json_line();
        match writeln!(self.out, "{line}").and_then(|()| self.out.flush()) {
            Ok(()) => self.written += 1,
            Err(e) => self.error = Some(e),
        }
    }

    /// How many records were written; the first write error, if any.
    pub fn finish(mut self) -> Result<u64> {
        let flushed = self.out.flush();
        if let Some(e) = self.error.take() {
            return Err(e).with_context(|| format!("writing results to {}", self.shown));
        }
        flushed.with_context(|| format!("writing results to {}", self.shown))?;
        Ok(self.written)
    }
}
