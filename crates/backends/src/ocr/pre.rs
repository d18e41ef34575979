//! Pre-processing for the PP-OCR models: resize, normalise, lay out as NCHW.
//!
//! PaddleOCR trains on OpenCV images, so channels are fed in B, G, R order, and resizing is
//! bilinear (OpenCV's `INTER_LINEAR`).

use crate::backend::BackendError;
use crate::frame::{RgbFrame, Tap};
use crate::tensor::TensorF32;

/// Detector input size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DetInputSize {
    /// Exactly `width × height` (each a multiple of 32): the frame is scaled to fit, keeping
    /// its aspect ratio, and the rest is padding. One plan for every frame: the choice for
    /// a camera stream (e.g. 320×320).
    Fixed {
        /// Detector input width.
        width: u32,
        /// Detector input height.
        height: u32,
    },
    /// Scale the frame so its longest side is this many pixels, then round each side up to
    /// a multiple of 32. Sharper on large documents; one plan per distinct size.
    MaxSide(u32),
}

impl Default for DetInputSize {
    fn default() -> Self {
        DetInputSize::MaxSide(640)
    }
}

impl std::str::FromStr for DetInputSize {
    type Err = BackendError;
    /// `WxH` (e.g. `320x320`) for a fixed size, `max:N` or `N` for a longest side.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || {
            BackendError::InvalidInput(format!(
                "detector size `{s}`: use WxH with multiples of 32 (e.g. 320x320) or max:N (e.g. max:960)"
            ))
        };
        let size = if let Some(n) = s.strip_prefix("max:") {
            DetInputSize::MaxSide(n.trim().parse().map_err(|_| bad())?)
        } else if let Some((w, h)) = s.split_once(['x', 'X']) {
            let width: u32 = w.trim().parse().map_err(|_| bad())?;
            let height: u32 = h.trim().parse().map_err(|_| bad())?;
            DetInputSize::Fixed { width, height }
        } else {
            DetInputSize::MaxSide(s.trim().parse().map_err(|_| bad())?)
        };
        size.validate().map_err(|_| bad())?;
        Ok(size)
    }
}

impl DetInputSize {
    /// Checks the sides are multiples of 32 between 32 and 4096.
    pub fn validate(&self) -> Result<(), BackendError> {
        let ok = |v: u32| (32..=4096).contains(&v);
        match *self {
            DetInputSize::Fixed { width, height }
                if ok(width) && ok(height) && width % 32 == 0 && height % 32 == 0 =>
            {
                Ok(())
            }
            DetInputSize::MaxSide(n) if ok(n) => Ok(()),
            other => Err(BackendError::InvalidInput(format!(
                "detector size {other:?}: sides must be multiples of 32 in 32..=4096"
            ))),
        }
    }

    /// The fixed input that reads a `frame_w × frame_h` frame with its long side scaled to
    /// `long_side` pixels, keeping its aspect ratio, each side padded up to a multiple of
    /// 32: a quality rung's detector input (640×360 at 320 is 320×192, at 256 is 256×160,
    /// at 192 is 192×128).
    pub fn long_side(long_side: u32, frame_w: u32, frame_h: u32) -> DetInputSize {
        let scale = long_side as f32 / frame_w.max(frame_h).max(1) as f32;
        let side = |v: u32| u32::try_from(round_up_32(v as f32 * scale)).unwrap_or(u32::MAX);
        DetInputSize::Fixed {
            width: side(frame_w),
            height: side(frame_h),
        }
    }

    /// A short label for profiles, e.g. `320x320` or `max640`.
    pub fn label(&self) -> String {
        match *self {
            DetInputSize::Fixed { width, height } => format!("{width}x{height}"),
            DetInputSize::MaxSide(n) => format!("max{n}"),
        }
    }
}

/// A detector input and how to map its pixels back onto the frame.
#[derive(Debug, Clone, PartialEq)]
pub struct DetTensor {
    /// `[1, 3, H, W]`, normalised.
    pub tensor: TensorF32,
    /// Frame pixels per detector pixel, horizontally.
    pub scale_x: f32,
    /// Frame pixels per detector pixel, vertically.
    pub scale_y: f32,
    /// Width of the region holding the frame (the rest is padding).
    pub valid_w: usize,
    /// Height of the region holding the frame.
    pub valid_h: usize,
}

const DET_MEAN: [f32; 3] = [0.485, 0.456, 0.406];
const DET_STD: [f32; 3] = [0.229, 0.224, 0.225];

fn round_up_32(v: f32) -> usize {
    ((v / 32.0).ceil() as usize).max(1) * 32
}

