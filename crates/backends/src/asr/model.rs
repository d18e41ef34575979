//! Loading Whisper: weights (q8_0 GGUF, or float safetensors), configuration, tokenizer and
//! mel filterbank.

use std::path::{Path, PathBuf};

use candle_core::{DType, Device, IndexOp, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::whisper::{self, Config, model::Whisper};
use mmsched_models::{Artifact, ModelPaths};
use tokenizers::Tokenizer;

use crate::asr::audio::{SAMPLE_RATE_HZ, mel_filterbank};
#[cfg(feature = "llama")]
use crate::asr::ggml::GgmlWhisper;
use crate::asr::quantized::QuantizedWhisper;
use crate::backend::BackendError;

/// Which Whisper weights run, and on which model code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AsrEngine {
    /// q8_0 projections (the GGUF `models fetch` makes) on ggml, the tensor library
    /// llama.cpp is built with ([`crate::asr::ggml`]): the fastest engine, and the default
    /// where llama.cpp is compiled in (`mmsched bench models --asr-engine ggml,q8,f32`).
    Ggml,
    /// The same q8_0 weights on mmsched's adaptation of candle's quantized Whisper, whose
    /// decoder keeps a self-attention KV cache.
    Q8,
    /// The float weights (safetensors) on candle's stock Whisper, which recomputes the
    /// whole prefix at every decoding step: the reference, and the default in builds
    /// without llama.cpp.
    F32,
}

impl Default for AsrEngine {
    fn default() -> Self {
        if cfg!(feature = "llama") {
            AsrEngine::Ggml
        } else {
            AsrEngine::F32
        }
    }
}

impl AsrEngine {
    /// The engine's short name (`ggml`, `q8` or `f32`).
    pub fn as_str(self) -> &'static str {
        match self {
            AsrEngine::Ggml => "ggml",
            AsrEngine::Q8 => "q8",
            AsrEngine::F32 => "f32",
        }
    }

    /// The label benchmarks and profiles report (`ggml-q8`, `candle-q8`, `candle-f32`).
    pub fn label(self) -> &'static str {
        match self {
            AsrEngine::Ggml => "ggml-q8",
            AsrEngine::Q8 => "candle-q8",
            AsrEngine::F32 => "candle-f32",
        }
    }
}

impl std::fmt::Display for AsrEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for AsrEngine {
    type Err = BackendError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "ggml" => Ok(AsrEngine::Ggml),
            "q8" => Ok(AsrEngine::Q8),
            "f32" => Ok(AsrEngine::F32),
            other => Err(BackendError::InvalidInput(format!(
                "unknown Whisper engine `{other}`: use `ggml`, `q8` or `f32`"
            ))),
        }
    }
}

/// Where the Whisper files are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WhisperFiles {
    /// `model.safetensors` (Hugging Face tensor names, float16): the [`AsrEngine::F32`] weights.
    pub weights: PathBuf,
    /// `model-q8_0.gguf`: the [`AsrEngine::Ggml`] and [`AsrEngine::Q8`] weights.
    pub quantized: PathBuf,
    /// Hugging Face style `config.json`.
    pub config: PathBuf,
    /// `tokenizer.json`.
    pub tokenizer: PathBuf,
}

impl WhisperFiles {
    /// The files in the model cache. A missing configuration or tokenizer is an error naming
    /// the fetch command; the weights are checked when an engine loads them.
    pub fn from_cache(paths: &ModelPaths) -> Result<Self, BackendError> {
        let need = |a: Artifact| {
            paths.require(a).map_err(|e| BackendError::ModelMissing {
                path: e.path.display().to_string(),
            })
        };
        Ok(Self {
            weights: paths.path_of(Artifact::WhisperModel),
            quantized: paths.path_of(Artifact::WhisperQ8),
            config: need(Artifact::WhisperConfig)?,
            tokenizer: need(Artifact::WhisperTokenizer)?,
        })
    }

    /// The weights file `engine` loads.
    pub fn weights_for(&self, engine: AsrEngine) -> &Path {
        match engine {
            AsrEngine::Ggml | AsrEngine::Q8 => &self.quantized,
            AsrEngine::F32 => &self.weights,
        }
    }
}

/// The network of one engine, driven one window and one token at a time.
#[derive(Debug)]
pub enum WhisperNet {
    /// Whisper with q8_0 projections on ggml.
    #[cfg(feature = "llama")]
    Ggml(Box<GgmlWhisper>),
    /// candle's stock float Whisper.
    F32(Box<Whisper>),
    /// Whisper with q8_0 projections and a cached decoder, on candle.
    Q8(Box<QuantizedWhisper>),
}

/// One part of encoding a window on an engine that encodes in parts.
#[derive(Debug, Clone, Copy)]
pub enum EncoderPart<'a> {
    /// The convolutions over this window's log-mel spectrogram (`1 × n_mels × frames`).
    Stem(&'a Tensor),
    /// The next this many encoder blocks.
    Layers(usize),
    /// The final norm and the decoder's cross-attention keys and values.
    Cross,
}

