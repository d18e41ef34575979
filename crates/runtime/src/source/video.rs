//! Camera frames decoded by the `ffmpeg` command-line program: a video file, or a V4L2
//! device (with the `v4l2` feature). ffmpeg runs as a child process writing raw RGB frames
//! to a pipe, already at the stream's frame rate and letterboxed to a fixed size, so any
//! format ffmpeg reads works and nothing here parses a container.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex};

use super::camera::Frame;
use super::feed::{FrameError, FrameReader};

/// The program run, found on `PATH`.
const FFMPEG: &str = "ffmpeg";

/// Bytes of ffmpeg's error output kept for the error message.
const STDERR_KEEP: usize = 2048;

/// What ffmpeg reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VideoInput {
    /// A video file; `looped`: start again at its end (else the camera ends there).
    File {
        /// The file.
        path: PathBuf,
        /// Play it round and round.
        looped: bool,
    },
    /// A V4L2 capture device, e.g. `/dev/video0` (needs the `v4l2` feature).
    V4l2 {
        /// The device node.
        device: PathBuf,
    },
}

/// Settings of a [`VideoReader`].
#[derive(Debug, Clone, PartialEq)]
pub struct VideoConfig {
    /// What to read.
    pub input: VideoInput,
    /// Frames per second delivered (ffmpeg drops or repeats frames to meet it).
    pub fps: f64,
    /// Width of the delivered frames (the picture is scaled to fit and letterboxed).
    pub width: u32,
    /// Height of the delivered frames.
    pub height: u32,
}

/// Frames from an ffmpeg child process.
#[derive(Debug)]
pub struct VideoReader {
    child: Child,
    stdout: ChildStdout,
    stderr: Arc<Mutex<Vec<u8>>>,
    stderr_thread: Option<std::thread::JoinHandle<()>>,
    width: u32,
    height: u32,
    input: String,
    first: Option<Frame>,
    done: bool,
}

/// The ffmpeg arguments for `config`.
pub fn ffmpeg_args(config: &VideoConfig) -> Vec<String> {
    let mut args: Vec<String> = ["-hide_banner", "-loglevel", "error", "-nostdin"]
        .map(String::from)
        .to_vec();
    match &config.input {
        VideoInput::File { path, looped } => {
            if *looped {
                args.extend(["-stream_loop".into(), "-1".into()]);
            }
            args.extend(["-i".into(), path.display().to_string()]);
        }
        VideoInput::V4l2 { device } => {
            args.extend([
                "-f".into(),
                "v4l2".into(),
                "-i".into(),
                device.display().to_string(),
            ]);
        }
    }
    let (w, h) = (config.width, config.height);
    args.extend([
        "-an".into(),
        "-vf".into(),
        format!(
            "fps={},scale={w}:{h}:force_original_aspect_ratio=decrease,pad={w}:{h}:(ow-iw)/2:(oh-ih)/2",
            config.fps
        ),
        "-pix_fmt".into(),
        "rgb24".into(),
        "-f".into(),
        "rawvideo".into(),
        "pipe:1".into(),
    ]);
    args
}

fn check_input(input: &VideoInput) -> Result<(), FrameError> {
    match input {
        VideoInput::File { path, .. } => {
            if !path.is_file() {
                return Err(FrameError::NoVideo {
                    path: path.display().to_string(),
                });
            }
            Ok(())
        }
        VideoInput::V4l2 { device } => check_device(device),
    }
}

#[cfg(feature = "v4l2")]
fn check_device(device: &Path) -> Result<(), FrameError> {
    use std::os::unix::fs::FileTypeExt;
    let err = |reason: String| FrameError::NoDevice {
        path: device.display().to_string(),
        reason,
    };
    let meta = std::fs::metadata(device).map_err(|e| err(e.to_string()))?;
    if !meta.file_type().is_char_device() {
        return Err(err("not a character device".into()));
    }
    Ok(())
}

