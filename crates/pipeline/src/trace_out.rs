//! The run's mmtrace file: a span per job (with its queueing and execution), instants for
//! skips, sheds, misses and health actions, counters for the LDTI and slot occupancy. It
//! rotates within a cap ([`crate::trace_files`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use mmsched_core::Modality;
use mmsched_core::time::Nanos;
use mmsched_trace::format::encode;
use mmsched_trace::ids::{IdGen, TraceId};
use mmsched_trace::record::{Header, Record, RecordKind, attr, stage};
use serde_json::{Value, json};

use crate::config::RunError;
pub use crate::trace_files::Rotation;
use crate::trace_files::TraceFiles;

/// Writes the trace of one run, or nothing when no file was asked for.
#[derive(Debug)]
pub struct TraceOut {
    writer: Option<TraceFiles>,
    /// Records encoded and not yet handed to the files (one job's span and stages).
    lines: Vec<u8>,
    pending: u64,
    path: PathBuf,
    ids: IdGen,
    run: TraceId,
    error: Option<std::io::Error>,
}

/// One job as the trace shows it.
#[derive(Debug, Clone, Copy)]
pub struct JobSpan<'a> {
    /// The scheduler's job number.
    pub job: u64,
    /// Modality of its input.
    pub modality: Modality,
    /// The model.
    pub model: &'a str,
    /// The worker, e.g. `worker-0`.
    pub track: &'a str,
    /// Release on the device timeline.
    pub release_nanos: Nanos,
    /// Start of the step.
    pub start_nanos: Nanos,
    /// End of the step.
    pub end_nanos: Nanos,
    /// Its deadline.
    pub deadline_nanos: Nanos,
    /// Stage name of the step (`exec`, `prefill`, `decode`).
    pub stage: &'a str,
    /// Where its request came from (`streams`, `api`).
    pub origin: &'a str,
    /// Its quality rung, for a model with rungs.
    pub rung: Option<&'a str>,
}

/// The wall-clock time now, in nanoseconds since 1970 (0 on a clock set before 1970). Read
/// once per run, to date the trace; every duration comes from the device clock.
pub fn unix_nanos_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

impl TraceOut {
    /// A trace into `path` (none if `None`), with `metadata` in the header, rotating as
    /// `rotation` says; `start_unix_nanos` is the wall-clock time of timestamp 0.
    pub fn create(
        path: Option<&Path>,
        seed: u64,
        start_unix_nanos: u64,
        metadata: BTreeMap<String, Value>,
        rotation: Rotation,
    ) -> Result<Self, RunError> {
        let ids = IdGen::from_seed(seed);
        let run = ids.trace_id();
        let writer = match path {
            None => None,
            Some(p) => {
                let err = |source| RunError::Trace {
                    path: p.to_path_buf(),
                    source,
                };
                let mut header = Header::new(start_unix_nanos);
                header.metadata = metadata;
                Some(TraceFiles::create(p, rotation, header).map_err(err)?)
            }
        };
        Ok(Self {
            writer,
            lines: Vec::with_capacity(1024),
            pending: 0,
            path: path.map(Path::to_path_buf).unwrap_or_default(),
            ids,
            run,
            error: None,
        })
    }

    fn base(&self, kind: RecordKind, name: &str, track: &str, ts_ns: u64) -> Record {
        Record {
            kind,
            trace_id: self.run,
            span_id: self.ids.span_id(),
            parent_span_id: None,
            job: None,
            modality: None,
            model: None,
            track: track.to_string(),
            ts_ns,
            dur_ns: 0,
            clock: "device".into(),
            sync_offset_ms: 0,
            name: name.to_string(),
            value: None,
            attrs: BTreeMap::new(),
        }
    }

    /// Encodes `r` into the records pending.
    fn write(&mut self, r: &Record) {
        if self.writer.is_some()
            && self.error.is_none()
            && let Err(e) = encode(r, &mut self.lines)
        {
            self.error = Some(e);
        }
        self.pending += 1;
    }

