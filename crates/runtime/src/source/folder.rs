//! Camera frames from a folder of PNG and JPEG files, played in name order (`0001.png`,
//! `0002.png`, …), once or round and round. A `truth.json` in the folder (file name → its
//! lines of text) gives each frame its truth, so what OCR reads of it is scored.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::camera::Frame;
use super::feed::{FrameError, FrameReader};

/// Reads a folder's images in name order.
#[derive(Debug, Clone)]
pub struct FolderReader {
    files: Vec<PathBuf>,
    next: usize,
    looped: bool,
    /// Each labelled file's lines, `\n`-joined, by file name.
    truth: HashMap<String, String>,
}

/// The name of the file in a frames folder that labels its frames.
pub const TRUTH_FILE: &str = "truth.json";

/// Reads `dir/truth.json` if it is there: an object from file names to their lines (an
/// array of strings, or one string with `\n` between lines).
fn read_truth(dir: &Path) -> Result<HashMap<String, String>, FrameError> {
    let path = dir.join(TRUTH_FILE);
    if !path.exists() {
        return Ok(HashMap::new());
    }
    let err = |reason: String| FrameError::Truth {
        path: path.display().to_string(),
        reason,
    };
    let text = std::fs::read_to_string(&path).map_err(|e| err(e.to_string()))?;
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| err(e.to_string()))?;
    let serde_json::Value::Object(map) = value else {
        return Err(err("the top level is not an object".into()));
    };
    map.into_iter()
        .map(|(name, lines)| {
            let joined = match lines {
                serde_json::Value::String(s) => s,
                serde_json::Value::Array(a) => a
                    .iter()
                    .map(|l| l.as_str().map(str::to_string))
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| err(format!("the lines of {name:?} are not all strings")))?
                    .join("\n"),
                other => {
                    return Err(err(format!(
                        "the value of {name:?} is {other}, not a list of lines"
                    )));
                }
            };
            Ok((name, joined))
        })
        .collect()
}

fn is_image(p: &Path) -> bool {
    p.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| matches!(e.to_ascii_lowercase().as_str(), "png" | "jpg" | "jpeg"))
}

impl FolderReader {
    /// Lists `dir`'s PNG and JPEG files (other files are ignored) and checks that each one
    /// is a readable image header, so a bad file is reported before the run, by name.
    /// `looped`: start again after the last file; else the camera ends there.
    pub fn open(dir: &Path, looped: bool) -> Result<Self, FrameError> {
        let shown = dir.display().to_string();
        let entries = std::fs::read_dir(dir).map_err(|e| FrameError::Folder {
            path: shown.clone(),
            reason: e.to_string(),
        })?;
        let mut files: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.is_file() && is_image(p))
            .collect();
        if files.is_empty() {
            return Err(FrameError::NoImages { path: shown });
        }
        files.sort();
        for f in &files {
            image::ImageReader::open(f)
                .and_then(|r| r.with_guessed_format())
                .map_err(|e| e.to_string())
                .and_then(|r| r.into_dimensions().map_err(|e| e.to_string()))
                .map_err(|reason| FrameError::Image {
                    path: f.display().to_string(),
                    reason,
                })?;
        }
        let truth = read_truth(dir)?;
        Ok(Self {
            files,
            next: 0,
            looped,
            truth,
        })
    }

    /// The files, in playing order.
    pub fn files(&self) -> &[PathBuf] {
        &self.files
    }
}

/// Decodes one PNG or JPEG file into an RGB8 frame. A file that is gone, or is no longer
/// a regular file (a FIFO put in its place: opening it would wait for a writer), is an
/// error naming it.
pub fn decode(path: &Path) -> Result<Frame, FrameError> {
    let err = |reason: String| FrameError::Image {
        path: path.display().to_string(),
        reason,
    };
    match std::fs::metadata(path) {
        Err(e) => return Err(err(format!("cannot read it: {e}"))),
        Ok(m) if !m.is_file() => {
            return Err(err(
                "it is no longer a regular file (a FIFO, a device or a folder)".into(),
            ));
        }
        Ok(_) => {}
    }
    let rgb = image::open(path).map_err(|e| err(e.to_string()))?.to_rgb8();
    let (w, h) = rgb.dimensions();
    Frame::from_rgb(w, h, rgb.into_raw()).ok_or_else(|| err("inconsistent size".into()))
}

