//! A microphone on the network: RTP on a UDP port, L16 payload (RFC 3551: big-endian
//! 16-bit samples; payload type 10 is 44.1 kHz stereo, 11 is 44.1 kHz mono, 96–127 are
//! dynamic with the rate and channels agreed out of band, here in the scenario).
//!
//! A thread receives datagrams and stamps each with the device clock the moment it
//! arrives. The source parses them, follows one sender (the first SSRC heard), unwraps
//! sequence numbers and media timestamps, and cuts the audio into the microphone's fixed
//! packets ([`assemble`]). Events carry their real arrival time
//! ([`SourceEvent::received_nanos`]), so the delivery layer adds no simulated network: the
//! playout buffer, loss detection and retransmission requests see the real one. A
//! retransmission request goes back to the sender as an RTCP Generic NACK (RFC 4585) on
//! its RTCP port (its RTP port + 1); a sender that does not retransmit ignores it, and the
//! playout buffer conceals the gap.

pub mod assemble;
pub mod packet;

use std::collections::{BTreeMap, VecDeque};
use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::time::Duration;

use mmsched_core::Modality;
use mmsched_core::time::{Clock, NANOS_PER_MILLI, NANOS_PER_SEC, Nanos};

use self::assemble::Assembler;
use self::packet::{RtpPacket, Unwrapper, decode_l16, nack_packet};
use super::microphone::AudioPacket;
use super::{Source, SourceEvent};

/// How often the receiving thread checks whether the source is gone.
const RECV_TIMEOUT: Duration = Duration::from_millis(20);

/// How often the main loop should look for new packets (a live source has no schedule).
const POLL_NANOS: Nanos = 2 * NANOS_PER_MILLI;

/// Datagrams remembered for working out which ones a retransmission request names.
const REMEMBERED_DATAGRAMS: usize = 512;

/// Most sequence numbers named in one retransmission request.
const MAX_NACKED: usize = 64;

/// The L16 stream expected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct L16Format {
    /// RTP payload type.
    pub payload_type: u8,
    /// Media clock and sample rate, Hz.
    pub sample_rate_hz: u32,
    /// Interleaved channels (averaged to mono).
    pub channels: u16,
}

impl L16Format {
    /// The format of `payload_type`: 10 and 11 are fixed by RFC 3551 (44.1 kHz, stereo and
    /// mono); 96–127 are dynamic and take `rate_hz` and `channels`.
    pub fn of(payload_type: u8, rate_hz: u32, channels: u16) -> Result<Self, RtpError> {
        let (sample_rate_hz, channels) = match payload_type {
            10 => (44_100, 2),
            11 => (44_100, 1),
            96..=127 => (rate_hz, channels),
            other => return Err(RtpError::PayloadType(other)),
        };
        if sample_rate_hz == 0 || channels == 0 {
            return Err(RtpError::PayloadType(payload_type));
        }
        Ok(Self {
            payload_type,
            sample_rate_hz,
            channels,
        })
    }
}

/// Settings of an [`RtpMicrophone`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RtpConfig {
    /// Local address to receive on, e.g. `127.0.0.1:5004`.
    pub bind: SocketAddr,
    /// The payload expected.
    pub format: L16Format,
    /// Length of the packets handed on, ms.
    pub packet_ms: u32,
}

/// Why the RTP source could not start.
#[derive(Debug, thiserror::Error)]
pub enum RtpError {
    /// The port could not be bound.
    #[error(
        "cannot receive RTP on {addr}: {reason} (choose a free port, or bind = \"0.0.0.0\" to listen on every interface)"
    )]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        reason: String,
    },
    /// Not an L16 payload type.
    #[error(
        "payload type {0} is not L16: use 10 (44.1 kHz stereo), 11 (44.1 kHz mono) or 96–127 with sample_rate_hz and channels"
    )]
    PayloadType(u8),
    /// The packet length does not hold whole samples at the rate.
    #[error(
        "{packet_ms} ms at {rate_hz} Hz is not a whole number of samples: choose another packet_ms"
    )]
    Packetization {
        /// The rate.
        rate_hz: u32,
        /// The packet length.
        packet_ms: u32,
    },
}

/// Counters of an [`RtpMicrophone`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RtpCounts {
    /// RTP packets taken in from the sender followed.
    pub packets: u64,
    /// Datagrams that were not RTP.
    pub malformed: u64,
    /// Packets of another payload type or sender.
    pub ignored: u64,
    /// Retransmission requests sent.
    pub nacks: u64,
}

