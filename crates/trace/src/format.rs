//! Reading and writing mmtrace NDJSON: a header line, then one record per line.

use std::collections::HashSet;
use std::io::{BufRead, Write};

use crate::record::{FORMAT_VERSION, Header, Record};

/// The longest line a reader accepts (a record is a few hundred bytes; a header with many
/// clock domains a few KiB).
pub const MAX_LINE_BYTES: usize = 1 << 20;
/// The largest trace file read whole into memory (`trace view`).
pub const TRACE_FILE_CAP: u64 = 1 << 30;

/// Reads one line of at most [`MAX_LINE_BYTES`] into `buf` (cleared first): `Ok(0)` at the
/// end of input. A longer line, or one that is not UTF-8, is an error, so `/dev/zero` or a
/// binary file fails at its first line instead of filling memory.
fn read_bounded_line(input: &mut impl BufRead, buf: &mut String) -> Result<usize, LineError> {
    buf.clear();
    let mut bytes = Vec::new();
    let n = std::io::Read::take(&mut *input, MAX_LINE_BYTES as u64 + 1)
        .read_until(b'\n', &mut bytes)
        .map_err(LineError::Read)?;
    if n > MAX_LINE_BYTES {
        return Err(LineError::TooLong);
    }
    *buf = String::from_utf8(bytes).map_err(|_| LineError::NotUtf8)?;
    Ok(n)
}

/// What is wrong with one line; [`ReadError`] keeps it as text with the line's number.
#[derive(Debug, thiserror::Error)]
enum LineError {
    #[error("cannot read")]
    Read(#[source] std::io::Error),
    #[error(
        "the line is longer than {} MiB: this is not an mmtrace file (one JSON object per line)",
        MAX_LINE_BYTES >> 20
    )]
    TooLong,
    #[error("the line is not UTF-8 text: this is not an mmtrace file")]
    NotUtf8,
    #[error(transparent)]
    Json(serde_json::Error),
    #[error(transparent)]
    Record(crate::record::RecordError),
    #[error("clock domain {clock:?} is not declared in the header (declared: {declared})")]
    UndeclaredClock { clock: String, declared: String },
}

impl LineError {
    /// At `line`: the message with its causes, `: `-joined.
    fn at(self, line: usize) -> ReadError {
        let mut message = self.to_string();
        let mut next = std::error::Error::source(&self);
        while let Some(e) = next {
            message.push_str(": ");
            message.push_str(&e.to_string());
            next = e.source();
        }
        ReadError { line, message }
    }
}

/// A problem at one line of a trace file.
#[derive(Debug, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct ReadError {
    /// 1-based line number.
    pub line: usize,
    /// What is wrong there and, where possible, how to fix it.
    pub message: String,
}

/// Writes a trace: the header first, then records, one JSON object per line.
#[derive(Debug)]
pub struct Writer<W: Write> {
    out: W,
    records: u64,
    bytes: u64,
}

impl<W: Write> Writer<W> {
    /// Starts a trace on `out` by writing `header`.
    pub fn new(mut out: W, header: &Header) -> std::io::Result<Self> {
        let line = serde_json::to_vec(header)?;
        out.write_all(&line)?;
        out.write_all(b"\n")?;
        Ok(Self {
            out,
            records: 0,
            bytes: line.len() as u64 + 1,
        })
    }

    /// Appends one record.
    pub fn write(&mut self, record: &Record) -> std::io::Result<()> {
        let mut line = Vec::with_capacity(256);
        encode(record, &mut line)?;
        self.write_encoded(&line, 1)
    }

    /// Appends `count` records already encoded by [`encode`] (each line ending in a
    /// newline): a writer that must know a record's size before it writes it (a file
    /// that rotates at a size) encodes first.
    pub fn write_encoded(&mut self, lines: &[u8], count: u64) -> std::io::Result<()> {
        self.out.write_all(lines)?;
        self.records += count;
        self.bytes += lines.len() as u64;
        Ok(())
    }

    /// Records written so far.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Bytes written so far, the header's included.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Flushes what is buffered.
    pub fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }

    /// Flushes and returns the underlying writer.
    pub fn finish(mut self) -> std::io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

