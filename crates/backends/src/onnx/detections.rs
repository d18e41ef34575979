//! A detector's output read as boxes: the common YOLO layouts decoded (centre, size and
//! class scores per candidate), candidates under a score kept out, overlapping boxes of a
//! class reduced to the best one (non-maximum suppression), and the boxes mapped back to
//! the frame the model was fed.

use serde::{Deserialize, Serialize};

use super::classes::{labels, output_index};
use crate::backend::BackendError;
use crate::tensor::{TensorF32, TensorInfo};

/// How a detector's output tensor is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DetectionLayout {
    /// `[1, 4 + C, N]`: per candidate its centre x, centre y, width, height, then C class
    /// scores (YOLOv8 and later exports).
    #[default]
    Yolov8,
    /// `[1, N, 5 + C]`: per candidate its centre x, centre y, width, height, an objectness
    /// score, then C class scores (YOLOv5 exports); a class's score is objectness × its own.
    Yolov5,
}

/// Which output holds a detector's candidates, and how to read them.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DetectionsSpec {
    /// The output holding the candidates (default: the first output).
    #[serde(default)]
    pub output: Option<String>,
    /// Its layout (default `yolov8`).
    #[serde(default)]
    pub layout: DetectionLayout,
    /// Candidates scoring less are dropped (default 0.25).
    #[serde(default)]
    pub score_threshold: Option<f32>,
    /// A box overlapping a better one of its class by more than this (intersection over
    /// union) is dropped (default 0.45).
    #[serde(default)]
    pub iou_threshold: Option<f32>,
    /// Most boxes reported per image (default 100).
    #[serde(default)]
    pub max_detections: Option<usize>,
    /// The classes' names in score order (default: the model's metadata, as for classes).
    #[serde(default)]
    pub labels: Option<Vec<String>>,
    /// The metadata entry holding the names.
    #[serde(default)]
    pub labels_key: Option<String>,
}

/// One box found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Detection {
    /// Its class's number.
    pub index: usize,
    /// Its class's name, where known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Its score.
    pub score: f32,
    /// Left, top, right, bottom: in the frame's pixels for an image, else in the input's.
    pub bbox: [f32; 4],
}

/// A checked [`DetectionsSpec`].
#[derive(Debug, Clone, PartialEq)]
pub struct DetectionsPlan {
    /// The output's position in the graph.
    pub output: usize,
    layout: DetectionLayout,
    score_threshold: f32,
    iou_threshold: f32,
    max_detections: usize,
    labels: Vec<String>,
}

impl DetectionsSpec {
    /// Checks the spec against the graph's outputs; `metadata` reads the model's metadata.
    pub fn plan(
        &self,
        model: &str,
        outputs: &[TensorInfo],
        metadata: impl Fn(&str) -> Option<String>,
    ) -> Result<DetectionsPlan, BackendError> {
        let output = output_index(model, "detections", self.output.as_deref(), outputs)?;
        let score_threshold = self.score_threshold.unwrap_or(0.25);
        let iou_threshold = self.iou_threshold.unwrap_or(0.45);
        let in_unit = |v: f32| (0.0..=1.0).contains(&v);
        if !in_unit(score_threshold) || !in_unit(iou_threshold) {
            return Err(BackendError::InvalidInput(format!(
                "model {model}: `detections.score_threshold` {score_threshold} and `iou_threshold` {iou_threshold} must be from 0 to 1"
            )));
        }
        let max_detections = self.max_detections.unwrap_or(100).max(1);
        let labels = labels(
            model,
            "detections",
            &self.labels,
            &self.labels_key,
            metadata,
        )?;
        Ok(DetectionsPlan {
            output,
            layout: self.layout,
            score_threshold,
            iou_threshold,
            max_detections,
            labels,
        })
    }
}

/// A candidate: its box (left, top, right, bottom), best class and score.
type Candidate = ([f32; 4], usize, f32);

