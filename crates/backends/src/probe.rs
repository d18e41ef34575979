//! The uniform timing probe (S8): every inference is timed in the same three stages.

use mmsched_core::time::{Clock, Nanos};
use serde::Serialize;

use crate::backend::{Backend, BackendError};

/// Time spent in each stage of one inference, in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct StageTiming {
    /// Pre-processing.
    pub pre_nanos: Nanos,
    /// Model execution.
    pub exec_nanos: Nanos,
    /// Post-processing.
    pub post_nanos: Nanos,
}

impl StageTiming {
    /// Total time of the three stages.
    pub fn total_nanos(&self) -> Nanos {
        self.pre_nanos + self.exec_nanos + self.post_nanos
    }
}

/// Runs one job through `backend`, timing each stage with `clock`.
pub fn run_timed<B: Backend + ?Sized, C: Clock + ?Sized>(
    backend: &mut B,
    input: &B::Input,
    clock: &C,
) -> Result<(B::Output, StageTiming), BackendError> {
    let t0 = clock.now_nanos();
    let prepared = backend.prepare(input)?;
    let t1 = clock.now_nanos();
    let raw = backend.execute(prepared)?;
    let t2 = clock.now_nanos();
    let out = backend.finish(raw)?;
    let t3 = clock.now_nanos();
    Ok((
        out,
        StageTiming {
            pre_nanos: t1 - t0,
            exec_nanos: t2 - t1,
            post_nanos: t3 - t2,
        },
    ))
}
