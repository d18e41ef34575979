//! Camera frames: an RGB8 buffer with its size, and loading PNG/JPEG files.

use std::path::Path;

use crate::backend::BackendError;

/// The largest image file read (a 48-megapixel JPEG is about 20 MiB).
pub const IMAGE_FILE_CAP: u64 = 64 << 20;

/// An 8-bit RGB image, rows top to bottom, pixels left to right, `R, G, B` interleaved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RgbFrame {
    width: u32,
    height: u32,
    data: Vec<u8>,
}

impl RgbFrame {
    /// A frame from a raw buffer; fails unless `data.len() == width * height * 3` and both
    /// sides are non-zero.
    pub fn new(width: u32, height: u32, data: Vec<u8>) -> Result<Self, BackendError> {
        if width == 0 || height == 0 {
            return Err(BackendError::InvalidInput(format!(
                "image is {width}×{height}: both sides must be at least 1 pixel"
            )));
        }
        let expected = width as usize * height as usize * 3;
        if data.len() != expected {
            return Err(BackendError::InvalidInput(format!(
                "RGB8 buffer for {width}×{height} must hold {expected} bytes, got {}",
                data.len()
            )));
        }
        Ok(Self {
            width,
            height,
            data,
        })
    }

    /// Loads a PNG or JPEG file (any colour type; converted to RGB8).
    pub fn load(path: &Path) -> Result<Self, BackendError> {
        let shown = path.display().to_string();
        let bytes = mmsched_core::bounded::read_capped(path, IMAGE_FILE_CAP, "image").map_err(
            |e| match &e {
                mmsched_core::bounded::ReadCapError::Io { source, .. } => {
                    BackendError::InvalidInput(format!("cannot read image {shown}: {source}"))
                }
                mmsched_core::bounded::ReadCapError::TooLarge { .. } => {
                    BackendError::InvalidInput(e.to_string())
                }
            },
        )?;
        Self::decode(&bytes, &shown)
    }

    /// Decodes PNG or JPEG bytes (`shown` names them in errors), within the image
    /// crate's default limits on dimensions and memory.
    pub fn decode(bytes: &[u8], shown: &str) -> Result<Self, BackendError> {
        let decoded = image::load_from_memory(bytes).map_err(|e| {
            BackendError::InvalidInput(format!("{shown} is not a readable PNG or JPEG image: {e}"))
        })?;
        let rgb = decoded.to_rgb8();
        let (width, height) = rgb.dimensions();
        Self::new(width, height, rgb.into_raw())
    }

    /// Width in pixels.
    pub fn width(&self) -> u32 {
        self.width
    }

    /// Height in pixels.
    pub fn height(&self) -> u32 {
        self.height
    }

    /// The interleaved RGB bytes.
    pub fn data(&self) -> &[u8] {
        &self.data
    }

    /// The pixel at (`x`, `y`) as `[r, g, b]`; coordinates are clamped into the image.
    #[inline]
    pub fn pixel(&self, x: u32, y: u32) -> [u8; 3] {
        let x = x.min(self.width - 1) as usize;
        let y = y.min(self.height - 1) as usize;
        let i = (y * self.width as usize + x) * 3;
        [self.data[i], self.data[i + 1], self.data[i + 2]]
    }

    /// Bilinear resampling at a grid of points, row by row: `xs` and `ys` are the taps of
    /// the output columns and rows ([`Tap::grid`]); `put(y, row)` receives output row `y`
    /// as `[r, g, b]` per column. Separable: for each output row the two source rows are
    /// blended once over the columns the taps read (a loop the compiler vectorises), then
    /// each output pixel blends two entries of that row, exactly as blending the four
    /// pixels around each point rows first would. This is most of a detector frame's
    /// pre-processing.
    pub fn resample_rows(&self, xs: &[Tap], ys: &[Tap], mut put: impl FnMut(usize, &[[f32; 3]])) {
        let Some(first) = xs.iter().map(|t| t.lo).min() else {
            return;
        };
        let last = xs.iter().map(|t| t.hi).max().unwrap_or(first);
        let (from, to) = (first as usize * 3, (last as usize + 1) * 3);
        let mut blended = vec![0.0f32; to - from];
        let mut row = vec![[0.0f32; 3]; xs.len()];
        for (y, ty) in ys.iter().enumerate() {
            let (top, bottom) = (&self.row(ty.lo)[from..to], &self.row(ty.hi)[from..to]);
            for ((b, &t), &u) in blended.iter_mut().zip(top).zip(bottom) {
                *b = lerp(f32::from(t), f32::from(u), ty.weight);
            }
            for (px, tx) in row.iter_mut().zip(xs) {
                let (l, h) = (tx.lo as usize * 3 - from, tx.hi as usize * 3 - from);
                *px = std::array::from_fn(|c| lerp(blended[l + c], blended[h + c], tx.weight));
            }
            put(y, &row);
        }
    }

    /// Source row `i` (inside the image) as interleaved RGB bytes.
    fn row(&self, i: u32) -> &[u8] {
        let w = self.width as usize * 3;
        &self.data[i as usize * w..(i as usize + 1) * w]
    }
}

