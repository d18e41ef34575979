//! An ONNX Runtime session behind the engine-neutral [`OnnxSession`] trait.

use std::path::Path;

use ::ort::session::{Session, SessionInputValue};
use ::ort::value::Tensor;

use super::model::environment;
use crate::backend::BackendError;
use crate::engine::{EngineKind, OnnxSession};
use crate::tensor::TensorF32;

/// A model loaded into ONNX Runtime with explicit thread counts.
#[derive(Debug)]
pub struct OrtSession {
    session: Session,
    metadata: Vec<(String, String)>,
}

fn engine_err(e: ::ort::Error) -> BackendError {
    BackendError::engine("ONNX Runtime", e)
}

impl OrtSession {
    /// Loads the ONNX file at `path` (a file of the model cache after checking its pinned
    /// sha256), using `threads` intra-op threads (at least 1).
    pub fn open(path: &Path, threads: usize) -> Result<Self, BackendError> {
        mmsched_models::verify::verify_file(path)?;
        let env = environment()?;
        // A builder's error carries the builder back; only the error is kept.
        let load = |e: ::ort::Error<::ort::session::builder::SessionBuilder>| {
            BackendError::load(path.display(), ::ort::Error::<()>::from(e))
        };
        let session = Session::builder(&env)
            .map_err(|e| BackendError::load(path.display(), e))?
            .with_intra_threads(threads.max(1))
            .map_err(load)?
            .with_inter_threads(1)
            .map_err(load)?
            .with_parallel_execution(false)
            .map_err(load)?
            .commit_from_file(path)
            .map_err(|e| BackendError::load(path.display(), e))?;
        let mut metadata = Vec::new();
        if let Ok(meta) = session.metadata() {
            for key in meta.custom_keys().unwrap_or_default() {
                if let Some(value) = meta.custom(&key) {
                    metadata.push((key, value));
                }
            }
        }
        Ok(Self { session, metadata })
    }

    /// The underlying ONNX Runtime session (for direct-call benchmarks).
    pub fn raw(&mut self) -> &mut Session {
        &mut self.session
    }
}

impl OnnxSession for OrtSession {
    fn run(&mut self, inputs: Vec<TensorF32>) -> Result<Vec<TensorF32>, BackendError> {
        let values = inputs
            .into_iter()
            .map(|t| {
                Tensor::<f32>::from_array((t.shape, t.data))
                    .map(SessionInputValue::from)
                    .map_err(engine_err)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let outputs = self.session.run(values.as_slice()).map_err(engine_err)?;
        let mut result = Vec::with_capacity(outputs.len());
        for (_, value) in outputs.iter() {
            let (shape, data) = value.try_extract_tensor::<f32>().map_err(engine_err)?;
            let shape = shape
                .iter()
                .map(|&d| usize::try_from(d).unwrap_or(0))
                .collect();
            result.push(TensorF32::new(shape, data.to_vec())?);
        }
        Ok(result)
    }

    fn metadata(&self, key: &str) -> Option<String> {
        self.metadata
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
    }

    fn engine(&self) -> EngineKind {
        EngineKind::Ort
    }
}
