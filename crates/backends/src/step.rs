//! The step-model trait: one loaded model that runs a job a labelled step at a time.
//!
//! Why steps, and why the job is a value of its own: the scheduler decides between steps.
//! A frame's detection may be followed by a due chunk of audio before its recognition; a
//! job may continue on whichever copy of the model is free (the job's state lives in the
//! job, not in the model); a job whose client went away is cancelled by dropping it
//! between two steps. The label of each step is the key the cost model learns under, per
//! model, rung and step, so a step that is always the same (`run`) and steps that differ
//! (`detect`, `recognize`) are predicted apart.
//!
//! A model with one engine call per job (a classifier, a detector) has one step; a model
//! that can stop halfway (OCR between detection and recognition) has several. Every model
//! the scheduler runs — the built-in ones and the user's own ([`crate::onnx::OnnxModel`]) —
//! is driven through this one trait, so a new model needs no new job code.

use crate::backend::BackendError;

/// A loaded model that runs jobs a step at a time.
pub trait StepModel: Send {
    /// What a job hands in (a frame and a plan, tensors, an image).
    type Input;
    /// A job between its steps: everything the model needs to take its next step.
    type Job: Send;
    /// The job's result.
    type Output;

    /// The label of a job's first step, before it begins (the cost model prices it before
    /// the job holds a model).
    const FIRST_STEP: &'static str;

    /// Starts a job on `input`: checks it and turns it into the job's state. Nothing heavy
    /// runs here; the first step does.
    fn begin(&mut self, input: Self::Input) -> Result<Self::Job, BackendError>;

    /// The label of the job's next step, or `None` once it has finished. (Read from the job
    /// alone, as the next three: the scheduler asks between steps, without taking a model
    /// another job may be running on.)
    fn next_step(job: &Self::Job) -> Option<&'static str>;

    /// Runs the job's next step on `threads` intra-op threads, what the scheduler granted
    /// it (at least 1; an engine that cannot change its thread count between calls keeps
    /// the count it was loaded with).
    fn step(&mut self, job: &mut Self::Job, threads: usize) -> Result<(), BackendError>;

    /// The result of a finished job (post-processing). Fails if a step is left.
    fn finish(&mut self, job: Self::Job) -> Result<Self::Output, BackendError>;

    /// About how many steps a job on `input` takes, where the model can tell before it
    /// begins (a transcription: from the audio's length); `None` when it cannot (the
    /// default). A hint: until a step's label has been measured, its cost is predicted as
    /// the whole job's over this count.
    fn steps_hint(input: &Self::Input) -> Option<u32> {
        let _ = input;
        None
    }

    /// How many parts of its input the rest of the job would read, once a step has found
    /// them and before it reads any (an OCR job's lines after its detection); `None` for a
    /// model without parts (the default).
    fn parts_left(job: &Self::Job) -> Option<usize> {
        let _ = job;
        None
    }

    /// Lets the job read only `n` of the parts [`StepModel::parts_left`] counted, those it
    /// is surest of. A model without parts ignores it (the default).
    fn keep_parts(job: &mut Self::Job, n: usize) {
        let _ = (job, n);
    }

    /// Parts each later step reads (1 by default).
    fn parts_per_step(job: &Self::Job) -> usize {
        let _ = job;
        1
    }
}

/// Runs every step of a job on `model`, then returns its result: a whole job in one call,
/// for callers outside the scheduler (a benchmark, a reference check).
pub fn run_to_end<M: StepModel>(model: &mut M, input: M::Input) -> Result<M::Output, BackendError> {
    let mut job = model.begin(input)?;
    while M::next_step(&job).is_some() {
        model.step(&mut job, 1)?;
    }
    model.finish(job)
}
