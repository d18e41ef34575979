//! A model of the user's own ([`OnnxModel`]) on one input: one `run` step, on whichever copy
//! of the model is free.

use std::sync::mpsc::Sender;

use mmsched_backends::onnx::{OnnxInput, OnnxModel};
use mmsched_runtime::sched::Work;

use super::Output;
use super::step::StepJob;
use crate::engines::Shared;

/// The job of `input` on the user's model `name`, whose copies are `pool`.
pub fn model(
    pool: Vec<Shared<OnnxModel>>,
    name: &'static str,
    input: OnnxInput,
    tag: u64,
    out: Sender<Output>,
) -> Box<dyn Work> {
    Box::new(StepJob::new(
        pool,
        name,
        input,
        false,
        Box::new(move |output, timing| Output::Model {
            tag,
            output,
            timing,
        }),
        out,
    ))
}
