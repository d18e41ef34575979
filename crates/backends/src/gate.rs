//! The cheap image routing gate (S4): is this frame worth running the vision model on?
//!
//! Two measures on a small grey copy of the frame (longest side at most
//! [`GATE_MAX_SIDE`] pixels): the mean luma (a dark frame carries no text) and the variance
//! of the 4-neighbour Laplacian (a blurred frame has almost no edges). Working on a small
//! copy keeps the cost independent of the camera resolution: it reads about
//! `4 × 160 × 120` pixels whatever the frame size, tens of microseconds, against tens of
//! milliseconds for the detector it may skip. Thresholds come from the policy
//! (`Policy::routing()`: `blur_min_laplacian_var`, `dark_max_mean_luma`).

use mmsched_core::policy::RoutingPolicy;
use mmsched_core::time::{Clock, Nanos};
use serde::Serialize;

use crate::frame::RgbFrame;

/// Longest side of the grey copy the gate measures.
pub const GATE_MAX_SIDE: u32 = 160;

/// What the gate decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GateVerdict {
    /// Enough light and edges: run the vision model.
    Pass,
    /// Mean luma below the darkness threshold: skip.
    Dark,
    /// Laplacian variance below the blur threshold: skip.
    Blurred,
    /// Routing is disabled in the policy: always run.
    Disabled,
}

impl GateVerdict {
    /// Whether the frame should go to the vision model.
    pub fn runs_model(self) -> bool {
        matches!(self, GateVerdict::Pass | GateVerdict::Disabled)
    }
}

/// The gate's measures, decision and cost for one frame.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct GateReport {
    /// Mean luma of the grey copy, 0..255.
    pub mean_luma: f64,
    /// Variance of the Laplacian of the grey copy (luma units²).
    pub laplacian_var: f64,
    /// The decision.
    pub verdict: GateVerdict,
    /// Time the gate took, in nanoseconds.
    pub elapsed_nanos: Nanos,
}

/// Raw measures of a frame (no decision).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GateMeasures {
    /// Mean luma, 0..255.
    pub mean_luma: f64,
    /// Variance of the 4-neighbour Laplacian.
    pub laplacian_var: f64,
}

/// Downscales `frame` to a grey image whose longest side is at most [`GATE_MAX_SIDE`],
/// each output pixel the mean luma of a 2×2 patch at its sampling point.
/// Returns `(width, height, luma)`.
pub fn grey_thumbnail(frame: &RgbFrame) -> (usize, usize, Vec<f32>) {
    let (w, h) = (frame.width(), frame.height());
    let longest = w.max(h);
    let (tw, th) = if longest <= GATE_MAX_SIDE {
        (w, h)
    } else {
        (
            (u64::from(w) * u64::from(GATE_MAX_SIDE) / u64::from(longest)).max(1) as u32,
            (u64::from(h) * u64::from(GATE_MAX_SIDE) / u64::from(longest)).max(1) as u32,
        )
    };
    let data = frame.data();
    let luma = |i: usize| -> u32 {
        77 * u32::from(data[i]) + 150 * u32::from(data[i + 1]) + 29 * u32::from(data[i + 2])
    };
    // The byte offsets of each sampling point's column and the one after it (clamped into
    // the image), worked out once for all rows: this runs on every camera frame.
    let (wu, hu) = (w as usize, h as usize);
    let cols: Vec<(usize, usize)> = (0..tw)
        .map(|tx| {
            let x = (u64::from(tx) * u64::from(w) / u64::from(tw)) as usize;
            (x.min(wu - 1) * 3, (x + 1).min(wu - 1) * 3)
        })
        .collect();
    let mut out = Vec::with_capacity(tw as usize * th as usize);
    for ty in 0..th {
        let y = (u64::from(ty) * u64::from(h) / u64::from(th)) as usize;
        let (row, below) = (y.min(hu - 1) * wu * 3, (y + 1).min(hu - 1) * wu * 3);
        for &(x, right) in &cols {
            let sum = luma(row + x) + luma(row + right) + luma(below + x) + luma(below + right);
            out.push(sum as f32 / (4.0 * 256.0));
        }
    }
    (tw as usize, th as usize, out)
}

/// Mean luma and Laplacian variance of `frame` (on its grey thumbnail).
pub fn measure(frame: &RgbFrame) -> GateMeasures {
    let (w, h, g) = grey_thumbnail(frame);
    let mean_luma = g.iter().map(|&v| f64::from(v)).sum::<f64>() / g.len() as f64;
    if w < 3 || h < 3 {
        return GateMeasures {
            mean_luma,
            laplacian_var: 0.0,
        };
    }
    let (mut sum, mut sum_sq, mut n) = (0.0f64, 0.0f64, 0.0f64);
    for y in 1..h - 1 {
        for x in 1..w - 1 {
            let c = g[y * w + x];
            let lap = g[y * w + x - 1] + g[y * w + x + 1] + g[(y - 1) * w + x] + g[(y + 1) * w + x]
                - 4.0 * c;
            let lap = f64::from(lap);
            sum += lap;
            sum_sq += lap * lap;
            n += 1.0;
        }
    }
    let mean = sum / n;
    GateMeasures {
        mean_luma,
        laplacian_var: (sum_sq / n - mean * mean).max(0.0),
    }
}

