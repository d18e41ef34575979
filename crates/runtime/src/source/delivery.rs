//! Delivery of a source's events through a transport with delay, jitter and loss (S6):
//! the world model's [`JitterInjector`] (the one the simulator uses too), seeded, between
//! capture and the receive queue.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use mmsched_core::Modality;
use mmsched_core::time::{Clock, Nanos};
use mmsched_world::jitter::JitterInjector;
use mmsched_world::rng::{SeededRng, stream_rng};

use super::{Source, SourceEvent, Unread};

/// An event as it reaches the device.
#[derive(Debug, Clone, PartialEq)]
pub struct Arrival<P> {
    /// The event as captured and stamped.
    pub event: SourceEvent<P>,
    /// When it reached the device, on the device timeline.
    pub arrival_nanos: Nanos,
}

struct Queued<P> {
    arrival_nanos: Nanos,
    seq: u64,
    event: SourceEvent<P>,
}

impl<P> PartialEq for Queued<P> {
    fn eq(&self, other: &Self) -> bool {
        (self.arrival_nanos, self.seq) == (other.arrival_nanos, other.seq)
    }
}
impl<P> Eq for Queued<P> {}
impl<P> PartialOrd for Queued<P> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<P> Ord for Queued<P> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.arrival_nanos, self.seq).cmp(&(other.arrival_nanos, other.seq))
    }
}

/// A source whose events arrive after a seeded transport delay, possibly out of order, or
/// not at all. The same seed gives the same arrivals.
pub struct Delivered<S: Source, C: Clock> {
    inner: S,
    device: C,
    injector: JitterInjector,
    rng: SeededRng,
    queue: BinaryHeap<Reverse<Queued<S::Payload>>>,
    lost: u64,
    /// The sender's copies of lost events, newest last, for retransmission.
    history: VecDeque<SourceEvent<S::Payload>>,
    /// How many lost events the sender keeps ([`HISTORY_EVENTS`], or none for a stream
    /// nobody re-requests).
    history_cap: usize,
    /// Loss on top of the injector's that changes over time (a simulated soak's link
    /// outages), if any.
    extra_loss: Option<ExtraLoss>,
    /// Drift of the source's clock on top of its own that changes over time (a simulated
    /// soak's crystal warming), if any, with what it has added to the stamps so far.
    extra_drift: Option<(ExtraDrift, DriftSoFar)>,
}

/// The drift, ppm, of a source's clock at a device time, on top of its own.
pub type ExtraDrift = std::sync::Arc<dyn Fn(Nanos) -> f64 + Send + Sync>;

/// What an extra drift has added to a source's clock by the last event: the device time
/// of that event and the nanoseconds added (the drift integrated over time).
#[derive(Debug, Clone, Copy, Default)]
pub struct DriftSoFar {
    at_nanos: Option<Nanos>,
    added_nanos: f64,
}

impl DriftSoFar {
    /// The stamp of an event captured at `at` on a clock drifting by `ppm(t)` more than
    /// its own, whose own clock stamped it `stamp`. Events come in capture order; the
    /// drift of each stretch between two is the drift at its start.
    fn stamp(&mut self, ppm: &ExtraDrift, at: Nanos, stamp: Nanos) -> Nanos {
        if let Some(last) = self.at_nanos {
            let span = at.saturating_sub(last) as f64;
            self.added_nanos += ppm(last) * 1e-6 * span;
        }
        self.at_nanos = Some(at);
        let s = stamp as f64 + self.added_nanos.round();
        s.clamp(0.0, u64::MAX as f64) as Nanos
    }
}

/// The probability, at a device time, that an event sent then is lost on top of the
/// transport's own loss.
pub type ExtraLoss = std::sync::Arc<dyn Fn(Nanos) -> f64 + Send + Sync>;

/// Lost events the sender keeps for retransmission.
const HISTORY_EVENTS: usize = 256;

impl<S: Source, C: Clock> std::fmt::Debug for Delivered<S, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Delivered")
            .field("source", &self.inner.name())
            .field("injector", &self.injector)
            .field("queued", &self.queue.len())
            .field("lost", &self.lost)
            .finish()
    }
}

