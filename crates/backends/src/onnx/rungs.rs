//! Quality rungs of a model of the user's own: the ways it can run a job, richest first,
//! each an alternative file (a smaller or quantised export with the same inputs and
//! outputs) and/or another image size (for a graph with free height and width). A rung
//! not naming one takes the model's own. The scheduler picks one per job, as for the
//! built-in models; since a model of your own comes with no truth, what a cheaper rung
//! gives up is measured by comparing its answers with the richest rung's
//! ([`OnnxOutput::agrees_with`]).

use std::path::PathBuf;

use mmsched_core::rungs::{MAX_OWN_RUNGS, MAX_RUNG_NAME_CHARS, is_rung_name};
use serde::{Deserialize, Serialize};

use super::detections::Detection;
use super::model::{OnnxModelSpec, OnnxOutput};
use crate::backend::BackendError;

/// `[[models.rungs]]`: one way to run a model of your own.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OnnxRungSpec {
    /// The rung's name (1 to 32 letters, digits, `-`, `_`, `.`), as results, traces, the summary's
    /// `rung_counts` and the profile show it.
    pub name: String,
    /// Another `.onnx` file with the same inputs and outputs (default: the model's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<PathBuf>,
    /// The image size fed, width and height (default: the model's `image.size`, else the
    /// input's fixed size); only for a graph whose image input has free height and width.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<[u32; 2]>,
}

impl OnnxModelSpec {
    /// The spec each rung loads, with its name, richest first; empty when the model
    /// declares no rungs (it runs as it is). An error names the rung and the fix.
    pub fn rung_specs(&self) -> Result<Vec<(String, OnnxModelSpec)>, BackendError> {
        let model = &self.name;
        if self.rungs.len() > MAX_OWN_RUNGS {
            return Err(BackendError::InvalidInput(format!(
                "model {model} declares {} rungs: keep at most {MAX_OWN_RUNGS}, the ones worth choosing between",
                self.rungs.len()
            )));
        }
        let mut specs: Vec<(String, OnnxModelSpec)> = Vec::with_capacity(self.rungs.len());
        for rung in &self.rungs {
            let name = &rung.name;
            if !is_rung_name(name) {
                return Err(BackendError::InvalidInput(format!(
                    "model {model}: rung {name:?}: name it with 1 to {MAX_RUNG_NAME_CHARS} letters, digits, `-`, `_` or `.`"
                )));
            }
            if specs.iter().any(|(n, _)| n == name) {
                return Err(BackendError::InvalidInput(format!(
                    "model {model}: rung `{name}` is declared twice: give each rung its own name"
                )));
            }
            let spec = self.at(rung);
            if let Some((same, _)) = specs
                .iter()
                .find(|(_, s)| s.file == spec.file && s.image == spec.image)
            {
                return Err(BackendError::InvalidInput(format!(
                    "model {model}: rungs `{same}` and `{name}` run the same file at the same size: give `{name}` another `file` or `size`, or leave it out"
                )));
            }
            specs.push((name.clone(), spec));
        }
        Ok(specs)
    }

    /// Each way the model runs, with its rung's name, richest first: its rungs, or, when it
    /// declares none, the model itself under the empty name.
    pub fn runs(&self) -> Result<Vec<(String, OnnxModelSpec)>, BackendError> {
        let rungs = self.rung_specs()?;
        Ok(match rungs.is_empty() {
            true => vec![(String::new(), self.clone())],
            false => rungs,
        })
    }

    /// The model as `rung` runs it: its file and image size in place of the model's.
    fn at(&self, rung: &OnnxRungSpec) -> OnnxModelSpec {
        let mut spec = OnnxModelSpec {
            rungs: Vec::new(),
            ..self.clone()
        };
        if let Some(file) = &rung.file {
            spec.file = file.clone();
        }
        if let Some(size) = rung.size {
            let mut image = spec.image.take().unwrap_or_default();
            image.size = Some(size);
            spec.image = Some(image);
        }
        spec
    }
}

/// Largest difference between two raw outputs that still counts as the same answer, as a
/// share of the richest output's largest magnitude.
const RAW_TOLERANCE: f32 = 0.01;

/// Overlap (intersection over union) at which two boxes of a class are the same object.
const SAME_BOX_IOU: f32 = 0.5;

impl OnnxOutput {
    /// Whether this answer, of a cheaper rung, is the same as `richest`'s on the same input:
    /// a classifier's best class in every row; a detector's objects (each of the richest's
    /// boxes matched by one of the same class overlapping it by half or more, none left
    /// over); raw outputs of the same shapes within 1 % of the richest's largest value.
    pub fn agrees_with(&self, richest: &OnnxOutput) -> bool {
        if let (Some(mine), Some(theirs)) = (&self.classes, &richest.classes) {
            let best = |rows: &[Vec<super::ClassScore>]| -> Vec<Option<usize>> {
                rows.iter().map(|r| r.first().map(|c| c.index)).collect()
            };
            return best(mine) == best(theirs);
        }
        if let (Some(mine), Some(theirs)) = (&self.detections, &richest.detections) {
            return same_objects(mine, theirs);
        }
        self.tensors.len() == richest.tensors.len()
            && self
                .tensors
                .iter()
                .zip(&richest.tensors)
                .all(|((_, a), (_, b))| {
                    let scale = b.data.iter().fold(0f32, |m, v| m.max(v.abs()));
                    a.shape == b.shape
                        && a.data
                            .iter()
                            .zip(&b.data)
                            .all(|(x, y)| (x - y).abs() <= RAW_TOLERANCE * scale)
                })
    }
}

