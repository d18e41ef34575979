//! One user's ONNX model: loaded from a file, its inputs checked once, each job one engine
//! call.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::classes::{ClassScore, ClassesPlan, ClassesSpec};
use super::detections::{Detection, DetectionsPlan, DetectionsSpec};
use super::image::{ImagePlan, ImageSpec};
use super::rungs::OnnxRungSpec;
use crate::backend::{Backend, BackendError};
use crate::engine::{EngineOptions, OnnxSession, open_session};
use crate::frame::RgbFrame;
use crate::step::StepModel;
use crate::tensor::{DataType, TensorF32, TensorInfo};

/// A model as a scenario's `[[models]]` entry or `--model NAME=FILE` declares it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OnnxModelSpec {
    /// The name clients and results use (`orientation`, `detector` …).
    pub name: String,
    /// The `.onnx` file.
    pub file: PathBuf,
    /// How an image becomes its image input, for a model fed images.
    #[serde(default)]
    pub image: Option<ImageSpec>,
    /// How its output reads as classes, for a classifier.
    #[serde(default)]
    pub classes: Option<ClassesSpec>,
    /// How its output reads as boxes, for a detector.
    #[serde(default)]
    pub detections: Option<DetectionsSpec>,
    /// Its quality rungs, richest first (`[[models.rungs]]`; none: it runs as it is).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rungs: Vec<OnnxRungSpec>,
}

/// What one job hands in.
#[derive(Debug, Clone, PartialEq)]
pub enum OnnxInput {
    /// An image, for a model with an image input.
    Image(RgbFrame),
    /// One tensor per graph input, in the graph's order.
    Tensors(Vec<TensorF32>),
}

/// A job between its steps: its input tensors until the step runs, then its outputs.
#[derive(Debug)]
pub struct OnnxJob {
    input: Option<OnnxInput>,
    outputs: Option<Vec<TensorF32>>,
    /// The size of the frame fed, for an image (boxes are mapped back to it).
    frame: Option<(u32, u32)>,
}

/// A finished job's result.
#[derive(Debug, Clone, PartialEq)]
pub struct OnnxOutput {
    /// Every output, named as in the graph, in the graph's order.
    pub tensors: Vec<(String, TensorF32)>,
    /// For a classifier: the best classes of each row of its scores.
    pub classes: Option<Vec<Vec<ClassScore>>>,
    /// For a detector: the boxes found in the (first) image, best first.
    pub detections: Option<Vec<Detection>>,
}

/// A loaded ONNX model of the user's.
pub struct OnnxModel {
    name: String,
    session: Box<dyn OnnxSession>,
    inputs: Vec<TensorInfo>,
    outputs: Vec<TensorInfo>,
    image: Option<ImagePlan>,
    classes: Option<ClassesPlan>,
    detections: Option<DetectionsPlan>,
    file_bytes: u64,
}

impl std::fmt::Debug for OnnxModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OnnxModel")
            .field("name", &self.name)
            .field("inputs", &self.inputs)
            .field("outputs", &self.outputs)
            .finish()
    }
}

/// The one step of every job.
pub const RUN_STEP: &str = "run";

impl OnnxModel {
    /// Loads `spec.file` with the engine in `options` and checks that every input can be
    /// fed: an error names the input, its type and shape, and the fix.
    pub fn load(spec: &OnnxModelSpec, options: &EngineOptions) -> Result<Self, BackendError> {
        let name = spec.name.clone();
        let session = open_session(&spec.file, options)?;
        let Some((inputs, outputs)) = session.signature() else {
            return Err(BackendError::unavailable(
                "ONNX Runtime",
                format!(
                    "model {name}: the {} engine cannot read a graph's inputs and outputs; your own ONNX models run on ONNX Runtime: run `mmsched models fetch --only onnxruntime` and drop `--engine tract`",
                    session.engine()
                ),
            ));
        };
        let (inputs, outputs) = (inputs.to_vec(), outputs.to_vec());
        if let Some(bad) = inputs.iter().find(|i| i.datatype != DataType::Fp32) {
            return Err(BackendError::InvalidInput(format!(
                "model {name}: input `{}` is {} {}; this build feeds FP32 inputs only: export the model with a float input (or cast in the graph)",
                bad.name,
                bad.datatype,
                bad.shape_text()
            )));
        }
        // Without a declared spec, a model whose one input is a 3-channel image of fixed
        // size still takes images, with the default pre-processing (stretched, RGB, 0–1).
        let image = match &spec.image {
            Some(s) => Some(s.plan(&name, &inputs)?),
            None if inputs.len() == 1 => ImageSpec::default().plan(&name, &inputs).ok(),
            None => None,
        };
        let classes = spec
            .classes
            .as_ref()
            .map(|c| c.plan(&name, &outputs, |k| session.metadata(k)))
            .transpose()?;
        let detections = spec
            .detections
            .as_ref()
            .map(|d| d.plan(&name, &outputs, |k| session.metadata(k)))
            .transpose()?;
        let file_bytes = std::fs::metadata(&spec.file).map_or(0, |m| m.len());
        Ok(Self {
            name,
            session,
            inputs,
            outputs,
            image,
            classes,
            detections,
            file_bytes,
        })
    }

