//! A camera fed by frames from outside the process: a folder of images, a video file or a
//! V4L2 device. A [`FrameReader`] produces the frames on its own thread (decoding is slow
//! and must not hold up the main loop); the [`FeedCamera`] hands them out on its cadence,
//! stamped with its own clock, exactly like the generated camera. Downstream — alignment,
//! router, scheduler, health loop — cannot tell the difference.
//!
//! Two paces: *replay* (files) shows frame *k* at tick *k*, every frame once per pass;
//! *live* (a device) shows, at each tick, the newest frame the device has delivered.

use std::sync::mpsc::{Receiver, SyncSender, TryRecvError, sync_channel};

use mmsched_core::Modality;
use mmsched_core::time::{Clock, NANOS_PER_SEC, Nanos};

use super::camera::Frame;
use super::{Cadence, Source, SourceClock, SourceEvent};

/// Frames decoded ahead of the cadence (a replayed source blocks only when the reader falls
/// this far behind).
const PREFETCH_FRAMES: usize = 4;

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
    /// The next frame; `Ok(None)` once there are no more. An error skips one frame (a
    /// corrupt file); a reader that cannot go on returns `Ok(None)` after its error.
    fn next_frame(&mut self) -> Result<Option<Frame>, FrameError>;
}

impl<R: FrameReader + ?Sized> FrameReader for Box<R> {
    fn next_frame(&mut self) -> Result<Option<Frame>, FrameError> {
        (**self).next_frame()
    }
}

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
}

/// A camera whose frames come from a [`FrameReader`].
#[derive(Debug)]
pub struct FeedCamera<C: Clock> {
    device: C,
    cadence: Cadence,
    clock: SourceClock,
    pace: Pace,
    frames: Receiver<Result<Frame, FrameError>>,
    latest: Option<Frame>,
    ended: bool,
    errors: u64,
    last_error: Option<String>,
}

impl<C: Clock> FeedCamera<C> {
    /// A camera showing `reader`'s frames, polled against `device`. Starts the reader's
    /// thread; the thread ends when the reader does or the camera is dropped.
    pub fn new(reader: impl FrameReader, config: FeedConfig, device: C) -> Self {
        let (tx, rx) = sync_channel(PREFETCH_FRAMES);
        std::thread::Builder::new()
            .name("frame-reader".into())
            .spawn(move || read_all(reader, &tx))
            .ok();
        Self::from_receiver(rx, config, device)
    }

    fn from_receiver(
        frames: Receiver<Result<Frame, FrameError>>,
        config: FeedConfig,
        device: C,
    ) -> Self {
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
            frames,
            latest: None,
            ended: false,
            errors: 0,
            last_error: None,
        }
    }

    /// Frames the reader could not produce (corrupt files, decoder errors), and the last
    /// reason.
    pub fn errors(&self) -> (u64, Option<&str>) {
        (self.errors, self.last_error.as_deref())
    }

    fn note(&mut self, e: &FrameError) {
        self.errors += 1;
        self.last_error = Some(e.to_string());
    }

    /// The frame for a replay tick: the reader's next good one (blocks until decoded).
    fn next_replayed(&mut self) -> Option<Frame> {
        loop {
            match self.frames.recv() {
                Ok(Ok(f)) => return Some(f),
                Ok(Err(e)) => self.note(&e),
                Err(_) => {
                    self.ended = true;
                    return None;
                }
            }
        }
    }

    /// The newest frame delivered by now, if any ever was.
    fn newest(&mut self) -> Option<Frame> {
        loop {
            match self.frames.try_recv() {
                Ok(Ok(f)) => self.latest = Some(f),
                Ok(Err(e)) => self.note(&e),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    self.ended = true;
                    break;
                }
            }
        }
        self.latest.clone()
    }
}