/// Whether `mine` finds the objects `theirs` does: a one-to-one matching of boxes of the
/// same class overlapping by [`SAME_BOX_IOU`] or more (greedy, the richest's best first).
fn same_objects(mine: &[Detection], theirs: &[Detection]) -> bool {
    if mine.len() != theirs.len() {
        return false;
    }
    let mut taken = vec![false; mine.len()];
    theirs.iter().all(|t| {
        let best = mine
            .iter()
            .enumerate()
            .filter(|(i, m)| !taken[*i] && m.index == t.index)
            .map(|(i, m)| (i, super::detections::iou(&m.bbox, &t.bbox)))
            .filter(|&(_, o)| o >= SAME_BOX_IOU)
            .max_by(|a, b| a.1.total_cmp(&b.1));
        match best {
            Some((i, _)) => {
                taken[i] = true;
                true
            }
            None => false,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::onnx::ClassScore;
    use crate::tensor::TensorF32;

    fn spec(rungs: Vec<OnnxRungSpec>) -> OnnxModelSpec {
        OnnxModelSpec {
            name: "det".into(),
            file: PathBuf::from("/m/full.onnx"),
            rungs,
            ..OnnxModelSpec::default()
        }
    }

    fn rung(name: &str, file: Option<&str>, size: Option<[u32; 2]>) -> OnnxRungSpec {
        OnnxRungSpec {
            name: name.into(),
            file: file.map(PathBuf::from),
            size,
        }
    }

    #[test]
    fn a_rung_takes_the_models_file_and_image_unless_it_names_its_own() {
        let s = spec(vec![
            rung("full", None, None),
            rung("small", None, Some([160, 160])),
            rung("int8", Some("/m/int8.onnx"), None),
        ]);
        let specs = s.rung_specs().expect("valid rungs");
        let names: Vec<&str> = specs.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["full", "small", "int8"]);
        assert_eq!(specs[0].1.file, PathBuf::from("/m/full.onnx"));
        assert_eq!(specs[0].1.image, None);
        assert_eq!(
            specs[1].1.image.as_ref().and_then(|i| i.size),
            Some([160, 160])
        );
        assert_eq!(specs[2].1.file, PathBuf::from("/m/int8.onnx"));
        assert!(specs.iter().all(|(_, s)| s.rungs.is_empty()));
        assert!(spec(Vec::new()).rung_specs().expect("none").is_empty());
    }

    #[test]
    fn bad_rungs_are_refused_naming_the_fix() {
        let twice = spec(vec![
            rung("a", None, None),
            rung("a", Some("/x.onnx"), None),
        ]);
        let err = twice.rung_specs().expect_err("a name twice").to_string();
        assert!(err.contains("declared twice"), "{err}");
        let same = spec(vec![rung("a", None, None), rung("b", None, None)]);
        let err = same
            .rung_specs()
            .expect_err("the same run twice")
            .to_string();
        assert!(err.contains("another `file` or `size`"), "{err}");
        let odd = spec(vec![rung("a b", None, None)]);
        let err = odd.rung_specs().expect_err("a space").to_string();
        assert!(err.contains("letters, digits"), "{err}");
        let many = spec(
            (0..=MAX_OWN_RUNGS)
                .map(|i| rung(&format!("r{i}"), None, Some([32 * (i as u32 + 1); 2])))
                .collect(),
        );
        assert!(many.rung_specs().is_err());
    }

    fn classes(best: &[usize]) -> OnnxOutput {
        OnnxOutput {
            tensors: Vec::new(),
            classes: Some(
                best.iter()
                    .map(|&index| {
                        vec![ClassScore {
                            index,
                            label: None,
                            score: 1.0,
                        }]
                    })
                    .collect(),
            ),
            detections: None,
        }
    }

    fn boxes(found: &[(usize, [f32; 4])]) -> OnnxOutput {
        OnnxOutput {
            tensors: Vec::new(),
            classes: None,
            detections: Some(
                found
                    .iter()
                    .map(|&(index, bbox)| Detection {
                        index,
                        label: None,
                        score: 0.9,
                        bbox,
                    })
                    .collect(),
            ),
        }
    }

    fn raw(data: Vec<f32>) -> OnnxOutput {
        OnnxOutput {
            tensors: vec![(
                "y".into(),
                TensorF32 {
                    shape: vec![data.len()],
                    data,
                },
            )],
            classes: None,
            detections: None,
        }
    }

    #[test]
    fn answers_agree_by_best_class_by_objects_or_by_values() {
        assert!(classes(&[2, 0]).agrees_with(&classes(&[2, 0])));
        assert!(!classes(&[2, 1]).agrees_with(&classes(&[2, 0])));
        let a = boxes(&[(0, [0.0, 0.0, 10.0, 10.0]), (1, [20.0, 20.0, 30.0, 30.0])]);
        // The same objects, found in another order and a little displaced.
        let b = boxes(&[(1, [21.0, 20.0, 31.0, 30.0]), (0, [0.0, 1.0, 10.0, 11.0])]);
        assert!(b.agrees_with(&a));
        // A box of the other class where the first was.
        let c = boxes(&[(1, [0.0, 0.0, 10.0, 10.0]), (1, [20.0, 20.0, 30.0, 30.0])]);
        assert!(!c.agrees_with(&a));
        // One object missed.
        assert!(!boxes(&[(0, [0.0, 0.0, 10.0, 10.0])]).agrees_with(&a));
        assert!(raw(vec![1.0, -4.0, 2.0]).agrees_with(&raw(vec![1.02, -4.0, 1.99])));
        assert!(!raw(vec![1.0, -4.0, 2.5]).agrees_with(&raw(vec![1.0, -4.0, 2.0])));
        assert!(!raw(vec![1.0, -4.0]).agrees_with(&raw(vec![1.0, -4.0, 2.0])));
    }
}
