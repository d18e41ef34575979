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
            // Scanline fill of one 8-connected component, tracking its bounding rectangle:
            // each seed grows into its whole run of text pixels in its row, and the rows
            // above and below are searched from one pixel left of the run to one pixel
            // right of it for the runs it touches (one seed per run).
            let (mut x0, mut y0, mut x1, mut y1) = (sx, sy, sx, sy);
            seen[sy * vw + sx] = true;
            stack.push((sx, sy));
            while let Some((x, y)) = stack.pop() {
                let row = y * vw;
                let (mut l, mut r) = (x, x);
                while l > 0 && !seen[row + l - 1] && is_text(l - 1, y) {
                    l -= 1;
                    seen[row + l] = true;
                }
                while r + 1 < vw && !seen[row + r + 1] && is_text(r + 1, y) {
                    r += 1;
                    seen[row + r] = true;
                }
                x0 = x0.min(l);
                x1 = x1.max(r);
                y0 = y0.min(y);
                y1 = y1.max(y);
                let (from, to) = (l.saturating_sub(1), (r + 1).min(vw - 1));
                for ny in [y.checked_sub(1), Some(y + 1).filter(|&n| n < vh)]
                    .into_iter()
                    .flatten()
                {
                    let mut nx = from;
                    while nx <= to {
                        if !seen[ny * vw + nx] && is_text(nx, ny) {
                            seen[ny * vw + nx] = true;
                            stack.push((nx, ny));
                            // The rest of this run is the seed's to grow.
                            while nx <= to && is_text(nx, ny) {
                                nx += 1;
                            }
                        } else {
                            nx += 1;
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
    use proptest::prelude::*;

    /// The components' bounding rectangles by a plain flood fill over the 8 neighbours of
    /// every pixel, in the order their first pixel is met in a raster scan.
    fn reference_rects(map: &[f32], w: usize, h: usize, t: f32) -> Vec<[usize; 4]> {
        let mut seen = vec![false; w * h];
        let mut rects = Vec::new();
        for sy in 0..h {
            for sx in 0..w {
                if seen[sy * w + sx] || map[sy * w + sx] <= t {
                    continue;
                }
                let mut rect = [sx, sy, sx, sy];
                let mut stack = vec![(sx, sy)];
                seen[sy * w + sx] = true;
                while let Some((x, y)) = stack.pop() {
                    rect = [
                        rect[0].min(x),
                        rect[1].min(y),
                        rect[2].max(x),
                        rect[3].max(y),
                    ];
                    for ny in y.saturating_sub(1)..=(y + 1).min(h - 1) {
                        for nx in x.saturating_sub(1)..=(x + 1).min(w - 1) {
                            if !seen[ny * w + nx] && map[ny * w + nx] > t {
                                seen[ny * w + nx] = true;
                                stack.push((nx, ny));
                            }
                        }
                    }
                }
                rects.push(rect);
            }
        }
        rects
    }

    proptest! {
        /// The scanline fill finds exactly the components of a plain 8-neighbour flood
        /// fill (every rectangle kept: no size or score filter).
        #[test]
        fn scanline_fill_finds_the_flood_fill_components(
            (w, h, bits) in (1usize..24, 1usize..24)
                .prop_flat_map(|(w, h)| (Just(w), Just(h), proptest::collection::vec(any::<bool>(), w * h)))
        ) {
            let map: Vec<f32> = bits.iter().map(|&b| if b { 0.9 } else { 0.0 }).collect();
            let params = DbParams { min_box_side: 0.0, box_threshold: 0.0, unclip_ratio: 0.0, ..DbParams::default() };
            let mut got: Vec<[usize; 4]> = boxes_from_map(&map, w, h, w, h, &params)
                .iter()
                .map(|b| [b.x0 as usize, b.y0 as usize, b.x1 as usize - 1, b.y1 as usize - 1])
                .collect();
            let mut want = reference_rects(&map, w, h, params.bin_threshold);
            got.sort_unstable();
            want.sort_unstable();
            prop_assert_eq!(got, want);
        }
    }

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
