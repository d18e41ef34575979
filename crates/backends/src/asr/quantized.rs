//! Whisper on q8_0 weights with a decoder that does each step's work once.
//!
//! Adapted from candle-transformers 0.11.1, `models/whisper/quantized_model.rs`
//! (Copyright the candle authors, MIT OR Apache-2.0), itself a port of OpenAI's
//! `whisper/model.py`. Changes:
//!
//! - the decoder's self-attention keeps its keys and values (a KV cache), so a greedy step
//!   runs the one new token through the decoder instead of the whole prefix again (the stock
//!   model recomputes every earlier token at every step: quadratic in the transcript);
//! - the cross-attention keys and values are computed once per window (as in the stock
//!   model) and the encoder runs once per window;
//! - the output projection (tied to the token embedding) is a q8_0 matrix, like every other
//!   projection: it is the largest matrix of the decoder (51 864 × 384) and runs every step;
//! - no tracing spans.
//!
//! Weights come from the GGUF `mmsched models fetch` makes from the converted safetensors
//! (see `mmsched_models::whisper_quantize`), with the Hugging Face tensor names.

use candle_core::quantized::{GgmlDType, QMatMul, QTensor};
use candle_core::{Device, Module, Result, Tensor};
use candle_nn::{Conv1d, Conv1dConfig, LayerNorm};
use candle_transformers::models::whisper::Config;
use candle_transformers::quantized_nn::{Linear, layer_norm, linear, linear_no_bias};
use candle_transformers::quantized_var_builder::VarBuilder;

fn conv1d(
    in_channels: usize,
    out_channels: usize,
    config: Conv1dConfig,
    vb: VarBuilder,
) -> Result<Conv1d> {
    let weight = vb
        .get((out_channels, in_channels, 3), "weight")?
        .dequantize(vb.device())?;
    let bias = vb.get(out_channels, "bias")?.dequantize(vb.device())?;
    Ok(Conv1d::new(weight, Some(bias), config))
}

/// Multi-head attention; `cache` holds keys and values across calls (decoder only).
#[derive(Debug, Clone)]
struct Attention {
    query: Linear,
    key: Linear,
    value: Linear,
    out: Linear,
    n_head: usize,
    cache: Option<(Tensor, Tensor)>,
}

impl Attention {
    fn load(n_state: usize, n_head: usize, vb: VarBuilder) -> Result<Self> {
        Ok(Self {
            query: linear(n_state, n_state, vb.pp("q_proj"))?,
            key: linear_no_bias(n_state, n_state, vb.pp("k_proj"))?,
            value: linear(n_state, n_state, vb.pp("v_proj"))?,
            out: linear(n_state, n_state, vb.pp("out_proj"))?,
            n_head,
            cache: None,
        })
    }

    /// Self-attention of `x` over itself (encoder: no cache, no mask).
    fn encoder_self(&self, x: &Tensor) -> Result<Tensor> {
        let q = self.query.forward(x)?;
        let k = self.key.forward(x)?;
        let v = self.value.forward(x)?;
        self.out.forward(&self.attend(&q, &k, &v, None)?)
    }

    /// Decoder self-attention: appends `x`'s keys and values to the cache and attends over
    /// everything cached; `mask` is the causal mask of the new rows (`None` for one row).
    fn decoder_self(&mut self, x: &Tensor, mask: Option<&Tensor>) -> Result<Tensor> {
        let q = self.query.forward(x)?;
        let k = self.key.forward(x)?;
        let v = self.value.forward(x)?;
        let (k, v) = match &self.cache {
            Some((pk, pv)) => (Tensor::cat(&[pk, &k], 1)?, Tensor::cat(&[pv, &v], 1)?),
            None => (k, v),
        };
        self.cache = Some((k.clone(), v.clone()));
        self.out.forward(&self.attend(&q, &k, &v, mask)?)
    }

    /// Cross-attention over the audio features `xa`, whose keys and values are computed on
    /// the first call after [`Attention::reset`] and reused.
    fn cross(&mut self, x: &Tensor, xa: &Tensor) -> Result<Tensor> {
        let q = self.query.forward(x)?;
        let (k, v) = match &self.cache {
            Some(kv) => kv.clone(),
            None => {
                let kv = (self.key.forward(xa)?, self.value.forward(xa)?);
                self.cache = Some(kv.clone());
                kv
            }
        };
        self.out.forward(&self.attend(&q, &k, &v, None)?)
    }

    fn heads(&self, x: &Tensor) -> Result<Tensor> {
        let (b, n, d) = x.dims3()?;
        x.reshape((b, n, self.n_head, d / self.n_head))?
            .transpose(1, 2)
    }