#[cfg(not(feature = "v4l2"))]
fn check_device(device: &Path) -> Result<(), FrameError> {
    Err(FrameError::V4l2Disabled {
        path: device.display().to_string(),
    })
}

impl VideoReader {
    /// Starts ffmpeg on `config.input` and reads the first frame, so a missing program, an
    /// unreadable file or an absent device is an error here, not a silent camera.
    pub fn open(config: &VideoConfig) -> Result<Self, FrameError> {
        Self::open_with(config, FFMPEG)
    }

    fn open_with(config: &VideoConfig, program: &str) -> Result<Self, FrameError> {
        check_input(&config.input)?;
        let input = match &config.input {
            VideoInput::File { path, .. } => path.display().to_string(),
            VideoInput::V4l2 { device } => device.display().to_string(),
        };
        let mut child = Command::new(program)
            .args(ffmpeg_args(config))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| FrameError::FfmpegMissing {
                reason: e.to_string(),
            })?;
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let mut stderr_thread = None;
        if let Some(mut pipe) = child.stderr.take() {
            let keep = Arc::clone(&stderr);
            // Drained on its own thread so that a chatty ffmpeg never blocks on the pipe.
            stderr_thread = Some(std::thread::spawn(move || {
                let mut buf = [0u8; 512];
                while let Ok(n) = pipe.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    if let Ok(mut k) = keep.lock() {
                        k.write_all(&buf[..n]).ok();
                        let excess = k.len().saturating_sub(STDERR_KEEP);
                        k.drain(..excess);
                    }
                }
            }));
        }
        let Some(stdout) = child.stdout.take() else {
            return Err(FrameError::Decode {
                input,
                reason: "no output pipe".into(),
            });
        };
        let mut reader = Self {
            child,
            stdout,
            stderr,
            stderr_thread,
            width: config.width,
            height: config.height,
            input,
            first: None,
            done: false,
        };
        match reader.read_frame() {
            Some(f) => reader.first = Some(f),
            None => {
                let _ = reader.child.wait();
                return Err(FrameError::Decode {
                    input: reader.input.clone(),
                    reason: reader.stderr_text(),
                });
            }
        }
        Ok(reader)
    }

    /// What ffmpeg said, once it has exited (its error pipe is then read to the end).
    fn stderr_text(&mut self) -> String {
        if let Some(t) = self.stderr_thread.take() {
            let _ = t.join();
        }
        let text = self
            .stderr
            .lock()
            .map(|k| String::from_utf8_lossy(&k).trim().to_string())
            .unwrap_or_default();
        if text.is_empty() {
            "it produced no frame".into()
        } else {
            text
        }
    }

    /// One whole frame from the pipe; `None` at its end.
    fn read_frame(&mut self) -> Option<Frame> {
        let mut rgb = vec![0u8; self.width as usize * self.height as usize * 3];
        self.stdout.read_exact(&mut rgb).ok()?;
        Frame::from_rgb(self.width, self.height, rgb)
    }
}

impl FrameReader for VideoReader {
    fn next_frame(&mut self) -> Result<Option<Frame>, FrameError> {
        if let Some(f) = self.first.take() {
            return Ok(Some(f));
        }
        if self.done {
            return Ok(None);
        }
        match self.read_frame() {
            Some(f) => Ok(Some(f)),
            None => {
                self.done = true;
                let status = self.child.wait().ok();
                if status.is_some_and(|s| s.success()) {
                    Ok(None)
                } else {
                    Err(FrameError::Decode {
                        input: self.input.clone(),
                        reason: self.stderr_text(),
                    })
                }
            }
        }
    }
}