    /// The graph's inputs.
    pub fn inputs(&self) -> &[TensorInfo] {
        &self.inputs
    }

    /// The graph's outputs.
    pub fn outputs(&self) -> &[TensorInfo] {
        &self.outputs
    }

    /// Whether it takes images (an image spec was declared).
    pub fn takes_images(&self) -> bool {
        self.image.is_some()
    }

    /// The image size it is fed, for a model that takes images.
    pub fn image_size(&self) -> Option<(u32, u32)> {
        self.image.as_ref().map(ImagePlan::size)
    }

    /// Zeros of every input's shape (a free dimension as 1): an input to time or warm the
    /// model with when no real one is at hand.
    pub fn zeros(&self) -> OnnxInput {
        OnnxInput::Tensors(
            self.inputs
                .iter()
                .map(|i| {
                    let shape: Vec<usize> = i.shape.iter().map(|&d| d.max(1) as usize).collect();
                    let n = shape.iter().product();
                    TensorF32 {
                        shape,
                        data: vec![0.0; n],
                    }
                })
                .collect(),
        )
    }

    /// Whether its output reads as classes.
    pub fn is_classifier(&self) -> bool {
        self.classes.is_some()
    }

    /// Whether its output reads as boxes.
    pub fn is_detector(&self) -> bool {
        self.detections.is_some()
    }

    /// Checks a job's input against the graph: an image for a model that takes one, or a
    /// tensor of a fitting shape for each input.
    fn check(&self, input: &OnnxInput) -> Result<(), BackendError> {
        let name = &self.name;
        match input {
            OnnxInput::Image(_) if self.image.is_none() => {
                Err(BackendError::InvalidInput(format!(
                    "model {name} was not declared with an image input: send its tensors ({}), or declare `image` for it",
                    self.inputs_text()
                )))
            }
            OnnxInput::Image(_) if self.inputs.len() != 1 => {
                Err(BackendError::InvalidInput(format!(
                    "model {name} takes {} inputs ({}); an image feeds one: send every input as a tensor",
                    self.inputs.len(),
                    self.inputs_text()
                )))
            }
            OnnxInput::Image(_) => Ok(()),
            OnnxInput::Tensors(tensors) if tensors.len() != self.inputs.len() => {
                Err(BackendError::InvalidInput(format!(
                    "model {name} takes {} inputs ({}), got {}",
                    self.inputs.len(),
                    self.inputs_text(),
                    tensors.len()
                )))
            }
            OnnxInput::Tensors(tensors) => {
                match self
                    .inputs
                    .iter()
                    .zip(tensors)
                    .find(|(i, t)| !i.accepts(&t.shape))
                {
                    Some((info, t)) => Err(BackendError::InvalidInput(format!(
                        "model {name}: input `{}` must be {}, got {:?}",
                        info.name,
                        info.shape_text(),
                        t.shape
                    ))),
                    None => Ok(()),
                }
            }
        }
    }

    /// The engine's input of a checked job: the image pre-processed, or the tensors as
    /// they came (moved, not copied).
    fn engine_input(&self, input: OnnxInput) -> Vec<TensorF32> {
        match (input, &self.image) {
            (OnnxInput::Image(frame), Some(plan)) => vec![plan.tensor(&frame)],
            (OnnxInput::Tensors(tensors), _) => tensors,
            // Refused by `check`.
            (OnnxInput::Image(_), None) => Vec::new(),
        }
    }