/// Resizes and normalises `frame` for the detector.
pub fn det_tensor(frame: &RgbFrame, size: DetInputSize) -> DetTensor {
    let (fw, fh) = (frame.width() as f32, frame.height() as f32);
    let (tw, th, vw, vh) = match size {
        DetInputSize::Fixed { width, height } => {
            let s = (width as f32 / fw).min(height as f32 / fh);
            let vw = ((fw * s).round() as usize).clamp(1, width as usize);
            let vh = ((fh * s).round() as usize).clamp(1, height as usize);
            (width as usize, height as usize, vw, vh)
        }
        DetInputSize::MaxSide(n) => {
            let s = n as f32 / fw.max(fh);
            let tw = round_up_32(fw * s);
            let th = round_up_32(fh * s);
            (tw, th, tw, th)
        }
    };
    let (sx, sy) = (fw / vw as f32, fh / vh as f32);
    // (v / 255 − mean) / std as one multiply-add: divisions were most of the cost.
    let scale: [f32; 3] = std::array::from_fn(|c| 1.0 / (255.0 * DET_STD[c]));
    let shift: [f32; 3] = std::array::from_fn(|c| -DET_MEAN[c] / DET_STD[c]);
    let xs = Tap::grid(vw, 0.0, sx, frame.width());
    let ys = Tap::grid(vh, 0.0, sy, frame.height());
    DetTensor {
        tensor: bgr_planes(frame, &xs, &ys, [th, tw], scale, shift),
        scale_x: sx,
        scale_y: sy,
        valid_w: vw,
        valid_h: vh,
    }
}

/// Recogniser input height (fixed by PP-OCRv4).
pub const REC_HEIGHT: usize = 48;
/// Narrowest recogniser input (PP-OCR's default 320).
pub const REC_MIN_WIDTH: usize = 320;
/// Recogniser widths are padded up to a multiple of this, so few plans are needed.
pub const REC_WIDTH_STEP: usize = 160;

/// The width a crop of `rect` is resized to at height 48 (at most `max_width`).
fn crop_width(rect: [f32; 4], max_width: usize) -> usize {
    let [x0, y0, x1, y1] = rect;
    let (bw, bh) = ((x1 - x0).max(1.0), (y1 - y0).max(1.0));
    ((REC_HEIGHT as f32 * bw / bh).ceil() as usize).clamp(1, max_width.max(1))
}

fn padded_width(crop_width: usize) -> usize {
    crop_width.max(REC_MIN_WIDTH).div_ceil(REC_WIDTH_STEP) * REC_WIDTH_STEP
}

/// The width of the recogniser input [`rec_tensor`] makes for `rect`: lines of equal
/// input width can share an engine call without padding that changes what is read.
pub fn rec_input_width(rect: [f32; 4], max_width: usize) -> usize {
    padded_width(crop_width(rect, max_width))
}

/// Crops `[x0, x1) × [y0, y1)` of `frame` (frame pixels), resizes it to height 48 keeping the
/// aspect ratio (at most `max_width` wide) and normalises it to `[-1, 1]`; the tensor
/// width is padded to a multiple of [`REC_WIDTH_STEP`] (at least [`REC_MIN_WIDTH`]).
pub fn rec_tensor(frame: &RgbFrame, rect: [f32; 4], max_width: usize) -> TensorF32 {
    let [x0, y0, x1, y1] = rect;
    let (bw, bh) = ((x1 - x0).max(1.0), (y1 - y0).max(1.0));
    let w = crop_width(rect, max_width);
    let tw = padded_width(w);
    let (sx, sy) = (bw / w as f32, bh / REC_HEIGHT as f32);
    let xs = Tap::grid(w, x0, sx, frame.width());
    let ys = Tap::grid(REC_HEIGHT, y0, sy, frame.height());
    bgr_planes(
        frame,
        &xs,
        &ys,
        [REC_HEIGHT, tw],
        [1.0 / 127.5; 3],
        [-1.0; 3],
    )
}

/// The crops `rects` of `frame` as one batch for the recogniser: `n × 3 × 48 × width`,
/// each crop prepared as [`rec_tensor`] prepares it alone and padded on the right to the
/// widest crop's width (with the value the single-line padding has, 0).
pub fn rec_batch_tensor(frame: &RgbFrame, rects: &[[f32; 4]], max_width: usize) -> TensorF32 {
    let crops: Vec<TensorF32> = rects
        .iter()
        .map(|&r| rec_tensor(frame, r, max_width))
        .collect();
    let width = crops
        .iter()
        .map(|c| c.shape[3])
        .max()
        .unwrap_or(REC_MIN_WIDTH);
    let mut data = vec![0.0f32; crops.len() * 3 * REC_HEIGHT * width];
    for (crop, out) in crops
        .iter()
        .zip(data.chunks_exact_mut(3 * REC_HEIGHT * width))
    {
        let w = crop.shape[3];
        for (src, dst) in crop.data.chunks_exact(w).zip(out.chunks_exact_mut(width)) {
            dst[..w].copy_from_slice(src);
        }
    }
    TensorF32 {
        shape: vec![crops.len(), 3, REC_HEIGHT, width],
        data,
    }
}