fn read_all(mut reader: impl FrameReader, tx: &SyncSender<Result<Frame, FrameError>>) {
    loop {
        let item = match reader.next_frame() {
            Ok(Some(f)) => Ok(f),
            Ok(None) => return,
            Err(e) => Err(e),
        };
        if tx.send(item).is_err() {
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
            None
        } else {
            self.cadence.next_due_nanos()
        }
    }

    fn poll(&mut self) -> Option<SourceEvent<Frame>> {
        while !self.ended {
            let (seq, at) = self.cadence.take_due(self.device.now_nanos())?;
            let frame = match self.pace {
                Pace::Replay => self.next_replayed(),
                Pace::Live => self.newest(),
            };
            if let Some(payload) = frame {
                return Some(SourceEvent {
                    seq,
                    capture_device_nanos: at,
                    stamp_nanos: self.clock.stamp(at),
                    payload,
                    received_nanos: None,
                });
            }
            // Live, and the device has delivered nothing yet: this tick has no frame.
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mmsched_core::time::{ManualClock, NANOS_PER_MILLI};

    /// Frames 0, 1, … of 2×2 pixels whose value is their number; `bad` ones fail.
    struct Numbered {
        next: u8,
        count: u8,
        bad: Vec<u8>,
    }

    impl FrameReader for Numbered {
        fn next_frame(&mut self) -> Result<Option<Frame>, FrameError> {
            if self.next == self.count {
                return Ok(None);
            }
            let n = self.next;
            self.next += 1;
            if self.bad.contains(&n) {
                return Err(FrameError::Image {
                    path: format!("{n}.png"),
                    reason: "corrupt".into(),
                });
            }
            Ok(Frame::from_rgb(2, 2, vec![n; 12]))
        }
    }

    fn config(pace: Pace) -> FeedConfig {
        FeedConfig {
            fps: 2.0,
            pace,
            start_nanos: NANOS_PER_SEC,
            limit: None,
            clock: SourceClock::new(5 * NANOS_PER_MILLI as i64, 0),
        }
    }

    #[test]
    fn replayed_frames_come_in_order_at_the_rate_skip_bad_ones_and_end() {
        let device = ManualClock::new(0);
        let reader = Numbered {
            next: 0,
            count: 5,
            bad: vec![2],
        };
        let mut cam = FeedCamera::new(reader, config(Pace::Replay), &device);
        assert!(cam.poll().is_none(), "nothing before the first tick");
        assert_eq!(cam.next_due_nanos(), Some(NANOS_PER_SEC));
        device.set(2 * NANOS_PER_SEC);
        let got: Vec<_> = std::iter::from_fn(|| cam.poll()).collect();
        let values: Vec<u8> = got.iter().map(|e| e.payload.rgb[0]).collect();
        assert_eq!(
            values,
            [0, 1, 3],
            "ticks at 1.0, 1.5, 2.0 s; frame 2 skipped"
        );
        assert_eq!(got[2].capture_device_nanos, 2 * NANOS_PER_SEC);
        assert_eq!(got[2].stamp_nanos, 2 * NANOS_PER_SEC + 5 * NANOS_PER_MILLI);
        assert_eq!(got[2].received_nanos, None);
        device.set(10 * NANOS_PER_SEC);
        let rest: Vec<u8> = std::iter::from_fn(|| cam.poll())
            .map(|e| e.payload.rgb[0])
            .collect();
        assert_eq!(rest, [4]);
        assert_eq!(cam.next_due_nanos(), None, "the reader ended");
        let (n, why) = cam.errors();
        assert_eq!(n, 1);
        assert!(why.is_some_and(|w| w.contains("2.png")));
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
            tx.send(Ok(Frame::from_rgb(2, 2, vec![n; 12]).expect("size")))
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
        drop(tx);
        device.set(3 * NANOS_PER_SEC);
        assert_eq!(
            cam.poll().map(|e| e.seq),
            Some(3),
            "the last frame, then the end"
        );
        assert!(cam.poll().is_none());
        assert_eq!(cam.next_due_nanos(), None);
    }
}
