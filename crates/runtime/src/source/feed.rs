//! A camera fed by frames from outside the process: a folder of images, a video file or a
//! V4L2 device. A [`FrameReader`] produces the frames on its own thread (decoding is slow
//! and must not hold up the main loop); the [`FeedCamera`] hands them out on its cadence,
//! stamped with its own clock, exactly like the generated camera. Downstream — alignment,
//! router, scheduler, health loop — cannot tell the difference.
//!
//! Two paces: *replay* (files) shows frame *k* at tick *k*, every frame once per pass;
//! *live* (a device) shows, at each tick, the newest frame the device has delivered.
//!
//! The camera never waits for its reader: a tick whose frame is not read yet is looked at
//! again on the next poll, and after [`READ_DEADLINE_NANOS`] it is given up as unread (a
//! FIFO, a stalled disk, an NFS hang: the read goes on on the reader's thread, and a frame
//! that comes later is dropped). A frame the reader could not read (a file deleted,
//! truncated or not an image) is unread too: every unread tick is reported with its reason
//! ([`Source::take_unread`]), never skipped in silence.

use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TryRecvError, sync_channel};
use std::sync::{Arc, Mutex};

use mmsched_core::Modality;
use mmsched_core::time::{Clock, NANOS_PER_SEC, Nanos};

use super::camera::Frame;
use super::{Cadence, Source, SourceClock, SourceEvent, Unread};

/// Frames decoded ahead of the cadence (the reader waits when it is this far ahead).
const PREFETCH_FRAMES: usize = 4;

/// How long after its tick a frame may still come from the reader: past it, the tick is
/// unread. Decoding a camera frame takes tens of milliseconds; a second is a read that is
/// stuck.
pub const READ_DEADLINE_NANOS: Nanos = NANOS_PER_SEC;

/// How soon a tick waiting for its frame is looked at again.
const READ_POLL_NANOS: Nanos = 2_000_000;

/// Why frames cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// The folder does not exist or cannot be listed.
    #[error(
        "cannot read the frames folder {path}: {reason} (set the stream's source path to a folder of PNG or JPEG files)"
    )]
    Folder {
        /// The folder.
        path: String,
        /// Why.
        reason: String,
    },
    /// The folder holds no PNG or JPEG file.
    #[error(
        "the frames folder {path} holds no .png, .jpg or .jpeg file: put the frames there, named in playing order"
    )]
    NoImages {
        /// The folder.
        path: String,
    },
    /// The folder's `truth.json` is not a map from file names to lines of text.
    #[error(
        "{path} is not a valid truth file: {reason} (write a JSON object from each frame's file name to its lines of text, e.g. {{\"0001.png\": [\"EXIT 12\"]}})"
    )]
    Truth {
        /// The truth file.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
    /// An image file could not be decoded.
    #[error("{path} is not a readable PNG or JPEG image: {reason}")]
    Image {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
    /// The video file does not exist.
    #[error(
        "video file {path} does not exist: set the stream's source path to a video file ffmpeg can read"
    )]
    NoVideo {
        /// The file.
        path: String,
    },
    /// The ffmpeg program is not installed.
    #[error("cannot run ffmpeg ({reason}): install ffmpeg (scripts/setup.sh does)")]
    FfmpegMissing {
        /// Why it could not be started.
        reason: String,
    },
    /// ffmpeg started but produced no frame.
    #[error("ffmpeg cannot read {input}: {reason}")]
    Decode {
        /// The file or device.
        input: String,
        /// ffmpeg's own message.
        reason: String,
    },
    /// No V4L2 device at that path.
    #[error(
        "no V4L2 device at {path}: {reason} (plug in a camera, or name one that exists: ls /dev/video*)"
    )]
    NoDevice {
        /// The device path.
        path: String,
        /// Why.
        reason: String,
    },
    /// This build cannot read V4L2 devices.
    #[error(
        "this build has no V4L2 support: rebuild with `cargo build --features v4l2` to read {path}"
    )]
    V4l2Disabled {
        /// The device path asked for.
        path: String,
    },
}

