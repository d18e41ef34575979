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

/// The element type of a model's input or output, by the names the Open Inference Protocol
/// (KServe v2) gives them.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum DataType {
    /// 32-bit float: the one type the engines are fed and read here.
    Fp32,
    /// Any other element type, by its protocol name (`INT64`, `UINT8`, `FP16`, `BYTES` …).
    Other(String),
}

impl DataType {
    /// The protocol's name (`FP32`, `INT64` …).
    pub fn as_str(&self) -> &str {
        match self {
            DataType::Fp32 => "FP32",
            DataType::Other(name) => name,
        }
    }
}

impl std::fmt::Display for DataType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One input or output of a loaded model, as its graph declares it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TensorInfo {
    /// The name in the graph.
    pub name: String,
    /// The element type.
    pub datatype: DataType,
    /// Dimensions, outermost first; `-1` where the graph leaves a dimension free.
    pub shape: Vec<i64>,
}

impl TensorInfo {
    /// The shape as `[N, 3, 224, 224]`, with `N` for a free dimension.
    pub fn shape_text(&self) -> String {
        let dims: Vec<String> = self
            .shape
            .iter()
            .map(|&d| {
                if d < 0 {
                    "N".to_string()
                } else {
                    d.to_string()
                }
            })
            .collect();
        format!("[{}]", dims.join(", "))
    }

    /// Whether a tensor of `shape` fits: the same rank, and every fixed dimension equal.
    pub fn accepts(&self, shape: &[usize]) -> bool {
        shape.len() == self.shape.len()
            && self
                .shape
                .iter()
                .zip(shape)
                .all(|(&want, &got)| want < 0 || want as usize == got)
    }
}
