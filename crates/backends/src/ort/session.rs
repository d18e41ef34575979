//! An ONNX Runtime session behind the engine-neutral [`OnnxSession`] trait.

use std::path::Path;

use ::ort::session::{Session, SessionInputValue};
use ::ort::value::Tensor;

use super::model::environment;
use crate::backend::BackendError;
use crate::engine::{EngineKind, OnnxSession};
use crate::tensor::{DataType, TensorF32, TensorInfo};

/// A model loaded into ONNX Runtime with explicit thread counts.
#[derive(Debug)]
pub struct OrtSession {
    session: Session,
    metadata: Vec<(String, String)>,
    inputs: Vec<TensorInfo>,
    outputs: Vec<TensorInfo>,
}

/// A graph's input or output as the engine-neutral [`TensorInfo`].
fn tensor_info(outlet: &::ort::value::Outlet) -> TensorInfo {
    use ::ort::value::{TensorElementType, ValueType};
    let (datatype, shape) = match outlet.dtype() {
        ValueType::Tensor { ty, shape, .. } => {
            let datatype = match ty {
                TensorElementType::Float32 => DataType::Fp32,
                other => DataType::Other(protocol_name(*other)),
            };
            (datatype, shape.iter().copied().collect())
        }
        other => (DataType::Other(other.to_string()), Vec::new()),
    };
    TensorInfo {
        name: outlet.name().to_string(),
        datatype,
        shape,
    }
}

/// The Open Inference Protocol's name of an element type other than `FP32`.
fn protocol_name(ty: ::ort::value::TensorElementType) -> String {
    use ::ort::value::TensorElementType as T;
    match ty {
        T::Float64 => "FP64",
        T::Float16 => "FP16",
        T::Bfloat16 => "BF16",
        T::Int8 => "INT8",
        T::Int16 => "INT16",
        T::Int32 => "INT32",
        T::Int64 => "INT64",
        T::Uint8 => "UINT8",
        T::Uint16 => "UINT16",
        T::Uint32 => "UINT32",
        T::Uint64 => "UINT64",
        T::Bool => "BOOL",
        T::String => "BYTES",
        other => return format!("{other:?}").to_uppercase(),
    }
    .to_string()
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
        let inputs = session.inputs().iter().map(tensor_info).collect();
        let outputs = session.outputs().iter().map(tensor_info).collect();
        Ok(Self {
            session,
            metadata,
            inputs,
            outputs,
        })
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

    fn signature(&self) -> Option<(&[TensorInfo], &[TensorInfo])> {
        Some((&self.inputs, &self.outputs))
    }
}
