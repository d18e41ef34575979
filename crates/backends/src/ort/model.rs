//! Loading the ONNX Runtime library once per process.

use std::sync::OnceLock;

use crate::backend::BackendError;
use crate::paths;

/// The process-wide ONNX Runtime environment (ONNX Runtime allows exactly one).
static ENVIRONMENT: OnceLock<Result<::ort::environment::Environment, String>> = OnceLock::new();

/// Opens the ONNX Runtime library (once) and returns the environment.
///
/// Fails with [`BackendError::EngineUnavailable`] naming the path looked at and how to fix it.
pub fn environment() -> Result<::ort::environment::Environment, BackendError> {
    let result = ENVIRONMENT.get_or_init(|| {
        let lib = paths::onnxruntime_lib();
        if !lib.is_file() {
            return Err(format!(
                "ONNX Runtime library {} not found: run `mmsched models fetch` (it extracts it from \
                 the onnxruntime==1.32.0 wheel) or set ORT_DYLIB_PATH to a libonnxruntime.so",
                lib.display()
            ));
        }
        ::ort::init_from(&lib)
            .map_err(|e| format!("cannot load ONNX Runtime from {}: {e}", lib.display()))?
            .with_name("mmsched")
            .build()
            .map_err(|e| format!("cannot create the ONNX Runtime environment: {e}"))
    });
    result
        .clone()
        .map_err(|why| BackendError::unavailable("ONNX Runtime", why))
}
