//! A camera: frames at a set rate, either recorded (decoded frames handed in) or generated
//! scenes with text rendered into them, with configurable blur and darkness episodes.
//!
//! Generated scenes are what an AR headset or an inspection robot looks at: a sign or
//! label with a line or two of text on a lit background. Each scene holds for a number of
//! frames, then the next text comes up. Text is rendered with a TrueType font
//! (DejaVu Sans from Debian's `fonts-dejavu-core` by default) through `ab_glyph`, so the OCR
//! model reads real glyphs. Episodes degrade frames the way the routing gate (S4) must
//! notice: *blur* (a box blur, like defocus or motion) and *dark* (light scaled down).

use std::path::{Path, PathBuf};

use ab_glyph::{Font, FontVec, PxScale, ScaleFont, point};
use mmsched_core::Modality;
use mmsched_core::time::{Clock, Nanos};

use super::{Cadence, Source, SourceClock, SourceEvent};

/// Where Debian's `fonts-dejavu-core` puts DejaVu Sans.
pub const DEFAULT_FONT_PATH: &str = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";

/// How an episode degrades frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Degradation {
    /// Box blur with this radius in pixels (applied twice: close to a Gaussian).
    Blur {
        /// Radius in pixels (≥ 1).
        radius_px: u32,
    },
    /// Light scaled to this percentage (0 ..= 100).
    Dark {
        /// Remaining brightness, in percent.
        brightness_pct: u8,
    },
}

/// A span of camera time during which frames are degraded.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Episode {
    /// Start, in nanoseconds after the camera's first frame (inclusive).
    pub from_nanos: Nanos,
    /// End, in nanoseconds after the camera's first frame (exclusive).
    pub until_nanos: Nanos,
    /// What happens to the frames.
    pub degradation: Degradation,
    /// Share of the episode's frames degraded, in [0, 1] (1: all), spread evenly.
    pub fraction: f64,
}

impl Episode {
    /// Whether the episode degrades frame `k` (the camera's frame number): frames are
    /// picked evenly, so that `fraction` of any run of frames is degraded, the same in
    /// every run.
    fn picks(&self, k: u64) -> bool {
        let f = self.fraction.clamp(0.0, 1.0);
        ((k + 1) as f64 * f).floor() > (k as f64 * f).floor()
    }
}

/// What the camera looks at.
#[derive(Debug, Clone, PartialEq)]
pub enum Scenes {
    /// Generated scenes showing these texts in turn.
    Generated {
        /// One text per scene (lines separated by `\n`; long lines are wrapped).
        texts: Vec<String>,
        /// The TrueType font to render with.
        font_path: PathBuf,
    },
    /// Recorded frames (e.g. decoded from an image directory), shown in turn.
    Recorded(Vec<Frame>),
}

/// Settings of a [`Camera`].
#[derive(Debug, Clone, PartialEq)]
pub struct CameraConfig {
    /// The scenes.
    pub scenes: Scenes,
    /// Frame width of generated scenes, in pixels (64 ..= 4096).
    pub width: u32,
    /// Frame height of generated scenes, in pixels (48 ..= 4096).
    pub height: u32,
    /// Frames per second (≥ 1).
    pub fps: u32,
    /// How many frames each scene is shown for (≥ 1).
    pub frames_per_scene: u32,
    /// Degradation episodes.
    pub episodes: Vec<Episode>,
    /// Device time of the first frame.
    pub start_nanos: Nanos,
    /// Stop after this many frames (`None`: never).
    pub limit: Option<u64>,
    /// The camera's own clock error.
    pub clock: SourceClock,
}

impl Default for CameraConfig {
    fn default() -> Self {
        Self {
            scenes: Scenes::Generated {
                texts: default_texts(),
                font_path: PathBuf::from(DEFAULT_FONT_PATH),
            },
            width: 640,
            height: 360,
            fps: 30,
            frames_per_scene: 30,
            episodes: Vec::new(),
            start_nanos: 0,
            limit: None,
            clock: SourceClock::default(),
        }
    }
}

