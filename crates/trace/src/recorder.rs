//! The trace recorder: workers push fixed-size events into a lock-free ring without
//! blocking or allocating; one drain thread turns them into [`Record`]s.
//!
//! Strings (track, stage name, model, clock domain, attribute key) are interned once at
//! set-up into [`Sym`]s, so the hot path copies thirteen words and nothing else.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use mmsched_core::Modality;
use serde_json::Value;

use crate::ids::{SpanId, TraceId};
use crate::record::{Record, RecordKind, attr};
use crate::ring::Ring;
use crate::sync::Arc;

/// Interned names are plain std `Arc`s: they are not part of the loom-checked ring.
type Name = std::sync::Arc<str>;

/// Ring slots when no capacity is given: 16 Ki events (≈1.7 MB). At 100 k events/s and a
/// drain every 10 ms the ring is under 7 % full.
pub const DEFAULT_CAPACITY: usize = 1 << 14;

/// 64-bit words per encoded event.
const WORDS: usize = 13;

/// An interned string: track, stage name, model, clock domain or attribute key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Sym(u16);

/// Errors from the recorder's set-up calls.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecorderError {
    /// More distinct strings than a [`Sym`] can number.
    #[error(
        "more than 65535 distinct trace names: intern a fixed set of tracks and stages, not per-event strings"
    )]
    SymbolTableFull,
}

#[derive(Debug, Default)]
struct Symbols {
    names: Vec<Name>,
    ids: HashMap<Name, u16>,
}

/// One event as a worker hands it to the recorder: plain `Copy` data, no allocation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Event {
    /// Span, instant or counter.
    pub kind: RecordKind,
    /// The job's (or run's) trace.
    pub trace_id: TraceId,
    /// This event's id.
    pub span_id: SpanId,
    /// Enclosing span.
    pub parent_span_id: Option<SpanId>,
    /// Job id.
    pub job: Option<u64>,
    /// Modality of the job's data.
    pub modality: Option<Modality>,
    /// Model that ran.
    pub model: Option<Sym>,
    /// Compute track.
    pub track: Sym,
    /// Stage or series name.
    pub name: Sym,
    /// Clock domain the event was stamped in.
    pub clock: Sym,
    /// Device-timeline start, ns.
    pub ts_ns: u64,
    /// Duration, ns (spans).
    pub dur_ns: u64,
    /// Alignment offset applied, ms.
    pub sync_offset_ms: i64,
    /// Counter value (counters; ignored otherwise).
    pub value: f64,
    /// The span that caused this one (becomes `attrs.caused_by`).
    pub caused_by: Option<SpanId>,
    /// One integer attribute (e.g. `token_index`, `input_tokens`, `deadline_ns`).
    pub arg: Option<(Sym, i64)>,
}

const MODALITY_CODES: [Modality; 5] = Modality::ALL;

fn modality_code(m: Option<Modality>) -> u64 {
    match m {
        None => 0,
        Some(m) => MODALITY_CODES
            .iter()
            .position(|x| *x == m)
            .map_or(0, |i| i as u64 + 1),
    }
}

fn kind_code(k: RecordKind) -> u64 {
    match k {
        RecordKind::Span => 0,
        RecordKind::Instant => 1,
        RecordKind::Counter => 2,
    }
}

fn encode(e: &Event) -> [u64; WORDS] {
    let (hi, lo) = e.trace_id.to_u64s();
    let flags = kind_code(e.kind)
        | modality_code(e.modality) << 2
        | u64::from(e.job.is_some()) << 5
        | u64::from(e.arg.is_some()) << 6
        | u64::from(e.model.is_some()) << 7
        | u64::from(e.track.0) << 8
        | u64::from(e.name.0) << 24
        | u64::from(e.clock.0) << 40;
    let (arg_key, arg_val) = e.arg.map_or((0, 0), |(k, v)| (k.0, v));
    [
        hi,
        lo,
        e.span_id.to_u64(),
        e.parent_span_id.map_or(0, SpanId::to_u64),
        e.job.unwrap_or(0),
        e.ts_ns,
        e.dur_ns,
        e.sync_offset_ms as u64,
        e.value.to_bits(),
        e.caused_by.map_or(0, SpanId::to_u64),
        arg_val as u64,
        flags,
        u64::from(e.model.map_or(0, |m| m.0)) | u64::from(arg_key) << 16,
    ]
}