#[derive(Debug)]
struct Datagram {
    data: Vec<u8>,
    from: SocketAddr,
    at: Nanos,
}

/// See the module docs.
#[derive(Debug)]
pub struct RtpMicrophone<C: Clock> {
    device: C,
    socket: UdpSocket,
    local: SocketAddr,
    rx: Receiver<Datagram>,
    stop: Arc<AtomicBool>,
    format: L16Format,
    packet_nanos: Nanos,
    out_samples: u64,
    assembler: Assembler,
    sequences: Unwrapper<16>,
    timestamps: Unwrapper<32>,
    sender: Option<(u32, SocketAddr)>,
    origin_nanos: Option<Nanos>,
    /// Extended sequence number → (extended timestamp, samples), newest last.
    seen: BTreeMap<u64, (u64, u64)>,
    ready: VecDeque<SourceEvent<AudioPacket>>,
    counts: RtpCounts,
    our_ssrc: u32,
    scratch: Vec<f32>,
}

impl<C: Clock + Clone + Send + 'static> RtpMicrophone<C> {
    /// Binds `config.bind` and starts receiving; arrivals are stamped with `device`.
    pub fn new(config: RtpConfig, device: C) -> Result<Self, RtpError> {
        let assembler = Assembler::new(config.format.sample_rate_hz, config.packet_ms).ok_or(
            RtpError::Packetization {
                rate_hz: config.format.sample_rate_hz,
                packet_ms: config.packet_ms,
            },
        )?;
        let bind_err = |reason: String| RtpError::Bind {
            addr: config.bind,
            reason,
        };
        let socket = UdpSocket::bind(config.bind).map_err(|e| bind_err(e.to_string()))?;
        let local = socket.local_addr().map_err(|e| bind_err(e.to_string()))?;
        let receiving = socket.try_clone().map_err(|e| bind_err(e.to_string()))?;
        receiving
            .set_read_timeout(Some(RECV_TIMEOUT))
            .map_err(|e| bind_err(e.to_string()))?;
        let (tx, rx) = channel();
        let stop = Arc::new(AtomicBool::new(false));
        let (stop2, clock) = (Arc::clone(&stop), device.clone());
        std::thread::Builder::new()
            .name("rtp-receive".into())
            .spawn(move || receive(&receiving, &clock, &tx, &stop2))
            .map_err(|e| bind_err(e.to_string()))?;
        Ok(Self {
            device,
            socket,
            local,
            rx,
            stop,
            format: config.format,
            packet_nanos: u64::from(config.packet_ms) * NANOS_PER_MILLI,
            out_samples: 16 * u64::from(config.packet_ms),
            assembler,
            sequences: Unwrapper::default(),
            timestamps: Unwrapper::default(),
            sender: None,
            origin_nanos: None,
            seen: BTreeMap::new(),
            ready: VecDeque::new(),
            counts: RtpCounts::default(),
            // Any fixed non-zero value serves: this receiver sends no media.
            our_ssrc: 0x6d6d_7363,
            scratch: Vec::new(),
        })
    }
}

impl<C: Clock> RtpMicrophone<C> {
    /// The address packets are received on (the port, when 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// What has been received so far.
    pub fn counts(&self) -> RtpCounts {
        self.counts
    }

    fn take(&mut self, d: Datagram) {
        let Ok(p) = RtpPacket::parse(&d.data) else {
            self.counts.malformed += 1;
            return;
        };
        if p.payload_type != self.format.payload_type
            || self.sender.is_some_and(|(ssrc, _)| ssrc != p.ssrc)
        {
            self.counts.ignored += 1;
            return;
        }
        self.sender.get_or_insert((p.ssrc, d.from));
        self.counts.packets += 1;
        self.scratch.clear();
        decode_l16(p.payload, self.format.channels, &mut self.scratch);
        let seq = self.sequences.extend(u64::from(p.sequence));
        let ts = self.timestamps.extend(u64::from(p.timestamp));
        let rate = u64::from(self.format.sample_rate_hz);
        // Sample 0 was taken about when the first datagram left, its samples' length
        // before it arrived: the one offset that maps the media clock onto the device's.
        let origin = *self.origin_nanos.get_or_insert_with(|| {
            d.at.saturating_sub(self.scratch.len() as u64 * NANOS_PER_SEC / rate)
        });
        self.seen.insert(seq, (ts, self.scratch.len() as u64));
        while self.seen.len() > REMEMBERED_DATAGRAMS {
            self.seen.pop_first();
        }
        let samples = std::mem::take(&mut self.scratch);
        for (k, audio) in self.assembler.push(ts, &samples) {
            let captured = origin + (k + 1) * self.packet_nanos;
            self.ready.push_back(SourceEvent {
                seq: k,
                capture_device_nanos: captured,
                stamp_nanos: captured,
                payload: AudioPacket {
                    first_sample: k * self.out_samples,
                    samples: audio,
                    speech: None,
                },
                received_nanos: Some(d.at),
            });
        }
        self.scratch = samples;
    }

