//! RTP packets (RFC 3550 §5.1) with an L16 payload (RFC 3551 §4.5.11), and the RTCP
//! retransmission request (Generic NACK, RFC 4585 §6.2.1) sent back for missing ones.
//!
//! The parser never panics and never allocates: any byte string gives a packet or a
//! [`ParseError`] (a fuzz target, `fuzz/fuzz_targets/rtp_parse.rs`, holds it to that).

/// The fixed header: 12 bytes.
const HEADER_BYTES: usize = 12;

/// A parsed RTP packet, borrowing the datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RtpPacket<'a> {
    /// The marker bit (for audio: the first packet of a talk spurt).
    pub marker: bool,
    /// Payload type, 0–127.
    pub payload_type: u8,
    /// Sequence number (wraps at 2¹⁶).
    pub sequence: u16,
    /// Media timestamp, in the payload's clock (wraps at 2³²).
    pub timestamp: u32,
    /// Synchronisation source.
    pub ssrc: u32,
    /// Contributing sources, 4 bytes each, big-endian.
    csrc: &'a [u8],
    /// The header extension: profile-defined id and its data.
    pub extension: Option<(u16, &'a [u8])>,
    /// The payload, padding removed.
    pub payload: &'a [u8],
}

/// Why a datagram is not an RTP packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// Shorter than the fixed header.
    #[error("{0} bytes is shorter than the 12-byte RTP header")]
    Short(usize),
    /// Not RTP version 2.
    #[error("RTP version {0}, expected 2")]
    Version(u8),
    /// The CSRC list runs past the end.
    #[error("the CSRC list runs past the end of the packet")]
    Csrc,
    /// The header extension runs past the end.
    #[error("the header extension runs past the end of the packet")]
    Extension,
    /// The padding count is zero or longer than the payload.
    #[error("padding of {0} bytes does not fit the payload")]
    Padding(u8),
}

impl<'a> RtpPacket<'a> {
    /// Parses one datagram.
    pub fn parse(data: &'a [u8]) -> Result<Self, ParseError> {
        if data.len() < HEADER_BYTES {
            return Err(ParseError::Short(data.len()));
        }
        let version = data[0] >> 6;
        if version != 2 {
            return Err(ParseError::Version(version));
        }
        let padded = data[0] & 0x20 != 0;
        let extended = data[0] & 0x10 != 0;
        let csrc_count = usize::from(data[0] & 0x0f);
        let be16 = |i: usize| u16::from_be_bytes([data[i], data[i + 1]]);
        let be32 = |i: usize| u32::from_be_bytes([data[i], data[i + 1], data[i + 2], data[i + 3]]);
        let mut at = HEADER_BYTES;
        let csrc = data.get(at..at + 4 * csrc_count).ok_or(ParseError::Csrc)?;
        at += 4 * csrc_count;
        let extension = if extended {
            let head = data.get(at..at + 4).ok_or(ParseError::Extension)?;
            let id = u16::from_be_bytes([head[0], head[1]]);
            let words = usize::from(u16::from_be_bytes([head[2], head[3]]));
            let body = data
                .get(at + 4..at + 4 + 4 * words)
                .ok_or(ParseError::Extension)?;
            at += 4 + 4 * words;
            Some((id, body))
        } else {
            None
        };
        let mut payload = &data[at..];
        if padded {
            let pad = *payload.last().ok_or(ParseError::Padding(0))?;
            if pad == 0 || usize::from(pad) > payload.len() {
                return Err(ParseError::Padding(pad));
            }
            payload = &payload[..payload.len() - usize::from(pad)];
        }
        Ok(Self {
            marker: data[1] & 0x80 != 0,
            payload_type: data[1] & 0x7f,
            sequence: be16(2),
            timestamp: be32(4),
            ssrc: be32(8),
            csrc,
            extension,
            payload,
        })
    }

    /// The contributing sources.
    pub fn csrcs(&self) -> impl Iterator<Item = u32> + '_ {
        self.csrc
            .chunks_exact(4)
            .map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]))
    }
}

/// Decodes an L16 payload (16-bit big-endian samples, channels interleaved) to mono in
/// [-1, 1], averaging the channels; a trailing partial sample frame is dropped.
pub fn decode_l16(payload: &[u8], channels: u16, out: &mut Vec<f32>) {
    let channels = usize::from(channels.max(1));
    for frame in payload.chunks_exact(2 * channels) {
        let sum: f32 = frame
            .chunks_exact(2)
            .map(|s| f32::from(i16::from_be_bytes([s[0], s[1]])) / 32_768.0)
            .sum();
        out.push(sum / channels as f32);
    }
}

