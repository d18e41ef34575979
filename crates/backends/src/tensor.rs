//! A plain owned `f32` tensor: the hand-over format between pre-processing and engines.
//!
//! Why not an engine's own tensor type: pre- and post-processing are shared by every
//! engine (tract, ONNX Runtime), so they speak one neutral type; each engine session turns
//! it into its own type without copying where it can.

use crate::backend::BackendError;

/// A dense row-major `f32` tensor.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorF32 {
    /// Dimensions, outermost first.
    pub shape: Vec<usize>,
    /// `shape.iter().product()` values in row-major order.
    pub data: Vec<f32>,
}

impl TensorF32 {
    /// A tensor from its shape and data; fails if the lengths disagree.
    pub fn new(shape: Vec<usize>, data: Vec<f32>) -> Result<Self, BackendError> {
        let expected: usize = shape.iter().product();
        if expected != data.len() {
            return Err(BackendError::engine(
                "tensor",
                format!(
                    "shape {shape:?} needs {expected} values, got {}",
                    data.len()
                ),
            ));
        }
        Ok(Self { shape, data })
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// Whether the tensor holds no values.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }
}
