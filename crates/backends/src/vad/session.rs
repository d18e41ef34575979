//! The Silero VAD backend: one 512-sample chunk in, one speech probability out, with the
//! recurrent state carried from chunk to chunk.

use super::model::{CHUNK_SAMPLES, CONTEXT_SAMPLES, STATE_LEN, STATE_SHAPE, VadConfig, open};
use crate::backend::{Backend, BackendError};
use crate::engine::OnnxSession;
use crate::tensor::TensorF32;

/// Silero VAD on a 16 kHz stream. Chunks must be fed in order; [`SileroVad::reset`] starts a
/// new stream.
pub struct SileroVad {
    session: Box<dyn OnnxSession>,
    state: Vec<f32>,
    context: Vec<f32>,
    bytes: u64,
}

impl std::fmt::Debug for SileroVad {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SileroVad")
            .field("engine", &self.session.engine())
            .finish()
    }
}

/// The model inputs for one chunk.
#[derive(Debug, Clone, PartialEq)]
pub struct VadPrepared {
    /// `[1, 576]`: 64 samples of context, then the chunk.
    pub input: TensorF32,
    /// `[2, 1, 128]`: the recurrent state.
    pub state: TensorF32,
}

/// The model outputs for one chunk, with the context for the next one.
#[derive(Debug, Clone, PartialEq)]
pub struct VadRaw {
    outputs: Vec<TensorF32>,
    next_context: Vec<f32>,
}

impl SileroVad {
    /// Loads the model named in `config`.
    pub fn new(config: VadConfig) -> Result<Self, BackendError> {
        let session = open(&config)?;
        let bytes = std::fs::metadata(&config.path)
            .map(|m| m.len())
            .unwrap_or(0);
        Ok(Self {
            session,
            state: vec![0.0; STATE_LEN],
            context: vec![0.0; CONTEXT_SAMPLES],
            bytes,
        })
    }

    /// Forgets the stream so far (state and context back to zero).
    pub fn reset(&mut self) {
        self.state.iter_mut().for_each(|v| *v = 0.0);
        self.context.iter_mut().for_each(|v| *v = 0.0);
    }

    /// The engine session (for benchmarks comparing against direct engine calls).
    pub fn session_mut(&mut self) -> &mut dyn OnnxSession {
        self.session.as_mut()
    }

    /// Speech probability of every whole chunk of `samples` (16 kHz), in order, continuing
    /// the current stream. A trailing partial chunk is zero-padded.
    pub fn probabilities(&mut self, samples: &[f32]) -> Result<Vec<f32>, BackendError> {
        let mut probs = Vec::with_capacity(samples.len().div_ceil(CHUNK_SAMPLES));
        for chunk in samples.chunks(CHUNK_SAMPLES) {
            let mut c = chunk.to_vec();
            c.resize(CHUNK_SAMPLES, 0.0);
            let prepared = self.prepare(&c)?;
            let raw = self.execute(prepared)?;
            probs.push(self.finish(raw)?);
        }
        Ok(probs)
    }
}

impl Backend for SileroVad {
    type Input = Vec<f32>;
    type Prepared = VadPrepared;
    type Raw = VadRaw;
    type Output = f32;

    fn name(&self) -> &str {
        "silero-vad"
    }

    fn prepare(&mut self, input: &Vec<f32>) -> Result<VadPrepared, BackendError> {
        if input.len() != CHUNK_SAMPLES {
            return Err(BackendError::InvalidInput(format!(
                "a VAD chunk is {CHUNK_SAMPLES} samples at 16 kHz (32 ms), got {}",
                input.len()
            )));
        }
        let mut data = Vec::with_capacity(CONTEXT_SAMPLES + CHUNK_SAMPLES);
        data.extend_from_slice(&self.context);
        data.extend_from_slice(input);
        Ok(VadPrepared {
            input: TensorF32 {
                shape: vec![1, CONTEXT_SAMPLES + CHUNK_SAMPLES],
                data,
            },
            state: TensorF32 {
                shape: STATE_SHAPE.to_vec(),
                data: self.state.clone(),
            },
        })
    }

    fn execute(&mut self, prepared: VadPrepared) -> Result<VadRaw, BackendError> {
        let next_context = prepared.input.data[prepared.input.len() - CONTEXT_SAMPLES..].to_vec();
        let outputs = self.session.run(vec![prepared.input, prepared.state])?;
        Ok(VadRaw {
            outputs,
            next_context,
        })
    }

    fn finish(&mut self, raw: VadRaw) -> Result<f32, BackendError> {
        let [prob, state] = raw.outputs.as_slice() else {
            return Err(BackendError::engine(
                "Silero VAD",
                format!(
                    "VAD returned {} outputs, expected 2 (probability, state)",
                    raw.outputs.len()
                ),
            ));
        };
        if state.len() != STATE_LEN || prob.is_empty() {
            return Err(BackendError::engine(
                "Silero VAD",
                format!(
                    "VAD outputs have shapes {:?} and {:?}, expected [1, 1] and {STATE_SHAPE:?}",
                    prob.shape, state.shape
                ),
            ));
        }
        self.state.copy_from_slice(&state.data);
        self.context = raw.next_context;
        Ok(prob.data[0])
    }

    fn memory_bytes(&self) -> u64 {
        self.bytes
    }
}

/// A voice-activity job: the chunk until its one step runs, then its probability.
#[derive(Debug)]
pub struct VadJob {
    chunk: Option<Vec<f32>>,
    prob: Option<f32>,
}

/// Silero VAD as a step model of one step (`vad`): a 32 ms chunk in, its speech probability
/// out, the model's state carried to the next chunk.
impl crate::step::StepModel for SileroVad {
    type Input = Vec<f32>;
    type Job = VadJob;
    type Output = f32;

    const FIRST_STEP: &'static str = "vad";

    fn begin(&mut self, chunk: Vec<f32>) -> Result<VadJob, BackendError> {
        if chunk.len() != CHUNK_SAMPLES {
            return Err(BackendError::InvalidInput(format!(
                "a VAD chunk is {CHUNK_SAMPLES} samples at 16 kHz (32 ms), got {}",
                chunk.len()
            )));
        }
        Ok(VadJob {
            chunk: Some(chunk),
            prob: None,
        })
    }

    fn next_step(job: &VadJob) -> Option<&'static str> {
        job.prob.is_none().then_some(Self::FIRST_STEP)
    }

    fn step(&mut self, job: &mut VadJob, _threads: usize) -> Result<(), BackendError> {
        let Some(chunk) = job.chunk.take() else {
            return Err(BackendError::InvalidInput(
                "the chunk has run: take its probability".into(),
            ));
        };
        let prepared = self.prepare(&chunk)?;
        let raw = self.execute(prepared)?;
        job.prob = Some(Backend::finish(self, raw)?);
        Ok(())
    }

    fn finish(&mut self, job: VadJob) -> Result<f32, BackendError> {
        job.prob.ok_or_else(|| {
            BackendError::InvalidInput("the chunk has not run yet: run its step first".into())
        })
    }
}
