//! Shared helpers for the model tests: real models from the cache, real rendered text, real
//! synthesised speech. A missing model makes the test fail, naming the command that fetches it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use ab_glyph::{Font, FontVec, PxScale, ScaleFont, point};
use mmsched_backends::RgbFrame;
use mmsched_backends::paths;

/// Panics (failing the test) unless every model file the tests need is present.
pub fn require_models() {
    for p in [paths::ppocr_det(), paths::ppocr_rec(), paths::silero_vad()] {
        assert!(
            p.is_file(),
            "model file {} is missing: run `mmsched models fetch` first (MMSCHED_HOME={})",
            p.display(),
            paths::mmsched_home().display()
        );
    }
}

/// The font the OCR tests render with (Debian package `fonts-dejavu-core`).
pub const FONT_PATH: &str = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";

fn font() -> FontVec {
    let bytes = std::fs::read(FONT_PATH).unwrap_or_else(|e| {
        panic!("cannot read {FONT_PATH} ({e}): install the Debian package fonts-dejavu-core")
    });
    FontVec::try_from_vec(bytes).expect("DejaVuSans.ttf is a valid font")
}

/// Renders `lines` in black on white, `px` pixels high, left-aligned at `x`, the first
/// baseline at `y + px`, lines `1.6 × px` apart.
pub fn render_text(width: u32, height: u32, lines: &[&str], px: f32, x: f32, y: f32) -> RgbFrame {
    let font = font();
    let scaled = font.as_scaled(PxScale::from(px));
    let mut coverage = vec![0.0f32; (width * height) as usize];
    for (li, line) in lines.iter().enumerate() {
        let baseline = y + scaled.ascent() + li as f32 * px * 1.6;
        let mut caret = x;
        let mut previous = None;
        for ch in line.chars() {
            let id = scaled.glyph_id(ch);
            if let Some(prev) = previous {
                caret += scaled.kern(prev, id);
            }
            let glyph = id.with_scale_and_position(PxScale::from(px), point(caret, baseline));
            caret += scaled.h_advance(id);
            previous = Some(id);
            if let Some(outlined) = font.outline_glyph(glyph) {
                let b = outlined.px_bounds();
                outlined.draw(|gx, gy, c| {
                    let (px_x, px_y) = (
                        b.min.x as i64 + i64::from(gx),
                        b.min.y as i64 + i64::from(gy),
                    );
                    if px_x >= 0 && px_y >= 0 && (px_x as u32) < width && (px_y as u32) < height {
                        let i = (px_y as u32 * width + px_x as u32) as usize;
                        coverage[i] = (coverage[i] + c).min(1.0);
                    }
                });
            }
        }
    }
    let data = coverage
        .iter()
        .flat_map(|&c| {
            let v = (255.0 * (1.0 - c)).round() as u8;
            [v, v, v]
        })
        .collect();
    RgbFrame::new(width, height, data).expect("buffer size matches")
}

/// A box blur of `frame` with the given radius, repeated three times (close to Gaussian).
pub fn blur(frame: &RgbFrame, radius: i64) -> RgbFrame {
    let (w, h) = (i64::from(frame.width()), i64::from(frame.height()));
    let mut cur: Vec<f32> = frame.data().iter().map(|&v| f32::from(v)).collect();
    for _ in 0..3 {
        for horizontal in [true, false] {
            let src = cur.clone();
            for y in 0..h {
                for x in 0..w {
                    for c in 0..3 {
                        let mut sum = 0.0;
                        for d in -radius..=radius {
                            let (sx, sy) = if horizontal {
                                ((x + d).clamp(0, w - 1), y)
                            } else {
                                (x, (y + d).clamp(0, h - 1))
                            };
                            sum += src[((sy * w + sx) * 3 + c) as usize];
                        }
                        cur[((y * w + x) * 3 + c) as usize] = sum / (2 * radius + 1) as f32;
                    }
                }
            }
        }
    }
    let data = cur
        .iter()
        .map(|v| v.round().clamp(0.0, 255.0) as u8)
        .collect();
    RgbFrame::new(frame.width(), frame.height(), data).expect("same size")
}

/// `frame` with every value multiplied by `factor`.
pub fn darken(frame: &RgbFrame, factor: f32) -> RgbFrame {
    let data = frame
        .data()
        .iter()
        .map(|&v| (f32::from(v) * factor).round() as u8)
        .collect();
    RgbFrame::new(frame.width(), frame.height(), data).expect("same size")
}

/// Speaks `text` with `espeak-ng` (Debian package) into `dir/name.wav` (22.05 kHz mono).
pub fn espeak(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(format!("{name}.wav"));
    let status = std::process::Command::new("espeak-ng")
        .arg("-w")
        .arg(&path)
        .arg(text)
        .status()
        .unwrap_or_else(|e| {
            panic!("cannot run espeak-ng ({e}): install the Debian package espeak-ng")
        });
    assert!(status.success(), "espeak-ng failed: {status}");
    path
}
