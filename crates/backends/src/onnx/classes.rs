//! A classifier's output read as its top classes: each row of a `[N, C]` (or `[C]`) score
//! tensor sorted, the best `top_k` kept with their labels.

use serde::{Deserialize, Serialize};

use crate::backend::BackendError;
use crate::tensor::{TensorF32, TensorInfo};

/// Which output holds class scores, and how to name them.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClassesSpec {
    /// The output holding the scores (default: the first output).
    #[serde(default)]
    pub output: Option<String>,
    /// How many of the best classes to report per row (default 5).
    #[serde(default)]
    pub top_k: Option<usize>,
    /// The classes' names in score order. Default: the model's metadata entry named by
    /// `labels_key`, one name a line; without either, the class numbers.
    #[serde(default)]
    pub labels: Option<Vec<String>>,
    /// The metadata entry holding the names, one a line (default: `labels`, then
    /// `character`, then `names` if the model has one).
    #[serde(default)]
    pub labels_key: Option<String>,
}

/// One class of one row, as reported.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClassScore {
    /// The class's number (its position in the scores).
    pub index: usize,
    /// Its name, where known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Its score as the model gives it (a probability or a logit: no softmax is applied).
    pub score: f32,
}

/// A checked [`ClassesSpec`]: the output's position, `k` and the labels.
#[derive(Debug, Clone, PartialEq)]
pub struct ClassesPlan {
    /// The output's position in the graph.
    pub output: usize,
    top_k: usize,
    labels: Vec<String>,
}

/// The metadata keys a model's class names are looked for under, in order.
const LABEL_KEYS: [&str; 3] = ["labels", "character", "names"];

impl ClassesSpec {
    /// Checks the spec against the graph's outputs; `metadata` reads the model's metadata.
    pub fn plan(
        &self,
        model: &str,
        outputs: &[TensorInfo],
        metadata: impl Fn(&str) -> Option<String>,
    ) -> Result<ClassesPlan, BackendError> {
        let bad = |why: String| BackendError::InvalidInput(format!("model {model}: {why}"));
        let output = output_index(model, "classes", self.output.as_deref(), outputs)?;
        let top_k = self.top_k.unwrap_or(5);
        if top_k == 0 {
            return Err(bad("`classes.top_k` is 0: report at least 1 class".into()));
        }
        let labels = labels(model, "classes", &self.labels, &self.labels_key, metadata)?;
        Ok(ClassesPlan {
            output,
            top_k,
            labels,
        })
    }
}

/// The position of the output a `table` names (`classes`, `detections`), or the first.
pub(super) fn output_index(
    model: &str,
    table: &str,
    name: Option<&str>,
    outputs: &[TensorInfo],
) -> Result<usize, BackendError> {
    let bad = |why: String| BackendError::InvalidInput(format!("model {model}: {why}"));
    match name {
        Some(name) => outputs.iter().position(|o| o.name == name).ok_or_else(|| {
            let all: Vec<&str> = outputs.iter().map(|o| o.name.as_str()).collect();
            bad(format!(
                "{table} output `{name}` is not an output of the graph (its outputs: {})",
                all.join(", ")
            ))
        }),
        None if outputs.is_empty() => Err(bad("the graph has no outputs".into())),
        None => Ok(0),
    }
}

/// Class names: those listed, else the metadata entry `key` names, else the first of
/// [`LABEL_KEYS`] the model has; none without any.
pub(super) fn labels(
    model: &str,
    table: &str,
    listed: &Option<Vec<String>>,
    key: &Option<String>,
    metadata: impl Fn(&str) -> Option<String>,
) -> Result<Vec<String>, BackendError> {
    Ok(match (listed, key) {
        (Some(list), _) => list.clone(),
        (None, Some(key)) => names(&metadata(key).ok_or_else(|| {
            BackendError::InvalidInput(format!(
                "model {model}: the model has no metadata entry `{key}` for `{table}.labels_key`: list the names in `{table}.labels`"
            ))
        })?),
        (None, None) => LABEL_KEYS
            .iter()
            .find_map(|k| metadata(k))
            .map(|text| names(&text))
            .unwrap_or_default(),
    })
}

