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

    /// Bilinear sample at continuous coordinates (pixel centres at integer + 0.5).
    #[inline]
    pub fn sample_bilinear(&self, fx: f32, fy: f32) -> [f32; 3] {
        let x = (fx - 0.5).max(0.0);
        let y = (fy - 0.5).max(0.0);
        let x0 = x.floor();
        let y0 = y.floor();
        let ax = x - x0;
        let ay = y - y0;
        let (x0, y0) = (x0 as u32, y0 as u32);
        let p00 = self.pixel(x0, y0);
        let p10 = self.pixel(x0 + 1, y0);
        let p01 = self.pixel(x0, y0 + 1);
        let p11 = self.pixel(x0 + 1, y0 + 1);
        let mut out = [0.0f32; 3];
        for (c, o) in out.iter_mut().enumerate() {
            let top = f32::from(p00[c]) * (1.0 - ax) + f32::from(p10[c]) * ax;
            let bottom = f32::from(p01[c]) * (1.0 - ax) + f32::from(p11[c]) * ax;
            *o = top * (1.0 - ay) + bottom * ay;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_wrong_buffer_length() {
        assert!(RgbFrame::new(2, 2, vec![0; 11]).is_err());
        assert!(RgbFrame::new(0, 2, vec![]).is_err());
        assert!(RgbFrame::new(2, 2, vec![0; 12]).is_ok());
    }

    #[test]
    fn bilinear_is_exact_on_pixel_centres() {
        let f = RgbFrame::new(2, 1, vec![0, 0, 0, 200, 100, 50]).expect("valid");
        assert_eq!(f.sample_bilinear(0.5, 0.5), [0.0, 0.0, 0.0]);
        assert_eq!(f.sample_bilinear(1.5, 0.5), [200.0, 100.0, 50.0]);
        assert_eq!(f.sample_bilinear(1.0, 0.5), [100.0, 50.0, 25.0]);
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
