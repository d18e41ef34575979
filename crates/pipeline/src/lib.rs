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
//! The run loop is the one runtime for every client: a scenario's streams, the
//! OpenAI-compatible endpoints (crate `mmsched-openai`), the library ([`api`]) all hand it
//! [`request::Request`]s, and one book of jobs ([`book`]) schedules, traces and counts them.
//!
//! - [`request`]: what a client submits and what it hears back;
//! - [`client`]: submitting to a running runtime; [`host`]: a runtime on its own thread;
//! - [`api`]: the runtime as a library, one call per input (frame, audio, prompt);
//! - [`book`]: the one book of jobs;
//! - [`config`]: what to run; [`source_error`]: why a stream's source did not open;
//! - [`engines`]: the loaded models; [`sessions`]: the text sessions, one per request;
//! - [`jobs`]: the one job factory, each model's work as the workers run it;
//! - [`stop`]: stop sequences of a text request;
//! - [`models`]: what the runtime asks of the models (the engines, or fakes in tests);
//! - [`simulate`]: a run of the real loop in virtual time on simulated models (`sim run`);
//! - [`audio`]: microphone packets to VAD chunks and utterances;
//! - [`health`]: the LDTI loop and its actions;
//! - [`nack`]: retransmission requests for missing audio and the delay they need;
//! - [`stats`]: per-modality counts and latencies; [`latency`]: latencies in bounded memory;
//! - [`window`]: the outcomes of the last minutes, for a long run's summary;
//! - [`results`]: one record per result, handed out while the run goes;
//! - [`load`]: background CPU load of the scenario's episodes;
//! - [`platform`]: the executor and the resource groups the run asks the OS for;
//! - [`run`](mod@run): the main loop;
//! - [`summary`]: the report of a run; [`trace_files`]: the trace's files, rotating within a
//!   cap.
#![deny(missing_docs)]

pub mod api;
pub mod audio;
pub mod book;
pub mod classes;
pub mod client;
pub mod conditions;
pub mod config;
pub mod engines;
pub mod health;
pub mod host;
pub mod inputs;
pub mod jobs;
pub mod latency;
pub mod load;
pub mod models;
pub mod nack;
pub mod per_kind;
pub mod platform;
pub mod replay;
pub mod request;
pub mod results;
pub mod rtp_record;
pub mod run;
pub mod sessions;
pub mod simulate;
pub mod source_error;
pub mod stats;
pub mod stop;
pub mod summary;
pub mod text_batch;
pub mod trace_files;
pub mod trace_out;
pub mod truth;
pub mod window;

pub use config::{External, Mechanisms, PolicyUpdate, RunConfig, RunError};
pub use run::{Progress, RunOutcome, RunParts, run, run_with};