    fn attend(&self, q: &Tensor, k: &Tensor, v: &Tensor, mask: Option<&Tensor>) -> Result<Tensor> {
        let (_, _, n_state) = q.dims3()?;
        let scale = ((n_state / self.n_head) as f64).powf(-0.25);
        let q = (self.heads(q)? * scale)?;
        let k = (self.heads(k)?.transpose(2, 3)? * scale)?;
        let v = self.heads(v)?.contiguous()?;
        let mut qk = q.matmul(&k)?;
        if let Some(mask) = mask {
            qk = qk.broadcast_add(mask)?;
        }
        let w = candle_nn::ops::softmax_last_dim(&qk)?;
        w.matmul(&v)?.transpose(1, 2)?.flatten_from(2)
    }

    fn reset(&mut self) {
        self.cache = None;
    }
}

/// One transformer block (with cross-attention in the decoder).
#[derive(Debug, Clone)]
struct Block {
    attn: Attention,
    attn_ln: LayerNorm,
    cross: Option<(Attention, LayerNorm)>,
    fc1: Linear,
    fc2: Linear,
    mlp_ln: LayerNorm,
}

impl Block {
    fn load(n_state: usize, n_head: usize, cross: bool, vb: VarBuilder) -> Result<Self> {
        let cross = if cross {
            Some((
                Attention::load(n_state, n_head, vb.pp("encoder_attn"))?,
                layer_norm(n_state, 1e-5, vb.pp("encoder_attn_layer_norm"))?,
            ))
        } else {
            None
        };
        Ok(Self {
            attn: Attention::load(n_state, n_head, vb.pp("self_attn"))?,
            attn_ln: layer_norm(n_state, 1e-5, vb.pp("self_attn_layer_norm"))?,
            cross,
            fc1: linear(n_state, 4 * n_state, vb.pp("fc1"))?,
            fc2: linear(4 * n_state, n_state, vb.pp("fc2"))?,
            mlp_ln: layer_norm(n_state, 1e-5, vb.pp("final_layer_norm"))?,
        })
    }

    fn mlp(&self, x: &Tensor) -> Result<Tensor> {
        let h = x
            .apply(&self.mlp_ln)?
            .apply(&self.fc1)?
            .gelu()?
            .apply(&self.fc2)?;
        x + h
    }

    fn encoder_forward(&self, x: &Tensor) -> Result<Tensor> {
        let x = (x + self.attn.encoder_self(&self.attn_ln.forward(x)?)?)?;
        self.mlp(&x)
    }

    fn decoder_forward(
        &mut self,
        x: &Tensor,
        xa: &Tensor,
        mask: Option<&Tensor>,
    ) -> Result<Tensor> {
        let mut x = (x + self.attn.decoder_self(&self.attn_ln.forward(x)?, mask)?)?;
        if let Some((attn, ln)) = &mut self.cross {
            x = (&x + attn.cross(&ln.forward(&x)?, xa)?)?;
        }
        self.mlp(&x)
    }

    fn reset(&mut self) {
        self.attn.reset();
        if let Some((attn, _)) = &mut self.cross {
            attn.reset();
        }
    }
}

/// Whisper's sinusoidal encoder positions: `length` rows of `channels` values, the sines
/// of a row's frequencies, then their cosines (as OpenAI's `sinusoids`).
pub(crate) fn sinusoids(length: usize, channels: usize) -> Vec<f32> {
    let half = channels / 2;
    let increment = 10000f32.ln() / (half.max(2) - 1) as f32;
    let inv: Vec<f32> = (0..half).map(|i| (i as f32 * (-increment)).exp()).collect();
    let mut out = Vec::with_capacity(length * channels);
    for t in 0..length {
        let scaled: Vec<f32> = inv.iter().map(|f| t as f32 * f).collect();
        out.extend(scaled.iter().map(|x| x.sin()));
        out.extend(scaled.iter().map(|x| x.cos()));
    }
    out
}

/// The audio encoder: two convolutions, sinusoidal positions, transformer blocks.
#[derive(Debug, Clone)]
pub struct Encoder {
    conv1: Conv1d,
    conv2: Conv1d,
    positions: Tensor,
    blocks: Vec<Block>,
    ln_post: LayerNorm,
}

impl Encoder {
    fn load(vb: VarBuilder, cfg: &Config) -> Result<Self> {
        let n_state = cfg.d_model;
        let conv = |stride| Conv1dConfig {
            padding: 1,
            stride,
            groups: 1,
            dilation: 1,
            cudnn_fwd_algo: None,
        };
        Ok(Self {
            conv1: conv1d(cfg.num_mel_bins, n_state, conv(1), vb.pp("conv1"))?,
            conv2: conv1d(n_state, n_state, conv(2), vb.pp("conv2"))?,
            positions: Tensor::from_vec(
                sinusoids(cfg.max_source_positions, n_state),
                (cfg.max_source_positions, n_state),
                vb.device(),
            )?,
            blocks: (0..cfg.encoder_layers)
                .map(|i| {
                    Block::load(
                        n_state,
                        cfg.encoder_attention_heads,
                        false,
                        vb.pp(format!("layers.{i}")),
                    )
                })
                .collect::<Result<_>>()?,
            ln_post: layer_norm(n_state, 1e-5, vb.pp("layer_norm"))?,
        })
    }