/// Names from a metadata entry: one a line, or a dictionary of numbers to quoted names as
/// exporters of detectors write it (`{0: 'person', 1: 'bicycle'}`).
fn names(text: &str) -> Vec<String> {
    let t = text.trim();
    match t.strip_prefix('{').and_then(|t| t.strip_suffix('}')) {
        Some(body) => {
            let mut pairs: Vec<(usize, String)> = body
                .split(", ")
                .filter_map(|item| {
                    let (n, name) = item.split_once(':')?;
                    let name = name.trim().trim_matches(|c| c == '\'' || c == '"');
                    Some((n.trim().parse().ok()?, name.to_string()))
                })
                .collect();
            pairs.sort_by_key(|p| p.0);
            pairs.into_iter().map(|p| p.1).collect()
        }
        None => t.lines().map(|l| l.trim().to_string()).collect(),
    }
}

impl ClassesPlan {
    /// The best classes of each row of `scores` (`[C]` is one row; `[N, C]` N rows).
    pub fn top(&self, scores: &TensorF32) -> Result<Vec<Vec<ClassScore>>, BackendError> {
        let classes = match scores.shape.as_slice() {
            [c] | [_, c] => *c,
            other => {
                return Err(BackendError::InvalidInput(format!(
                    "class scores of shape {other:?}: a classifier's output is [C] or [N, C]; leave `classes` out to get the raw tensor"
                )));
            }
        };
        if classes == 0 {
            return Ok(Vec::new());
        }
        Ok(scores
            .data
            .chunks(classes)
            .map(|row| {
                let mut order: Vec<usize> = (0..row.len()).collect();
                // Highest first; a NaN sorts last; equal scores keep the lower index first.
                order.sort_by(|&a, &b| row[b].total_cmp(&row[a]).then(a.cmp(&b)));
                order
                    .into_iter()
                    .filter(|&i| !row[i].is_nan())
                    .take(self.top_k)
                    .map(|index| ClassScore {
                        index,
                        label: self.labels.get(index).cloned(),
                        score: row[index],
                    })
                    .collect()
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::DataType;
    use proptest::prelude::*;

    fn outputs() -> Vec<TensorInfo> {
        vec![TensorInfo {
            name: "probs".into(),
            datatype: DataType::Fp32,
            shape: vec![-1, 4],
        }]
    }

    #[test]
    fn labels_come_from_the_models_metadata_one_a_line() {
        let spec = ClassesSpec {
            top_k: Some(2),
            ..ClassesSpec::default()
        };
        let meta = |k: &str| (k == "character").then(|| "0\n90\n180\n270".to_string());
        let plan = spec.plan("m", &outputs(), meta).expect("plan");
        let scores = TensorF32::new(vec![1, 4], vec![0.1, 0.2, 0.6, 0.1]).expect("tensor");
        let top = plan.top(&scores).expect("top");
        assert_eq!(top[0][0].label.as_deref(), Some("180"));
        assert_eq!(top[0][1].index, 1);
        assert_eq!(top[0].len(), 2);
    }

    #[test]
    fn a_dictionary_of_names_reads_in_number_order() {
        assert_eq!(
            names("{1: 'bicycle', 0: 'person', 2: \"car\"}"),
            ["person", "bicycle", "car"]
        );
        assert_eq!(names("0\n90\n"), ["0", "90"]);
    }

    #[test]
    fn a_missing_output_or_metadata_key_says_what_to_write_instead() {
        let spec = ClassesSpec {
            output: Some("logits".into()),
            ..ClassesSpec::default()
        };
        let err = spec
            .plan("m", &outputs(), |_| None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("its outputs: probs"), "{err}");
        let spec = ClassesSpec {
            labels_key: Some("classes".into()),
            ..ClassesSpec::default()
        };
        let err = spec
            .plan("m", &outputs(), |_| None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("classes.labels"), "{err}");
    }

    proptest! {
        #[test]
        fn the_top_k_are_the_k_highest_scores_in_order(
            row in proptest::collection::vec(-10.0f32..10.0, 1..40),
            k in 1usize..10,
        ) {
            let spec = ClassesSpec { top_k: Some(k), ..ClassesSpec::default() };
            let plan = spec.plan("m", &outputs(), |_| None).expect("plan");
            let scores = TensorF32::new(vec![row.len()], row.clone()).expect("tensor");
            let top = plan.top(&scores).expect("top");
            let got: Vec<f32> = top[0].iter().map(|c| c.score).collect();
            let mut want = row.clone();
            want.sort_by(|a, b| b.total_cmp(a));
            want.truncate(k);
            prop_assert_eq!(got, want);
        }
    }
}
