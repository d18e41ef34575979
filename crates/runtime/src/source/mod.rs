//! Sensor sources, each with its own clock (S5).
//!
//! Every source has the same shape: a `…Config` (rates, content, clock error), a struct
//! generic over the device [`Clock`] it is polled with, and an implementation of
//! [`Source`]. Events happen on a fixed cadence of *device* time ([`Cadence`]); each is
//! stamped with the source's *own* clock ([`SourceClock`]: a constant offset plus a crystal
//! drift on top of the device clock). Both times travel with the event: the stamp is all a
//! real pipeline sees, the device capture time is the ground truth the alignment residual is
//! measured against.
//!
//! Transport delay, jitter and loss are not the source's business: [`delivery::Delivered`]
//! wraps any source with the simulator's seeded injector.
//!
//! [`Clock`]: mmsched_core::Clock

pub mod cadence;
pub mod camera;
pub mod clock;
pub mod delivery;
pub mod feed;
pub mod folder;
pub mod imu;
pub mod microphone;
pub mod rtp;
pub mod text;
pub mod video;

use mmsched_core::Modality;
use mmsched_core::time::Nanos;

pub use cadence::Cadence;
pub use clock::SourceClock;

/// One event from a source.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceEvent<P> {
    /// Sequence number within the source, from 0.
    pub seq: u64,
    /// When the event was captured, on the device timeline (ground truth).
    pub capture_device_nanos: Nanos,
    /// The capture time as the source's own clock reads it: what the event carries.
    pub stamp_nanos: u64,
    /// The content.
    pub payload: P,
    /// When the event reached the device, for a source behind a real transport (an RTP
    /// socket): [`delivery::Delivered`] passes such events on as they arrived, and their
    /// `capture_device_nanos` is an estimate, not ground truth. `None` for sources sampled
    /// on the device, whose transport `Delivered` simulates.
    pub received_nanos: Option<Nanos>,
}

/// An event that was due but could not be read: a frame file deleted, truncated or not an
/// image, a read past its deadline. The run counts it as offered and failed, with the
/// reason, so nothing a source could not read vanishes from the results.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unread {
    /// Its sequence number within the source.
    pub seq: u64,
    /// When it was due, on the device timeline.
    pub capture_device_nanos: Nanos,
    /// Why it could not be read.
    pub reason: String,
}

/// A sensor that produces events on its own clock.
///
/// Why this shape: the runtime polls every source with the same two calls — when is the
/// next event due, and give me what is due now — so one ingest loop (or the simulator,
/// advancing a virtual clock to `next_due_nanos`) drives any mix of sources without
/// threads per sensor, and tests drive them exactly with a `ManualClock`.
pub trait Source {
    /// What an event carries (a frame, an audio packet, a prompt, nothing).
    type Payload;

    /// A short stable name, e.g. `camera`.
    fn name(&self) -> &str;

    /// The modality of the events.
    fn modality(&self) -> Modality;

    /// Device time at which the next event is captured (`None`: the source has ended).
    fn next_due_nanos(&self) -> Option<Nanos>;

    /// The next event if it is due at the device clock's current time. Call repeatedly
    /// to drain everything due; events come in capture order, none is skipped.
    fn poll(&mut self) -> Option<SourceEvent<Self::Payload>>;

    /// Asks the sender of a source behind a real transport to send event `seq` again (a
    /// retransmission request on that transport); returns whether a request went out.
    /// Sources sampled on the device have no sender to ask.
    fn request_retransmit(&mut self, _seq: u64) -> bool {
        false
    }

    /// The events that were due by now but could not be read, oldest first, each reported
    /// once. Sources whose reads cannot fail have none.
    fn take_unread(&mut self) -> Vec<Unread> {
        Vec::new()
    }
}

/// Any source of `P` behind one pointer, so a stream can be fed by whichever kind of
/// source its scenario names (generated, a folder, a video, a network socket).
pub type BoxedSource<P> = Box<dyn Source<Payload = P> + Send>;

impl<S: Source + ?Sized> Source for Box<S> {
    type Payload = S::Payload;

    fn name(&self) -> &str {
        (**self).name()
    }

    fn modality(&self) -> Modality {
        (**self).modality()
    }

    fn next_due_nanos(&self) -> Option<Nanos> {
        (**self).next_due_nanos()
    }

    fn poll(&mut self) -> Option<SourceEvent<Self::Payload>> {
        (**self).poll()
    }

    fn request_retransmit(&mut self, seq: u64) -> bool {
        (**self).request_retransmit(seq)
    }

    fn take_unread(&mut self) -> Vec<Unread> {
        (**self).take_unread()
    }
}