/// A producer of frames, run on the feed's own thread.
pub trait FrameReader: Send + 'static {
    /// The next frame; `Ok(None)` once there are no more. An error stands for one frame
    /// (a corrupt file); a reader that cannot go on returns `Ok(None)` after its error.
    fn next_frame(&mut self) -> Result<Option<Frame>, FrameError>;

    /// What the next [`FrameReader::next_frame`] reads (a file's path), to name it when
    /// that read does not finish in time.
    fn next_input(&self) -> Option<String> {
        None
    }
}

impl<R: FrameReader + ?Sized> FrameReader for Box<R> {
    fn next_frame(&mut self) -> Result<Option<Frame>, FrameError> {
        (**self).next_frame()
    }

    fn next_input(&self) -> Option<String> {
        (**self).next_input()
    }
}

/// One item from the reader: its number (from 0, one per frame read or failed) and the
/// frame or why there is none.
type Item = (u64, Result<Frame, FrameError>);

/// How a [`FeedCamera`] uses its reader's frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pace {
    /// Frame *k* at tick *k* (files): none skipped, none repeated.
    Replay,
    /// At each tick the newest frame delivered (a device): frames in between are dropped,
    /// and a slow device's frame is shown again.
    Live,
}

/// Settings of a [`FeedCamera`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FeedConfig {
    /// Frames per second (> 0; fractions allowed: 0.5 is one frame every 2 s).
    pub fps: f64,
    /// How the reader's frames are used.
    pub pace: Pace,
    /// Device time of the first frame.
    pub start_nanos: Nanos,
    /// Stop after this many frames (`None`: when the reader ends, or never).
    pub limit: Option<u64>,
    /// The camera's own clock error.
    pub clock: SourceClock,
    /// The device clock stands still while a file is read (a simulated run's virtual
    /// clock, which jumps ahead while the reader's thread decodes in real time): a replay
    /// tick waits for its frame, in real time up to the read deadline, instead of giving
    /// it up once the device clock has passed the deadline.
    pub wait_for_reads: bool,
}

/// What a replayed tick's frame is, as far as the reader has got.
enum Replayed {
    /// The frame.
    Frame(Frame),
    /// No frame: why.
    Unread(String),
    /// Not read yet, and still in time.
    Waiting,
    /// The reader has ended.
    Ended,
}

/// A camera whose frames come from a [`FrameReader`].
#[derive(Debug)]
pub struct FeedCamera<C: Clock> {
    device: C,
    cadence: Cadence,
    clock: SourceClock,
    pace: Pace,
    frames: Receiver<Item>,
    /// What the reader is reading now, for the message of a read past its deadline.
    reading: Arc<Mutex<Option<String>>>,
    /// Replay: the number of the reader's item the next tick shows (an item below it is
    /// a late frame of a tick already given up).
    next_item: u64,
    /// Replay: since when the next tick has waited for its frame (the deadline counts
    /// from here, so a loop that polls late does not fail a frame the reader has ready).
    waiting_since: Option<Nanos>,
    /// Replay: a tick waits for its frame in real time ([`FeedConfig::wait_for_reads`]).
    wait_for_reads: bool,
    /// Replay: a read missed its deadline and the reader has delivered nothing since:
    /// the ticks due meanwhile are unread at once, not after a deadline each.
    stalled: bool,
    latest: Option<Frame>,
    /// Live: why the reader failed since the last tick, if it delivered no frame since.
    failed_since_tick: Option<String>,
    ended: bool,
    unread: Vec<Unread>,
    errors: u64,
    last_error: Option<String>,
}

impl<C: Clock> FeedCamera<C> {
    /// A camera showing `reader`'s frames, polled against `device`. Starts the reader's
    /// thread; the thread ends when the reader does or the camera is dropped (a read that
    /// never returns keeps it until the process ends).
    pub fn new(reader: impl FrameReader, config: FeedConfig, device: C) -> Self {
        let (tx, rx) = sync_channel(PREFETCH_FRAMES);
        let reading = Arc::new(Mutex::new(None));
        let shown = Arc::clone(&reading);
        std::thread::Builder::new()
            .name("frame-reader".into())
            .spawn(move || read_all(reader, &tx, &shown))
            .ok();
        let mut camera = Self::from_receiver(rx, config, device);
        camera.reading = reading;
        camera
    }