/// Sign texts for generated scenes.
pub fn default_texts() -> Vec<String> {
    [
        "EXIT 12\nNorth Station",
        "Gate B7 closes 14:35",
        "Platform 3\nTrains to Airport",
        "CAUTION\nWet floor",
        "Valve V-204 pressure 3.2 bar",
        "Room 118 Meeting at 10:00",
        "Speed limit 50",
        "Inspect weld seam 7A",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// One RGB8 frame, row-major, with what it shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// `width · height · 3` bytes, RGB, row-major.
    pub rgb: Vec<u8>,
    /// The text shown (ground truth for OCR; empty for recorded frames).
    pub text: String,
    /// The degradation applied to this frame, if any (ground truth for the gate).
    pub degradation: Option<Degradation>,
}

impl Frame {
    /// A frame from raw RGB8 bytes; `None` when the length does not match the size.
    pub fn from_rgb(width: u32, height: u32, rgb: Vec<u8>) -> Option<Self> {
        (rgb.len() as u64 == u64::from(width) * u64::from(height) * 3).then_some(Self {
            width,
            height,
            rgb,
            text: String::new(),
            degradation: None,
        })
    }
}

/// Why a camera could not be built.
#[derive(Debug, thiserror::Error)]
pub enum CameraError {
    /// The font file could not be read.
    #[error(
        "cannot read font {path}: {reason} (install Debian's fonts-dejavu-core or point font_path at a TrueType font)"
    )]
    Font {
        /// The font path.
        path: String,
        /// Why.
        reason: String,
    },
    /// No scenes.
    #[error("the camera needs at least one scene (a text or a recorded frame)")]
    NoScenes,
    /// A size out of range.
    #[error("frame size {width}x{height} is out of range: width 64..=4096, height 48..=4096")]
    Size {
        /// Width asked for.
        width: u32,
        /// Height asked for.
        height: u32,
    },
}

enum Content {
    Generated { texts: Vec<String>, font: FontVec },
    Recorded(Vec<Frame>),
}

/// A camera source.
pub struct Camera<C: Clock> {
    device: C,
    cadence: Cadence,
    clock: SourceClock,
    content: Content,
    width: u32,
    height: u32,
    frames_per_scene: u32,
    episodes: Vec<Episode>,
    start_nanos: Nanos,
    /// Generated scenes already rendered, by scene (as many as [`SCENES_KEPT`]; beyond
    /// that only the last): a scene comes back every few seconds, and rendering it again
    /// was a tenth of a simulated run's time.
    rendered: Vec<(usize, Frame)>,
}

/// Rendered scenes a generated camera keeps (16 frames of 640 × 360 are 11 MB).
const SCENES_KEPT: usize = 16;

impl<C: Clock> std::fmt::Debug for Camera<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Camera")
            .field("cadence", &self.cadence)
            .field("width", &self.width)
            .field("height", &self.height)
            .field("episodes", &self.episodes)
            .finish()
    }
}

impl<C: Clock> Camera<C> {
    /// A camera polled against `device`. Loads the font once, here.
    pub fn new(config: CameraConfig, device: C) -> Result<Self, CameraError> {
        let content = match config.scenes {
            Scenes::Generated { texts, font_path } => {
                if !(64..=4096).contains(&config.width) || !(48..=4096).contains(&config.height) {
                    return Err(CameraError::Size {
                        width: config.width,
                        height: config.height,
                    });
                }
                if texts.is_empty() {
                    return Err(CameraError::NoScenes);
                }
                Content::Generated {
                    texts,
                    font: load_font(&font_path)?,
                }
            }
            Scenes::Recorded(frames) => {
                if frames.is_empty() {
                    return Err(CameraError::NoScenes);
                }
                Content::Recorded(frames)
            }
        };
        let mut cadence = Cadence::per_second(config.start_nanos, config.fps);
        if let Some(l) = config.limit {
            cadence = cadence.with_limit(l);
        }
        Ok(Self {
            device,
            cadence,
            clock: config.clock,
            content,
            width: config.width,
            height: config.height,
            frames_per_scene: config.frames_per_scene.max(1),
            episodes: config.episodes,
            start_nanos: config.start_nanos,
            rendered: Vec::new(),
        })
    }