impl Drop for VideoReader {
    fn drop(&mut self) {
        // A looped file or a device never ends by itself.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn have_ffmpeg() -> bool {
        Command::new(FFMPEG)
            .arg("-version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }

    #[test]
    fn the_ffmpeg_command_scales_letterboxes_and_loops() {
        let args = ffmpeg_args(&VideoConfig {
            input: VideoInput::File {
                path: "clip.mp4".into(),
                looped: true,
            },
            fps: 2.5,
            width: 640,
            height: 360,
        });
        let line = args.join(" ");
        assert!(line.contains("-stream_loop -1 -i clip.mp4"), "{line}");
        assert!(
            line.contains("fps=2.5,scale=640:360:force_original_aspect_ratio=decrease,pad=640:360"),
            "{line}"
        );
        assert!(
            line.ends_with("-pix_fmt rgb24 -f rawvideo pipe:1"),
            "{line}"
        );
    }

    #[test]
    fn missing_inputs_are_named() {
        let e = VideoReader::open(&VideoConfig {
            input: VideoInput::File {
                path: "/nonexistent/clip.mp4".into(),
                looped: false,
            },
            fps: 1.0,
            width: 64,
            height: 48,
        })
        .expect_err("missing file");
        assert!(e.to_string().contains("/nonexistent/clip.mp4"), "{e}");
        let e = VideoReader::open(&VideoConfig {
            input: VideoInput::V4l2 {
                device: "/nonexistent/video9".into(),
            },
            fps: 1.0,
            width: 64,
            height: 48,
        })
        .expect_err("no device");
        assert!(e.to_string().contains("/nonexistent/video9"), "{e}");
    }

    #[test]
    fn a_video_file_is_decoded_into_frames_at_the_rate() {
        if !have_ffmpeg() {
            panic!("ffmpeg is not installed: install ffmpeg (scripts/setup.sh does)");
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let clip = dir.path().join("bars.mkv");
        // A 2 s, 10 fps, 160×120 test pattern; at 4 fps that is 8 frames.
        let made = Command::new(FFMPEG)
            .args(["-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i"])
            .arg("testsrc=duration=2:size=160x120:rate=10")
            .args(["-c:v", "ffv1"])
            .arg(&clip)
            .status()
            .expect("ffmpeg runs");
        assert!(made.success());
        let mut r = VideoReader::open(&VideoConfig {
            input: VideoInput::File {
                path: clip.clone(),
                looped: false,
            },
            fps: 4.0,
            width: 80,
            height: 80,
        })
        .expect("opens");
        let mut frames = Vec::new();
        while let Some(f) = r.next_frame().expect("decodes") {
            frames.push(f);
        }
        assert_eq!(frames.len(), 8, "2 s at 4 fps");
        let f = &frames[0];
        assert_eq!((f.width, f.height, f.rgb.len()), (80, 80, 80 * 80 * 3));
        // 4:3 into a square: black bars above and below, picture in the middle.
        assert!(f.rgb[..80 * 3].iter().all(|&v| v < 20), "top bar is black");
        assert!(f.rgb[40 * 80 * 3..41 * 80 * 3].iter().any(|&v| v > 100));
        let garbage = dir.path().join("garbage.mp4");
        std::fs::write(&garbage, b"this is no video").expect("write");
        let e = VideoReader::open(&VideoConfig {
            input: VideoInput::File {
                path: garbage,
                looped: false,
            },
            fps: 4.0,
            width: 80,
            height: 80,
        })
        .expect_err("not a video");
        assert!(e.to_string().contains("garbage.mp4"), "{e}");
    }

    #[test]
    fn a_missing_ffmpeg_says_how_to_install_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let clip = dir.path().join("clip.mp4");
        std::fs::write(&clip, b"any").expect("write");
        let config = VideoConfig {
            input: VideoInput::File {
                path: clip,
                looped: false,
            },
            fps: 1.0,
            width: 64,
            height: 48,
        };
        // A program that does not exist stands in for a machine without ffmpeg.
        let e = VideoReader::open_with(&config, "/nonexistent/ffmpeg").expect_err("no program");
        assert!(
            e.to_string()
                .contains("install ffmpeg (scripts/setup.sh does)"),
            "{e}"
        );
    }
}