    fn from_receiver(frames: Receiver<Item>, config: FeedConfig, device: C) -> Self {
        let fps = if config.fps.is_finite() && config.fps > 0.0 {
            config.fps
        } else {
            1.0
        };
        let period = ((NANOS_PER_SEC as f64 / fps).round() as Nanos).max(1);
        let mut cadence = Cadence::every(config.start_nanos, period);
        if let Some(l) = config.limit {
            cadence = cadence.with_limit(l);
        }
        Self {
            device,
            cadence,
            clock: config.clock,
            pace: config.pace,
            wait_for_reads: config.wait_for_reads,
            frames,
            reading: Arc::default(),
            next_item: 0,
            waiting_since: None,
            stalled: false,
            latest: None,
            failed_since_tick: None,
            ended: false,
            unread: Vec::new(),
            errors: 0,
            last_error: None,
        }
    }

    /// Frames the reader could not produce (corrupt files, decoder errors, reads past
    /// their deadline), and the last reason.
    pub fn errors(&self) -> (u64, Option<&str>) {
        (self.errors, self.last_error.as_deref())
    }

    fn note(&mut self, reason: String) -> String {
        self.errors += 1;
        self.last_error = Some(reason.clone());
        reason
    }

    /// The frame of the replay tick due now, if the reader has it.
    fn replayed(&mut self, now: Nanos) -> Replayed {
        loop {
            let next = if self.wait_for_reads && !self.stalled {
                let deadline = std::time::Duration::from_nanos(READ_DEADLINE_NANOS);
                self.frames.recv_timeout(deadline).map_err(|e| match e {
                    RecvTimeoutError::Timeout => TryRecvError::Empty,
                    RecvTimeoutError::Disconnected => TryRecvError::Disconnected,
                })
            } else {
                self.frames.try_recv()
            };
            match next {
                // A frame of a tick given up already: the reader moves again.
                Ok((n, _)) if n < self.next_item => self.stalled = false,
                Ok((_, item)) => {
                    self.stalled = false;
                    let r = match item {
                        Ok(f) => Replayed::Frame(f),
                        Err(e) => Replayed::Unread(self.note(e.to_string())),
                    };
                    return self.resolved(r);
                }
                Err(TryRecvError::Empty) => {
                    let since = *self.waiting_since.get_or_insert(now);
                    // Waiting for reads, the deadline has passed in real time already.
                    if !self.stalled
                        && !self.wait_for_reads
                        && now < since.saturating_add(READ_DEADLINE_NANOS)
                    {
                        return Replayed::Waiting;
                    }
                    let what = self
                        .reading
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .clone()
                        .unwrap_or_else(|| "the next frame".into());
                    let reason = if self.stalled {
                        format!("reading {what} is still stuck")
                    } else {
                        format!(
                            "reading {what} did not finish within {} ms (a FIFO, a stalled disk or network share?)",
                            READ_DEADLINE_NANOS / 1_000_000
                        )
                    };
                    self.stalled = true;
                    let reason = self.note(reason);
                    return self.resolved(Replayed::Unread(reason));
                }
                Err(TryRecvError::Disconnected) => return Replayed::Ended,
            }
        }
    }

    /// The next tick has its frame, or is given up: the one after waits from its own due.
    fn resolved(&mut self, r: Replayed) -> Replayed {
        self.next_item += 1;
        self.waiting_since = None;
        r
    }

    /// The newest frame delivered by now, if any ever was; `Err` with the reason when the
    /// reader failed since the last tick and delivered nothing after.
    fn newest(&mut self) -> Result<Option<Frame>, String> {
        loop {
            match self.frames.try_recv() {
                Ok((_, Ok(f))) => {
                    self.latest = Some(f);
                    self.failed_since_tick = None;
                }
                Ok((_, Err(e))) => self.failed_since_tick = Some(self.note(e.to_string())),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    self.ended = true;
                    break;
                }
            }
        }
        match self.failed_since_tick.take() {
            Some(reason) => Err(reason),
            None => Ok(self.latest.clone()),
        }
    }
}