/// A `1 × 3 × height × width` tensor of `frame` resampled at the taps `xs` × `ys` into its
/// top-left corner (the rest is zero padding), channels in B, G, R order as PaddleOCR sees
/// OpenCV images, each value `v × scale[c] + shift[c]`.
fn bgr_planes(
    frame: &RgbFrame,
    xs: &[Tap],
    ys: &[Tap],
    [height, width]: [usize; 2],
    scale: [f32; 3],
    shift: [f32; 3],
) -> TensorF32 {
    let plane = height * width;
    let mut data = vec![0.0f32; 3 * plane];
    frame.resample_rows(xs, ys, |y, row| {
        for (c, rgb) in [2, 1, 0].into_iter().enumerate() {
            let out = &mut data[c * plane + y * width..][..row.len()];
            for (o, px) in out.iter_mut().zip(row) {
                *o = px[rgb] * scale[c] + shift[c];
            }
        }
    });
    TensorF32 {
        shape: vec![1, 3, height, width],
        data,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sizes() {
        assert_eq!(
            "320x320".parse::<DetInputSize>().expect("valid"),
            DetInputSize::Fixed {
                width: 320,
                height: 320
            }
        );
        assert_eq!(
            "max:960".parse::<DetInputSize>().expect("valid"),
            DetInputSize::MaxSide(960)
        );
        assert!("300x320".parse::<DetInputSize>().is_err());
        assert!("big".parse::<DetInputSize>().is_err());
    }

    #[test]
    fn fixed_size_letterboxes_and_max_side_rounds() {
        let f = RgbFrame::new(640, 480, vec![255; 640 * 480 * 3]).expect("valid");
        let t = det_tensor(
            &f,
            DetInputSize::Fixed {
                width: 320,
                height: 320,
            },
        );
        assert_eq!(t.tensor.shape, vec![1, 3, 320, 320]);
        assert_eq!((t.valid_w, t.valid_h), (320, 240));
        assert!((t.scale_x - 2.0).abs() < 1e-6);
        let t = det_tensor(&f, DetInputSize::MaxSide(500));
        assert_eq!(t.tensor.shape, vec![1, 3, 384, 512]);
    }

    #[test]
    fn a_long_side_keeps_the_aspect_ratio_padded_to_32() {
        let plan = |side| DetInputSize::long_side(side, 640, 360);
        let fixed = |width, height| DetInputSize::Fixed { width, height };
        assert_eq!(plan(320), fixed(320, 192));
        assert_eq!(plan(256), fixed(256, 160));
        assert_eq!(plan(192), fixed(192, 128));
        // Portrait frames scale by their height.
        assert_eq!(DetInputSize::long_side(320, 360, 640), fixed(192, 320));
        let f = RgbFrame::new(640, 360, vec![200; 640 * 360 * 3]).expect("valid");
        let t = det_tensor(&f, plan(256));
        assert_eq!((t.valid_w, t.valid_h), (256, 144));
    }

    #[test]
    fn a_batch_pads_each_crop_to_the_widest() {
        let f = RgbFrame::new(400, 40, vec![255; 400 * 40 * 3]).expect("valid");
        let narrow = [0.0, 0.0, 100.0, 40.0];
        let wide = [0.0, 0.0, 400.0, 40.0];
        let batch = rec_batch_tensor(&f, &[narrow, wide], 1600);
        assert_eq!(batch.shape, vec![2, 3, 48, 480]);
        let alone = rec_tensor(&f, narrow, 1600);
        assert_eq!(alone.shape, vec![1, 3, 48, 320]);
        // The narrow crop's rows, then its padding as zeros, in every channel.
        for (row, batch_row) in alone
            .data
            .chunks_exact(320)
            .zip(batch.data.chunks_exact(480))
        {
            assert_eq!(&batch_row[..320], row);
            assert!(batch_row[320..].iter().all(|&v| v == 0.0));
        }
        assert_eq!(
            &batch.data[3 * 48 * 480..],
            &rec_tensor(&f, wide, 1600).data[..]
        );
    }

    #[test]
    fn rec_width_is_bucketed() {
        let f = RgbFrame::new(400, 40, vec![0; 400 * 40 * 3]).expect("valid");
        let t = rec_tensor(&f, [0.0, 0.0, 400.0, 40.0], 1600);
        assert_eq!(t.shape, vec![1, 3, 48, 480]);
        assert!((t.data[0] + 1.0).abs() < 1e-6);
    }
}
