//! CTranslate2 Whisper `model.bin` → Hugging Face-named `model.safetensors` (the names
//! candle-transformers' Whisper model loads) plus a Hugging Face style `config.json`.
//!
//! CTranslate2 fuses the self-attention q/k/v projections into one `linear_0` of
//! `3·d` rows, and the cross-attention k/v into one `linear_1` of `2·d` rows; this module
//! splits them back by rows. Whisper's key projections have no bias: CTranslate2 stores
//! zeros in that slot, which are dropped (a key bias would not change attention anyway:
//! it adds the same value to every key's score for a given query, and softmax ignores
//! constant shifts). Tensors keep their stored dtype (float16 here); candle converts on
//! load. Scalars (flags, head counts) and the tied output projection alias are not tensors
//! of the Hugging Face model and are skipped.

use std::collections::BTreeMap;
use std::ops::Range;

use serde::Serialize;

use crate::ctranslate2::{self, Ct2Dtype, Ct2Model, Ct2Variable};

/// One output tensor: rows `rows` (along the first dimension) of CTranslate2 variable
/// `source`, saved as `name`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapped {
    /// Hugging Face tensor name.
    pub name: String,
    /// CTranslate2 variable name.
    pub source: String,
    /// Row range of the source taken for this tensor.
    pub rows: Range<usize>,
}

/// The converted files.
#[derive(Debug, Clone)]
pub struct WhisperConversion {
    /// Contents of `model.safetensors`.
    pub safetensors: Vec<u8>,
    /// Contents of the Hugging Face style `config.json`.
    pub config_json: String,
}

/// Why a conversion failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConvertError {
    /// The model.bin could not be parsed.
    #[error(transparent)]
    Read(#[from] ctranslate2::Ct2Error),
    /// The file is not the expected Whisper model.
    #[error("not a convertible CTranslate2 Whisper model: {0}")]
    Layout(String),
}

/// The Hugging Face Whisper configuration candle reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HfWhisperConfig {
    /// Mel bins of the input spectrogram.
    pub num_mel_bins: usize,
    /// Encoder positions (audio frames after the convolutions).
    pub max_source_positions: usize,
    /// Width of the model.
    pub d_model: usize,
    /// Encoder attention heads.
    pub encoder_attention_heads: usize,
    /// Encoder layers.
    pub encoder_layers: usize,
    /// Vocabulary size.
    pub vocab_size: usize,
    /// Decoder positions (tokens).
    pub max_target_positions: usize,
    /// Decoder attention heads.
    pub decoder_attention_heads: usize,
    /// Decoder layers.
    pub decoder_layers: usize,
    /// Tokens never generated.
    pub suppress_tokens: Vec<u32>,
    /// Tokens never generated as the first token.
    pub begin_suppress_tokens: Vec<u32>,
}

fn var<'m>(m: &'m Ct2Model, name: &str) -> Result<&'m Ct2Variable, ConvertError> {
    m.variables
        .get(name)
        .ok_or_else(|| ConvertError::Layout(format!("missing variable {name}")))
}

fn layer_count(m: &Ct2Model, stack: &str) -> usize {
    (0..)
        .take_while(|i| {
            m.variables
                .contains_key(&format!("{stack}/layer_{i}/ffn/linear_0/weight"))
        })
        .count()
}

fn scalar_int(m: &Ct2Model, name: &str) -> Result<usize, ConvertError> {
    let v = var(m, name)?;
    let value = match (v.dtype, v.data.as_slice()) {
        (Ct2Dtype::I8, [a]) => i64::from(*a as i8),
        (Ct2Dtype::I16, [a, b]) => i64::from(i16::from_le_bytes([*a, *b])),
        (Ct2Dtype::I32, [a, b, c, d]) => i64::from(i32::from_le_bytes([*a, *b, *c, *d])),
        _ => {
            return Err(ConvertError::Layout(format!(
                "{name} is not an integer scalar"
            )));
        }
    };
    usize::try_from(value).map_err(|_| ConvertError::Layout(format!("{name} is negative")))
}