fn read_all(mut reader: impl FrameReader, tx: &SyncSender<Item>, reading: &Mutex<Option<String>>) {
    for n in 0.. {
        *reading.lock().unwrap_or_else(|p| p.into_inner()) = reader.next_input();
        let item = match reader.next_frame() {
            Ok(Some(f)) => Ok(f),
            Ok(None) => return,
            Err(e) => Err(e),
        };
        if tx.send((n, item)).is_err() {
            return;
        }
    }
}

impl<C: Clock> Source for FeedCamera<C> {
    type Payload = Frame;

    fn name(&self) -> &str {
        "camera"
    }

    fn modality(&self) -> Modality {
        Modality::Image
    }

    fn next_due_nanos(&self) -> Option<Nanos> {
        if self.ended {
            return None;
        }
        let due = self.cadence.next_due_nanos()?;
        let now = self.device.now_nanos();
        // A tick past due after a poll is waiting for its frame: look again shortly.
        Some(if due > now {
            due
        } else {
            now.saturating_add(READ_POLL_NANOS)
        })
    }

    fn poll(&mut self) -> Option<SourceEvent<Frame>> {
        while !self.ended {
            let now = self.device.now_nanos();
            let due = self.cadence.next_due_nanos()?;
            if due > now {
                return None;
            }
            let frame = match self.pace {
                Pace::Replay => match self.replayed(now) {
                    Replayed::Frame(f) => Ok(Some(f)),
                    Replayed::Unread(reason) => Err(reason),
                    Replayed::Waiting => return None,
                    Replayed::Ended => {
                        self.ended = true;
                        return None;
                    }
                },
                Pace::Live => self.newest(),
            };
            let (seq, at) = self.cadence.take_due(now)?;
            match frame {
                Ok(Some(payload)) => {
                    return Some(SourceEvent {
                        seq,
                        capture_device_nanos: at,
                        stamp_nanos: self.clock.stamp(at),
                        payload,
                        received_nanos: None,
                    });
                }
                Err(reason) => self.unread.push(Unread {
                    seq,
                    capture_device_nanos: at,
                    reason,
                }),
                // Live, and the device has delivered nothing yet: this tick has no frame.
                Ok(None) => {}
            }
        }
        None
    }