    /// Audio features of a `1 × n_mels × frames` log-mel window.
    pub fn forward(&self, mel: &Tensor) -> Result<Tensor> {
        let x = self.conv1.forward(mel)?.gelu()?;
        let x = self.conv2.forward(&x)?.gelu()?.transpose(1, 2)?;
        let (_, seq_len, _) = x.dims3()?;
        let mut x = x.broadcast_add(&self.positions.narrow(0, 0, seq_len)?)?;
        for block in &self.blocks {
            x = block.encoder_forward(&x)?;
        }
        self.ln_post.forward(&x)
    }
}

/// The text decoder with its caches.
#[derive(Debug, Clone)]
pub struct Decoder {
    embedding: candle_nn::Embedding,
    output: QMatMul,
    positions: Tensor,
    blocks: Vec<Block>,
    ln: LayerNorm,
    /// Tokens already in the self-attention caches.
    cached: usize,
}

impl Decoder {
    fn load(vb: VarBuilder, cfg: &Config) -> Result<Self> {
        let n_state = cfg.d_model;
        let table = vb
            .get((cfg.vocab_size, n_state), "embed_tokens.weight")?
            .dequantize(vb.device())?;
        // The output projection is the embedding matrix (tied weights), quantised here like
        // every other projection (the file keeps the exact table for the lookup).
        let output = QMatMul::from_qtensor(QTensor::quantize(&table, GgmlDType::Q8_0)?)?;
        Ok(Self {
            embedding: candle_nn::Embedding::new(table, n_state),
            output,
            positions: vb
                .get(
                    (cfg.max_target_positions, n_state),
                    "embed_positions.weight",
                )?
                .dequantize(vb.device())?,
            blocks: (0..cfg.decoder_layers)
                .map(|i| {
                    Block::load(
                        n_state,
                        cfg.decoder_attention_heads,
                        true,
                        vb.pp(format!("layers.{i}")),
                    )
                })
                .collect::<Result<_>>()?,
            ln: layer_norm(n_state, 1e-5, vb.pp("layer_norm"))?,
            cached: 0,
        })
    }

    /// Forgets the previous window: self- and cross-attention caches.
    pub fn reset(&mut self) {
        self.cached = 0;
        for b in &mut self.blocks {
            b.reset();
        }
    }

    /// Tokens already decoded since the last [`Decoder::reset`].
    pub fn cached(&self) -> usize {
        self.cached
    }

    /// Runs the tokens `new` (appended after the cached ones) over the audio features `xa`
    /// and returns the logits of the last one (`vocab`).
    pub fn step(&mut self, new: &[u32], xa: &Tensor) -> Result<Tensor> {
        let n = new.len();
        let offset = self.cached;
        let ids = Tensor::new(new, xa.device())?.unsqueeze(0)?;
        let positions = self.positions.narrow(0, offset, n)?;
        let mut x = self.embedding.forward(&ids)?.broadcast_add(&positions)?;
        // New row i (position offset + i) sees cached positions and new rows up to itself.
        let mask = if n > 1 {
            let m: Vec<f32> = (0..n)
                .flat_map(|i| {
                    (0..offset + n).map(move |j| {
                        if j > offset + i {
                            f32::NEG_INFINITY
                        } else {
                            0.0
                        }
                    })
                })
                .collect();
            Some(Tensor::from_vec(m, (n, offset + n), xa.device())?)
        } else {
            None
        };
        for block in &mut self.blocks {
            x = block.decoder_forward(&x, xa, mask.as_ref())?;
        }
        self.cached += n;
        // Only the last row's logits are needed: (1, 1, d) → (1, d) → (1, vocab) → (vocab).
        let last = self.ln.forward(&x.narrow(1, n - 1, 1)?)?;
        self.output.forward(&last.squeeze(0)?)?.squeeze(0)
    }
}

/// Whisper with q8_0 projections.
#[derive(Debug, Clone)]
pub struct QuantizedWhisper {
    /// The audio encoder.
    pub encoder: Encoder,
    /// The text decoder.
    pub decoder: Decoder,
}

impl QuantizedWhisper {
    /// Loads the model from the GGUF bytes `gguf` (Hugging Face tensor names).
    pub fn load(gguf: &[u8], config: &Config) -> Result<Self> {
        let vb = VarBuilder::from_gguf_buffer(gguf, &Device::Cpu)?;
        Ok(Self {
            encoder: Encoder::load(vb.pp("model.encoder"), config)?,
            decoder: Decoder::load(vb.pp("model.decoder"), config)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sinusoids_start_with_sines_then_cosines() {
        let s = sinusoids(3, 4);
        // Position 0: sin 0 = 0, cos 0 = 1.
        assert_eq!(&s[..4], &[0.0, 0.0, 1.0, 1.0]);
        // Position 1, first frequency 1: sin 1, then the lowest frequency 1e-4.
        assert!((s[4] - 1f32.sin()).abs() < 1e-6);
        assert!((s[5] - 1e-4f32.sin()).abs() < 1e-6);
    }
}