/// The tensors copied whole: (CTranslate2 name, Hugging Face name), the model's own first,
/// then each layer's of the encoder and the decoder.
fn whole_tensors(m: &Ct2Model) -> Vec<(String, String)> {
    let mut whole: Vec<(String, String)> = vec![
        (
            "encoder/conv1/weight".into(),
            "model.encoder.conv1.weight".into(),
        ),
        (
            "encoder/conv1/bias".into(),
            "model.encoder.conv1.bias".into(),
        ),
        (
            "encoder/conv2/weight".into(),
            "model.encoder.conv2.weight".into(),
        ),
        (
            "encoder/conv2/bias".into(),
            "model.encoder.conv2.bias".into(),
        ),
        (
            "encoder/position_encodings/encodings".into(),
            "model.encoder.embed_positions.weight".into(),
        ),
        (
            "encoder/layer_norm/gamma".into(),
            "model.encoder.layer_norm.weight".into(),
        ),
        (
            "encoder/layer_norm/beta".into(),
            "model.encoder.layer_norm.bias".into(),
        ),
        (
            "decoder/embeddings/weight".into(),
            "model.decoder.embed_tokens.weight".into(),
        ),
        (
            "decoder/position_encodings/encodings".into(),
            "model.decoder.embed_positions.weight".into(),
        ),
        (
            "decoder/layer_norm/gamma".into(),
            "model.decoder.layer_norm.weight".into(),
        ),
        (
            "decoder/layer_norm/beta".into(),
            "model.decoder.layer_norm.bias".into(),
        ),
    ];
    for stack in ["encoder", "decoder"] {
        for i in 0..layer_count(m, stack) {
            let c = format!("{stack}/layer_{i}");
            let h = format!("model.{stack}.layers.{i}");
            let mut pairs = vec![
                (
                    "self_attention/layer_norm/gamma",
                    "self_attn_layer_norm.weight",
                ),
                (
                    "self_attention/layer_norm/beta",
                    "self_attn_layer_norm.bias",
                ),
                (
                    "self_attention/linear_1/weight",
                    "self_attn.out_proj.weight",
                ),
                ("self_attention/linear_1/bias", "self_attn.out_proj.bias"),
                ("ffn/layer_norm/gamma", "final_layer_norm.weight"),
                ("ffn/layer_norm/beta", "final_layer_norm.bias"),
                ("ffn/linear_0/weight", "fc1.weight"),
                ("ffn/linear_0/bias", "fc1.bias"),
                ("ffn/linear_1/weight", "fc2.weight"),
                ("ffn/linear_1/bias", "fc2.bias"),
            ];
            if stack == "decoder" {
                pairs.extend([
                    (
                        "attention/layer_norm/gamma",
                        "encoder_attn_layer_norm.weight",
                    ),
                    ("attention/layer_norm/beta", "encoder_attn_layer_norm.bias"),
                    ("attention/linear_0/weight", "encoder_attn.q_proj.weight"),
                    ("attention/linear_0/bias", "encoder_attn.q_proj.bias"),
                    ("attention/linear_2/weight", "encoder_attn.out_proj.weight"),
                    ("attention/linear_2/bias", "encoder_attn.out_proj.bias"),
                ]);
            }
            whole.extend(
                pairs
                    .into_iter()
                    .map(|(a, b)| (format!("{c}/{a}"), format!("{h}.{b}"))),
            );
        }
    }
    whole
}

/// The full tensor mapping for `m`, in output order.
pub fn mapping(m: &Ct2Model) -> Result<Vec<Mapped>, ConvertError> {
    let d = var(m, "decoder/embeddings/weight")?
        .dims
        .get(1)
        .copied()
        .ok_or_else(|| ConvertError::Layout("embeddings are not 2-D".into()))?;
    let mut out = Vec::new();
    let mut push = |name: String, source: String, rows: Range<usize>| {
        out.push(Mapped { name, source, rows });
    };
    let rows_of = |src: &str| -> Result<usize, ConvertError> {
        var(m, src)?
            .dims
            .first()
            .copied()
            .ok_or_else(|| ConvertError::Layout(format!("{src} is a scalar")))
    };
    for (src, name) in whole_tensors(m) {
        let rows = rows_of(&src)?;
        push(name, src, 0..rows);
    }
    // Fused projections, split by rows.
    for stack in ["encoder", "decoder"] {
        for i in 0..layer_count(m, stack) {
            let c = format!("{stack}/layer_{i}");
            let h = format!("model.{stack}.layers.{i}");
            let qkv = format!("{c}/self_attention/linear_0");
            if rows_of(&format!("{qkv}/weight"))? != 3 * d {
                return Err(ConvertError::Layout(format!("{qkv} is not a fused q/k/v")));
            }
            for (k, part) in ["q_proj", "k_proj", "v_proj"].into_iter().enumerate() {
                let r = k * d..(k + 1) * d;
                push(
                    format!("{h}.self_attn.{part}.weight"),
                    format!("{qkv}/weight"),
                    r.clone(),
                );
                if part != "k_proj" {
                    push(
                        format!("{h}.self_attn.{part}.bias"),
                        format!("{qkv}/bias"),
                        r,
                    );
                }
            }
            if stack == "decoder" {
                let kv = format!("{c}/attention/linear_1");
                if rows_of(&format!("{kv}/weight"))? != 2 * d {
                    return Err(ConvertError::Layout(format!("{kv} is not a fused k/v")));
                }
                for (k, part) in ["k_proj", "v_proj"].into_iter().enumerate() {
                    let r = k * d..(k + 1) * d;
                    push(
                        format!("{h}.encoder_attn.{part}.weight"),
                        format!("{kv}/weight"),
                        r.clone(),
                    );
                    if part != "k_proj" {
                        push(
                            format!("{h}.encoder_attn.{part}.bias"),
                            format!("{kv}/bias"),
                            r,
                        );
                    }
                }
            }
        }
    }
    Ok(out)
}

