//! DBNet post-processing: probability map → text boxes.
//!
//! The map is thresholded (`bin_threshold`), split into 8-connected components, and each
//! component's bounding rectangle is scored (mean probability inside it), filtered
//! (`box_threshold`, `min_box_side`) and grown back to the full text extent ("unclip": DBNet
//! predicts shrunk text kernels; the offset is `area × unclip_ratio / perimeter`, as in the
//! DB paper). Boxes are axis-aligned: rotated text gets its upright bounding box.

/// A text region in detector-input pixels: `[x0, y0, x1, y1)` plus its score.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RawBox {
    /// Left edge.
    pub x0: f32,
    /// Top edge.
    pub y0: f32,
    /// Right edge (exclusive).
    pub x1: f32,
    /// Bottom edge (exclusive).
    pub y1: f32,
    /// Mean probability inside the component's rectangle.
    pub score: f32,
}

/// Thresholds for [`boxes_from_map`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DbParams {
    /// Probability above which a pixel is text.
    pub bin_threshold: f32,
    /// Minimum box score kept.
    pub box_threshold: f32,
    /// Unclip ratio (how far the kernel is grown).
    pub unclip_ratio: f32,
    /// Minimum side of a kept box, detector pixels.
    pub min_box_side: f32,
}

impl Default for DbParams {
    fn default() -> Self {
        Self {
            bin_threshold: 0.3,
            box_threshold: 0.6,
            unclip_ratio: 2.0,
            min_box_side: 3.0,
        }
    }
}

/// Extracts boxes from a `width × height` probability map, looking only at the
/// `valid_w × valid_h` top-left region (the rest is padding).
pub fn boxes_from_map(
    map: &[f32],
    width: usize,
    height: usize,
    valid_w: usize,
    valid_h: usize,
    params: &DbParams,
) -> Vec<RawBox> {
    let (vw, vh) = (valid_w.min(width), valid_h.min(height));
    let mut seen = vec![false; vw * vh];
    let mut stack = Vec::new();
    let mut boxes = Vec::new();
    let is_text = |x: usize, y: usize| map[y * width + x] > params.bin_threshold;
    for sy in 0..vh {
        for sx in 0..vw {
            if seen[sy * vw + sx] || !is_text(sx, sy) {
                continue;
            }
            // Flood fill one component, tracking its bounding rectangle.
            let (mut x0, mut y0, mut x1, mut y1) = (sx, sy, sx, sy);
            seen[sy * vw + sx] = true;
            stack.push((sx, sy));
            while let Some((x, y)) = stack.pop() {
                x0 = x0.min(x);
                x1 = x1.max(x);
                y0 = y0.min(y);
                y1 = y1.max(y);
                for dy in -1i64..=1 {
                    for dx in -1i64..=1 {
                        let nx = x as i64 + dx;
                        let ny = y as i64 + dy;
                        if nx < 0 || ny < 0 || nx >= vw as i64 || ny >= vh as i64 {
                            continue;
                        }
                        let (nx, ny) = (nx as usize, ny as usize);
                        if !seen[ny * vw + nx] && is_text(nx, ny) {
                            seen[ny * vw + nx] = true;
                            stack.push((nx, ny));
                        }
                    }
                }
            }
            let w = (x1 - x0 + 1) as f32;
            let h = (y1 - y0 + 1) as f32;
            if w.min(h) < params.min_box_side {
                continue;
            }
            let mut sum = 0.0f32;
            for y in y0..=y1 {
                sum += map[y * width + x0..=y * width + x1].iter().sum::<f32>();
            }
            let score = sum / (w * h);
            if score < params.box_threshold {
                continue;
            }
            let d = w * h * params.unclip_ratio / (2.0 * (w + h));
            boxes.push(RawBox {
                x0: (x0 as f32 - d).max(0.0),
                y0: (y0 as f32 - d).max(0.0),
                x1: (x1 as f32 + 1.0 + d).min(vw as f32),
                y1: (y1 as f32 + 1.0 + d).min(vh as f32),
                score,
            });
        }
    }
    sort_reading_order(&mut boxes);
    boxes
}

/// Sorts boxes top to bottom, and left to right within a line (boxes whose tops are within
/// half the smaller height of each other are on the same line).
pub fn sort_reading_order(boxes: &mut [RawBox]) {
    boxes.sort_by(|a, b| a.y0.total_cmp(&b.y0).then(a.x0.total_cmp(&b.x0)));
    // One insertion pass fixes same-line boxes that the top-edge sort put out of order.
    for i in 1..boxes.len() {
        let mut j = i;
        while j > 0 {
            let (a, b) = (boxes[j - 1], boxes[j]);
            let tol = 0.5 * (a.y1 - a.y0).min(b.y1 - b.y0);
            if (b.y0 - a.y0).abs() <= tol && b.x0 < a.x0 {
                boxes.swap(j - 1, j);
                j -= 1;
            } else {
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map_with(width: usize, height: usize, rects: &[(usize, usize, usize, usize)]) -> Vec<f32> {
        let mut m = vec![0.0; width * height];
        for &(x0, y0, x1, y1) in rects {
            for y in y0..y1 {
                for x in x0..x1 {
                    m[y * width + x] = 0.9;
                }
            }
        }
        m
    }

    #[test]
    fn finds_separate_components_in_reading_order() {
        let m = map_with(64, 32, &[(40, 4, 60, 10), (2, 5, 30, 11), (5, 20, 20, 28)]);
        let b = boxes_from_map(&m, 64, 32, 64, 32, &DbParams::default());
        assert_eq!(b.len(), 3);
        assert!(b[0].x0 < 2.0 && b[1].x0 > 30.0 && b[2].y0 > 14.0, "{b:?}");
        // Unclipped boxes contain their kernels.
        assert!(b[0].x1 >= 30.0 && b[0].y1 >= 11.0);
    }

    #[test]
    fn ignores_padding_tiny_and_weak_regions() {
        let mut m = map_with(64, 32, &[(50, 2, 62, 30), (2, 2, 4, 4)]);
        m[20 * 64 + 10] = 0.35; // a lone weak pixel
        let b = boxes_from_map(&m, 64, 32, 48, 32, &DbParams::default());
        assert!(b.is_empty(), "{b:?}");
    }
}