/// A window's audio features, as the engine holds them between decoding steps.
#[derive(Debug, Clone)]
pub enum AudioFeatures {
    /// The encoder's output (candle engines).
    Tensor(Tensor),
    /// Kept inside the engine, as cross-attention keys and values (ggml).
    InEngine,
}

/// A candle error as the backend reports it.
pub(super) fn candle(e: candle_core::Error) -> BackendError {
    BackendError::engine("candle", crate::backend::candle_cause(e))
}

impl WhisperNet {
    /// Starts a new 30 s window: forgets the previous window's decoder state and returns the
    /// audio features of `mel` (`1 × n_mels × frames`), computed once per window.
    pub fn start_window(&mut self, mel: &Tensor) -> Result<AudioFeatures, BackendError> {
        match self {
            #[cfg(feature = "llama")]
            WhisperNet::Ggml(m) => {
                let (_, _, frames) = mel.dims3().map_err(candle)?;
                let values = mel.flatten_all().and_then(|t| t.to_vec1::<f32>());
                m.encode(&values.map_err(candle)?, frames)?;
                Ok(AudioFeatures::InEngine)
            }
            WhisperNet::F32(m) => {
                m.reset_kv_cache();
                m.encoder
                    .forward(mel, true)
                    .map(AudioFeatures::Tensor)
                    .map_err(candle)
            }
            WhisperNet::Q8(m) => {
                m.decoder.reset();
                m.encoder
                    .forward(mel)
                    .map(AudioFeatures::Tensor)
                    .map_err(candle)
            }
        }
    }

    /// The encoder's layers when this engine runs its encoder in parts (ggml), `None` when
    /// it runs it whole (the candle engines: one [`WhisperNet::start_window`]).
    pub fn encoder_parts(&self) -> Option<usize> {
        match self {
            #[cfg(feature = "llama")]
            WhisperNet::Ggml(m) => Some(m.encoder_layers()),
            _ => None,
        }
    }

    /// Runs one part of a window's encoding on an engine that encodes in parts
    /// ([`WhisperNet::encoder_parts`]): the stem starts a new window, as
    /// [`WhisperNet::start_window`] does; after the cross part the decoder runs over it
    /// (its features are [`AudioFeatures::InEngine`]).
    pub fn encode_part(&mut self, part: EncoderPart<'_>) -> Result<(), BackendError> {
        match self {
            #[cfg(feature = "llama")]
            WhisperNet::Ggml(m) => match part {
                EncoderPart::Stem(mel) => {
                    let (_, _, frames) = mel.dims3().map_err(candle)?;
                    let values = mel.flatten_all().and_then(|t| t.to_vec1::<f32>());
                    m.encode_stem(&values.map_err(candle)?, frames)
                }
                EncoderPart::Layers(count) => m.encode_layers(count),
                EncoderPart::Cross => m.encode_cross(),
            },
            _ => {
                let _ = part;
                Err(BackendError::InvalidInput(
                    "this Whisper engine runs its encoder whole (start_window), not in parts"
                        .into(),
                ))
            }
        }
    }

    /// Logits (`vocab`) of the token after `tokens`, the window's tokens so far (its prefix
    /// included). The ggml and q8 decoders run only the tokens they have not seen; the stock
    /// f32 decoder runs them all again.
    pub fn next_logits(
        &mut self,
        tokens: &[u32],
        features: &AudioFeatures,
    ) -> Result<Tensor, BackendError> {
        match (self, features) {
            #[cfg(feature = "llama")]
            (WhisperNet::Ggml(m), _) => {
                let seen = m.cached().min(tokens.len().saturating_sub(1));
                let logits = m.step(&tokens[seen..])?;
                let n = logits.len();
                Tensor::from_vec(logits, n, &Device::Cpu).map_err(candle)
            }
            (WhisperNet::F32(m), AudioFeatures::Tensor(features)) => {
                let input = Tensor::new(tokens, features.device())
                    .and_then(|t| t.unsqueeze(0))
                    .map_err(candle)?;
                let ys = m.decoder.forward(&input, features, false).map_err(candle)?;
                let (_, seq_len, _) = ys.dims3().map_err(candle)?;
                ys.i((..1, seq_len - 1..))
                    .and_then(|last| m.decoder.final_linear(&last))
                    .and_then(|l| l.i(0)?.i(0))
                    .map_err(candle)
            }
            (WhisperNet::Q8(m), AudioFeatures::Tensor(features)) => {
                let seen = m.decoder.cached().min(tokens.len().saturating_sub(1));
                m.decoder.step(&tokens[seen..], features).map_err(candle)
            }
            (_, AudioFeatures::InEngine) => Err(BackendError::InvalidInput(
                "this Whisper engine needs the encoder's output tensor".into(),
            )),
        }
    }
}

/// Special token ids the decoder needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpecialTokens {
    /// `<|startoftranscript|>`.
    pub sot: u32,
    /// `<|endoftext|>`.
    pub eot: u32,
    /// `<|notimestamps|>`; every id above it is a timestamp token.
    pub no_timestamps: u32,
    /// `<|en|>` and `<|transcribe|>`, which a multilingual model's transcript starts with
    /// after `<|startoftranscript|>` (left out, it guesses the language and may translate);
    /// `None` for an English-only (`.en`) model, which was trained without them.
    pub language_task: Option<[u32; 2]>,
}