impl DetectionsPlan {
    /// The boxes of the first image of `out`, in the input's pixels, best first.
    pub fn decode(&self, out: &TensorF32) -> Result<Vec<Detection>, BackendError> {
        let candidates = self.candidates(out)?;
        Ok(
            suppress(candidates, self.iou_threshold, self.max_detections)
                .into_iter()
                .map(|(bbox, index, score)| Detection {
                    index,
                    label: self.labels.get(index).cloned(),
                    score,
                    bbox,
                })
                .collect(),
        )
    }

    fn candidates(&self, out: &TensorF32) -> Result<Vec<Candidate>, BackendError> {
        let (rows, width, transposed) = match (self.layout, out.shape.as_slice()) {
            (DetectionLayout::Yolov8, [_, f, n]) if *f > 4 => (*n, *f, true),
            (DetectionLayout::Yolov5, [_, n, f]) if *f > 5 => (*n, *f, false),
            (layout, shape) => {
                return Err(BackendError::InvalidInput(format!(
                    "a detector output of shape {shape:?} is not the {layout:?} layout ([1, 4 + C, N] for yolov8, [1, N, 5 + C] for yolov5): set `detections.layout`, or leave `detections` out to get the raw tensor"
                )));
            }
        };
        // The first image only: `[features, candidates]` (yolov8) or the other way round.
        let at = |row: usize, feature: usize| {
            let i = if transposed {
                feature * rows + row
            } else {
                row * width + feature
            };
            out.data.get(i).copied().unwrap_or(0.0)
        };
        let first_class = match self.layout {
            DetectionLayout::Yolov8 => 4,
            DetectionLayout::Yolov5 => 5,
        };
        let mut found = Vec::new();
        for row in 0..rows {
            let objectness = match self.layout {
                DetectionLayout::Yolov8 => 1.0,
                DetectionLayout::Yolov5 => at(row, 4),
            };
            let best = (first_class..width)
                .map(|f| (f - first_class, objectness * at(row, f)))
                .filter(|(_, s)| s.is_finite())
                .max_by(|a, b| a.1.total_cmp(&b.1));
            let Some((class, score)) = best else {
                continue;
            };
            if score < self.score_threshold {
                continue;
            }
            let (cx, cy, w, h) = (at(row, 0), at(row, 1), at(row, 2), at(row, 3));
            let bbox = [cx - w / 2.0, cy - h / 2.0, cx + w / 2.0, cy + h / 2.0];
            found.push((bbox, class, score));
        }
        Ok(found)
    }
}

/// Intersection over union of two boxes (0 when either is empty).
pub(super) fn iou(a: &[f32; 4], b: &[f32; 4]) -> f32 {
    let w = (a[2].min(b[2]) - a[0].max(b[0])).max(0.0);
    let h = (a[3].min(b[3]) - a[1].max(b[1])).max(0.0);
    let inter = w * h;
    let area = |r: &[f32; 4]| (r[2] - r[0]).max(0.0) * (r[3] - r[1]).max(0.0);
    let union = area(a) + area(b) - inter;
    if union > 0.0 { inter / union } else { 0.0 }
}

