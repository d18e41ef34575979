//! The user's own ONNX models: any graph file, its inputs and outputs read from the graph,
//! run under the scheduler as a [`StepModel`](crate::step::StepModel) of one step (`run`).
//!
//! A job is fed either tensors (one per graph input, in the graph's order) or an image,
//! which an [`ImageSpec`] turns into the model's image input (resize, layout, channel
//! order, scale, mean and std). The result is every output tensor as the engine returned
//! it, and, for a classifier declared with [`ClassesSpec`], the top classes of each row; for
//! a detector declared with [`DetectionsSpec`], its boxes after non-maximum suppression,
//! in the frame's pixels.
//!
//! Files: `model.rs` loading, checking inputs, the step; `image.rs` the image
//! pre-processing; `classes.rs` the top-k of a classifier's scores; `detections.rs` a
//! detector's boxes; `rungs.rs` its quality rungs (alternative files and image sizes) and
//! when a cheaper rung's answer agrees with the richest's.

mod classes;
mod detections;
mod image;
mod model;
mod rungs;

pub use classes::{ClassScore, ClassesSpec};
pub use detections::{Detection, DetectionLayout, DetectionsSpec};
pub use image::{ChannelOrder, ImageSpec, Layout, Resize};
pub use model::{OnnxInput, OnnxJob, OnnxModel, OnnxModelSpec, OnnxOutput, RUN_STEP};
pub use rungs::OnnxRungSpec;
