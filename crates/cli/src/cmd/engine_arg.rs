//! The `--engine` and `--threads` flags shared by the inference commands.

use clap::{Args, ValueEnum};
use mmsched_backends::asr::{AsrEngine, EncoderSpan};
use mmsched_backends::{EngineKind, EngineOptions};

/// Which Whisper engine runs speech recognition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AsrEngineArg {
    /// q8_0 weights (`models fetch` makes them): the decoder on ggml, llama.cpp's tensor
    /// library, the encoder widened to float32 on the `gemm` crate. The fastest, and the
    /// default.
    Ggml,
    /// The same q8_0 weights on candle, with a cached decoder.
    Q8,
    /// The float weights on candle's stock Whisper: the reference.
    F32,
}

impl From<AsrEngineArg> for AsrEngine {
    fn from(e: AsrEngineArg) -> Self {
        match e {
            AsrEngineArg::Ggml => AsrEngine::Ggml,
            AsrEngineArg::Q8 => AsrEngine::Q8,
            AsrEngineArg::F32 => AsrEngine::F32,
        }
    }
}

/// What Whisper's encoder runs over in each 30 s window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SpanArg {
    /// The whole 30 s window, padding included, as Whisper and CTranslate2 run it (the
    /// default: the reference transcripts).
    Window,
    /// The audio and 1 s of the silent padding after it: a short utterance costs a fraction
    /// of a whole window, but transcripts may change (punctuation, sometimes a word).
    Audio,
}

impl From<SpanArg> for EncoderSpan {
    fn from(s: SpanArg) -> Self {
        match s {
            SpanArg::Audio => EncoderSpan::Audio,
            SpanArg::Window => EncoderSpan::Window,
        }
    }
}

/// Which ONNX engine runs the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EngineArg {
    /// ONNX Runtime where its library loads, else tract (with a one-line note).
    Auto,
    /// tract: pure Rust, always available.
    Tract,
    /// ONNX Runtime: needs the library in `$MMSCHED_HOME/lib/libonnxruntime.so.1.32.0`
    /// (`mmsched models fetch` installs it) or `ORT_DYLIB_PATH`.
    Ort,
}

impl From<EngineArg> for EngineKind {
    fn from(e: EngineArg) -> Self {
        match e {
            EngineArg::Auto => EngineKind::preferred(),
            EngineArg::Tract => EngineKind::Tract,
            EngineArg::Ort => EngineKind::Ort,
        }
    }
}

/// Engine selection flags.
#[derive(Debug, Clone, Args)]
pub struct EngineFlags {
    /// ONNX engine to run the model with (`auto`: ONNX Runtime where its library is
    /// present, else tract).
    #[arg(long, value_enum, default_value = "auto")]
    pub engine: EngineArg,
    /// Threads the engine may use inside one operator (tract is always single-threaded in
    /// this build; ONNX Runtime uses this many intra-op threads).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub threads: u16,
}

impl EngineFlags {
    /// The engine options these flags ask for.
    pub fn options(&self) -> EngineOptions {
        EngineOptions {
            kind: self.engine.into(),
            threads: usize::from(self.threads),
        }
    }
}

/// Milliseconds with microsecond precision, for display and JSON.
pub fn ms(nanos: u64) -> f64 {
    (nanos as f64 / 1e3).round() / 1e3
}
