//! # mmsched-pipeline
//!
//! The main job (`mmsched run`): a scenario's sensors — a camera, a microphone, an IMU and
//! text requests, each on its own drifting clock — flow through ingest (online clock
//! alignment, the adaptive audio jitter buffer), the router's information gates (blur and
//! darkness skip OCR, voice activity gates Whisper) and a scheduler into **real models**
//! (PP-OCRv4, Silero VAD, Whisper tiny.en, Gemma-3 270M one token per step). A health loop
//! evaluates the LDTI at the policy's rate from what it measures and acts on it: lower
//! camera rate, retransmission requests for missing audio, a circuit breaker on the
//! heaviest branch with answers from a result cache marked stale.
//!
//! The scheduler is one of four behind [`mmsched_runtime::sched::Executor`], so the same
//! inputs can be run under mmsched and under the usual alternatives.
//!
//! - [`api`]: the runtime as a library, one call per input (frame, audio, prompt);
//! - [`config`]: what to run;
//! - [`engines`]: the loaded models;
//! - [`jobs`]: one job's work per model, as the workers run it;
//! - [`models`]: what the run loop asks of the models (the engines, or fakes in tests);
//! - [`audio`]: microphone packets to VAD chunks and utterances;
//! - [`health`]: the LDTI loop and its actions;
//! - [`nack`]: retransmission requests for missing audio and the delay they need;
//! - [`stats`]: per-modality counts and latencies;
//! - [`results`]: one record per result, handed out while the run goes;
//! - [`load`]: background CPU load of the scenario's episodes;
//! - [`platform`]: the executor and the resource groups the run asks the OS for;
//! - [`run`](mod@run): the main loop;
//! - [`summary`]: the report of a run.
#![deny(missing_docs)]

pub mod api;
pub mod audio;
pub mod config;
pub mod engines;
pub mod health;
pub mod inputs;
pub mod jobs;
pub mod load;
pub mod models;
pub mod nack;
pub mod platform;
pub mod results;
pub mod run;
pub mod service;
pub mod stats;
pub mod summary;
mod trace_out;

pub use config::{External, Mechanisms, RunConfig, RunError};
pub use run::{Progress, RunOutcome, RunParts, run, run_with};