/// Non-maximum suppression per class: best first, a box dropped when it overlaps a kept
/// box of its class by more than `threshold`; at most `max` kept.
fn suppress(mut found: Vec<Candidate>, threshold: f32, max: usize) -> Vec<Candidate> {
    found.sort_by(|a, b| b.2.total_cmp(&a.2));
    let mut kept: Vec<Candidate> = Vec::new();
    for c in found {
        if kept.len() >= max {
            break;
        }
        if kept
            .iter()
            .all(|k| k.1 != c.1 || iou(&k.0, &c.0) <= threshold)
        {
            kept.push(c);
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::DataType;
    use proptest::prelude::*;

    fn outputs() -> Vec<TensorInfo> {
        vec![TensorInfo {
            name: "output0".into(),
            datatype: DataType::Fp32,
            shape: vec![1, 6, -1],
        }]
    }

    fn plan(layout: DetectionLayout) -> DetectionsPlan {
        let spec = DetectionsSpec {
            layout,
            labels: Some(vec!["cat".into(), "dog".into()]),
            ..DetectionsSpec::default()
        };
        spec.plan("m", &outputs(), |_| None).expect("plan")
    }

    /// Three candidates in yolov8's `[1, 4 + 2, 3]`: two overlapping dogs and a cat.
    fn yolov8() -> TensorF32 {
        let cands = [
            // cx, cy, w, h, cat, dog
            [50.0, 50.0, 20.0, 20.0, 0.1, 0.9],
            [52.0, 50.0, 20.0, 20.0, 0.1, 0.8],
            [150.0, 80.0, 10.0, 40.0, 0.7, 0.2],
        ];
        let data = (0..6)
            .flat_map(|f| cands.iter().map(move |c| c[f]))
            .collect();
        TensorF32::new(vec![1, 6, 3], data).expect("tensor")
    }

    #[test]
    fn overlapping_boxes_of_a_class_reduce_to_the_best_and_boxes_are_corners() {
        let found = plan(DetectionLayout::Yolov8)
            .decode(&yolov8())
            .expect("decode");
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(found[0].label.as_deref(), Some("dog"));
        assert_eq!(found[0].bbox, [40.0, 40.0, 60.0, 60.0]);
        assert_eq!(found[1].label.as_deref(), Some("cat"));
        assert_eq!(found[1].bbox, [145.0, 60.0, 155.0, 100.0]);
    }

    #[test]
    fn yolov5_multiplies_objectness_and_drops_what_scores_too_low() {
        // cx, cy, w, h, objectness, cat, dog: 0.5 × 0.9 kept; 0.2 × 0.9 under 0.25.
        let data = vec![
            10.0, 10.0, 4.0, 4.0, 0.5, 0.9, 0.1, //
            30.0, 30.0, 4.0, 4.0, 0.2, 0.9, 0.1,
        ];
        let t = TensorF32::new(vec![1, 2, 7], data).expect("tensor");
        let found = plan(DetectionLayout::Yolov5).decode(&t).expect("decode");
        assert_eq!(found.len(), 1);
        assert!((found[0].score - 0.45).abs() < 1e-6);
        assert_eq!(found[0].index, 0);
    }

    #[test]
    fn a_wrong_layout_says_which_to_set() {
        let t = TensorF32::new(vec![1, 3], vec![0.0; 3]).expect("tensor");
        let err = plan(DetectionLayout::Yolov8)
            .decode(&t)
            .unwrap_err()
            .to_string();
        assert!(err.contains("detections.layout"), "{err}");
    }

    proptest! {
        #[test]
        fn kept_boxes_of_a_class_never_overlap_past_the_threshold(
            cands in proptest::collection::vec(
                (0.0f32..100.0, 0.0f32..100.0, 1.0f32..30.0, 1.0f32..30.0, 0usize..2, 0.0f32..1.0),
                0..40,
            )
        ) {
            let found: Vec<Candidate> = cands
                .iter()
                .map(|&(x, y, w, h, c, s)| ([x, y, x + w, y + h], c, s))
                .collect();
            let kept = suppress(found.clone(), 0.45, 100);
            for (i, a) in kept.iter().enumerate() {
                for b in &kept[i + 1..] {
                    prop_assert!(a.1 != b.1 || iou(&a.0, &b.0) <= 0.45);
                }
            }
            // Best first, and the best candidate is always kept.
            prop_assert!(kept.windows(2).all(|w| w[0].2 >= w[1].2));
            if let Some(best) = found.iter().map(|c| c.2).reduce(f32::max) {
                prop_assert_eq!(kept.first().map(|k| k.2), Some(best));
            }
        }
    }
}