    fn scene_count(&self) -> usize {
        match &self.content {
            Content::Generated { texts, .. } => texts.len(),
            Content::Recorded(frames) => frames.len(),
        }
    }

    fn clear_frame(&mut self, scene: usize) -> Frame {
        let (texts, font) = match &self.content {
            Content::Recorded(frames) => return frames[scene].clone(),
            Content::Generated { texts, font } => (texts, font),
        };
        if let Some((_, f)) = self.rendered.iter().find(|(s, _)| *s == scene) {
            return f.clone();
        }
        let frame = render_scene(font, &texts[scene], self.width, self.height, scene as u64);
        if self.rendered.len() >= SCENES_KEPT {
            self.rendered.remove(0);
        }
        self.rendered.push((scene, frame.clone()));
        frame
    }

    fn frame(&mut self, k: u64, at: Nanos) -> Frame {
        let scene =
            usize::try_from(k / u64::from(self.frames_per_scene) % self.scene_count() as u64)
                .unwrap_or(0);
        let mut frame = self.clear_frame(scene);
        let since = at - self.start_nanos;
        if let Some(e) = self
            .episodes
            .iter()
            .find(|e| (e.from_nanos..e.until_nanos).contains(&since))
            .filter(|e| e.picks(k))
        {
            degrade(&mut frame, e.degradation);
            frame.degradation = Some(e.degradation);
        }
        frame
    }
}

impl<C: Clock> Source for Camera<C> {
    type Payload = Frame;

    fn name(&self) -> &str {
        "camera"
    }

    fn modality(&self) -> Modality {
        Modality::Image
    }

    fn next_due_nanos(&self) -> Option<Nanos> {
        self.cadence.next_due_nanos()
    }

    fn poll(&mut self) -> Option<SourceEvent<Frame>> {
        let (seq, at) = self.cadence.take_due(self.device.now_nanos())?;
        Some(SourceEvent {
            seq,
            capture_device_nanos: at,
            stamp_nanos: self.clock.stamp(at),
            payload: self.frame(seq, at),
            received_nanos: None,
        })
    }
}

fn load_font(path: &Path) -> Result<FontVec, CameraError> {
    let err = |reason: String| CameraError::Font {
        path: path.display().to_string(),
        reason,
    };
    let bytes = std::fs::read(path).map_err(|e| err(e.to_string()))?;
    FontVec::try_from_vec(bytes).map_err(|e| err(e.to_string()))
}