    fn take_unread(&mut self) -> Vec<Unread> {
        std::mem::take(&mut self.unread)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mmsched_core::time::{ManualClock, NANOS_PER_MILLI};

    /// Frames 0, 1, … of 2×2 pixels whose value is their number; `bad` ones fail, and the
    /// read of `stuck` never returns.
    struct Numbered {
        next: u8,
        count: u8,
        bad: Vec<u8>,
        stuck: Option<u8>,
    }

    impl Numbered {
        fn new(count: u8, bad: Vec<u8>) -> Self {
            Self {
                next: 0,
                count,
                bad,
                stuck: None,
            }
        }
    }

    impl FrameReader for Numbered {
        fn next_frame(&mut self) -> Result<Option<Frame>, FrameError> {
            if self.next == self.count {
                return Ok(None);
            }
            let n = self.next;
            self.next += 1;
            if self.stuck == Some(n) {
                // A FIFO nobody writes to.
                loop {
                    std::thread::park();
                }
            }
            if self.bad.contains(&n) {
                return Err(FrameError::Image {
                    path: format!("{n}.png"),
                    reason: "corrupt".into(),
                });
            }
            Ok(Frame::from_rgb(2, 2, vec![n; 12]))
        }

        fn next_input(&self) -> Option<String> {
            Some(format!("{}.png", self.next))
        }
    }

    fn config(pace: Pace) -> FeedConfig {
        FeedConfig {
            fps: 2.0,
            pace,
            start_nanos: NANOS_PER_SEC,
            limit: None,
            clock: SourceClock::new(5 * NANOS_PER_MILLI as i64, 0),
            wait_for_reads: false,
        }
    }

    /// A reader whose every read takes `read_ms` of real time.
    struct Slow(Numbered, u64);

    impl FrameReader for Slow {
        fn next_frame(&mut self) -> Result<Option<Frame>, FrameError> {
            std::thread::sleep(std::time::Duration::from_millis(self.1));
            self.0.next_frame()
        }

        fn next_input(&self) -> Option<String> {
            self.0.next_input()
        }
    }

    #[test]
    fn waiting_for_reads_a_virtual_clock_that_jumps_gets_every_frame_at_its_tick() {
        // The device clock jumps 10 s ahead at once, as a simulated run's does, while
        // each read takes real time: every tick still gets its frame, none is unread.
        let device = ManualClock::new(0);
        let config = FeedConfig {
            wait_for_reads: true,
            ..config(Pace::Replay)
        };
        let mut cam = FeedCamera::new(Slow(Numbered::new(6, vec![]), 20), config, &device);
        device.set(10 * NANOS_PER_SEC);
        let mut values = Vec::new();
        while let Some(e) = cam.poll() {
            values.push(e.payload.rgb[0]);
        }
        assert_eq!(values, [0, 1, 2, 3, 4, 5]);
        assert!(cam.take_unread().is_empty());
    }

    /// Polls until the camera has nothing more due at the device's current time, giving
    /// the reader's thread real time to deliver (the device clock does not move).
    fn poll_due<C: Clock>(
        cam: &mut FeedCamera<C>,
        device: &ManualClock,
    ) -> Vec<SourceEvent<Frame>> {
        let mut out = Vec::new();
        let give_up = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while std::time::Instant::now() < give_up {
            match cam.poll() {
                Some(e) => out.push(e),
                None => match cam.cadence.next_due_nanos() {
                    Some(due) if due <= device.now_nanos() && !cam.ended => {
                        std::thread::sleep(std::time::Duration::from_millis(1));
                    }
                    _ => return out,
                },
            }
        }
        panic!("the camera kept waiting for frames past 10 s");
    }

    #[test]
    fn replayed_frames_come_in_order_and_a_bad_one_is_reported_unread() {
        let device = ManualClock::new(0);
        let mut cam = FeedCamera::new(Numbered::new(5, vec![2]), config(Pace::Replay), &device);
        assert!(cam.poll().is_none(), "nothing before the first tick");
        assert_eq!(cam.next_due_nanos(), Some(NANOS_PER_SEC));
        device.set(2 * NANOS_PER_SEC);
        let got = poll_due(&mut cam, &device);
        let values: Vec<u8> = got.iter().map(|e| e.payload.rgb[0]).collect();
        assert_eq!(values, [0, 1], "ticks at 1.0 and 1.5 s");
        let unread = cam.take_unread();
        assert_eq!(
            unread.len(),
            1,
            "the tick at 2.0 s had frame 2, which failed"
        );
        assert_eq!(
            (unread[0].seq, unread[0].capture_device_nanos),
            (2, 2 * NANOS_PER_SEC)
        );
        assert!(unread[0].reason.contains("2.png"), "{}", unread[0].reason);
        assert!(cam.take_unread().is_empty(), "each is reported once");
        assert_eq!(
            got[1].stamp_nanos,
            NANOS_PER_SEC * 3 / 2 + 5 * NANOS_PER_MILLI
        );
        device.set(10 * NANOS_PER_SEC);
        let rest: Vec<u8> = poll_due(&mut cam, &device)
            .iter()
            .map(|e| e.payload.rgb[0])
            .collect();
        assert_eq!(rest, [3, 4]);
        assert_eq!(cam.next_due_nanos(), None, "the reader ended");
        let (n, why) = cam.errors();
        assert_eq!(n, 1);
        assert!(why.is_some_and(|w| w.contains("2.png")));
    }

    #[test]
    fn a_read_that_never_returns_never_blocks_the_poll_and_its_ticks_end_unread() {
        let device = ManualClock::new(0);
        let mut reader = Numbered::new(5, vec![]);
        reader.stuck = Some(1);
        let mut cam = FeedCamera::new(reader, config(Pace::Replay), &device);
        device.set(NANOS_PER_SEC);
        assert_eq!(poll_due(&mut cam, &device).len(), 1, "frame 0");
        // Tick 1 (1.5 s) waits for its frame, without blocking, until the deadline.
        device.set(NANOS_PER_SEC * 3 / 2);
        let t0 = std::time::Instant::now();
        assert!(cam.poll().is_none());
        assert!(
            t0.elapsed() < std::time::Duration::from_millis(100),
            "the poll returned at once"
        );
        assert_eq!(
            cam.next_due_nanos(),
            Some(NANOS_PER_SEC * 3 / 2 + READ_POLL_NANOS),
            "looked at again shortly"
        );
        assert!(cam.take_unread().is_empty(), "still in time");
        // The reader thread names the file it reads just after it sent frame 0: until it
        // has, the message would name frame 0's (under emulation this took milliseconds).
        let give_up = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while cam.reading.lock().unwrap().as_deref() != Some("1.png") {
            assert!(
                std::time::Instant::now() < give_up,
                "the reader never started frame 1"
            );
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        // Past the deadline: tick 1 is unread, naming the file; so is every tick after it,
        // each at its own deadline, since the reader is stuck for good.
        device.set(NANOS_PER_SEC * 3 / 2 + READ_DEADLINE_NANOS);
        assert!(cam.poll().is_none());
        let unread = cam.take_unread();
        // Tick 1 at its deadline; ticks 2 and 3, due meanwhile, at once: the reader is stuck.
        assert_eq!(unread.iter().map(|u| u.seq).collect::<Vec<_>>(), [1, 2, 3]);
        assert!(
            unread[1].reason.contains("reading 1.png is still stuck"),
            "{}",
            unread[1].reason
        );
        assert!(
            unread[0]
                .reason
                .contains("reading 1.png did not finish within 1000 ms"),
            "{}",
            unread[0].reason
        );
        device.set(10 * NANOS_PER_SEC);
        assert!(cam.poll().is_none());
        let seqs: Vec<u64> = cam.take_unread().iter().map(|u| u.seq).collect();
        assert_eq!(
            seqs,
            (4..=18).collect::<Vec<u64>>(),
            "every tick due by 10 s"
        );
    }

    #[test]
    fn a_live_feed_shows_the_newest_frame_at_each_tick() {
        let device = ManualClock::new(0);
        let (tx, rx) = sync_channel(PREFETCH_FRAMES);
        let mut cam = FeedCamera::from_receiver(rx, config(Pace::Live), &device);
        device.set(NANOS_PER_SEC);
        assert!(
            cam.poll().is_none(),
            "no frame delivered yet: the tick has none"
        );
        for n in 0..3u8 {
            tx.send((
                u64::from(n),
                Ok(Frame::from_rgb(2, 2, vec![n; 12]).expect("size")),
            ))
            .expect("open");
        }
        device.set(NANOS_PER_SEC + NANOS_PER_SEC / 2);
        let e = cam.poll().expect("a tick with frames delivered");
        assert_eq!(e.payload.rgb[0], 2, "the newest frame wins");
        assert_eq!(e.seq, 1);
        device.set(2 * NANOS_PER_SEC);
        assert_eq!(
            cam.poll().map(|e| e.payload.rgb[0]),
            Some(2),
            "a slow device's frame is shown again"
        );
        // The device fails and delivers nothing else: the tick is unread, with the reason.
        tx.send((
            3,
            Err(FrameError::Decode {
                input: "/dev/video0".into(),
                reason: "device unplugged".into(),
            }),
        ))
        .expect("open");
        device.set(2 * NANOS_PER_SEC + NANOS_PER_SEC / 2);
        assert!(cam.poll().is_none());
        let unread = cam.take_unread();
        assert_eq!(unread.len(), 1);
        assert!(unread[0].reason.contains("device unplugged"));
        drop(tx);
        device.set(3 * NANOS_PER_SEC);
        assert_eq!(
            cam.poll().map(|e| e.seq),
            Some(4),
            "the last frame, then the end"
        );
        assert!(cam.poll().is_none());
        assert_eq!(cam.next_due_nanos(), None);
    }
}