fn decode(w: &[u64; WORDS]) -> Option<Event> {
    let flags = w[11];
    let kind = match flags & 3 {
        0 => RecordKind::Span,
        1 => RecordKind::Instant,
        _ => RecordKind::Counter,
    };
    let modality = match (flags >> 2) & 7 {
        0 => None,
        c => MODALITY_CODES.get(c as usize - 1).copied(),
    };
    let sym = |shift: u32, word: u64| Sym(((word >> shift) & 0xffff) as u16);
    Some(Event {
        kind,
        trace_id: TraceId::from_u64s(w[0], w[1])?,
        span_id: SpanId::from_u64(w[2])?,
        parent_span_id: SpanId::from_u64(w[3]),
        job: (flags >> 5 & 1 == 1).then_some(w[4]),
        modality,
        model: (flags >> 7 & 1 == 1).then(|| sym(0, w[12])),
        track: sym(8, flags),
        name: sym(24, flags),
        clock: sym(40, flags),
        ts_ns: w[5],
        dur_ns: w[6],
        sync_offset_ms: w[7] as i64,
        value: f64::from_bits(w[8]),
        caused_by: SpanId::from_u64(w[9]),
        arg: (flags >> 6 & 1 == 1).then(|| (sym(16, w[12]), w[10] as i64)),
    })
}

/// The worker side: cheap to clone, shared by every thread that emits events.
#[derive(Debug, Clone)]
pub struct Recorder {
    ring: Arc<Ring<WORDS>>,
    symbols: Arc<Mutex<Symbols>>,
}

/// The consumer side: exactly one exists per recorder; it turns events into records.
#[derive(Debug)]
pub struct Drain {
    ring: Arc<Ring<WORDS>>,
    symbols: Arc<Mutex<Symbols>>,
    /// A local copy of the symbol table, refreshed when an unknown symbol shows up.
    cache: Vec<Name>,
    /// Events that could not be decoded (corrupt ids); counted, never panicked on.
    undecodable: u64,
}

/// A recorder with a ring of `capacity` events (rounded up to a power of two) and its drain.
pub fn recorder(capacity: usize) -> (Recorder, Drain) {
    let ring = Arc::new(Ring::new(capacity));
    let symbols = Arc::new(Mutex::new(Symbols::default()));
    (
        Recorder {
            ring: ring.clone(),
            symbols: symbols.clone(),
        },
        Drain {
            ring,
            symbols,
            cache: Vec::new(),
            undecodable: 0,
        },
    )
}

impl Recorder {
    /// Interns a name (set-up time: takes a lock). The same string always gives the same
    /// [`Sym`].
    pub fn sym(&self, name: &str) -> Result<Sym, RecorderError> {
        let mut s = self
            .symbols
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(id) = s.ids.get(name) {
            return Ok(Sym(*id));
        }
        let id = u16::try_from(s.names.len()).map_err(|_| RecorderError::SymbolTableFull)?;
        let name: Name = Name::from(name);
        s.names.push(name.clone());
        s.ids.insert(name, id);
        Ok(Sym(id))
    }

    /// Records one event without blocking or allocating. Returns `false` if the ring was
    /// full and the event was dropped (and counted).
    #[inline]
    pub fn record(&self, event: &Event) -> bool {
        self.ring.push(&encode(event))
    }

    /// Events dropped so far because the ring was full.
    pub fn dropped(&self) -> u64 {
        self.ring.dropped()
    }

    /// Ring capacity in events.
    pub fn capacity(&self) -> usize {
        self.ring.capacity()
    }
}

impl Drain {
    fn name(&mut self, sym: Sym) -> String {
        let i = usize::from(sym.0);
        if i >= self.cache.len() {
            let s = self
                .symbols
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            self.cache.clone_from(&s.names);
        }
        self.cache
            .get(i)
            .map_or_else(|| format!("sym#{i}"), |s| s.to_string())
    }

    fn record_of(&mut self, e: Event) -> Record {
        let mut attrs = BTreeMap::new();
        if let Some(c) = e.caused_by {
            attrs.insert(attr::CAUSED_BY.to_string(), Value::String(c.to_hex()));
        }
        if let Some((k, v)) = e.arg {
            attrs.insert(self.name(k), Value::from(v));
        }
        Record {
            kind: e.kind,
            trace_id: e.trace_id,
            span_id: e.span_id,
            parent_span_id: e.parent_span_id,
            job: e.job,
            modality: e.modality,
            model: e.model.map(|m| self.name(m)),
            track: self.name(e.track),
            ts_ns: e.ts_ns,
            dur_ns: if e.kind == RecordKind::Span {
                e.dur_ns
            } else {
                0
            },
            clock: self.name(e.clock),
            sync_offset_ms: e.sync_offset_ms,
            name: self.name(e.name),
            value: (e.kind == RecordKind::Counter).then_some(e.value),
            attrs,
        }
    }

    /// Takes every event published so far, in order, and hands each to `f` as a record.
    /// Returns how many were taken.
    pub fn drain(&mut self, mut f: impl FnMut(Record)) -> usize {
        let mut n = 0;
        while let Some(words) = self.ring.pop() {
            n += 1;
            match decode(&words) {
                Some(e) => {
                    let r = self.record_of(e);
                    f(r);
                }
                None => self.undecodable += 1,
            }
        }
        n
    }

