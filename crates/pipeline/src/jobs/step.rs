//! The one job of every step model ([`StepModel`]): the model's steps one dispatch each (or
//! all in one, fused), each on whichever copy of the model is free, and the result sent as
//! the job's [`Output`] when the last step ends. The job's state lives here between steps,
//! so a due chunk of audio or another frame can run between two of them, and dropping the
//! job between steps cancels it.

use std::sync::mpsc::Sender;

use mmsched_backends::StepModel;
use mmsched_backends::probe::StageTiming;
use mmsched_core::time::{Clock, MonotonicClock, Nanos};
use mmsched_runtime::sched::{StepOutcome, Work, WorkError};

use super::{Output, work_error};
use crate::engines::{Shared, lock};

/// Turns a finished job's result and its timing into the job's [`Output`].
pub type Deliver<O> = Box<dyn FnOnce(O, StageTiming) -> Output + Send>;

/// A job of model `M`. See the [module docs](self).
pub struct StepJob<M: StepModel> {
    pool: Vec<Shared<M>>,
    /// The model's name in errors (`OCR`, or the name the user gave the model).
    model: &'static str,
    /// The input, until the first step begins the job.
    input: Option<M::Input>,
    job: Option<M::Job>,
    /// Every step in one dispatch.
    fused: bool,
    deliver: Option<Deliver<M::Output>>,
    out: Sender<Output>,
    /// Time the steps took so far.
    nanos: Nanos,
    /// Intra-op threads granted for the next step.
    granted: usize,
    /// About how many steps the job takes ([`StepModel::steps_hint`]).
    hint: Option<u32>,
}

impl<M: StepModel> std::fmt::Debug for StepJob<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StepJob")
            .field("model", &self.model)
            .field("begun", &self.job.is_some())
            .field("fused", &self.fused)
            .finish_non_exhaustive()
    }
}

impl<M: StepModel> StepJob<M> {
    /// A job on `input` for whichever model of `pool` is free at each step; `deliver`
    /// makes its output.
    pub fn new(
        pool: Vec<Shared<M>>,
        model: &'static str,
        input: M::Input,
        fused: bool,
        deliver: Deliver<M::Output>,
        out: Sender<Output>,
    ) -> Self {
        Self {
            pool,
            model,
            hint: M::steps_hint(&input),
            input: Some(input),
            job: None,
            fused,
            deliver: Some(deliver),
            out,
            nanos: 0,
            granted: 1,
        }
    }
}

impl<M> Work for StepJob<M>
where
    M: StepModel + 'static,
    M::Input: Send,
    M::Output: 'static,
{
    fn next_step(&self) -> Option<&'static str> {
        if self.fused {
            // One dispatch for the whole job: its cost is the job's.
            return None;
        }
        Some(match &self.job {
            None => M::FIRST_STEP,
            Some(job) => M::next_step(job).unwrap_or(M::FIRST_STEP),
        })
    }

    fn grant_threads(&mut self, threads: usize) {
        self.granted = threads.max(1);
    }

    fn steps_hint(&self) -> Option<u32> {
        self.hint
    }

    fn parts_left(&self) -> Option<usize> {
        self.job.as_ref().and_then(M::parts_left)
    }

    fn keep_parts(&mut self, n: usize) {
        if let Some(job) = &mut self.job {
            M::keep_parts(job, n);
        }
    }

    fn parts_per_step(&self) -> usize {
        self.job.as_ref().map_or(1, M::parts_per_step)
    }

    fn step(&mut self) -> Result<StepOutcome, WorkError> {
        let clock = MonotonicClock::new();
        let t0 = clock.now_nanos();
        let model = self.model;
        // A free copy of the model; if all are busy (never while the book keeps the jobs
        // to the pool's size), the first.
        let guard = self
            .pool
            .iter()
            .find_map(|p| p.try_lock().ok())
            .or_else(|| self.pool.first().map(|p| lock(p)));
        let Some(mut m) = guard else {
            return Err(WorkError::NoModel { model });
        };
        if let Some(input) = self.input.take() {
            self.job = Some(m.begin(input).map_err(|e| work_error(model, e))?);
        }
        let Some(job) = &mut self.job else {
            return Err(WorkError::Cancelled {
                why: "the job ended before",
            });
        };
        m.step(job, self.granted)
            .map_err(|e| work_error(model, e))?;
        while self.fused && M::next_step(job).is_some() {
            m.step(job, self.granted)
                .map_err(|e| work_error(model, e))?;
        }
        if M::next_step(job).is_some() {
            drop(m);
            self.nanos += clock.now_nanos().saturating_sub(t0);
            return Ok(StepOutcome::Yield);
        }
        let finished = self.job.take().map(|job| m.finish(job));
        drop(m);
        self.nanos += clock.now_nanos().saturating_sub(t0);
        let Some(result) = finished else {
            return Err(WorkError::Cancelled {
                why: "the job ended before",
            });
        };
        let result = result.map_err(|e| work_error(model, e))?;
        let timing = StageTiming {
            exec_nanos: self.nanos,
            ..StageTiming::default()
        };
        if let Some(deliver) = self.deliver.take() {
            let _ = self.out.send(deliver(result, timing));
        }
        Ok(StepOutcome::Finished)
    }
}
