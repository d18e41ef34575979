//! The trace's files on disk, within a cap: the newest is always the path asked for
//! (`trace.mmtrace`, so `mmsched trace view` opens it as before); when it would grow past
//! its share of the cap, or has covered more than its age of device time, it becomes
//! `trace.1.mmtrace`, the older ones move up a number (`trace.2.mmtrace`, …) and the oldest
//! beyond the count kept is deleted — like logrotate, or journald's `SystemMaxUse`. Every
//! file is a whole mmtrace file: its own header line (the same clock zero, and a `part`
//! number in the metadata from the second on), then whole records; a job's span and its
//! stages always land in the same file.

use std::fs::File;
use std::io::{self, BufWriter};
use std::path::{Path, PathBuf};

use mmsched_core::time::Nanos;
use mmsched_trace::format::Writer;
use mmsched_trace::record::Header;

/// The trace files' cap unless asked otherwise: 256 MiB (`--trace-max-mib`), about an hour
/// of the shipped scenarios' traces.
pub const DEFAULT_TRACE_MAX_BYTES: u64 = 256 << 20;
/// Files kept unless asked otherwise (`--trace-files`): the newest and three older.
pub const DEFAULT_TRACE_FILES: u32 = 4;
/// Device time one file covers at most unless asked otherwise (`--trace-max-age-min`).
pub const DEFAULT_TRACE_MAX_AGE_NANOS: Nanos = 3_600_000_000_000;
/// The most files a trace may be kept in.
pub const MAX_TRACE_FILES: u32 = 100;

/// How the trace rotates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rotation {
    /// Bytes every file of the trace holds together, at most.
    pub max_bytes: u64,
    /// Files kept: the newest and `files - 1` older ones (1 to [`MAX_TRACE_FILES`]).
    pub files: u32,
    /// Device time a file covers before the next record starts a new one; `None`: by
    /// size only.
    pub max_age_nanos: Option<Nanos>,
}

impl Default for Rotation {
    fn default() -> Self {
        Self {
            max_bytes: DEFAULT_TRACE_MAX_BYTES,
            files: DEFAULT_TRACE_FILES,
            max_age_nanos: Some(DEFAULT_TRACE_MAX_AGE_NANOS),
        }
    }
}

impl Rotation {
    /// Files kept, within 1 ..= [`MAX_TRACE_FILES`].
    pub fn files(&self) -> u32 {
        self.files.clamp(1, MAX_TRACE_FILES)
    }

    /// The size one file grows to at most: its share of the cap.
    pub fn file_bytes(&self) -> u64 {
        self.max_bytes / u64::from(self.files())
    }
}

/// The `index`-th older file of the trace at `path` (from 1, the most recent):
/// `trace.mmtrace` → `trace.1.mmtrace`.
pub fn rotated_path(path: &Path, index: u32) -> PathBuf {
    let name = |s: &std::ffi::OsStr| s.to_string_lossy().into_owned();
    match (path.file_stem(), path.extension()) {
        (Some(stem), Some(ext)) => {
            path.with_file_name(format!("{}.{index}.{}", name(stem), name(ext)))
        }
        _ => {
            let file = path.file_name().map(name).unwrap_or_default();
            path.with_file_name(format!("{file}.{index}"))
        }
    }
}

/// The files of one trace, the newest open for writing.
#[derive(Debug)]
pub(crate) struct TraceFiles {
    path: PathBuf,
    rotation: Rotation,
    header: Header,
    writer: Option<Writer<BufWriter<File>>>,
    /// Device time of the first record in the newest file.
    opened_at: Option<Nanos>,
    /// Files started after the first.
    rotations: u64,
    /// Records not written: a group larger than a whole file's share.
    dropped: u64,
}