/// Appends `record` to `line` as it is written in a trace: its JSON and a newline.
pub fn encode(record: &Record, line: &mut Vec<u8>) -> std::io::Result<()> {
    serde_json::to_writer(&mut *line, record)?;
    line.push(b'\n');
    Ok(())
}

/// Reads a trace line by line, reporting the line number of anything bad.
///
/// Construction reads and checks the header; iteration yields each record after checking
/// it ([`Record::check`]) and that its clock domain is declared in the header. Blank lines
/// are skipped.
#[derive(Debug)]
pub struct Reader<R: BufRead> {
    input: R,
    header: Header,
    clocks: HashSet<String>,
    line: usize,
    buf: String,
    /// Set after an unreadable line: nothing after it can be trusted to start a line.
    ended: bool,
}

impl<R: BufRead> Reader<R> {
    /// Reads the header line.
    pub fn new(mut input: R) -> Result<Self, ReadError> {
        let mut buf = String::new();
        let mut line = 0;
        loop {
            line += 1;
            let n = read_bounded_line(&mut input, &mut buf).map_err(|e| e.at(line))?;
            if n == 0 {
                return Err(ReadError {
                    line,
                    message: "empty file: an mmtrace file starts with a header line \
                              {\"mmtrace\":1,\"clocks\":[…],\"start_unix_nanos\":…}"
                        .into(),
                });
            }
            if !buf.trim().is_empty() {
                break;
            }
        }
        let header: Header = serde_json::from_str(buf.trim()).map_err(|e| ReadError {
            line,
            message: format!(
                "not an mmtrace header ({e}); the first line must be \
                 {{\"mmtrace\":{FORMAT_VERSION},\"clocks\":[{{\"name\":\"device\"}}],\"start_unix_nanos\":0}}"
            ),
        })?;
        if header.mmtrace == 0 || header.mmtrace > FORMAT_VERSION {
            return Err(ReadError {
                line,
                message: format!(
                    "format version {} is not supported (this build reads 1..={FORMAT_VERSION}); \
                     upgrade mmsched to read it",
                    header.mmtrace
                ),
            });
        }
        if header.clocks.is_empty() {
            return Err(ReadError {
                line,
                message: "the header declares no clock domains: add at least \
                          {\"name\":\"device\"} to `clocks`"
                    .into(),
            });
        }
        let clocks = header.clocks.iter().map(|c| c.name.clone()).collect();
        Ok(Self {
            input,
            header,
            clocks,
            line,
            buf,
            ended: false,
        })
    }

    /// The trace's header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The number of the last line read (1-based).
    pub fn line(&self) -> usize {
        self.line
    }

    fn parse(&self, text: &str) -> Result<Record, LineError> {
        let record: Record = serde_json::from_str(text).map_err(LineError::Json)?;
        record.check().map_err(LineError::Record)?;
        if !self.clocks.contains(&record.clock) {
            let mut known: Vec<_> = self.clocks.iter().map(String::as_str).collect();
            known.sort_unstable();
            return Err(LineError::UndeclaredClock {
                clock: record.clock.clone(),
                declared: known.join(", "),
            });
        }
        Ok(record)
    }
}

impl<R: BufRead> Iterator for Reader<R> {
    type Item = Result<Record, ReadError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.ended {
                return None;
            }
            self.line += 1;
            match read_bounded_line(&mut self.input, &mut self.buf) {
                Ok(0) => return None,
                Ok(_) => {}
                Err(e) => {
                    self.ended = true;
                    return Some(Err(e.at(self.line)));
                }
            }
            let text = self.buf.trim();
            if text.is_empty() {
                continue;
            }
            return Some(self.parse(text).map_err(|e| e.at(self.line)));
        }
    }
}

/// A whole trace in memory.
#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    /// The header line.
    pub header: Header,
    /// The records, in file order.
    pub records: Vec<Record>,
}

impl Trace {
    /// Reads a whole trace, stopping at the first bad line.
    pub fn read(input: impl BufRead) -> Result<Self, ReadError> {
        let mut reader = Reader::new(input)?;
        let records = reader.by_ref().collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            header: reader.header,
            records,
        })
    }

    /// Writes the trace as mmtrace NDJSON.
    pub fn write(&self, out: impl Write) -> std::io::Result<()> {
        let mut w = Writer::new(out, &self.header)?;
        for r in &self.records {
            w.write(r)?;
        }
        w.finish().map(drop)
    }
}