impl<S: Source, C: Clock> Delivered<S, C> {
    /// Delivers `inner`'s events through `injector`, drawing from random stream `stream`
    /// of `seed` (give each source its own stream number).
    pub fn new(inner: S, device: C, injector: JitterInjector, seed: u64, stream: u64) -> Self {
        Self {
            inner,
            device,
            injector,
            rng: stream_rng(seed, stream),
            queue: BinaryHeap::new(),
            lost: 0,
            history: VecDeque::new(),
            history_cap: HISTORY_EVENTS,
            extra_loss: None,
            extra_drift: None,
        }
    }

    /// Loses events sent at device time `t` with probability `loss(t)` on top of the
    /// injector's loss, retransmitted copies too. Each event then draws one more random
    /// number, so the arrivals differ from those without it.
    pub fn set_extra_loss(&mut self, loss: ExtraLoss) {
        self.extra_loss = Some(loss);
    }

    /// Keeps no copy of lost events: for a stream whose losses nobody re-requests (the
    /// camera's: a late frame is worth nothing), whose copies would only hold memory (256
    /// frames of 640 × 360 are 177 MB).
    pub fn without_retransmission(mut self) -> Self {
        self.history_cap = 0;
        self
    }

    /// Stamps the source's events as if its clock drifted by `ppm(t)` more than its own
    /// at device time `t` (from the next event on).
    pub fn set_extra_drift(&mut self, ppm: ExtraDrift) {
        self.extra_drift = Some((ppm, DriftSoFar::default()));
    }

    /// The arrival of an event sent at `send_nanos` ([`JitterInjector::arrival`]), or
    /// `None` when it is lost, to the extra loss too.
    fn arrival(&mut self, send_nanos: Nanos) -> Option<Nanos> {
        let arrival = self.injector.arrival(send_nanos, &mut self.rng);
        match &self.extra_loss {
            None => arrival,
            Some(loss) => {
                let lost = mmsched_world::rng::chance(&mut self.rng, loss(send_nanos));
                arrival.filter(|_| !lost)
            }
        }
    }

    /// Events lost in transport so far.
    pub fn lost(&self) -> u64 {
        self.lost
    }

    /// The wrapped source's name.
    pub fn name(&self) -> &str {
        self.inner.name()
    }

    /// The wrapped source's modality.
    pub fn modality(&self) -> Modality {
        self.inner.modality()
    }

    fn capture(&mut self) {
        while let Some(mut event) = self.inner.poll() {
            if let Some((ppm, so_far)) = &mut self.extra_drift
                && event.received_nanos.is_none()
            {
                event.stamp_nanos =
                    so_far.stamp(ppm, event.capture_device_nanos, event.stamp_nanos);
            }
            if let Some(arrival_nanos) = event.received_nanos {
                // A real transport brought it: its delay and loss are already real.
                self.queue.push(Reverse(Queued {
                    arrival_nanos,
                    seq: event.seq,
                    event,
                }));
                continue;
            }
            match self.arrival(event.capture_device_nanos) {
                Some(arrival_nanos) => self.queue.push(Reverse(Queued {
                    arrival_nanos,
                    seq: event.seq,
                    event,
                })),
                None => {
                    self.lost += 1;
                    if self.history_cap == 0 {
                        continue;
                    }
                    if self.history.len() >= self.history_cap {
                        self.history.pop_front();
                    }
                    self.history.push_back(event);
                }
            }
        }
    }