impl TraceFiles {
    /// Starts the trace at `path` (replacing it) with `header`; older files of a trace
    /// that was there before are deleted, so the cap holds from the start.
    pub(crate) fn create(path: &Path, rotation: Rotation, header: Header) -> io::Result<Self> {
        for index in 1..=MAX_TRACE_FILES {
            match std::fs::remove_file(rotated_path(path, index)) {
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                other => other?,
            }
        }
        let mut files = Self {
            path: path.to_path_buf(),
            rotation,
            header,
            writer: None,
            opened_at: None,
            rotations: 0,
            dropped: 0,
        };
        files.open()?;
        Ok(files)
    }

    fn open(&mut self) -> io::Result<()> {
        let file = File::create(&self.path)?;
        let mut header = self.header.clone();
        if self.rotations > 0 {
            header
                .metadata
                .insert("part".into(), serde_json::json!(self.rotations + 1));
        }
        self.writer = Some(Writer::new(BufWriter::new(file), &header)?);
        self.opened_at = None;
        Ok(())
    }

    fn rotate(&mut self) -> io::Result<()> {
        if let Some(w) = self.writer.take() {
            w.finish()?;
        }
        let files = self.rotation.files();
        if files > 1 {
            match std::fs::remove_file(rotated_path(&self.path, files - 1)) {
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                other => other?,
            }
            for index in (1..files - 1).rev() {
                let from = rotated_path(&self.path, index);
                if from.exists() {
                    std::fs::rename(&from, rotated_path(&self.path, index + 1))?;
                }
            }
            std::fs::rename(&self.path, rotated_path(&self.path, 1))?;
        }
        self.rotations += 1;
        self.open()
    }

    /// Writes `count` encoded records (`lines`), the first at device time `at`, into the
    /// newest file; a new file first when they would take it past its share of the cap, or
    /// it has covered its age.
    pub(crate) fn write(&mut self, lines: &[u8], count: u64, at: Nanos) -> io::Result<()> {
        let limit = self.rotation.file_bytes();
        let Some(w) = &self.writer else {
            return Ok(());
        };
        let len = lines.len() as u64;
        let too_big = w.bytes() + len > limit && w.records() > 0;
        let too_old = match (self.rotation.max_age_nanos, self.opened_at) {
            (Some(age), Some(opened)) => at.saturating_sub(opened) >= age,
            _ => false,
        };
        if too_big || too_old {
            self.rotate()?;
        }
        let Some(w) = &mut self.writer else {
            return Ok(());
        };
        if w.bytes() + len > limit {
            // Larger than a whole file's share: left out, so the cap holds.
            self.dropped += count;
            return Ok(());
        }
        w.write_encoded(lines, count)?;
        self.opened_at.get_or_insert(at);
        Ok(())
    }

    /// Flushes the newest file.
    pub(crate) fn flush(&mut self) -> io::Result<()> {
        self.writer.as_mut().map_or(Ok(()), Writer::flush)
    }

    /// Flushes and closes the newest file; returns how many files were started after the
    /// first and how many records were left out.
    pub(crate) fn finish(mut self) -> io::Result<(u64, u64)> {
        if let Some(w) = self.writer.take() {
            w.finish()?;
        }
        Ok((self.rotations, self.dropped))
    }
}

#[cfg(test)]
mod tests {
    use mmsched_trace::format::Reader;

    use super::*;

    const S: Nanos = 1_000_000_000;

    fn line(n: usize) -> Vec<u8> {
        // A valid record line of exactly `n` bytes is not needed: the files are checked
        // for their headers and sizes; the reader test below writes real records.
        let mut v = vec![b' '; n - 1];
        v.push(b'\n');
        v
    }

    fn sizes(dir: &Path) -> Vec<(String, u64)> {
        let mut v: Vec<(String, u64)> = std::fs::read_dir(dir)
            .expect("listable")
            .map(|e| {
                let e = e.expect("entry");
                (
                    e.file_name().to_string_lossy().into_owned(),
                    e.metadata().expect("metadata").len(),
                )
            })
            .collect();
        v.sort();
        v
    }