fn st_dtype(d: Ct2Dtype) -> Result<safetensors::Dtype, ConvertError> {
    Ok(match d {
        Ct2Dtype::F32 => safetensors::Dtype::F32,
        Ct2Dtype::F16 => safetensors::Dtype::F16,
        Ct2Dtype::Bf16 => safetensors::Dtype::BF16,
        other => {
            return Err(ConvertError::Layout(format!(
                "weights of dtype {other:?} (quantised CTranslate2 models are not supported; use a float16 or float32 model)"
            )));
        }
    })
}

/// Bytes of rows `rows` of a variable.
pub fn row_bytes<'a>(v: &'a Ct2Variable, rows: &Range<usize>) -> &'a [u8] {
    let per_row = v.dims.iter().skip(1).product::<usize>() * v.dtype.size();
    &v.data[rows.start * per_row..rows.end * per_row]
}

/// The shape of rows `rows` of a variable.
pub fn row_shape(v: &Ct2Variable, rows: &Range<usize>) -> Vec<usize> {
    let mut dims = v.dims.clone();
    if let Some(first) = dims.first_mut() {
        *first = rows.len();
    }
    dims
}

/// The Hugging Face configuration implied by the weights and the CTranslate2 config.
pub fn hf_config(m: &Ct2Model, ct2_config_json: &[u8]) -> Result<HfWhisperConfig, ConvertError> {
    #[derive(serde::Deserialize)]
    struct Ct2Config {
        #[serde(default)]
        suppress_ids: Vec<u32>,
        #[serde(default)]
        suppress_ids_begin: Vec<u32>,
    }
    let ct2: Ct2Config = serde_json::from_slice(ct2_config_json)
        .map_err(|e| ConvertError::Layout(format!("CTranslate2 config.json: {e}")))?;
    let dims = |n: &str| -> Result<Vec<usize>, ConvertError> { Ok(var(m, n)?.dims.clone()) };
    let emb = dims("decoder/embeddings/weight")?;
    let conv1 = dims("encoder/conv1/weight")?;
    let enc_pos = dims("encoder/position_encodings/encodings")?;
    let dec_pos = dims("decoder/position_encodings/encodings")?;
    let first = |v: &[usize], n: &str| {
        v.first()
            .copied()
            .ok_or_else(|| ConvertError::Layout(format!("{n} has no dimensions")))
    };
    Ok(HfWhisperConfig {
        num_mel_bins: conv1.get(1).copied().unwrap_or(80),
        max_source_positions: first(&enc_pos, "encoder positions")?,
        d_model: emb.get(1).copied().unwrap_or(0),
        encoder_attention_heads: scalar_int(m, "encoder/num_heads")?,
        encoder_layers: layer_count(m, "encoder"),
        vocab_size: first(&emb, "embeddings")?,
        max_target_positions: first(&dec_pos, "decoder positions")?,
        decoder_attention_heads: scalar_int(m, "decoder/num_heads")?,
        decoder_layers: layer_count(m, "decoder"),
        suppress_tokens: ct2.suppress_ids,
        begin_suppress_tokens: ct2.suppress_ids_begin,
    })
}

/// Converts a CTranslate2 Whisper model.
pub fn convert(
    model_bin: &[u8],
    ct2_config_json: &[u8],
) -> Result<WhisperConversion, ConvertError> {
    let m = ctranslate2::read(model_bin)?;
    if m.spec != "WhisperSpec" {
        return Err(ConvertError::Layout(format!(
            "spec is {}, expected WhisperSpec",
            m.spec
        )));
    }
    let config = hf_config(&m, ct2_config_json)?;
    let mapped = mapping(&m)?;
    let mut views = BTreeMap::new();
    for t in &mapped {
        let v = var(&m, &t.source)?;
        let view = safetensors::tensor::TensorView::new(
            st_dtype(v.dtype)?,
            row_shape(v, &t.rows),
            row_bytes(v, &t.rows),
        )
        .map_err(|e| ConvertError::Layout(format!("{}: {e}", t.name)))?;
        views.insert(t.name.clone(), view);
    }
    let safetensors = safetensors::tensor::serialize(views, None)
        .map_err(|e| ConvertError::Layout(format!("serialising safetensors: {e}")))?;
    let config_json = serde_json::to_string_pretty(&config)
        .map_err(|e| ConvertError::Layout(format!("serialising config: {e}")))?;
    Ok(WhisperConversion {
        safetensors,
        config_json,
    })
}
