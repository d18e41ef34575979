//! Loading the ONNX Runtime library once per process.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use crate::backend::BackendError;
use crate::paths;

/// The process-wide ONNX Runtime environment (ONNX Runtime allows exactly one); a failure
/// is kept too, shared by every later caller.
static ENVIRONMENT: OnceLock<Result<::ort::environment::Environment, Arc<OrtLoadError>>> =
    OnceLock::new();

/// Why the ONNX Runtime library cannot be used in this process.
#[derive(Debug, thiserror::Error)]
pub enum OrtLoadError {
    /// The library file is not there.
    #[error(
        "ONNX Runtime library {} not found: run `mmsched models fetch` (it extracts it from \
         the onnxruntime==1.32.0 wheel) or set ORT_DYLIB_PATH to a libonnxruntime.so",
        path.display()
    )]
    Missing {
        /// Where it was looked for.
        path: PathBuf,
    },
    /// The library did not load.
    #[error("cannot load ONNX Runtime from {}", path.display())]
    Load {
        /// The library.
        path: PathBuf,
        /// Why the library did not load.
        #[source]
        source: ::ort::LoadDynamicError,
    },
    /// The library loaded but made no environment.
    #[error("cannot create the ONNX Runtime environment")]
    Environment(#[source] ::ort::Error),
}

/// Opens the ONNX Runtime library (once) and returns the environment.
///
/// Fails with [`BackendError::EngineUnavailable`] naming the path looked at and how to fix it.
pub fn environment() -> Result<::ort::environment::Environment, BackendError> {
    let result = ENVIRONMENT.get_or_init(|| {
        let lib = paths::onnxruntime_lib();
        if !lib.is_file() {
            return Err(Arc::new(OrtLoadError::Missing { path: lib }));
        }
        ::ort::init_from(&lib)
            .map_err(|source| {
                Arc::new(OrtLoadError::Load {
                    path: lib.clone(),
                    source,
                })
            })?
            .with_name("mmsched")
            .build()
            .map_err(|e| Arc::new(OrtLoadError::Environment(e)))
    });
    result
        .clone()
        .map_err(|why| BackendError::unavailable("ONNX Runtime", why))
}