/// Measures `frame`, decides with the policy's thresholds and times itself with `clock`.
///
/// Darkness is checked first: a dark frame is also edge-poor, and "dark" is the more useful
/// reason to show in a trace.
pub fn evaluate<C: Clock + ?Sized>(
    frame: &RgbFrame,
    routing: &RoutingPolicy,
    clock: &C,
) -> GateReport {
    let start = clock.now_nanos();
    let m = measure(frame);
    let verdict = if !routing.enabled {
        GateVerdict::Disabled
    } else if m.mean_luma < routing.dark_max_mean_luma {
        GateVerdict::Dark
    } else if m.laplacian_var < routing.blur_min_laplacian_var {
        GateVerdict::Blurred
    } else {
        GateVerdict::Pass
    };
    GateReport {
        mean_luma: m.mean_luma,
        laplacian_var: m.laplacian_var,
        verdict,
        elapsed_nanos: clock.now_nanos().saturating_sub(start),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mmsched_core::policy::Policy;
    use mmsched_core::time::ManualClock;

    fn frame_from(w: u32, h: u32, f: impl Fn(u32, u32) -> u8) -> RgbFrame {
        let mut data = Vec::with_capacity((w * h * 3) as usize);
        for y in 0..h {
            for x in 0..w {
                let v = f(x, y);
                data.extend_from_slice(&[v, v, v]);
            }
        }
        RgbFrame::new(w, h, data).expect("valid frame")
    }

    #[test]
    fn flat_frame_has_no_edges() {
        let m = measure(&frame_from(64, 48, |_, _| 128));
        assert!((m.mean_luma - 128.0).abs() < 1.0, "{m:?}");
        assert!(m.laplacian_var < 1e-6, "{m:?}");
    }

    #[test]
    fn checkerboard_is_sharp_and_uniform_black_is_dark() {
        let policy = Policy::default();
        let clock = ManualClock::default();
        let sharp = frame_from(
            640,
            480,
            |x, y| if (x / 8 + y / 8) % 2 == 0 { 230 } else { 20 },
        );
        assert_eq!(
            evaluate(&sharp, policy.routing(), &clock).verdict,
            GateVerdict::Pass
        );
        let dark = frame_from(640, 480, |_, _| 5);
        assert_eq!(
            evaluate(&dark, policy.routing(), &clock).verdict,
            GateVerdict::Dark
        );
        let smooth = frame_from(640, 480, |x, _| (x / 3) as u8);
        assert_eq!(
            evaluate(&smooth, policy.routing(), &clock).verdict,
            GateVerdict::Blurred
        );
    }

    #[test]
    fn thumbnail_keeps_aspect_and_bounds() {
        let (w, h, g) = grey_thumbnail(&frame_from(1920, 1080, |_, _| 0));
        assert_eq!((w, h), (160, 90));
        assert_eq!(g.len(), 160 * 90);
        let (w, h, _) = grey_thumbnail(&frame_from(7, 5, |_, _| 0));
        assert_eq!((w, h), (7, 5));
    }

    #[test]
    fn thumbnail_is_the_mean_luma_of_the_2x2_patch_at_each_sampling_point() {
        // Colours differ per channel and the size is odd, so the last column and row clamp.
        let (w, h) = (333u32, 187u32);
        let mut data = Vec::new();
        for y in 0..h {
            for x in 0..w {
                data.extend_from_slice(&[(x * 7 + y) as u8, (x + y * 5) as u8, (x ^ y) as u8]);
            }
        }
        let frame = RgbFrame::new(w, h, data).expect("valid frame");
        let (tw, th, g) = grey_thumbnail(&frame);
        let luma = |p: [u8; 3]| 77 * u32::from(p[0]) + 150 * u32::from(p[1]) + 29 * u32::from(p[2]);
        for ty in 0..th as u32 {
            let y = ty * h / th as u32;
            for tx in 0..tw as u32 {
                let x = tx * w / tw as u32;
                let sum = luma(frame.pixel(x, y))
                    + luma(frame.pixel(x + 1, y))
                    + luma(frame.pixel(x, y + 1))
                    + luma(frame.pixel(x + 1, y + 1));
                assert_eq!(g[(ty * tw as u32 + tx) as usize], sum as f32 / 1024.0);
            }
        }
    }
}
