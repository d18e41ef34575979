//! `mmsched run --results FILE|-`: one NDJSON line per result, written and flushed as the
//! run produces it, so another program can follow the file (or the pipe) live. When the
//! reader of standard output goes away (`--results - | head`), the run stops as if
//! interrupted, writes its report and exits with status 141. On SIGHUP a results file is
//! reopened at its path (created if logrotate moved it away; appended to otherwise).

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result};
use mmsched_pipeline::results::ResultRecord;

/// Where results go.
pub struct ResultsOut {
    out: Box<dyn Write>,
    shown: String,
    error: Option<std::io::Error>,
    written: u64,
    /// Set when standard output's reader went away: the run stops.
    stop: Option<Arc<AtomicBool>>,
    /// The file's path, and the flag a SIGHUP sets to reopen it (none for stdout).
    reopen: Option<(PathBuf, Arc<AtomicBool>)>,
}

/// How writing the results ended.
#[derive(Debug)]
pub enum ResultsEnd {
    /// Every record was written.
    Written(u64),
    /// The reader of standard output went away after this many records.
    ReaderGone(u64),
}

impl ResultsOut {
    /// Results to `path`, or to standard output for `-`; `stop` is set if standard
    /// output's reader goes away.
    pub fn open(path: &Path, stop: Arc<AtomicBool>) -> Result<Self> {
        let to_stdout = path == Path::new("-");
        let (out, shown): (Box<dyn Write>, String) = if to_stdout {
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
            stop: to_stdout.then_some(stop),
            reopen: None,
        })
    }

    /// Reopens the file at its path whenever `flag` is set (SIGHUP), for logrotate.
    pub fn reopen_on(mut self, path: &Path, flag: Arc<AtomicBool>) -> Self {
        if path != Path::new("-") {
            self.reopen = Some((path.to_path_buf(), flag));
        }
        self
    }

    /// Closes the file and opens its path again, appending (a new file if it was moved).
    fn reopen_if_asked(&mut self) {
        let Some((path, flag)) = &self.reopen else {
            return;
        };
        if !flag.swap(false, Ordering::SeqCst) {
            return;
        }
        let reopened = self
            .out
            .flush()
            .and_then(|()| OpenOptions::new().create(true).append(true).open(path));
        match reopened {
            Ok(file) => self.out = Box::new(BufWriter::new(file)),
            Err(e) => self.error = Some(e),
        }
    }

    /// Writes one record as a line and flushes it. After a write error (a closed pipe, a
    /// full disk) nothing more is written; [`ResultsOut::finish`] reports it.
    pub fn write(&mut self, r: &ResultRecord) {
        self.reopen_if_asked();
        if self.error.is_some() {
            return;
        }
        let line = r.to_json_line();
        match writeln!(self.out, "{line}").and_then(|()| self.out.flush()) {
            Ok(()) => self.written += 1,
            Err(e) => {
                if let Some(stop) = &self.stop
                    && e.kind() == std::io::ErrorKind::BrokenPipe
                {
                    stop.store(true, Ordering::SeqCst);
                }
                self.error = Some(e);
            }
        }
    }

    /// How many records were written, or the first write error other than a reader of
    /// standard output that went away.
    pub fn finish(mut self) -> Result<ResultsEnd> {
        let flushed = self.out.flush();
        let error = self.error.take().map_or(flushed, Err);
        match error {
            Ok(()) => Ok(ResultsEnd::Written(self.written)),
            Err(e) if self.stop.is_some() && e.kind() == std::io::ErrorKind::BrokenPipe => {
                Ok(ResultsEnd::ReaderGone(self.written))
            }
            Err(e) => Err(e).with_context(|| format!("writing results to {}", self.shown)),
        }
    }
}