    #[test]
    fn files_rotate_by_size_and_the_total_stays_under_the_cap() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("trace.mmtrace");
        // Stale files of an earlier trace go at the start.
        std::fs::write(rotated_path(&path, 7), "old").expect("writable");
        let rotation = Rotation {
            max_bytes: 30_000,
            files: 3,
            max_age_nanos: None,
        };
        let mut f = TraceFiles::create(&path, rotation, Header::new(0)).expect("created");
        for i in 0..1_000u64 {
            f.write(&line(100), 1, i * S).expect("written");
            f.flush().expect("flushed");
            let total: u64 = sizes(dir.path()).iter().map(|s| s.1).sum();
            assert!(total <= 30_000, "{total} bytes after {i} records");
        }
        let (rotations, dropped) = f.finish().expect("finished");
        assert!(rotations >= 9, "{rotations}");
        assert_eq!(dropped, 0);
        let names: Vec<String> = sizes(dir.path()).into_iter().map(|s| s.0).collect();
        assert_eq!(
            names,
            ["trace.1.mmtrace", "trace.2.mmtrace", "trace.mmtrace"]
        );
        for (name, size) in sizes(dir.path()) {
            assert!(size <= 10_000, "{name}: {size}");
            let text = std::fs::read_to_string(dir.path().join(&name)).expect("readable");
            let first = text.lines().next().unwrap_or_default();
            assert!(first.starts_with("{\"mmtrace\""), "{name}: {first}");
            if name != "trace.mmtrace" || rotations > 0 {
                assert!(first.contains("\"part\""), "{name}: {first}");
            }
        }
    }

    #[test]
    fn a_file_older_than_its_age_rotates_and_each_file_reads_alone() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("trace.mmtrace");
        let rotation = Rotation {
            max_bytes: 1 << 30,
            files: 2,
            max_age_nanos: Some(60 * S),
        };
        let mut out =
            crate::trace_out::TraceOut::create(Some(&path), 7, 0, Default::default(), rotation)
                .expect("created");
        // Two and a half minutes of one counter a second: three files were started, two kept.
        for t in 0..150u64 {
            out.counter("ldti", t * S, 0.5);
        }
        out.finish().expect("finished");
        let names: Vec<String> = sizes(dir.path()).into_iter().map(|s| s.0).collect();
        assert_eq!(names, ["trace.1.mmtrace", "trace.mmtrace"]);
        let mut seen = Vec::new();
        for name in ["trace.1.mmtrace", "trace.mmtrace"] {
            let file = File::open(dir.path().join(name)).expect("exists");
            let reader = Reader::new(std::io::BufReader::new(file)).expect("a header");
            let ts: Vec<u64> = reader.map(|r| r.expect("a valid record").ts_ns).collect();
            assert!(ts.iter().all(|t| t - ts[0] < 60 * S), "{name}");
            seen.push(ts.len());
        }
        assert_eq!(seen, [60, 30]);
    }

    #[test]
    fn one_file_is_started_over_and_names_keep_their_extension() {
        assert_eq!(
            rotated_path(Path::new("/r/trace.mmtrace"), 2),
            Path::new("/r/trace.2.mmtrace")
        );
        assert_eq!(
            rotated_path(Path::new("/r/trace"), 1),
            Path::new("/r/trace.1")
        );
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("t.mmtrace");
        let rotation = Rotation {
            max_bytes: 1_000,
            files: 1,
            max_age_nanos: None,
        };
        let mut f = TraceFiles::create(&path, rotation, Header::new(0)).expect("created");
        for i in 0..50 {
            f.write(&line(100), 1, i).expect("written");
        }
        // A group larger than the whole share is left out.
        f.write(&line(2_000), 3, 99).expect("written");
        let (_, dropped) = f.finish().expect("finished");
        assert_eq!(dropped, 3);
        assert!(std::fs::metadata(&path).expect("exists").len() <= 1_000);
        assert_eq!(sizes(dir.path()).len(), 1);
    }
}