/// `a` and `b` mixed with weight `t` on `b`.
#[inline(always)]
fn lerp(a: f32, b: f32, t: f32) -> f32 {
    a * (1.0 - t) + b * t
}

/// One axis of a bilinear sample: the two source pixels (clamped into the image) and the
/// weight of the second.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tap {
    lo: u32,
    hi: u32,
    weight: f32,
}

impl Tap {
    /// The tap at continuous coordinate `f` (pixel centres at integer + 0.5) on an axis of
    /// `len` pixels.
    #[inline]
    pub fn at(f: f32, len: u32) -> Tap {
        let v = (f - 0.5).max(0.0);
        let v0 = v.floor();
        let i = v0 as u32;
        let last = len.saturating_sub(1);
        Tap {
            lo: i.min(last),
            hi: i.saturating_add(1).min(last),
            weight: v - v0,
        }
    }

    /// Taps of `n` output pixels whose centres sit at `origin + (i + 0.5) × step` on an
    /// axis of `len` source pixels.
    pub fn grid(n: usize, origin: f32, step: f32, len: u32) -> Vec<Tap> {
        (0..n)
            .map(|i| Tap::at(origin + (i as f32 + 0.5) * step, len))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Bilinear sample of one point at continuous coordinates (pixel centres at integer +
    /// 0.5): the two source rows are blended first, then the two columns of the result.
    fn sample_bilinear(f: &RgbFrame, fx: f32, fy: f32) -> [f32; 3] {
        let x = Tap::at(fx, f.width);
        let y = Tap::at(fy, f.height);
        let (top, bottom) = (f.row(y.lo), f.row(y.hi));
        let column = |i: u32| -> [f32; 3] {
            let i = i as usize * 3;
            std::array::from_fn(|c| lerp(f32::from(top[i + c]), f32::from(bottom[i + c]), y.weight))
        };
        let (l, h) = (column(x.lo), column(x.hi));
        std::array::from_fn(|c| lerp(l[c], h[c], x.weight))
    }

    #[test]
    fn rejects_wrong_buffer_length() {
        assert!(RgbFrame::new(2, 2, vec![0; 11]).is_err());
        assert!(RgbFrame::new(0, 2, vec![]).is_err());
        assert!(RgbFrame::new(2, 2, vec![0; 12]).is_ok());
    }

    #[test]
    fn bilinear_is_exact_on_pixel_centres() {
        let f = RgbFrame::new(2, 1, vec![0, 0, 0, 200, 100, 50]).expect("valid");
        assert_eq!(sample_bilinear(&f, 0.5, 0.5), [0.0, 0.0, 0.0]);
        assert_eq!(sample_bilinear(&f, 1.5, 0.5), [200.0, 100.0, 50.0]);
        assert_eq!(sample_bilinear(&f, 1.0, 0.5), [100.0, 50.0, 25.0]);
        // Between four pixels: their mean.
        let f = RgbFrame::new(2, 2, vec![0, 0, 0, 40, 0, 0, 80, 0, 0, 120, 0, 4]).expect("valid");
        assert_eq!(sample_bilinear(&f, 1.0, 1.0), [60.0, 0.0, 1.0]);
    }

    proptest! {
        /// The separable resampler gives exactly the single-point sample at every grid
        /// point, inside and outside the image (taps clamp to the border).
        #[test]
        fn resample_rows_matches_point_samples(
            (w, h, data) in (1u32..9, 1u32..9).prop_flat_map(|(w, h)| {
                (Just(w), Just(h), proptest::collection::vec(any::<u8>(), (w * h * 3) as usize))
            }),
            (nx, ny) in (1usize..12, 1usize..12),
            (ox, oy, step_x, step_y) in (-2.0f32..6.0, -2.0f32..6.0, 0.05f32..3.0, 0.05f32..3.0),
        ) {
            let f = RgbFrame::new(w, h, data).expect("valid");
            let xs = Tap::grid(nx, ox, step_x, w);
            let ys = Tap::grid(ny, oy, step_y, h);
            let mut rows = Vec::new();
            f.resample_rows(&xs, &ys, |y, row| rows.push((y, row.to_vec())));
            prop_assert_eq!(rows.len(), ny);
            for (y, row) in rows {
                for (x, px) in row.iter().enumerate() {
                    let want = sample_bilinear(&f, ox + (x as f32 + 0.5) * step_x, oy + (y as f32 + 0.5) * step_y);
                    prop_assert_eq!(*px, want);
                    prop_assert!(px.iter().all(|v| (0.0..=255.0).contains(v)));
                }
            }
        }
    }

    #[test]
    fn not_an_image_is_a_clear_error() {
        let dir = std::env::temp_dir().join("mmsched-frame-test.png");
        std::fs::write(&dir, b"definitely not a png").expect("write temp");
        let err = RgbFrame::load(&dir).expect_err("must fail");
        assert!(
            err.to_string().contains("not a readable PNG or JPEG"),
            "{err}"
        );
        let _ = std::fs::remove_file(&dir);
    }
}
