//! A tract session: one model, one optimised plan per input shape.

use std::collections::HashMap;
use std::path::Path;

use tract_onnx::prelude::*;

use super::model::{TractModel, TractPlan};
use crate::backend::BackendError;
use crate::engine::{EngineKind, OnnxSession};
use crate::tensor::TensorF32;

/// A model loaded into tract, with its plans cached by input shapes.
#[derive(Debug)]
pub struct TractSession {
    model: TractModel,
    plans: HashMap<Vec<Vec<usize>>, TractPlan>,
}

impl TractSession {
    /// Loads the ONNX file at `path`.
    pub fn open(path: &Path) -> Result<Self, BackendError> {
        Ok(Self {
            model: TractModel::load(path)?,
            plans: HashMap::new(),
        })
    }

    /// The optimised plan for these input shapes (built on first use, then cached).
    ///
    /// Public so that benchmarks can call tract's `SimplePlan::run` directly and compare.
    pub fn plan(&mut self, shapes: &[Vec<usize>]) -> Result<TractPlan, BackendError> {
        if let Some(plan) = self.plans.get(shapes) {
            return Ok(plan.clone());
        }
        let plan = self.model.plan_for(shapes)?;
        self.plans.insert(shapes.to_vec(), plan.clone());
        Ok(plan)
    }

    /// Converts a neutral tensor into a tract tensor (one copy).
    pub fn to_tract(t: &TensorF32) -> Result<Tensor, BackendError> {
        Tensor::from_shape(&t.shape, &t.data).map_err(|e| BackendError::engine("tract", e))
    }

    /// Copies a tract output into a neutral tensor.
    pub fn from_tract(v: &TValue) -> Result<TensorF32, BackendError> {
        let err = |e: TractError| BackendError::engine("tract", e.context("reading an output"));
        let data = v
            .try_as_plain_ram()
            .and_then(|r| r.as_slice::<f32>().map(|s| s.to_vec()))
            .map_err(err)?;
        TensorF32::new(v.shape().to_vec(), data)
    }
}

impl OnnxSession for TractSession {
    fn run(&mut self, inputs: Vec<TensorF32>) -> Result<Vec<TensorF32>, BackendError> {
        let shapes: Vec<Vec<usize>> = inputs.iter().map(|t| t.shape.clone()).collect();
        let plan = self.plan(&shapes)?;
        let values = inputs
            .iter()
            .map(|t| Self::to_tract(t).map(TValue::from))
            .collect::<Result<TVec<_>, _>>()?;
        let outputs = plan
            .run(values)
            .map_err(|e| BackendError::engine("tract", e))?;
        outputs.iter().map(Self::from_tract).collect()
    }

    fn metadata(&self, key: &str) -> Option<String> {
        self.model.metadata().get(key).cloned()
    }

    fn engine(&self) -> EngineKind {
        EngineKind::Tract
    }
}
