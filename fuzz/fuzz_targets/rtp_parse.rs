//! Arbitrary datagrams into the RTP parser, the L16 decoder and the sequence unwrapper:
//! every input must give a packet or an error, never a panic, and a parsed packet's parts
//! must lie inside the datagram.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mmsched_runtime::source::rtp::packet::{RtpPacket, Unwrapper, decode_l16};

fuzz_target!(|data: &[u8]| {
    if let Ok(p) = RtpPacket::parse(data) {
        assert!(p.payload.len() + 12 <= data.len());
        assert!(p.payload_type < 128);
        let csrcs = p.csrcs().count();
        assert!(csrcs <= 15);
        let mut samples = Vec::new();
        let channels = u16::from(data[1] % 4);
        decode_l16(p.payload, channels, &mut samples);
        assert!(samples.iter().all(|s| (-1.0..1.0).contains(s)));
        let mut seq = Unwrapper::<16>::default();
        let first = seq.extend(u64::from(p.sequence));
        let next = seq.extend(u64::from(p.sequence.wrapping_add(1)));
        assert_eq!(next, first + 1);
    }
});
