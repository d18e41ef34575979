//! Retransmission requests (NACKs) for missing audio packets, the health loop's degraded
//! remedy: which copies are on their way, how long a round trip takes, and how much playout
//! delay a copy needs to arrive before its frame is played.
//!
//! A copy of packet `k` can only help if it arrives before frame `k` plays. The gap is seen
//! when a later packet arrives (a frame or two after `k`), and the copy takes a request and
//! a reply over the network; with a 56 ms one-way path that is well over 100 ms, more than
//! the jitter buffer alone holds. So while requests are on, the playout buffer is given a
//! floor of two frames plus the retransmission timeout, the way a receiver with NACK trades
//! latency for loss.

use std::collections::HashMap;

use mmsched_core::time::Nanos;

/// Requests older than this are forgotten (their copy was lost again).
const FORGET_NANOS: u64 = 2_000_000_000;

/// Smoothed round trip and its variation, as TCP estimates its retransmission timeout
/// (RFC 6298: gains 1/8 and 1/4, timeout = srtt + 4·rttvar).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RoundTrip {
    srtt: f64,
    rttvar: f64,
    samples: u64,
}

impl RoundTrip {
    /// Learns one round trip.
    pub fn observe(&mut self, sample_nanos: u64) {
        let r = sample_nanos as f64;
        if self.samples == 0 {
            self.srtt = r;
            self.rttvar = r / 2.0;
        } else {
            self.rttvar = 0.75 * self.rttvar + 0.25 * (self.srtt - r).abs();
            self.srtt = 0.875 * self.srtt + 0.125 * r;
        }
        self.samples += 1;
    }

    /// The smoothed round trip, once a sample is in.
    pub fn smoothed_nanos(&self) -> Option<u64> {
        (self.samples > 0).then_some(self.srtt as u64)
    }

    /// The retransmission timeout, once a sample is in.
    pub fn timeout_nanos(&self) -> Option<u64> {
        (self.samples > 0).then_some((self.srtt + 4.0 * self.rttvar) as u64)
    }
}

/// The requests of one run. See the module docs.
#[derive(Debug, Default)]
pub struct Nacks {
    pending: HashMap<u64, Nanos>,
    round_trip: RoundTrip,
    requests: u64,
    recovered: u64,
}

impl Nacks {
    /// Counts a request for `seq` at `now`; `sent` says whether the sender still held a
    /// lost copy (a packet still in transit needs none).
    pub fn request(&mut self, seq: u64, now: Nanos, sent: bool) {
        self.requests += 1;
        if sent {
            if self.pending.len() >= 1024 {
                self.pending
                    .retain(|_, at| now.saturating_sub(*at) < FORGET_NANOS);
            }
            self.pending.insert(seq, now);
        }
    }

    /// Packet `seq` arrived at `arrival`: whether it is a requested copy. A copy's round
    /// trip is learned whether or not it comes in time.
    pub fn arrived(&mut self, seq: u64, arrival: Nanos) -> bool {
        match self.pending.remove(&seq) {
            Some(at) => {
                self.round_trip.observe(arrival.saturating_sub(at));
                true
            }
            None => false,
        }
    }

    /// A copy arrived in time to be played.
    pub fn recovered(&mut self) {
        self.recovered += 1;
    }

    /// Requests made so far.
    pub fn requests(&self) -> u64 {
        self.requests
    }

    /// Copies that arrived in time.
    pub fn recovered_count(&self) -> u64 {
        self.recovered
    }

    /// The round-trip estimate.
    pub fn round_trip(&self) -> RoundTrip {
        self.round_trip
    }

    /// The playout delay a copy needs for frames of `frame_nanos`: two frames (the gap is
    /// seen when a later packet comes) plus the timeout; 0 before any round trip is known.
    pub fn playout_floor_nanos(&self, frame_nanos: u64) -> u64 {
        self.round_trip
            .timeout_nanos()
            .map_or(0, |rto| rto + 2 * frame_nanos)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn round_trip_follows_rfc6298() {
        let mut r = RoundTrip::default();
        assert_eq!(r.timeout_nanos(), None);
        r.observe(100 * MS);
        assert_eq!(r.smoothed_nanos(), Some(100 * MS));
        assert_eq!(r.timeout_nanos(), Some(300 * MS));
        for _ in 0..200 {
            r.observe(120 * MS);
        }
        let srtt = r.smoothed_nanos().expect("samples");
        assert!(srtt.abs_diff(120 * MS) < MS, "{srtt}");
        let rto = r.timeout_nanos().expect("samples");
        assert!(
            rto.abs_diff(120 * MS) < 2 * MS,
            "steady samples: no variation, {rto}"
        );
    }

    #[test]
    fn copies_are_recognised_and_teach_the_round_trip() {
        let mut n = Nacks::default();
        assert_eq!(n.playout_floor_nanos(20 * MS), 0);
        n.request(7, 1_000 * MS, true);
        n.request(8, 1_000 * MS, false);
        assert_eq!(n.requests(), 2);
        assert!(!n.arrived(8, 1_050 * MS), "no copy was sent for 8");
        assert!(!n.arrived(9, 1_050 * MS), "9 was never requested");
        assert!(n.arrived(7, 1_130 * MS));
        assert!(!n.arrived(7, 1_140 * MS), "a copy is recognised once");
        assert_eq!(n.round_trip().smoothed_nanos(), Some(130 * MS));
        // 130 + 4·65 + 2·20 ms.
        assert_eq!(n.playout_floor_nanos(20 * MS), 430 * MS);
    }

    #[test]
    fn stale_requests_are_forgotten() {
        let mut n = Nacks::default();
        for seq in 0..1024 {
            n.request(seq, 0, true);
        }
        n.request(5_000, 3_000 * MS, true);
        assert_eq!(n.pending.len(), 1);
        assert!(n.arrived(5_000, 3_100 * MS));
    }
}