impl FrameReader for FolderReader {
    fn next_frame(&mut self) -> Result<Option<Frame>, FrameError> {
        if self.next == self.files.len() {
            if !self.looped {
                return Ok(None);
            }
            self.next = 0;
        }
        let path = &self.files[self.next];
        self.next += 1;
        let mut frame = decode(path)?;
        if let Some(lines) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| self.truth.get(n))
        {
            frame.text.clone_from(lines);
        }
        Ok(Some(frame))
    }

    fn next_input(&self) -> Option<String> {
        let next = if self.next == self.files.len() && self.looped {
            0
        } else {
            self.next
        };
        self.files.get(next).map(|p| p.display().to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_png(path: &Path, w: u32, h: u32, value: u8) {
        image::RgbImage::from_pixel(w, h, image::Rgb([value, 0, 255 - value]))
            .save(path)
            .expect("write png");
    }

    #[test]
    fn images_play_in_name_order_once_or_looped() {
        let dir = tempfile::tempdir().expect("tempdir");
        write_png(&dir.path().join("b.png"), 4, 3, 20);
        write_png(&dir.path().join("a.PNG"), 4, 3, 10);
        image::RgbImage::from_pixel(8, 2, image::Rgb([30, 30, 30]))
            .save(dir.path().join("c.jpg"))
            .expect("write jpeg");
        std::fs::write(dir.path().join("notes.txt"), "not a frame").expect("write");
        let mut once = FolderReader::open(dir.path(), false).expect("valid folder");
        assert_eq!(once.files().len(), 3);
        let f = once.next_frame().expect("decodes").expect("a frame");
        assert_eq!((f.width, f.height, f.rgb[0], f.rgb[2]), (4, 3, 10, 245));
        assert_eq!(once.next_frame().expect("ok").map(|f| f.rgb[0]), Some(20));
        let jpeg = once.next_frame().expect("ok").expect("a frame");
        assert_eq!((jpeg.width, jpeg.height), (8, 2));
        assert!(
            jpeg.rgb[0].abs_diff(30) <= 2,
            "JPEG is lossy: {}",
            jpeg.rgb[0]
        );
        assert!(
            once.next_frame().expect("ok").is_none(),
            "stops after the last"
        );
        let mut looped = FolderReader::open(dir.path(), true).expect("valid folder");
        let firsts: Vec<u32> = (0..4)
            .map(|_| looped.next_frame().expect("ok").expect("frame").width)
            .collect();
        assert_eq!(firsts, [4, 4, 8, 4], "starts again after the last");
    }

    #[test]
    fn a_truth_file_labels_its_frames_and_a_bad_one_is_named() {
        let dir = tempfile::tempdir().expect("tempdir");
        write_png(&dir.path().join("0001.png"), 4, 3, 10);
        write_png(&dir.path().join("0002.png"), 4, 3, 20);
        write_png(&dir.path().join("0003.png"), 4, 3, 30);
        std::fs::write(
            dir.path().join(TRUTH_FILE),
            r#"{"0001.png": ["EXIT 12", "GATE B7"], "0002.png": "PLATFORM 3"}"#,
        )
        .expect("write");
        let mut r = FolderReader::open(dir.path(), false).expect("valid folder");
        let texts: Vec<String> = (0..3)
            .map(|_| r.next_frame().expect("ok").expect("frame").text)
            .collect();
        assert_eq!(texts, ["EXIT 12\nGATE B7", "PLATFORM 3", ""]);
        for bad in [
            r#"["EXIT 12"]"#,
            r#"{"0001.png": 12}"#,
            r#"{"0001.png": [1]}"#,
            "{",
        ] {
            std::fs::write(dir.path().join(TRUTH_FILE), bad).expect("write");
            let e = FolderReader::open(dir.path(), false).expect_err(bad);
            assert!(matches!(e, FrameError::Truth { .. }), "{bad}: {e}");
            assert!(e.to_string().contains("truth.json"), "{e}");
        }
    }

    #[test]
    fn a_bad_folder_or_file_is_named() {
        let dir = tempfile::tempdir().expect("tempdir");
        let missing = dir.path().join("nope");
        let e = FolderReader::open(&missing, true).expect_err("missing");
        assert!(e.to_string().contains("nope"), "{e}");
        assert!(e.to_string().contains("folder of PNG or JPEG"), "{e}");
        let e = FolderReader::open(dir.path(), true).expect_err("empty");
        assert!(matches!(e, FrameError::NoImages { .. }), "{e}");
        std::fs::write(dir.path().join("broken.png"), b"not a png at all").expect("write");
        let e = FolderReader::open(dir.path(), true).expect_err("corrupt");
        assert!(e.to_string().contains("broken.png"), "{e}");
    }

    #[test]
    fn a_folder_that_changes_under_the_reader_gives_one_error_per_frame_and_never_blocks() {
        let dir = tempfile::tempdir().expect("tempdir");
        for (i, name) in ["a.png", "b.png", "c.png", "d.png"].iter().enumerate() {
            write_png(&dir.path().join(name), 4, 3, i as u8);
        }
        let mut r = FolderReader::open(dir.path(), true).expect("valid folder");
        assert_eq!(
            r.next_input().as_deref(),
            Some(dir.path().join("a.png").to_str().expect("utf-8"))
        );
        // Deleted, truncated, replaced by garbage, replaced by a FIFO nobody writes to.
        std::fs::remove_file(dir.path().join("a.png")).expect("rm");
        let b = std::fs::read(dir.path().join("b.png")).expect("read");
        std::fs::write(dir.path().join("b.png"), &b[..b.len() / 2]).expect("truncate");
        std::fs::write(dir.path().join("c.png"), b"garbage").expect("garbage");
        std::fs::remove_file(dir.path().join("d.png")).expect("rm");
        let made = std::process::Command::new("mkfifo")
            .arg(dir.path().join("d.png"))
            .status()
            .expect("mkfifo runs");
        assert!(made.success());
        for (name, says) in [
            ("a.png", "No such file"),
            ("b.png", "not a readable PNG"),
            ("c.png", "not a readable PNG"),
            ("d.png", "no longer a regular file"),
        ] {
            let e = r.next_frame().expect_err("unreadable");
            let msg = e.to_string();
            assert!(msg.contains(name) && msg.contains(says), "{msg}");
        }
        assert!(
            r.next_frame().is_err(),
            "looped: the missing first file again"
        );
    }
}
