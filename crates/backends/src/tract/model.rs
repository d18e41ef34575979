//! Loading an ONNX file into tract and optimising it for concrete input shapes.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use tract_onnx::prelude::*;

use crate::backend::BackendError;

/// A parsed (not yet optimised) ONNX model and its metadata.
#[derive(Debug, Clone)]
pub struct TractModel {
    path: String,
    model: InferenceModel,
    metadata: HashMap<String, String>,
}

/// The runnable plan type tract produces (`SimplePlan` over typed facts and ops).
pub type TractPlan = Arc<TypedRunnableModel>;

impl TractModel {
    /// Parses the ONNX file at `path` (a file of the model cache after checking its pinned
    /// sha256).
    pub fn load(path: &Path) -> Result<Self, BackendError> {
        mmsched_models::verify::verify_file(path)?;
        let shown = path.display().to_string();
        let model = tract_onnx::onnx()
            .model_for_path(path)
            .map_err(|e| BackendError::load(&shown, e))?;
        let mut metadata = HashMap::new();
        for (key, value) in &model.properties {
            // Metadata strings are stored as scalar string tensors.
            if let Some(name) = key.strip_prefix("onnx.metadata_props.")
                && let Ok(view) = value.try_as_plain_ram()
                && let Ok([text]) = view.as_slice::<String>()
            {
                metadata.insert(name.to_string(), text.clone());
            }
        }
        Ok(Self {
            path: shown,
            model,
            metadata,
        })
    }

    /// The file this model came from.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Metadata strings (`metadata_props`).
    pub fn metadata(&self) -> &HashMap<String, String> {
        &self.metadata
    }

    /// Number of model inputs.
    pub fn input_count(&self) -> usize {
        self.model.inputs.len()
    }

    /// Optimises the model for `f32` inputs of exactly these shapes and makes it runnable.
    pub fn plan_for(&self, shapes: &[Vec<usize>]) -> Result<TractPlan, BackendError> {
        let fail = |e: TractError| {
            BackendError::load(
                &self.path,
                e.context(format!("cannot optimise for input shapes {shapes:?}")),
            )
        };
        if shapes.len() != self.model.inputs.len() {
            return Err(BackendError::engine(
                "tract",
                format!(
                    "model {} takes {} inputs, got {}",
                    self.path,
                    self.model.inputs.len(),
                    shapes.len()
                ),
            ));
        }
        let mut model = self.model.clone();
        for (i, shape) in shapes.iter().enumerate() {
            model = model
                .with_input_fact(i, f32::fact(shape.clone()).into())
                .map_err(fail)?;
        }
        model
            .into_optimized()
            .and_then(|m| m.into_runnable())
            .map_err(fail)
    }
}