/// Vocabulary size from which a Whisper is multilingual (OpenAI's own rule: the `.en`
/// models have 51864 tokens, the multilingual ones 51865 and more).
const MULTILINGUAL_VOCAB: usize = 51_865;

/// A loaded Whisper model.
#[derive(Debug)]
pub struct WhisperModel {
    /// The network (encoder and decoder) of the chosen engine.
    pub net: WhisperNet,
    /// Which engine.
    pub engine: AsrEngine,
    /// Its configuration.
    pub config: Config,
    /// The tokenizer.
    pub tokenizer: Tokenizer,
    /// Special token ids.
    pub special: SpecialTokens,
    /// Mel filterbank, `num_mel_bins × 201`, computed at load.
    pub mel_filters: Vec<f32>,
    /// Bytes the weights take in memory (for memory accounting).
    pub weight_bytes: u64,
}

fn load_err(path: &Path, e: impl Into<crate::Cause>) -> BackendError {
    BackendError::load(path.display(), e)
}

impl WhisperModel {
    /// Loads the model on the CPU with `engine`'s weights; `threads` sizes the ggml
    /// engine's calls (candle's run on the caller's rayon pool).
    pub fn load(
        files: &WhisperFiles,
        engine: AsrEngine,
        threads: usize,
    ) -> Result<Self, BackendError> {
        let weights = files.weights_for(engine);
        for p in [weights, &files.config, &files.tokenizer] {
            if !p.is_file() {
                return Err(BackendError::ModelMissing {
                    path: p.display().to_string(),
                });
            }
        }
        for p in [weights, &files.config, &files.tokenizer] {
            mmsched_models::verify::verify_file(p)?;
        }
        let config: Config = serde_json::from_slice(
            &std::fs::read(&files.config).map_err(|e| load_err(&files.config, e))?,
        )
        .map_err(|e| load_err(&files.config, e))?;
        let tokenizer =
            Tokenizer::from_file(&files.tokenizer).map_err(|e| load_err(&files.tokenizer, e))?;
        let token = |s: &str| {
            tokenizer
                .token_to_id(s)
                .ok_or_else(|| load_err(&files.tokenizer, format!("no token {s}")))
        };
        let special = SpecialTokens {
            sot: token(whisper::SOT_TOKEN)?,
            eot: token(whisper::EOT_TOKEN)?,
            no_timestamps: token(whisper::NO_TIMESTAMPS_TOKEN)?,
            language_task: if config.vocab_size >= MULTILINGUAL_VOCAB {
                Some([token("<|en|>")?, token(whisper::TRANSCRIBE_TOKEN)?])
            } else {
                None
            },
        };
        let read = || std::fs::read(weights).map_err(|e| load_err(weights, e));
        let (net, weight_bytes) = match engine {
            #[cfg(feature = "llama")]
            AsrEngine::Ggml => {
                let model = GgmlWhisper::load(weights, &config, threads)?;
                let bytes = model.memory_bytes();
                (WhisperNet::Ggml(Box::new(model)), bytes)
            }
            #[cfg(not(feature = "llama"))]
            AsrEngine::Ggml => {
                let _ = threads;
                return Err(BackendError::unavailable(
                    "ggml",
                    "the ggml Whisper needs a build with llama.cpp (feature `llama`); use `--asr-engine q8`",
                ));
            }
            AsrEngine::F32 => {
                let bytes = read()?;
                let parameters = count_parameters(&bytes).map_err(|e| load_err(weights, e))?;
                // Read from a buffer (not memory-mapped): the workspace forbids `unsafe`.
                let vb = VarBuilder::from_buffered_safetensors(bytes, DType::F32, &Device::Cpu)
                    .map_err(|e| load_err(weights, e))?;
                let model = Whisper::load(&vb, config.clone()).map_err(|e| load_err(weights, e))?;
                // Held as float32.
                (WhisperNet::F32(Box::new(model)), parameters * 4)
            }
            AsrEngine::Q8 => {
                let bytes = read()?;
                let model =
                    QuantizedWhisper::load(&bytes, &config).map_err(|e| load_err(weights, e))?;
                // The file, with the embedding table also held as float32 for the lookup.
                let table = (config.vocab_size * config.d_model * 4) as u64;
                (WhisperNet::Q8(Box::new(model)), bytes.len() as u64 + table)
            }
        };
        let mel_filters = mel_filterbank(SAMPLE_RATE_HZ, whisper::N_FFT, config.num_mel_bins);
        Ok(Self {
            net,
            engine,
            config,
            tokenizer,
            special,
            mel_filters,
            weight_bytes,
        })
    }
}

fn count_parameters(bytes: &[u8]) -> Result<u64, safetensors::SafeTensorError> {
    let (_, meta) = safetensors::SafeTensors::read_metadata(bytes)?;
    Ok(meta
        .tensors()
        .values()
        .map(|t| t.shape.iter().product::<usize>() as u64)
        .sum())
}
