//! Writing the report directory: `summary.json`, `series.json` and `report.html`.
//!
//! Each file is written to a temporary name in the same directory and renamed into place,
//! so a reader (or a run interrupted mid-write) never sees a half-written file.

use std::fs::{self, File};
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};

use crate::html::render_html;
use crate::series::RunSeries;
use crate::summary::RunSummary;

/// File name of the summary in a report directory.
pub const SUMMARY_FILE: &str = "summary.json";
/// File name of the time series in a report directory.
pub const SERIES_FILE: &str = "series.json";
/// File name of the HTML report in a report directory.
pub const HTML_FILE: &str = "report.html";

/// The files [`write_report`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportFiles {
    /// The report directory.
    pub dir: PathBuf,
    /// `summary.json`: the [`RunSummary`], pretty-printed.
    pub summary_json: PathBuf,
    /// `series.json`: the [`RunSeries`], compact.
    pub series_json: PathBuf,
    /// `report.html`: the self-contained HTML report.
    pub report_html: PathBuf,
}

/// Why a report could not be written or read. Each message names the path and the cause.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The report directory could not be created.
    #[error(
        "cannot create report directory {}: {cause}; pass --report with a writable directory",
        path.display()
    )]
    CreateDir {
        /// The directory.
        path: PathBuf,
        /// What the operating system said.
        cause: io::Error,
    },
    /// A report file could not be written or moved into place.
    #[error(
        "cannot write report file {}: {cause}; pass --report with a writable directory",
        path.display()
    )]
    Write {
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        cause: io::Error,
    },
    /// The summary or series could not be turned into JSON.
    #[error("cannot serialise {what} as JSON: {cause}")]
    Serialize {
        /// `summary` or `series`.
        what: &'static str,
        /// The serialiser's error.
        cause: serde_json::Error,
    },
    /// A summary file could not be read.
    #[error("cannot read summary {}: {cause}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        cause: io::Error,
    },
    /// A summary file is not a valid `summary.json`.
    #[error("{} is not a valid summary.json: {cause}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// Where and why parsing failed (line and column).
        cause: serde_json::Error,
    },
}

/// Writes the report of one run into `dir` (created with its parents if missing; existing
/// report files are replaced): `summary.json`, `series.json` and `report.html`.
pub fn write_report(
    dir: &Path,
    summary: &RunSummary,
    series: &RunSeries,
) -> Result<ReportFiles, ReportError> {
    fs::create_dir_all(dir).map_err(|cause| ReportError::CreateDir {
        path: dir.to_path_buf(),
        cause,
    })?;
    let summary_text =
        serde_json::to_vec_pretty(summary).map_err(|cause| ReportError::Serialize {
            what: "summary",
            cause,
        })?;
    let series_text = serde_json::to_vec(series).map_err(|cause| ReportError::Serialize {
        what: "series",
        cause,
    })?;
    let files = ReportFiles {
        dir: dir.to_path_buf(),
        summary_json: dir.join(SUMMARY_FILE),
        series_json: dir.join(SERIES_FILE),
        report_html: dir.join(HTML_FILE),
    };
    write_atomically(&files.summary_json, &summary_text)?;
    write_atomically(&files.series_json, &series_text)?;
    write_atomically(&files.report_html, render_html(summary, series).as_bytes())?;
    Ok(files)
}

/// Reads a `summary.json` written by [`write_report`] (or by an older build: missing fields
/// take their defaults).
pub fn read_summary(path: &Path) -> Result<RunSummary, ReportError> {
    let text = fs::read_to_string(path).map_err(|cause| ReportError::Read {
        path: path.to_path_buf(),
        cause,
    })?;
    serde_json::from_str(&text).map_err(|cause| ReportError::Parse {
        path: path.to_path_buf(),
        cause,
    })
}

/// Writes `bytes` to a temporary file beside `path`, flushes it to disk and renames it to
/// `path`; the temporary file is removed when any step fails.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), ReportError> {
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temp = path.with_file_name(format!(".{file_name}.tmp-{}", std::process::id()));
    let result = (|| {
        let mut file = File::create(&temp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        fs::rename(&temp, path)
    })();
    result.map_err(|cause| {
        // Best effort: the temporary file may not exist, and the write error is what matters.
        let _ = fs::remove_file(&temp);
        ReportError::Write {
            path: path.to_path_buf(),
            cause,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata::sample;

    #[test]
    fn writes_three_files_that_read_back() {
        let dir = tempfile::tempdir().expect("temp dir");
        let target = dir.path().join("nested/report");
        let mut series = RunSeries::default();
        series.record_latency("vision", 42.0);
        let files = write_report(&target, &sample(), &series).expect("writable");
        assert_eq!(read_summary(&files.summary_json).expect("parses"), sample());
        let series_back: RunSeries =
            serde_json::from_str(&fs::read_to_string(&files.series_json).expect("exists"))
                .expect("parses");
        assert_eq!(series_back, series);
        let html = fs::read_to_string(&files.report_html).expect("exists");
        assert!(html.starts_with("<!DOCTYPE html>") && html.trim_end().ends_with("</html>"));
        // Only the three files: no temporary file left behind.
        let mut names: Vec<String> = fs::read_dir(&target)
            .expect("listable")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, [HTML_FILE, SERIES_FILE, SUMMARY_FILE]);
    }

    #[test]
    fn rewriting_replaces_the_previous_report() {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut summary = sample();
        write_report(dir.path(), &summary, &RunSeries::default()).expect("first");
        summary.seed = 7;
        let files = write_report(dir.path(), &summary, &RunSeries::default()).expect("second");
        assert_eq!(read_summary(&files.summary_json).expect("parses").seed, 7);
    }

    #[test]
    fn an_unwritable_path_names_the_directory_and_the_fix() {
        // A path below a regular file cannot be created, even by root.
        let dir = tempfile::tempdir().expect("temp dir");
        let blocker = dir.path().join("a-file");
        fs::write(&blocker, "x").expect("writable temp dir");
        let target = blocker.join("report");
        let error = write_report(&target, &sample(), &RunSeries::default())
            .expect_err("cannot create a directory below a file");
        let message = error.to_string();
        assert!(matches!(error, ReportError::CreateDir { .. }));
        assert!(message.contains(&target.display().to_string()), "{message}");
        assert!(message.contains("--report"), "{message}");
    }

    #[test]
    fn a_directory_in_place_of_a_report_file_is_a_write_error_naming_it() {
        let dir = tempfile::tempdir().expect("temp dir");
        fs::create_dir(dir.path().join(SUMMARY_FILE)).expect("writable temp dir");
        let error = write_report(dir.path(), &sample(), &RunSeries::default())
            .expect_err("rename onto a directory fails");
        let message = error.to_string();
        assert!(message.contains("summary.json"), "{message}");
        let leftovers = fs::read_dir(dir.path())
            .expect("listable")
            .filter(|e| {
                e.as_ref()
                    .is_ok_and(|e| e.file_name().to_string_lossy().contains(".tmp-"))
            })
            .count();
        assert_eq!(leftovers, 0);
    }

    #[test]
    fn a_broken_summary_file_names_the_file_and_line() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join(SUMMARY_FILE);
        fs::write(&path, "{\n  \"vision\": {\"jobs\": \"many\"}\n}").expect("writable");
        let message = read_summary(&path).expect_err("bad type").to_string();
        assert!(
            message.contains("summary.json") && message.contains("line 2"),
            "{message}"
        );
    }
}