/// Extends a wrapping counter of `BITS` bits (RTP sequence numbers: 16, timestamps: 32)
/// to 64 bits, following the value closest to the last one, so reordering across a wrap
/// is placed right. The first value starts one cycle up, so a slightly earlier one that
/// arrives late still has room below it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Unwrapper<const BITS: u32> {
    last: Option<u64>,
}

impl<const BITS: u32> Unwrapper<BITS> {
    const CYCLE: u64 = 1 << BITS;

    /// The extended value of `v` (only its low `BITS` bits count).
    pub fn extend(&mut self, v: u64) -> u64 {
        let v = v & (Self::CYCLE - 1);
        let ext = match self.last {
            None => Self::CYCLE + v,
            Some(last) => {
                let low = last & (Self::CYCLE - 1);
                let forward = v.wrapping_sub(low) & (Self::CYCLE - 1);
                if forward < Self::CYCLE / 2 {
                    last + forward
                } else {
                    last.saturating_sub(Self::CYCLE - forward)
                }
            }
        };
        if self.last.is_none_or(|l| ext > l) {
            self.last = Some(ext);
        }
        ext
    }
}

/// An RTCP compound packet asking `media_ssrc` for the packets `sequences` again: an empty
/// receiver report (RFC 3550 §6.4.2; a compound packet must start with one) followed by a
/// Generic NACK (RFC 4585 §6.2.1) whose entries each cover a packet id and the 16 after it.
pub fn nack_packet(sender_ssrc: u32, media_ssrc: u32, sequences: &[u16]) -> Vec<u8> {
    let mut entries: Vec<(u16, u16)> = Vec::new();
    let mut sorted = sequences.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    for s in sorted {
        match entries.last_mut() {
            Some((pid, blp)) if s.wrapping_sub(*pid) >= 1 && s.wrapping_sub(*pid) <= 16 => {
                *blp |= 1 << (s.wrapping_sub(*pid) - 1);
            }
            _ => entries.push((s, 0)),
        }
    }
    let mut out = Vec::with_capacity(8 + 12 + 4 * entries.len());
    // Receiver report, no report blocks: V=2, RC=0, PT=201, length 1 word after the first.
    out.extend([0x80, 201, 0, 1]);
    out.extend(sender_ssrc.to_be_bytes());
    // Transport-layer feedback: V=2, FMT=1 (Generic NACK), PT=205.
    out.extend([0x80 | 1, 205]);
    let words = 2 + entries.len();
    out.extend((words as u16).to_be_bytes());
    out.extend(sender_ssrc.to_be_bytes());
    out.extend(media_ssrc.to_be_bytes());
    for (pid, blp) in entries {
        out.extend(pid.to_be_bytes());
        out.extend(blp.to_be_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A header built by hand from RFC 3550's figure, not by the code under test.
    fn header(first: u8, second: u8, seq: u16, ts: u32, ssrc: u32) -> Vec<u8> {
        let mut v = vec![first, second];
        v.extend(seq.to_be_bytes());
        v.extend(ts.to_be_bytes());
        v.extend(ssrc.to_be_bytes());
        v
    }

    #[test]
    fn a_plain_header_and_l16_payload() {
        let mut d = header(0x80, 0x80 | 11, 0xfffe, 0x0102_0304, 0xdead_beef);
        d.extend([0x40, 0x00, 0xc0, 0x00, 0x00, 0x01]);
        let p = RtpPacket::parse(&d).expect("valid");
        assert!(p.marker);
        assert_eq!(p.payload_type, 11);
        assert_eq!(p.sequence, 0xfffe);
        assert_eq!(p.timestamp, 0x0102_0304);
        assert_eq!(p.ssrc, 0xdead_beef);
        assert_eq!(p.csrcs().count(), 0);
        assert_eq!(p.extension, None);
        let mut s = Vec::new();
        decode_l16(p.payload, 1, &mut s);
        assert_eq!(s, [0.5, -0.5, 1.0 / 32_768.0]);
        let mut stereo = Vec::new();
        decode_l16(&[0x40, 0, 0, 0, 0x7f], 2, &mut stereo);
        assert_eq!(stereo, [0.25], "channels averaged, partial frame dropped");
    }

    #[test]
    fn csrcs_extension_and_padding_are_skipped() {
        // CC=2, X=1, P=1.
        let mut d = header(0x80 | 0x20 | 0x10 | 2, 96, 7, 160, 1);
        d.extend(0x1111_1111u32.to_be_bytes());
        d.extend(0x2222_2222u32.to_be_bytes());
        d.extend([0xbe, 0xde, 0, 1, 9, 9, 9, 9]); // extension: id 0xBEDE, 1 word
        d.extend([0x12, 0x34]); // payload
        d.extend([0, 0, 3]); // 3 bytes of padding, the last one the count
        let p = RtpPacket::parse(&d).expect("valid");
        assert_eq!(p.csrcs().collect::<Vec<_>>(), [0x1111_1111, 0x2222_2222]);
        assert_eq!(p.extension, Some((0xbede, &[9u8, 9, 9, 9][..])));
        assert_eq!(p.payload, [0x12, 0x34]);
    }

    #[test]
    fn malformed_packets_are_errors() {
        assert_eq!(RtpPacket::parse(&[0x80; 11]), Err(ParseError::Short(11)));
        assert_eq!(
            RtpPacket::parse(&header(0x40, 0, 0, 0, 0)),
            Err(ParseError::Version(1))
        );
        assert_eq!(
            RtpPacket::parse(&header(0x80 | 3, 0, 0, 0, 0)),
            Err(ParseError::Csrc)
        );
        let mut ext = header(0x90, 0, 0, 0, 0);
        ext.extend([0, 0, 0, 5, 1, 2]);
        assert_eq!(RtpPacket::parse(&ext), Err(ParseError::Extension));
        assert_eq!(
            RtpPacket::parse(&header(0x90, 0, 0, 0, 0)),
            Err(ParseError::Extension)
        );
        let mut pad = header(0xa0, 0, 0, 0, 0);
        pad.extend([1, 2, 9]);
        assert_eq!(RtpPacket::parse(&pad), Err(ParseError::Padding(9)));
        pad.pop();
        pad.push(0);
        assert_eq!(RtpPacket::parse(&pad), Err(ParseError::Padding(0)));
        assert_eq!(
            RtpPacket::parse(&header(0xa0, 0, 0, 0, 0)),
            Err(ParseError::Padding(0)),
            "padding flag with no payload"
        );
        let mut all_pad = header(0xa0, 0, 0, 0, 0);
        all_pad.extend([0, 2]);
        assert_eq!(RtpPacket::parse(&all_pad).map(|p| p.payload.len()), Ok(0));
    }

    #[test]
    fn sequence_numbers_unwrap_across_the_wrap_and_reordering() {
        let mut u = Unwrapper::<16>::default();
        let start = u.extend(65_534);
        assert_eq!(start, 65_536 + 65_534);
        assert_eq!(u.extend(65_535), start + 1);
        assert_eq!(u.extend(1), start + 3, "wrapped, one lost");
        assert_eq!(u.extend(0), start + 2, "late across the wrap");
        assert_eq!(u.extend(2), start + 4);
        assert_eq!(u.extend(65_530), start - 4, "old, before the first");
        let mut t = Unwrapper::<32>::default();
        let t0 = t.extend(u64::from(u32::MAX - 100));
        assert_eq!(t.extend(220), t0 + 321);
    }

    #[test]
    fn a_nack_covers_each_missing_packet_once() {
        let p = nack_packet(0xaabb_ccdd, 0x0102_0304, &[10, 12, 26, 27, 10, 65_535, 50]);
        // RR header: V=2 RC=0 PT=201 length=1, then our SSRC.
        assert_eq!(&p[..8], &[0x80, 201, 0, 1, 0xaa, 0xbb, 0xcc, 0xdd]);
        // NACK header: V=2 FMT=1 PT=205; length = 2 + entries, in words minus one.
        assert_eq!(&p[8..10], &[0x81, 205]);
        let words = u16::from_be_bytes([p[10], p[11]]);
        assert_eq!(usize::from(words + 1) * 4, p.len() - 8);
        assert_eq!(&p[12..20], &[0xaa, 0xbb, 0xcc, 0xdd, 1, 2, 3, 4]);
        let fci: Vec<(u16, u16)> = p[20..]
            .chunks_exact(4)
            .map(|c| {
                (
                    u16::from_be_bytes([c[0], c[1]]),
                    u16::from_be_bytes([c[2], c[3]]),
                )
            })
            .collect();
        // 10 with 12 (bit 1) and 26 (bit 15); 27 is 17 after 10: a new entry; so are 50
        // and 65535.
        assert_eq!(
            fci,
            [(10, 0b1000_0000_0000_0010), (27, 0), (50, 0), (65_535, 0)]
        );
    }

    proptest::proptest! {
        /// The stable counterpart of `fuzz/fuzz_targets/rtp_parse.rs`: any bytes give a
        /// packet or an error, and a packet's payload lies inside the datagram.
        #[test]
        fn any_datagram_parses_or_fails_cleanly(data in proptest::collection::vec(proptest::num::u8::ANY, 0..200)) {
            if let Ok(p) = RtpPacket::parse(&data) {
                proptest::prop_assert!(p.payload.len() + HEADER_BYTES <= data.len());
                proptest::prop_assert!(p.csrcs().count() <= 15);
                let mut out = Vec::new();
                decode_l16(p.payload, 2, &mut out);
                proptest::prop_assert!(out.iter().all(|s| (-1.0..1.0).contains(s)));
            }
        }
    }
}