/// Renders `text` dark on a light, gently shaded background. `seed` varies the layout.
fn render_scene(font: &FontVec, text: &str, width: u32, height: u32, seed: u64) -> Frame {
    let (w, h) = (width as usize, height as usize);
    let mut rgb = vec![0u8; w * h * 3];
    // Background: a warm light gradient, slightly different per scene.
    let tint = (seed % 5) as i32 * 4;
    for y in 0..h {
        for x in 0..w {
            let shade = 235 - (y * 25 / h) as i32 - (x * 10 / w) as i32;
            let i = (y * w + x) * 3;
            rgb[i] = (shade + tint / 2).clamp(0, 255) as u8;
            rgb[i + 1] = shade.clamp(0, 255) as u8;
            rgb[i + 2] = (shade - tint).clamp(0, 255) as u8;
        }
    }
    let px = (height as f32 / 7.0).max(12.0);
    let scaled = font.as_scaled(PxScale::from(px));
    let lines = wrap(&scaled, text, width as f32 * 0.9);
    let line_h = scaled.height() + scaled.line_gap();
    let block_h = line_h * lines.len() as f32;
    let top = ((height as f32 - block_h) / 2.0).max(0.0);
    for (n, line) in lines.iter().enumerate() {
        let line_w = measure(&scaled, line);
        let left = ((width as f32 - line_w) / 2.0).max(0.0);
        let baseline = top + scaled.ascent() + line_h * n as f32;
        let mut caret = point(left, baseline);
        let mut prev = None;
        for c in line.chars() {
            let mut glyph = scaled.scaled_glyph(c);
            if let Some(p) = prev {
                caret.x += scaled.kern(p, glyph.id);
            }
            glyph.position = caret;
            caret.x += scaled.h_advance(glyph.id);
            prev = Some(glyph.id);
            if let Some(outlined) = font.outline_glyph(glyph) {
                let b = outlined.px_bounds();
                outlined.draw(|gx, gy, coverage| {
                    let x = b.min.x as i64 + i64::from(gx);
                    let y = b.min.y as i64 + i64::from(gy);
                    if x < 0 || y < 0 || x >= w as i64 || y >= h as i64 {
                        return;
                    }
                    let i = (y as usize * w + x as usize) * 3;
                    let ink = [20.0f32, 24.0, 32.0];
                    for ch in 0..3 {
                        let bg = f32::from(rgb[i + ch]);
                        rgb[i + ch] = (bg + (ink[ch] - bg) * coverage.min(1.0)).round() as u8;
                    }
                });
            }
        }
    }
    Frame {
        width,
        height,
        rgb,
        text: lines.join("\n"),
        degradation: None,
    }
}

fn measure<F: Font, S: ScaleFont<F>>(scaled: &S, line: &str) -> f32 {
    let mut width = 0.0;
    let mut prev = None;
    for c in line.chars() {
        let id = scaled.glyph_id(c);
        if let Some(p) = prev {
            width += scaled.kern(p, id);
        }
        width += scaled.h_advance(id);
        prev = Some(id);
    }
    width
}

/// Greedy word wrap of each `\n`-separated line to `max_width` pixels.
fn wrap<F: Font, S: ScaleFont<F>>(scaled: &S, text: &str, max_width: f32) -> Vec<String> {
    let mut out = Vec::new();
    for para in text.lines() {
        let mut line = String::new();
        for word in para.split_whitespace() {
            let candidate = if line.is_empty() {
                word.to_string()
            } else {
                format!("{line} {word}")
            };
            if !line.is_empty() && measure(scaled, &candidate) > max_width {
                out.push(std::mem::take(&mut line));
                line = word.to_string();
            } else {
                line = candidate;
            }
        }
        out.push(line);
    }
    out
}

fn degrade(frame: &mut Frame, d: Degradation) {
    match d {
        Degradation::Dark { brightness_pct } => {
            let k = u32::from(brightness_pct.min(100));
            for v in &mut frame.rgb {
                *v = (u32::from(*v) * k / 100) as u8;
            }
        }
        Degradation::Blur { radius_px } => {
            let r = radius_px.max(1) as usize;
            let (w, h) = (frame.width as usize, frame.height as usize);
            for _ in 0..2 {
                box_blur(&mut frame.rgb, w, h, r, true);
                box_blur(&mut frame.rgb, w, h, r, false);
            }
        }
    }
}