    /// The engine's outputs named, read as classes for a classifier and as boxes for a
    /// detector (in the pixels of the `frame` fed, where one was).
    fn read_outputs(
        &self,
        outputs: Vec<TensorF32>,
        frame: Option<(u32, u32)>,
    ) -> Result<OnnxOutput, BackendError> {
        let nth = |i: usize| {
            outputs.get(i).ok_or_else(|| {
                BackendError::engine(
                    "ONNX Runtime",
                    "the engine returned fewer outputs than the graph lists",
                )
            })
        };
        let classes = match &self.classes {
            Some(plan) => Some(plan.top(nth(plan.output)?)?),
            None => None,
        };
        let detections = match &self.detections {
            Some(plan) => {
                let mut found = plan.decode(nth(plan.output)?)?;
                if let (Some((fw, fh)), Some(image)) = (frame, &self.image) {
                    for d in &mut found {
                        d.bbox = image.to_frame(d.bbox, fw, fh);
                    }
                }
                Some(found)
            }
            None => None,
        };
        let tensors = self
            .outputs
            .iter()
            .map(|o| o.name.clone())
            .zip(outputs)
            .collect();
        Ok(OnnxOutput {
            tensors,
            classes,
            detections,
        })
    }

    fn inputs_text(&self) -> String {
        let all: Vec<String> = self
            .inputs
            .iter()
            .map(|i| format!("`{}` {} {}", i.name, i.datatype, i.shape_text()))
            .collect();
        all.join(", ")
    }
}

impl StepModel for OnnxModel {
    type Input = OnnxInput;
    type Job = OnnxJob;
    type Output = OnnxOutput;

    const FIRST_STEP: &'static str = RUN_STEP;

    fn begin(&mut self, input: OnnxInput) -> Result<OnnxJob, BackendError> {
        // The cheap checks now, so a bad request fails before its step runs.
        self.check(&input)?;
        Ok(OnnxJob {
            frame: frame_size(&input),
            input: Some(input),
            outputs: None,
        })
    }

    fn next_step(job: &OnnxJob) -> Option<&'static str> {
        job.outputs.is_none().then_some(RUN_STEP)
    }

    fn step(&mut self, job: &mut OnnxJob, _threads: usize) -> Result<(), BackendError> {
        let Some(input) = job.input.take() else {
            return Err(BackendError::InvalidInput(
                "the job has run: take its result".into(),
            ));
        };
        let tensors = self.engine_input(input);
        job.outputs = Some(self.session.run(tensors)?);
        Ok(())
    }

    fn finish(&mut self, job: OnnxJob) -> Result<OnnxOutput, BackendError> {
        let Some(outputs) = job.outputs else {
            return Err(BackendError::InvalidInput(
                "the job has not run yet: run its step first".into(),
            ));
        };
        self.read_outputs(outputs, job.frame)
    }
}

/// The size of the frame an input is, if it is one.
fn frame_size(input: &OnnxInput) -> Option<(u32, u32)> {
    match input {
        OnnxInput::Image(f) => Some((f.width(), f.height())),
        OnnxInput::Tensors(_) => None,
    }
}

/// The same model as a [`Backend`]: pre-processing (the image to its tensor, or the tensors
/// checked), the engine call, and reading the outputs, each timed apart by the probe
/// (`bench models` measures the generic path against a direct engine call with it).
impl Backend for OnnxModel {
    type Input = OnnxInput;
    /// The engine's inputs, and the size of the frame they came from (for boxes).
    type Prepared = (Vec<TensorF32>, Option<(u32, u32)>);
    type Raw = (Vec<TensorF32>, Option<(u32, u32)>);
    type Output = OnnxOutput;

    fn name(&self) -> &str {
        &self.name
    }

    fn prepare(&mut self, input: &OnnxInput) -> Result<Self::Prepared, BackendError> {
        self.check(input)?;
        let tensors = match (input, &self.image) {
            (OnnxInput::Image(frame), Some(plan)) => vec![plan.tensor(frame)],
            (OnnxInput::Tensors(tensors), _) => tensors.clone(),
            (OnnxInput::Image(_), None) => Vec::new(),
        };
        Ok((tensors, frame_size(input)))
    }

    fn execute(&mut self, (tensors, frame): Self::Prepared) -> Result<Self::Raw, BackendError> {
        Ok((self.session.run(tensors)?, frame))
    }

    fn finish(&mut self, (outputs, frame): Self::Raw) -> Result<OnnxOutput, BackendError> {
        self.read_outputs(outputs, frame)
    }

    fn memory_bytes(&self) -> u64 {
        // The weights, once, and about as much again for the engine's arenas.
        self.file_bytes * 2
    }
}
