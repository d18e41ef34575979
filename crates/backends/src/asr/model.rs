//! Loading Whisper: weights (safetensors), configuration, tokenizer and mel filterbank.

use std::path::{Path, PathBuf};

use candle_core::{DType, Device};
use candle_nn::VarBuilder;
use candle_transformers::models::whisper::{self, Config, model::Whisper};
use mmsched_models::{Artifact, ModelPaths};
use tokenizers::Tokenizer;

use crate::asr::audio::{SAMPLE_RATE_HZ, mel_filterbank};
use crate::backend::BackendError;

/// Where the three Whisper files are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WhisperFiles {
    /// `model.safetensors` (Hugging Face tensor names).
    pub weights: PathBuf,
    /// Hugging Face style `config.json`.
    pub config: PathBuf,
    /// `tokenizer.json`.
    pub tokenizer: PathBuf,
}

impl WhisperFiles {
    /// The files in the model cache; a missing one is an error naming the fetch command.
    pub fn from_cache(paths: &ModelPaths) -> Result<Self, BackendError> {
        let need = |a: Artifact| {
            paths.require(a).map_err(|e| BackendError::ModelMissing {
                path: e.path.display().to_string(),
            })
        };
        Ok(Self {
            weights: need(Artifact::WhisperModel)?,
            config: need(Artifact::WhisperConfig)?,
            tokenizer: need(Artifact::WhisperTokenizer)?,
        })
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
}

/// A loaded Whisper model.
#[derive(Debug)]
pub struct WhisperModel {
    /// The candle model (encoder and decoder).
    pub model: Whisper,
    /// Its configuration.
    pub config: Config,
    /// The tokenizer.
    pub tokenizer: Tokenizer,
    /// Special token ids.
    pub special: SpecialTokens,
    /// Mel filterbank, `num_mel_bins × 201`, computed at load.
    pub mel_filters: Vec<f32>,
    /// Parameter count (for memory accounting).
    pub parameters: u64,
}

fn load_err(path: &Path, e: impl std::fmt::Display) -> BackendError {
    BackendError::Load {
        path: path.display().to_string(),
        reason: e.to_string(),
    }
}

impl WhisperModel {
    /// Loads the model on the CPU in float32.
    pub fn load(files: &WhisperFiles) -> Result<Self, BackendError> {
        for p in [&files.weights, &files.config, &files.tokenizer] {
            if !p.is_file() {
                return Err(BackendError::ModelMissing {
                    path: p.display().to_string(),
                });
            }
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
        };
        let bytes = std::fs::read(&files.weights).map_err(|e| load_err(&files.weights, e))?;
        let parameters = count_parameters(&bytes).map_err(|e| load_err(&files.weights, e))?;
        // Read from a buffer (not memory-mapped): the workspace forbids `unsafe`.
        let vb = VarBuilder::from_buffered_safetensors(bytes, DType::F32, &Device::Cpu)
            .map_err(|e| load_err(&files.weights, e))?;
        let model = Whisper::load(&vb, config.clone()).map_err(|e| load_err(&files.weights, e))?;
        let mel_filters = mel_filterbank(SAMPLE_RATE_HZ, whisper::N_FFT, config.num_mel_bins);
        Ok(Self {
            model,
            config,
            tokenizer,
            special,
            mel_filters,
            parameters,
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