    /// Device time of the next arrival, or of the next capture (whose arrival is not drawn
    /// yet); `None` when the source has ended and everything has arrived.
    pub fn next_due_nanos(&self) -> Option<Nanos> {
        let queued = self.queue.peek().map(|q| q.0.arrival_nanos);
        match (queued, self.inner.next_due_nanos()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Asks the sender to send event `seq` again (a NACK). If the sender still holds a
    /// lost copy, the request reaches it after the base delay and the copy travels like any
    /// event (jitter, possible loss again); returns whether a copy was sent. An event
    /// still in transit needs no copy: `false`. A source behind a real transport gets the
    /// request on that transport ([`Source::request_retransmit`]).
    pub fn retransmit(&mut self, seq: u64) -> bool {
        let Some(pos) = self.history.iter().position(|e| e.seq == seq) else {
            return self.inner.request_retransmit(seq);
        };
        let Some(event) = self.history.remove(pos) else {
            return false;
        };
        let request_at = self.device.now_nanos() + self.injector.base_delay_nanos;
        match self.arrival(request_at) {
            Some(arrival_nanos) => self.queue.push(Reverse(Queued {
                arrival_nanos,
                seq: event.seq,
                event,
            })),
            None => self.history.push_back(event),
        }
        true
    }

    /// The events due by now that the source could not read ([`Source::take_unread`]):
    /// they never reached the transport, so they are known at once.
    pub fn take_unread(&mut self) -> Vec<Unread> {
        self.capture();
        self.inner.take_unread()
    }

    /// The next event that has arrived by now, in arrival order.
    pub fn poll(&mut self) -> Option<Arrival<S::Payload>> {
        self.capture();
        let now = self.device.now_nanos();
        if self.queue.peek().is_some_and(|q| q.0.arrival_nanos <= now) {
            let q = self.queue.pop()?.0;
            return Some(Arrival {
                event: q.event,
                arrival_nanos: q.arrival_nanos,
            });
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::microphone::{Microphone, MicrophoneConfig};
    use mmsched_core::time::{ManualClock, NANOS_PER_MILLI};
    use mmsched_world::jitter::GammaJitter;

    fn arrivals(seed: u64, loss: f64) -> (Vec<(u64, Nanos, Nanos)>, u64) {
        let device = ManualClock::new(0);
        let mic = Microphone::new(
            MicrophoneConfig {
                limit: Some(500),
                ..MicrophoneConfig::default()
            },
            &device,
        );
        let injector = JitterInjector {
            base_delay_nanos: 5 * NANOS_PER_MILLI,
            jitter: GammaJitter::reference(),
            loss_probability: loss,
        };
        let mut d = Delivered::new(mic, &device, injector, seed, 7);
        let mut out = Vec::new();
        while let Some(next) = d.next_due_nanos() {
            device.set(next);
            while let Some(a) = d.poll() {
                assert_eq!(
                    a.arrival_nanos,
                    device.now_nanos(),
                    "delivered the moment it arrives"
                );
                out.push((a.event.seq, a.event.capture_device_nanos, a.arrival_nanos));
            }
        }
        (out, d.lost())
    }

    #[test]
    fn packets_arrive_late_out_of_order_and_reproducibly() {
        let (got, lost) = arrivals(42, 0.0);
        assert_eq!(lost, 0);
        assert_eq!(got.len(), 500);
        assert!(
            got.iter()
                .all(|&(_, cap, arr)| arr >= cap + 5 * NANOS_PER_MILLI)
        );
        assert!(got.windows(2).all(|w| w[0].2 <= w[1].2), "in arrival order");
        assert!(
            got.windows(2).any(|w| w[0].0 > w[1].0),
            "Gamma jitter reorders 20 ms packets"
        );
        let mean_extra_ms = got
            .iter()
            .map(|&(_, c, a)| (a - c) as f64 / 1e6 - 5.0)
            .sum::<f64>()
            / 500.0;
        assert!(
            (10.0..22.0).contains(&mean_extra_ms),
            "k=2, θ=8 ms: mean 16 ms, got {mean_extra_ms}"
        );
        assert_eq!(arrivals(42, 0.0).0, got, "same seed, same arrivals");
        assert_ne!(arrivals(43, 0.0).0, got);
    }

    #[test]
    fn a_lost_event_can_be_sent_again() {
        let device = ManualClock::new(0);
        let mic = Microphone::new(
            MicrophoneConfig {
                limit: Some(200),
                ..MicrophoneConfig::default()
            },
            &device,
        );
        let injector = JitterInjector {
            base_delay_nanos: 5 * NANOS_PER_MILLI,
            jitter: GammaJitter::reference(),
            loss_probability: 0.3,
        };
        let mut d = Delivered::new(mic, &device, injector, 3, 1);
        let mut seen = std::collections::BTreeSet::new();
        while let Some(next) = d.next_due_nanos() {
            device.set(next);
            while let Some(a) = d.poll() {
                seen.insert(a.event.seq);
            }
        }
        let missing: Vec<u64> = (0..200).filter(|s| !seen.contains(s)).collect();
        assert!(!missing.is_empty());
        assert!(
            !d.retransmit(*seen.first().expect("some arrived")),
            "not lost"
        );
        let sent = missing.iter().filter(|&&s| d.retransmit(s)).count();
        assert_eq!(sent, missing.len(), "every lost packet is still held");
        while let Some(next) = d.next_due_nanos() {
            device.set(next);
            while let Some(a) = d.poll() {
                seen.insert(a.event.seq);
            }
        }
        assert!(seen.len() > 200 - missing.len(), "copies arrive");
    }

    #[test]
    fn losses_are_counted() {
        let (got, lost) = arrivals(1, 0.2);
        assert_eq!(got.len() as u64 + lost, 500);
        assert!((50..150).contains(&lost), "{lost}");
    }

    #[test]
    fn an_extra_loss_acts_only_while_it_lasts() {
        let device = ManualClock::new(0);
        let mic = Microphone::new(
            MicrophoneConfig {
                limit: Some(500),
                ..MicrophoneConfig::default()
            },
            &device,
        );
        let injector = JitterInjector {
            base_delay_nanos: 5 * NANOS_PER_MILLI,
            jitter: GammaJitter::reference(),
            loss_probability: 0.0,
        };
        let mut d = Delivered::new(mic, &device, injector, 5, 1);
        // Everything sent by 5 s (the first 250 packets of 20 ms) is lost, nothing after.
        d.set_extra_loss(std::sync::Arc::new(|t| {
            if t <= 5_000_000_000 { 1.0 } else { 0.0 }
        }));
        let mut got = 0;
        while let Some(next) = d.next_due_nanos() {
            device.set(next);
            while d.poll().is_some() {
                got += 1;
            }
        }
        assert_eq!((got, d.lost()), (250, 250));
    }

    #[test]
    fn an_extra_drift_moves_the_stamps_by_its_integral() {
        let device = ManualClock::new(0);
        let mic = Microphone::new(
            MicrophoneConfig {
                limit: Some(500),
                ..MicrophoneConfig::default()
            },
            &device,
        );
        let injector = JitterInjector {
            base_delay_nanos: 0,
            jitter: GammaJitter::new(2.0, 0.0).expect("no jitter"),
            loss_probability: 0.0,
        };
        let mut d = Delivered::new(mic, &device, injector, 5, 1);
        // 100 ppm faster for the first 5 s, then as its own clock.
        d.set_extra_drift(std::sync::Arc::new(|t| {
            if t < 5_000_000_000 { 100.0 } else { 0.0 }
        }));
        let mut ahead = Vec::new();
        while let Some(next) = d.next_due_nanos() {
            device.set(next);
            while let Some(a) = d.poll() {
                ahead.push(a.event.stamp_nanos as i64 - a.event.capture_device_nanos as i64);
            }
        }
        // The microphone's own clock keeps device time: what is left is the extra drift,
        // 100 ppm of the 4.98 s from the first packet (at 20 ms) to the one at 5 s, and
        // nothing after.
        assert_eq!(ahead[0], 0);
        assert_eq!(ahead[249], 498_000);
        assert_eq!(ahead[499], 498_000);
    }

    #[test]
    fn a_stream_without_retransmission_keeps_no_lost_copies() {
        let device = ManualClock::new(0);
        let mic = Microphone::new(
            MicrophoneConfig {
                limit: Some(200),
                ..MicrophoneConfig::default()
            },
            &device,
        );
        let injector = JitterInjector {
            base_delay_nanos: 5 * NANOS_PER_MILLI,
            jitter: GammaJitter::reference(),
            loss_probability: 0.3,
        };
        let mut d = Delivered::new(mic, &device, injector, 3, 1).without_retransmission();
        let mut seen = std::collections::BTreeSet::new();
        while let Some(next) = d.next_due_nanos() {
            device.set(next);
            while let Some(a) = d.poll() {
                seen.insert(a.event.seq);
            }
        }
        let missing = (0..200).find(|s| !seen.contains(s)).expect("some lost");
        assert!(d.lost() > 0);
        assert!(!d.retransmit(missing), "no copy kept");
    }
}