    /// Takes every published event without converting it (for benchmarks and tests that
    /// only count). Returns how many were taken.
    pub fn discard(&mut self) -> usize {
        std::iter::from_fn(|| self.ring.pop()).count()
    }

    /// Events dropped so far because the ring was full.
    pub fn dropped(&self) -> u64 {
        self.ring.dropped()
    }

    /// Events accepted into the ring so far.
    pub fn accepted(&self) -> u64 {
        self.ring.accepted()
    }

    /// Events taken from the ring that could not be decoded.
    pub fn undecodable(&self) -> u64 {
        self.undecodable
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::ids::IdGen;

    #[test]
    fn events_come_out_as_records() {
        let (rec, mut drain) = recorder(8);
        let ids = IdGen::from_seed(1);
        let cause = ids.span_id();
        let tok = rec.sym(attr::TOKEN_INDEX).expect("room");
        let e = Event {
            kind: RecordKind::Span,
            trace_id: ids.trace_id(),
            span_id: ids.span_id(),
            parent_span_id: Some(ids.span_id()),
            job: Some(42),
            modality: Some(Modality::Text),
            model: Some(rec.sym("gemma3-270m").expect("room")),
            track: rec.sym("worker-text").expect("room"),
            name: rec.sym("decode").expect("room"),
            clock: rec.sym("device").expect("room"),
            ts_ns: 1_000,
            dur_ns: 250,
            sync_offset_ms: -3,
            value: 0.0,
            caused_by: Some(cause),
            arg: Some((tok, 7)),
        };
        assert!(rec.record(&e));
        assert_eq!(decode(&encode(&e)), Some(e));
        let mut out = Vec::new();
        assert_eq!(drain.drain(|r| out.push(r)), 1);
        let r = &out[0];
        assert_eq!(r.name, "decode");
        assert_eq!(r.model.as_deref(), Some("gemma3-270m"));
        assert_eq!(r.track, "worker-text");
        assert_eq!(r.sync_offset_ms, -3);
        assert_eq!(r.modality, Some(Modality::Text));
        assert_eq!(r.caused_by(), Some(cause));
        assert_eq!(r.attrs[attr::TOKEN_INDEX], Value::from(7));
        assert_eq!(r.value, None);
        r.check().expect("a drained record is valid");
        assert_eq!(rec.sym("decode"), rec.sym("decode"));
    }
}

/// What a [`DrainThread`] did, reported when it stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DrainStats {
    /// Records written.
    pub written: u64,
    /// Events the workers dropped because the ring was full.
    pub dropped: u64,
    /// Events that could not be decoded.
    pub undecodable: u64,
}

/// A background thread that drains a recorder into an mmtrace writer every `interval`.
#[derive(Debug)]
pub struct DrainThread {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    handle: std::thread::JoinHandle<std::io::Result<DrainStats>>,
}

impl DrainThread {
    /// Starts draining `drain` into `writer` every `interval` (10 ms is a good default:
    /// at 100 k events/s that is 1 000 events a round, far below [`DEFAULT_CAPACITY`]).
    pub fn spawn<W: std::io::Write + Send + 'static>(
        mut drain: Drain,
        mut writer: crate::format::Writer<W>,
        interval: std::time::Duration,
    ) -> std::io::Result<Self> {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::Builder::new()
            .name("mmtrace-drain".into())
            .spawn(move || {
                let mut failed: Option<std::io::Error> = None;
                let mut round = |drain: &mut Drain, writer: &mut crate::format::Writer<W>| {
                    drain.drain(|r| {
                        if failed.is_none()
                            && let Err(e) = writer.write(&r)
                        {
                            failed = Some(e);
                        }
                    });
                };
                loop {
                    // Read the flag before draining so the last round sees every event
                    // published before `stop` was called.
                    let last = flag.load(std::sync::atomic::Ordering::Acquire);
                    round(&mut drain, &mut writer);
                    if last {
                        break;
                    }
                    std::thread::sleep(interval);
                }
                if let Some(e) = failed {
                    return Err(e);
                }
                let written = writer.records();
                writer.finish()?;
                Ok(DrainStats {
                    written,
                    dropped: drain.dropped(),
                    undecodable: drain.undecodable(),
                })
            })?;
        Ok(Self { stop, handle })
    }

    /// Drains what is left, flushes the writer and reports.
    pub fn stop(self) -> std::io::Result<DrainStats> {
        self.stop.store(true, std::sync::atomic::Ordering::Release);
        self.handle
            .join()
            .map_err(|_| std::io::Error::other("the trace drain thread panicked"))?
    }
}