    /// Hands the records pending to the files (together: a rotation falls between two
    /// groups, never inside one), the first at device time `at`.
    fn commit(&mut self, at: Nanos) {
        if let (Some(w), None) = (&mut self.writer, &self.error)
            && let Err(e) = w.write(&self.lines, self.pending, at)
        {
            self.error = Some(e);
        }
        self.lines.clear();
        self.pending = 0;
    }

    /// Flushes what is buffered to the newest file (before a periodic report).
    pub fn flush(&mut self) {
        if let (Some(w), None) = (&mut self.writer, &self.error)
            && let Err(e) = w.flush()
        {
            self.error = Some(e);
        }
    }

    /// A finished step: a job span with its queueing and execution stages. Returns the
    /// span's trace id (drawn even when no file is written, so results carry one).
    pub fn job(&mut self, j: JobSpan<'_>) -> TraceId {
        let trace = self.ids.trace_id();
        if self.writer.is_none() {
            return trace;
        }
        let mut job = self.base(RecordKind::Span, stage::JOB, j.track, j.release_nanos);
        job.trace_id = trace;
        job.job = Some(j.job);
        job.modality = Some(j.modality);
        job.model = Some(j.model.to_string());
        job.dur_ns = j.end_nanos.saturating_sub(j.release_nanos);
        job.attrs
            .insert(attr::DEADLINE_NS.into(), json!(j.deadline_nanos));
        job.attrs.insert(attr::ORIGIN.into(), json!(j.origin));
        if let Some(rung) = j.rung {
            job.attrs.insert(attr::RUNG.into(), json!(rung));
        }
        let parent = job.span_id;
        self.write(&job);
        for (name, from, to) in [
            (stage::QUEUED, j.release_nanos, j.start_nanos),
            (j.stage, j.start_nanos, j.end_nanos),
        ] {
            let mut s = self.base(RecordKind::Span, name, j.track, from);
            s.trace_id = trace;
            s.parent_span_id = Some(parent);
            s.job = Some(j.job);
            s.modality = Some(j.modality);
            s.dur_ns = to.saturating_sub(from);
            self.write(&s);
        }
        if j.end_nanos > j.deadline_nanos {
            let mut m = self.base(RecordKind::Instant, stage::MISS, j.track, j.end_nanos);
            m.trace_id = trace;
            m.parent_span_id = Some(parent);
            m.job = Some(j.job);
            m.modality = Some(j.modality);
            m.attrs
                .insert(attr::DEADLINE_NS.into(), json!(j.deadline_nanos));
            self.write(&m);
        }
        self.commit(j.release_nanos);
        trace
    }

    /// An instant (skip, shed, health action) on `track`.
    pub fn instant(
        &mut self,
        name: &str,
        track: &str,
        at: Nanos,
        modality: Option<Modality>,
        reason: &str,
    ) {
        if self.writer.is_none() {
            return;
        }
        let mut r = self.base(RecordKind::Instant, name, track, at);
        r.modality = modality;
        r.attrs.insert(attr::REASON.into(), json!(reason));
        self.write(&r);
        self.commit(at);
    }

    /// A counter sample.
    pub fn counter(&mut self, name: &str, at: Nanos, value: f64) {
        if self.writer.is_none() || !value.is_finite() {
            return;
        }
        let mut r = self.base(RecordKind::Counter, name, "health", at);
        r.value = Some(value);
        self.write(&r);
        self.commit(at);
    }

    /// Flushes the file; reports the first write error.
    pub fn finish(mut self) -> Result<Option<PathBuf>, RunError> {
        let path = self.path.clone();
        if let Some(e) = self.error.take() {
            return Err(RunError::Trace { path, source: e });
        }
        match self.writer.take() {
            None => Ok(None),
            Some(w) => {
                w.finish().map_err(|source| RunError::Trace {
                    path: path.clone(),
                    source,
                })?;
                Ok(Some(path))
            }
        }
    }
}