/// The outcome of [`validate`]: how many records were good, and every bad line.
#[derive(Debug, Default)]
pub struct Validation {
    /// Records that parsed and passed their checks.
    pub valid_records: u64,
    /// Problems, in line order (the header problem, if any, is the only entry).
    pub errors: Vec<ReadError>,
}

/// Checks every line of a trace, collecting all problems instead of stopping at the first.
pub fn validate(input: impl BufRead) -> Validation {
    let mut v = Validation::default();
    let reader = match Reader::new(input) {
        Ok(r) => r,
        Err(e) => {
            v.errors.push(e);
            return v;
        }
    };
    for item in reader {
        match item {
            Ok(_) => v.valid_records += 1,
            Err(e) => v.errors.push(e),
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = r#"{"mmtrace":1,"clocks":[{"name":"device"}],"start_unix_nanos":0}"#;
    const GOOD: &str = r#"{"kind":"span","trace_id":"0af7651916cd43dd8448eb211c80319c","span_id":"b7ad6b7169203331","track":"cpu0","ts_ns":5,"dur_ns":10,"clock":"device","name":"exec"}"#;

    #[test]
    fn an_endless_line_fails_at_the_cap_instead_of_filling_memory() {
        let zeros = std::io::BufReader::new(std::io::repeat(0));
        let e = Reader::new(zeros).err().map(|e| (e.line, e.message));
        assert!(
            matches!(&e, Some((1, m)) if m.contains("longer than 1 MiB")),
            "{e:?}"
        );
        let v = validate(std::io::BufReader::new(std::io::repeat(b'x')));
        assert_eq!(v.errors.len(), 1);
    }

    #[test]
    fn a_long_record_line_ends_the_validation() {
        let long = "y".repeat(MAX_LINE_BYTES + 10);
        let text = format!("{HEADER}\n{GOOD}\n{long}\n{GOOD}\n");
        let v = validate(text.as_bytes());
        assert_eq!(v.valid_records, 1);
        assert_eq!(v.errors.len(), 1);
        assert_eq!(v.errors[0].line, 3);
    }

    #[test]
    fn bad_lines_are_reported_with_their_number() {
        let text = format!(
            "{HEADER}\n{GOOD}\n\n{}\n{}\n",
            GOOD.replace("b7ad6b7169203331", "XYZ"),
            GOOD.replace("\"device\"", "\"mic9\"")
        );
        let v = validate(text.as_bytes());
        assert_eq!(v.valid_records, 1);
        assert_eq!(v.errors.len(), 2);
        assert_eq!(v.errors[0].line, 4);
        assert!(v.errors[0].message.contains("hex"), "{}", v.errors[0]);
        assert_eq!(v.errors[1].line, 5);
        assert!(v.errors[1].message.contains("mic9"), "{}", v.errors[1]);
        let err = Trace::read(text.as_bytes()).expect_err("line 4 is bad");
        assert_eq!(err.line, 4);
    }

    #[test]
    fn header_problems_are_line_one() {
        let e = Reader::new(GOOD.as_bytes()).expect_err("not a header");
        assert_eq!(e.line, 1);
        assert!(e.message.contains("header"));
        let newer = HEADER.replace("\"mmtrace\":1", "\"mmtrace\":99");
        let e = Reader::new(newer.as_bytes()).expect_err("too new");
        assert!(e.message.contains("upgrade"));
        assert!(Reader::new(&b""[..]).is_err());
    }

    #[test]
    fn counters_need_values_and_instants_no_duration() {
        let counter = GOOD
            .replace("\"span\"", "\"counter\"")
            .replace(",\"dur_ns\":10", "");
        let v = validate(format!("{HEADER}\n{counter}\n").as_bytes());
        assert!(v.errors[0].message.contains("value"));
        let instant = GOOD.replace("\"span\"", "\"instant\"");
        let v = validate(format!("{HEADER}\n{instant}\n").as_bytes());
        assert!(v.errors[0].message.contains("dur_ns"));
    }
}
