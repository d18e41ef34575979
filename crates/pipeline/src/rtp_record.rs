//! `mmsched run --record-rtp FILE`: the RTP microphone's packet arrivals, in the trace
//! format `mmsched sim jitter --trace` replays (CSV, `seq,send_ms,arrival_ms`).
//!
//! One line per packet of the microphone's fixed length, as the playout buffer sees it:
//! `seq` its number from the first packet, `send_ms` its media time (the RTP timestamp of
//! its first sample, in ms from the stream's first sample, offset to the device clock's
//! zero by the first packet's arrival), `arrival_ms` the device time the datagram that
//! completed it arrived. A packet recorded twice (a retransmitted copy) keeps its first
//! arrival. At the end, every packet between the first and the last that never came is
//! written with an empty `arrival_ms` (lost).

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{BufWriter, Write as _};
use std::path::{Path, PathBuf};

use mmsched_core::time::Nanos;

use crate::config::RunError;

/// See the module docs.
#[derive(Debug)]
pub struct RtpRecorder {
    writer: Option<BufWriter<File>>,
    path: PathBuf,
    packet_nanos: Nanos,
    /// The first packet's number and its media time on the device clock.
    first: Option<(u64, Nanos)>,
    highest: u64,
    missing: BTreeSet<u64>,
    recorded: u64,
    error: Option<std::io::Error>,
}

impl RtpRecorder {
    /// A recording of packets `packet_nanos` long into `path` (created or replaced).
    pub fn create(path: &Path, packet_nanos: Nanos) -> Result<Self, RunError> {
        let err = |source| RunError::RecordRtp {
            path: path.to_path_buf(),
            source,
        };
        let mut writer = BufWriter::new(File::create(path).map_err(err)?);
        writeln!(
            writer,
            "# mmsched run --record-rtp: {} ms packets of the RTP microphone; send_ms is the media time, arrival_ms the device clock\nseq,send_ms,arrival_ms",
            packet_nanos as f64 / 1e6
        )
        .map_err(err)?;
        Ok(Self {
            writer: Some(writer),
            path: path.to_path_buf(),
            packet_nanos: packet_nanos.max(1),
            first: None,
            highest: 0,
            missing: BTreeSet::new(),
            recorded: 0,
            error: None,
        })
    }

    /// Packet `seq` arrived at `arrival_nanos` (device clock).
    pub fn record(&mut self, seq: u64, arrival_nanos: Nanos) {
        let (first_seq, first_send) = *self.first.get_or_insert((seq, arrival_nanos));
        if seq < first_seq {
            // Before the first packet recorded: its media time would be negative.
            return;
        }
        if self.recorded > 0 {
            if seq > self.highest {
                self.missing.extend(self.highest + 1..seq);
                self.highest = seq;
            } else if !self.missing.remove(&seq) {
                return; // a copy of a packet already recorded
            }
        } else {
            self.highest = seq;
        }
        self.recorded += 1;
        let send = first_send + (seq - first_seq) * self.packet_nanos;
        self.write_line(seq, send, Some(arrival_nanos));
    }

    fn write_line(&mut self, seq: u64, send_nanos: Nanos, arrival_nanos: Option<Nanos>) {
        let Some(w) = &mut self.writer else { return };
        let ms = |n: Nanos| format!("{:.3}", n as f64 / 1e6);
        let line = format!(
            "{seq},{},{}",
            ms(send_nanos),
            arrival_nanos.map_or(String::new(), ms)
        );
        if let Err(e) = writeln!(w, "{line}") {
            // Stop at the first failure; `finish` reports it.
            self.error = Some(e);
            self.writer = None;
        }
    }

    /// Packets recorded so far (first arrivals).
    pub fn recorded(&self) -> u64 {
        self.recorded
    }

    /// Writes the lost packets and closes the file: its path, or why it failed.
    pub fn finish(mut self) -> Result<PathBuf, RunError> {
        if let Some((first_seq, first_send)) = self.first {
            let lost: Vec<u64> = std::mem::take(&mut self.missing).into_iter().collect();
            for seq in lost {
                let send = first_send + (seq - first_seq) * self.packet_nanos;
                self.write_line(seq, send, None);
            }
        }
        let path = self.path.clone();
        let err = |source| RunError::RecordRtp {
            path: path.clone(),
            source,
        };
        if let Some(e) = self.error.take() {
            return Err(err(e));
        }
        if let Some(mut w) = self.writer.take() {
            w.flush().map_err(err)?;
        }
        Ok(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Nanos = 1_000_000;

    #[test]
    fn arrivals_gaps_and_copies_make_a_trace_sim_jitter_reads() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("rtp.csv");
        let mut r = RtpRecorder::create(&path, 20 * MS).expect("created");
        r.record(5, 1_000 * MS);
        r.record(6, 1_021 * MS);
        // 7 and 8 are missing; 8 comes late, 7 never.
        r.record(9, 1_080 * MS);
        r.record(8, 1_095 * MS);
        r.record(8, 1_200 * MS); // a copy: ignored
        assert_eq!(r.recorded(), 4);
        r.finish().expect("written");
        let text = std::fs::read_to_string(&path).expect("read");
        let trace = mmsched_world::jitter::parse_trace(&text).expect("the format sim jitter reads");
        let got: Vec<(u64, i64, Option<i64>)> = trace
            .iter()
            .map(|p| {
                (
                    p.seq,
                    p.send_nanos / 1_000_000,
                    p.arrival_nanos.map(|a| a / 1_000_000),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                (5, 1000, Some(1000)),
                (6, 1020, Some(1021)),
                (7, 1040, None),
                (8, 1060, Some(1095)),
                (9, 1080, Some(1080)),
            ]
        );
    }

    #[test]
    fn an_unwritable_file_is_an_error_naming_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("missing-dir").join("rtp.csv");
        let e = RtpRecorder::create(&path, 20 * MS).expect_err("no such directory");
        assert!(e.to_string().contains("rtp.csv"), "{e}");
    }
}