    /// Sequence numbers of the datagrams missing around packet `k`: the gaps between the
    /// datagrams received whose media time overlaps the packet's.
    fn missing_for(&self, k: u64) -> Vec<u16> {
        let (Some(from), Some(to)) = (
            self.assembler.packet_timestamp(k),
            self.assembler.packet_timestamp(k + 1),
        ) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let mut prev: Option<(u64, u64)> = None;
        for (&seq, &(ts, len)) in &self.seen {
            if let Some((pseq, pend)) = prev
                && seq > pseq + 1
                && pend < to
                && ts > from
            {
                out.extend((pseq + 1..seq).map(|s| s as u16));
            }
            prev = Some((seq, ts + len));
        }
        out.truncate(MAX_NACKED);
        out
    }
}

fn receive<C: Clock>(socket: &UdpSocket, clock: &C, tx: &Sender<Datagram>, stop: &AtomicBool) {
    let mut buf = vec![0u8; 65_536];
    while !stop.load(Ordering::Relaxed) {
        match socket.recv_from(&mut buf) {
            Ok((n, from)) => {
                let at = clock.now_nanos();
                let d = Datagram {
                    data: buf[..n].to_vec(),
                    from,
                    at,
                };
                if tx.send(d).is_err() {
                    return;
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::TimedOut
                        | std::io::ErrorKind::Interrupted
                        | std::io::ErrorKind::ConnectionRefused
                ) => {}
            Err(_) => return,
        }
    }
}

impl<C: Clock> Drop for RtpMicrophone<C> {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

impl<C: Clock> Source for RtpMicrophone<C> {
    type Payload = AudioPacket;

    fn name(&self) -> &str {
        "microphone"
    }

    fn modality(&self) -> Modality {
        Modality::Audio
    }

    fn next_due_nanos(&self) -> Option<Nanos> {
        Some(self.device.now_nanos() + POLL_NANOS)
    }

    fn poll(&mut self) -> Option<SourceEvent<AudioPacket>> {
        while let Ok(d) = self.rx.try_recv() {
            self.take(d);
        }
        self.ready.pop_front()
    }

    fn request_retransmit(&mut self, seq: u64) -> bool {
        let Some((ssrc, from)) = self.sender else {
            return false;
        };
        let missing = self.missing_for(seq);
        if missing.is_empty() {
            return false;
        }
        let rtcp = SocketAddr::new(from.ip(), from.port().wrapping_add(1));
        let sent = self
            .socket
            .send_to(&nack_packet(self.our_ssrc, ssrc, &missing), rtcp)
            .is_ok();
        if sent {
            self.counts.nacks += 1;
        }
        sent
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mmsched_core::time::MonotonicClock;

    fn datagram(seq: u16, ts: u32, ssrc: u32, pt: u8, samples: &[i16]) -> Vec<u8> {
        let mut v = vec![0x80, pt];
        v.extend(seq.to_be_bytes());
        v.extend(ts.to_be_bytes());
        v.extend(ssrc.to_be_bytes());
        for s in samples {
            v.extend(s.to_be_bytes());
        }
        v
    }

    fn loopback() -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], 0))
    }

    /// A sender socket whose port + 1 is also ours, to hear the RTCP sent back.
    fn sender_pair() -> (UdpSocket, UdpSocket) {
        for _ in 0..50 {
            let rtp = UdpSocket::bind(loopback()).expect("bind");
            let port = rtp.local_addr().expect("addr").port();
            if let Ok(rtcp) = UdpSocket::bind(SocketAddr::from(([127, 0, 0, 1], port + 1))) {
                return (rtp, rtcp);
            }
        }
        panic!("no two adjacent free loopback ports");
    }

    fn drain(
        mic: &mut RtpMicrophone<MonotonicClock>,
        want: usize,
    ) -> Vec<SourceEvent<AudioPacket>> {
        let mut got = Vec::new();
        // Loopback datagrams arrive within microseconds; allow a generous bound.
        let clock = MonotonicClock::new();
        while got.len() < want && clock.now_nanos() < 2 * NANOS_PER_SEC {
            match mic.poll() {
                Some(e) => got.push(e),
                None => std::thread::sleep(Duration::from_millis(1)),
            }
        }
        got
    }

    #[test]
    fn packets_over_loopback_become_timed_events_and_gaps_are_nacked() {
        let format = L16Format::of(97, 16_000, 1).expect("dynamic");
        let mut mic = RtpMicrophone::new(
            RtpConfig {
                bind: loopback(),
                format,
                packet_ms: 20,
            },
            MonotonicClock::new(),
        )
        .expect("binds");
        let to = mic.local_addr();
        let (sender, rtcp) = sender_pair();
        let chunk: Vec<i16> = vec![16_384; 320];
        let ssrc = 0x1234_5678;
        // Sequence numbers across the wrap; 65535 is lost; a foreign packet and garbage.
        for (seq, ts) in [(65_533u16, 0u32), (65_534, 320)] {
            sender
                .send_to(&datagram(seq, ts, ssrc, 97, &chunk), to)
                .expect("send");
        }
        sender
            .send_to(&datagram(1, 0, 99, 97, &chunk), to)
            .expect("send");
        sender
            .send_to(&datagram(2, 0, ssrc, 0, &chunk), to)
            .expect("send");
        sender.send_to(b"garbage", to).expect("send");
        for (seq, ts) in [(0u16, 960u32), (1, 1280)] {
            sender
                .send_to(&datagram(seq, ts, ssrc, 97, &chunk), to)
                .expect("send");
        }
        let got = drain(&mut mic, 4);
        let seqs: Vec<u64> = got.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, [0, 1, 3, 4], "packet 2 (sequence 65535) is missing");
        assert!(got.iter().all(|e| e.received_nanos.is_some()));
        assert!(got[1].payload.samples.iter().all(|&v| v == 0.5));
        assert_eq!(got[3].payload.first_sample, 4 * 320);
        assert_eq!(
            got[3].stamp_nanos - got[0].stamp_nanos,
            80 * NANOS_PER_MILLI,
            "stamps follow the media clock"
        );
        let c = mic.counts();
        assert_eq!((c.packets, c.malformed, c.ignored), (4, 1, 2));
        // The retransmission request names sequence 65535, on the sender's RTCP port.
        assert!(mic.request_retransmit(2));
        rtcp.set_read_timeout(Some(Duration::from_secs(2)))
            .expect("timeout");
        let mut buf = [0u8; 256];
        let n = rtcp.recv(&mut buf).expect("a NACK arrives");
        let nack = &buf[..n];
        assert_eq!(&nack[8..10], &[0x81, 205]);
        assert_eq!(&nack[16..20], &ssrc.to_be_bytes());
        assert_eq!(&nack[20..24], &[0xff, 0xff, 0, 0]);
        assert!(
            !mic.request_retransmit(1),
            "nothing is missing around packet 1"
        );
        // The copy arrives: packet 2 completes.
        sender
            .send_to(&datagram(65_535, 640, ssrc, 97, &chunk), to)
            .expect("send");
        assert_eq!(drain(&mut mic, 1).first().map(|e| e.seq), Some(2));
    }

    #[test]
    fn bad_settings_are_explained() {
        assert!(matches!(
            L16Format::of(0, 8_000, 1),
            Err(RtpError::PayloadType(0))
        ));
        assert_eq!(
            L16Format::of(10, 8_000, 1).expect("static").sample_rate_hz,
            44_100
        );
        let taken = UdpSocket::bind(loopback()).expect("bind");
        let e = RtpMicrophone::new(
            RtpConfig {
                bind: taken.local_addr().expect("addr"),
                format: L16Format::of(96, 16_000, 1).expect("dynamic"),
                packet_ms: 20,
            },
            MonotonicClock::new(),
        )
        .expect_err("port in use");
        assert!(e.to_string().contains("choose a free port"), "{e}");
        let e = RtpMicrophone::new(
            RtpConfig {
                bind: loopback(),
                format: L16Format::of(96, 11_025, 1).expect("dynamic"),
                packet_ms: 20,
            },
            MonotonicClock::new(),
        )
        .expect_err("fractional samples");
        assert!(matches!(e, RtpError::Packetization { .. }), "{e}");
    }
}