/// One pass of a running-sum box blur along rows (`horizontal`) or columns, edges clamped.
fn box_blur(rgb: &mut [u8], w: usize, h: usize, r: usize, horizontal: bool) {
    let (outer, inner) = if horizontal { (h, w) } else { (w, h) };
    let idx = |o: usize, i: usize| {
        if horizontal {
            (o * w + i) * 3
        } else {
            (i * w + o) * 3
        }
    };
    let mut line = vec![0u32; inner * 3];
    let span = (2 * r + 1) as u32;
    for o in 0..outer {
        for i in 0..inner {
            let p = idx(o, i);
            line[i * 3..i * 3 + 3].copy_from_slice(&[
                u32::from(rgb[p]),
                u32::from(rgb[p + 1]),
                u32::from(rgb[p + 2]),
            ]);
        }
        for ch in 0..3 {
            let at = |i: isize| line[(i.clamp(0, inner as isize - 1) as usize) * 3 + ch];
            let mut sum: u32 = (-(r as isize)..=r as isize).map(at).sum();
            for i in 0..inner {
                rgb[idx(o, i) + ch] = (sum / span) as u8;
                sum += at(i as isize + r as isize + 1);
                sum -= at(i as isize - r as isize);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mmsched_core::time::{ManualClock, NANOS_PER_MILLI, NANOS_PER_SEC};

    fn mean_luma(f: &Frame) -> f64 {
        f.rgb.iter().map(|&v| f64::from(v)).sum::<f64>() / f.rgb.len() as f64
    }

    /// Variance of the 4-neighbour Laplacian of the green channel: edge energy.
    fn edge_energy(f: &Frame) -> f64 {
        let (w, h) = (f.width as usize, f.height as usize);
        let g = |x: usize, y: usize| f64::from(f.rgb[(y * w + x) * 3 + 1]);
        let mut vals = Vec::new();
        for y in 1..h - 1 {
            for x in 1..w - 1 {
                vals.push(g(x - 1, y) + g(x + 1, y) + g(x, y - 1) + g(x, y + 1) - 4.0 * g(x, y));
            }
        }
        let m = vals.iter().sum::<f64>() / vals.len() as f64;
        vals.iter().map(|v| (v - m).powi(2)).sum::<f64>() / vals.len() as f64
    }

    fn camera(device: &ManualClock, episodes: Vec<Episode>) -> Camera<&ManualClock> {
        let config = CameraConfig {
            width: 320,
            height: 180,
            fps: 10,
            frames_per_scene: 5,
            episodes,
            start_nanos: NANOS_PER_SEC,
            clock: SourceClock::new(-20 * NANOS_PER_MILLI as i64, 50_000),
            ..CameraConfig::default()
        };
        Camera::new(config, device).expect("font installed (fonts-dejavu-core)")
    }

    #[test]
    fn frames_come_at_the_rate_with_text_and_the_camera_clock() {
        let device = ManualClock::new(0);
        let mut cam = camera(&device, vec![]);
        assert!(cam.poll().is_none());
        device.set(2 * NANOS_PER_SEC);
        let frames: Vec<_> = std::iter::from_fn(|| cam.poll()).collect();
        assert_eq!(frames.len(), 11);
        let f = &frames[10];
        assert_eq!(f.capture_device_nanos, 2 * NANOS_PER_SEC);
        assert_eq!(
            f.stamp_nanos,
            2 * NANOS_PER_SEC - 20 * NANOS_PER_MILLI + 100_000
        );
        assert_eq!(frames[0].payload.text, "EXIT 12\nNorth Station");
        assert_eq!(frames[5].payload.text, "Gate B7 closes 14:35");
        assert_eq!(frames[0].payload, frames[4].payload, "a scene holds");
        assert_eq!(f.payload.rgb.len(), 320 * 180 * 3);
        // Text was drawn: dark ink on a light background.
        assert!(f.payload.rgb.iter().any(|&v| v < 60));
        assert!(mean_luma(&f.payload) > 180.0);
    }

    #[test]
    fn a_scene_that_comes_back_shows_the_same_pixels() {
        let device = ManualClock::new(0);
        let mut cam = camera(&device, vec![]);
        // 8 scenes of 5 frames at 10 fps: the first scene again after 4 s.
        device.set(NANOS_PER_SEC + 4 * NANOS_PER_SEC);
        let frames: Vec<Frame> = std::iter::from_fn(|| cam.poll())
            .map(|e| e.payload)
            .collect();
        assert_eq!(frames.len(), 41);
        assert_eq!(frames[40], frames[0]);
        assert_ne!(frames[35].text, frames[40].text);
    }

    #[test]
    fn blur_and_dark_episodes_degrade_frames_and_say_so() {
        let device = ManualClock::new(0);
        let episodes = vec![
            Episode {
                from_nanos: 200 * NANOS_PER_MILLI,
                until_nanos: 400 * NANOS_PER_MILLI,
                degradation: Degradation::Blur { radius_px: 3 },
                fraction: 1.0,
            },
            Episode {
                from_nanos: 400 * NANOS_PER_MILLI,
                until_nanos: 500 * NANOS_PER_MILLI,
                degradation: Degradation::Dark { brightness_pct: 8 },
                fraction: 1.0,
            },
        ];
        let mut cam = camera(&device, episodes);
        device.set(NANOS_PER_SEC + 500 * NANOS_PER_MILLI);
        let f: Vec<Frame> = std::iter::from_fn(|| cam.poll())
            .map(|e| e.payload)
            .collect();
        assert_eq!(f.len(), 6);
        assert_eq!(f[1].degradation, None);
        assert_eq!(f[2].degradation, Some(Degradation::Blur { radius_px: 3 }));
        assert_eq!(
            f[4].degradation,
            Some(Degradation::Dark { brightness_pct: 8 })
        );
        assert_eq!(f[5].degradation, None, "episodes end exclusive");
        assert!(
            edge_energy(&f[2]) < edge_energy(&f[1]) / 10.0,
            "blur removes edges"
        );
        assert!(mean_luma(&f[4]) < 25.0, "dark frame: {}", mean_luma(&f[4]));
        assert!(
            (mean_luma(&f[2]) - mean_luma(&f[1])).abs() < 3.0,
            "blur keeps brightness"
        );
    }

    #[test]
    fn an_episode_degrades_its_fraction_of_frames_evenly() {
        let e = Episode {
            from_nanos: 0,
            until_nanos: Nanos::MAX,
            degradation: Degradation::Dark { brightness_pct: 5 },
            fraction: 0.8,
        };
        let picked = (0..100).filter(|&k| e.picks(k)).count();
        assert_eq!(picked, 80);
        // Evenly: never more than one untouched frame in a row at 0.8.
        assert!((0..99).all(|k| e.picks(k) || e.picks(k + 1)));
        let all = Episode { fraction: 1.0, ..e };
        assert!((0..50).all(|k| all.picks(k)));
    }

    #[test]
    fn bad_settings_get_clear_errors() {
        let device = ManualClock::new(0);
        let bad_font = CameraConfig {
            scenes: Scenes::Generated {
                texts: vec!["x".into()],
                font_path: PathBuf::from("/nonexistent/font.ttf"),
            },
            ..CameraConfig::default()
        };
        let e = Camera::new(bad_font, &device).expect_err("missing font");
        assert!(e.to_string().contains("fonts-dejavu-core"), "{e}");
        let tiny = CameraConfig {
            width: 10,
            ..CameraConfig::default()
        };
        assert!(matches!(
            Camera::new(tiny, &device),
            Err(CameraError::Size { .. })
        ));
        let none = CameraConfig {
            scenes: Scenes::Recorded(vec![]),
            ..CameraConfig::default()
        };
        assert!(matches!(
            Camera::new(none, &device),
            Err(CameraError::NoScenes)
        ));
        let frame = Frame::from_rgb(2, 2, vec![7; 12]).expect("size matches");
        assert!(Frame::from_rgb(2, 2, vec![7; 11]).is_none());
        let rec = CameraConfig {
            scenes: Scenes::Recorded(vec![frame.clone()]),
            ..CameraConfig::default()
        };
        let mut cam = Camera::new(rec, &device).expect("valid");
        assert_eq!(cam.poll().map(|e| e.payload), Some(frame));
    }
}
