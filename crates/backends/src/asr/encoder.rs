//! Whisper's audio encoder in float32 on the `gemm` crate's matrix products: OpenAI's
//! `AudioEncoder` (`whisper/model.py`) with the decoder's cross-attention keys and values
//! of every layer computed at the end, as the decoder reads them. A window is encoded in
//! three parts, which may run as separate steps with other work between them (the
//! activations wait in the encoder's buffers): the stem (convolutions), the blocks (any
//! number at a time), and the cross-attention keys and values.
//!
//! Why not ggml, which runs the decoder: at the encoder's shapes (1 500 positions) ggml's
//! q8_0 products ran at about 33 GFLOP/s on one core of this project's AVX2 machines and
//! its attention at about 17, against about 50 for `gemm` on float32 (see [`matmul`]).
//! The weights are the q8_0 file's, widened to float32 at load (about 35 MB for tiny.en),
//! so the model's values are the same; only the activations keep more precision.
//!
//! Threads: the products and the attention heads run on rayon's current pool with the
//! number of threads the caller grants; one thread runs on the calling thread alone.

use rayon::prelude::*;

use crate::asr::matmul::{Out, Shape, View, matmul};
use crate::asr::quantized::sinusoids;
use crate::asr::vecmath::{exp_shifted, gelu, layer_norm};
use crate::backend::BackendError;
use candle_transformers::models::whisper::Config;

/// `y = x Wᵀ + b` with `W` stored `[n_out, n_in]` row major (PyTorch's layout).
#[derive(Debug)]
struct Dense {
    w: Vec<f32>,
    b: Option<Vec<f32>>,
    n_in: usize,
    n_out: usize,
}

impl Dense {
    /// `Wᵀ`, or the rows `rows` of `W` transposed.
    fn wt(&self, rows: std::ops::Range<usize>) -> View<'_> {
        View::rows(&self.w[rows.start * self.n_in..], rows.len(), self.n_in).t()
    }

    /// `out = x Wᵀ + b` for `n` row-major rows of `x`.
    fn apply(
        &self,
        x: &[f32],
        n: usize,
        out: &mut [f32],
        threads: usize,
    ) -> Result<(), BackendError> {
        let out = &mut out[..n * self.n_out];
        matmul(
            Out::rows(out, n, self.n_out),
            View::rows(x, n, self.n_in),
            self.wt(0..self.n_out),
            1.0,
            threads,
        )?;
        if let Some(b) = &self.b {
            for row in out.chunks_exact_mut(self.n_out) {
                for (y, b) in row.iter_mut().zip(b) {
                    *y += b;
                }
            }
        }
        Ok(())
    }
}

/// Layer-norm scale and shift.
#[derive(Debug)]
struct Norm {
    w: Vec<f32>,
    b: Vec<f32>,
}

/// One encoder block.
#[derive(Debug)]
struct Block {
    attn_ln: Norm,
    q: Dense,
    k: Dense,
    v: Dense,
    out: Dense,
    mlp_ln: Norm,
    fc1: Dense,
    fc2: Dense,
}

/// A decoder layer's cross-attention projections of the encoder's output.
#[derive(Debug)]
struct Cross {
    k: Dense,
    v: Dense,
}

/// Working buffers, kept between windows (first touches of fresh pages cost time).
#[derive(Debug, Default)]
struct Scratch {
    cols: Vec<f32>,
    conv1: Vec<f32>,
    x: Vec<f32>,
    h: Vec<f32>,
    q: Vec<f32>,
    k: Vec<f32>,
    v: Vec<f32>,
    heads: Vec<f32>,
    attn: Vec<f32>,
    proj: Vec<f32>,
    hidden: Vec<f32>,
    /// One `n × n` score matrix and its `n` row sums per thread.
    scores: Vec<Vec<f32>>,
}

/// Grows `buf` to at least `len` values and returns its first `len`.
fn take(buf: &mut Vec<f32>, len: usize) -> &mut [f32] {
    if buf.len() < len {
        buf.resize(len, 0.0);
    }
    &mut buf[..len]
}

/// Where a window's cross-attention keys and values go for one decoder layer:
/// `k` as `[n_head][n_audio_ctx][d_head]` and `v` as `[n_head][d_head][n_audio_ctx]`
/// (the layouts the decoder's attention products read); positions past the window's
/// are left as they are.
#[derive(Debug)]
pub struct CrossCache<'a> {
    pub k: &'a mut [f32],
    pub v: &'a mut [f32],
}

/// The audio encoder and the decoder's cross-attention projections.
#[derive(Debug)]
pub struct Encoder {
    d: usize,
    n_head: usize,
    n_mels: usize,
    n_audio_ctx: usize,
    /// `[d, n_mels · 3]` and `[d, d · 3]` (PyTorch's `[out, in, kernel]`) with biases.
    conv1: Dense,
    conv2: Dense,
    /// `[n_audio_ctx, d]`.
    positions: Vec<f32>,
    blocks: Vec<Block>,
    ln: Norm,
    cross: Vec<Cross>,
    scratch: Scratch,
    /// The window being encoded, between its parts.
    pending: Option<Pending>,
}

/// A window whose stem has run: its positions, and the next block to run.
#[derive(Debug, Clone, Copy)]
struct Pending {
    positions: usize,
    next_layer: usize,
}

impl Encoder {
    /// Builds the encoder from `tensor(name, shape)`, which returns a tensor of the
    /// Hugging Face Whisper names as float32 values (its shape in ggml's order, innermost
    /// first, checked by the callee).
    pub fn load(
        config: &Config,
        tensor: impl Fn(&str, &[usize]) -> Result<Vec<f32>, BackendError>,
    ) -> Result<Self, BackendError> {
        let d = config.d_model;
        let dense = |name: &str, n_in: usize, n_out: usize, bias: bool| {
            Ok::<_, BackendError>(Dense {
                w: tensor(&format!("{name}.weight"), &[n_in, n_out])?,
                b: if bias {
                    Some(tensor(&format!("{name}.bias"), &[n_out])?)
                } else {
                    None
                },
                n_in,
                n_out,
            })
        };
        let norm = |name: &str| {
            Ok::<_, BackendError>(Norm {
                w: tensor(&format!("{name}.weight"), &[d])?,
                b: tensor(&format!("{name}.bias"), &[d])?,
            })
        };
        let conv = |name: &str, n_in: usize| {
            Ok::<_, BackendError>(Dense {
                w: tensor(&format!("{name}.weight"), &[3, n_in, d])?,
                b: Some(tensor(&format!("{name}.bias"), &[d])?),
                n_in: 3 * n_in,
                n_out: d,
            })
        };
        let e = "model.encoder";
        let blocks = (0..config.encoder_layers)
            .map(|i| {
                let p = format!("{e}.layers.{i}");
                Ok(Block {
                    attn_ln: norm(&format!("{p}.self_attn_layer_norm"))?,
                    q: dense(&format!("{p}.self_attn.q_proj"), d, d, true)?,
                    k: dense(&format!("{p}.self_attn.k_proj"), d, d, false)?,
                    v: dense(&format!("{p}.self_attn.v_proj"), d, d, true)?,
                    out: dense(&format!("{p}.self_attn.out_proj"), d, d, true)?,
                    mlp_ln: norm(&format!("{p}.final_layer_norm"))?,
                    fc1: dense(&format!("{p}.fc1"), d, 4 * d, true)?,
                    fc2: dense(&format!("{p}.fc2"), 4 * d, d, true)?,
                })
            })
            .collect::<Result<_, BackendError>>()?;
        let cross = (0..config.decoder_layers)
            .map(|i| {
                let p = format!("model.decoder.layers.{i}.encoder_attn");
                Ok(Cross {
                    k: dense(&format!("{p}.k_proj"), d, d, false)?,
                    v: dense(&format!("{p}.v_proj"), d, d, true)?,
                })
            })
            .collect::<Result<_, BackendError>>()?;
        Ok(Self {
            d,
            n_head: config.encoder_attention_heads,
            n_mels: config.num_mel_bins,
            n_audio_ctx: config.max_source_positions,
            conv1: conv(&format!("{e}.conv1"), config.num_mel_bins)?,
            conv2: conv(&format!("{e}.conv2"), d)?,
            positions: sinusoids(config.max_source_positions, d),
            blocks,
            ln: norm(&format!("{e}.layer_norm"))?,
            cross,
            scratch: Scratch::default(),
            pending: None,
        })
    }

    /// Bytes of the float32 weights and of the working buffers.
    pub fn memory_bytes(&self) -> u64 {
        let dense = |l: &Dense| l.w.len() + l.b.as_ref().map_or(0, Vec::len);
        let norm = |n: &Norm| n.w.len() + n.b.len();
        let s = &self.scratch;
        let values = dense(&self.conv1)
            + dense(&self.conv2)
            + self.positions.len()
            + norm(&self.ln)
            + self
                .blocks
                .iter()
                .map(|b| {
                    norm(&b.attn_ln)
                        + norm(&b.mlp_ln)
                        + [&b.q, &b.k, &b.v, &b.out, &b.fc1, &b.fc2]
                            .into_iter()
                            .map(dense)
                            .sum::<usize>()
                })
                .sum::<usize>()
            + self
                .cross
                .iter()
                .map(|c| dense(&c.k) + dense(&c.v))
                .sum::<usize>()
            + [
                &s.cols, &s.conv1, &s.x, &s.h, &s.q, &s.k, &s.v, &s.heads, &s.attn, &s.proj,
                &s.hidden,
            ]
            .into_iter()
            .chain(&s.scores)
            .map(Vec::len)
            .sum::<usize>();
        values as u64 * 4
    }

    /// Encoder blocks (layers).
    pub fn layers(&self) -> usize {
        self.blocks.len()
    }

    /// The first part of encoding a window: the two convolutions over `frames` (even, at
    /// most `2 · n_audio_ctx`) columns of a log-mel spectrogram (`n_mels` rows of `frames`
    /// values, row major), and the positions. The activations stay in the encoder for
    /// [`Encoder::run_layers`], then [`Encoder::cross`] writes the cross-attention keys and
    /// values of the window's `frames / 2` positions; a window being encoded before is
    /// abandoned.
    pub fn stem(&mut self, mel: &[f32], frames: usize, threads: usize) -> Result<(), BackendError> {
        let (d, n_audio_ctx) = (self.d, self.n_audio_ctx);
        let n = frames / 2;
        self.pending = None;
        if frames == 0
            || !frames.is_multiple_of(2)
            || n > n_audio_ctx
            || mel.len() != frames * self.n_mels
        {
            return Err(BackendError::InvalidInput(format!(
                "a Whisper window is {} mel rows of an even number of frames up to {} (got {} values for {frames} frames)",
                self.n_mels,
                2 * n_audio_ctx,
                mel.len(),
            )));
        }
        let s = &mut self.scratch;
        // Convolutions as products: each output position's window of 3 inputs per
        // channel laid out as one row (`[c · 3 + tap]`, PyTorch's weight order), zero
        // outside the signal (padding 1).
        let cols = take(&mut s.cols, frames * 3 * self.n_mels);
        for (t, row) in cols.chunks_exact_mut(3 * self.n_mels).enumerate() {
            for (c, taps) in row.chunks_exact_mut(3).enumerate() {
                let signal = &mel[c * frames..(c + 1) * frames];
                for (tap, v) in taps.iter_mut().enumerate() {
                    *v = (t + tap)
                        .checked_sub(1)
                        .and_then(|i| signal.get(i))
                        .copied()
                        .unwrap_or(0.0);
                }
            }
        }
        let conv1 = take(&mut s.conv1, frames * d);
        self.conv1.apply(cols, frames, conv1, threads)?;
        gelu(conv1);
        let cols = take(&mut s.cols, n * 3 * d);
        for (t, row) in cols.chunks_exact_mut(3 * d).enumerate() {
            for (c, taps) in row.chunks_exact_mut(3).enumerate() {
                for (tap, v) in taps.iter_mut().enumerate() {
                    *v = (2 * t + tap)
                        .checked_sub(1)
                        .filter(|&i| i < frames)
                        .map_or(0.0, |i| conv1[i * d + c]);
                }
            }
        }
        let x = take(&mut s.x, n * d);
        self.conv2.apply(cols, n, x, threads)?;
        gelu(x);
        for (x, p) in x.iter_mut().zip(&self.positions) {
            *x += p;
        }
        self.pending = Some(Pending {
            positions: n,
            next_layer: 0,
        });
        Ok(())
    }

    /// Runs the next `count` blocks (fewer if fewer are left) of the window the stem
    /// started.
    pub fn run_layers(&mut self, count: usize, threads: usize) -> Result<(), BackendError> {
        let Some(pending) = self.pending else {
            return Err(not_started("its layers"));
        };
        let (n, d) = (pending.positions, self.d);
        let end = (pending.next_layer + count).min(self.blocks.len());
        let s = &mut self.scratch;
        let x = &mut s.x[..n * d];
        let h = take(&mut s.h, n * d);
        for b in &self.blocks[pending.next_layer..end] {
            layer_norm(x, h, &b.attn_ln.w, &b.attn_ln.b);
            let q = take(&mut s.q, n * d);
            let k = take(&mut s.k, n * d);
            let v = take(&mut s.v, n * d);
            b.q.apply(h, n, q, threads)?;
            b.k.apply(h, n, k, threads)?;
            b.v.apply(h, n, v, threads)?;
            let attn = take(&mut s.attn, n * d);
            attention(
                Heads {
                    q,
                    k,
                    v,
                    n,
                    d,
                    n_head: self.n_head,
                },
                &mut s.heads,
                &mut s.scores,
                attn,
                threads,
            )?;
            let proj = take(&mut s.proj, n * d);
            b.out.apply(attn, n, proj, threads)?;
            add(x, proj);
            layer_norm(x, h, &b.mlp_ln.w, &b.mlp_ln.b);
            let hidden = take(&mut s.hidden, n * 4 * d);
            b.fc1.apply(h, n, hidden, threads)?;
            gelu(hidden);
            b.fc2.apply(hidden, n, proj, threads)?;
            add(x, proj);
        }
        self.pending = Some(Pending {
            next_layer: end,
            ..pending
        });
        Ok(())
    }

    /// The last part: the final layer norm and the cross-attention keys and values of
    /// every decoder layer, written into `caches`, once every block has run.
    pub fn cross(
        &mut self,
        threads: usize,
        caches: Vec<CrossCache<'_>>,
    ) -> Result<(), BackendError> {
        let (d, n_audio_ctx) = (self.d, self.n_audio_ctx);
        let Some(pending) = self.pending else {
            return Err(not_started("its cross-attention keys and values"));
        };
        if pending.next_layer < self.blocks.len() {
            return Err(BackendError::InvalidInput(format!(
                "the encoder has run {} of its {} layers: run the rest before the cross-attention keys and values",
                pending.next_layer,
                self.blocks.len()
            )));
        }
        let n = pending.positions;
        let dh = d / self.n_head;
        let cache_len = self.n_head * n_audio_ctx * dh;
        let caches_fit = caches.len() == self.cross.len()
            && caches
                .iter()
                .all(|c| c.k.len() >= cache_len && c.v.len() >= cache_len);
        if !caches_fit {
            return Err(BackendError::InvalidInput(format!(
                "the encoder writes {} cross-attention caches of {cache_len} values",
                self.cross.len(),
            )));
        }
        let s = &mut self.scratch;
        let x = &s.x[..n * d];
        let h = take(&mut s.h, n * d);
        layer_norm(x, h, &self.ln.w, &self.ln.b);
        for (c, cache) in self.cross.iter().zip(caches) {
            for (head, k) in cache
                .k
                .chunks_exact_mut(n_audio_ctx * dh)
                .take(self.n_head)
                .enumerate()
            {
                matmul(
                    Out::rows(k, n, dh),
                    View::rows(h, n, d),
                    c.k.wt(head * dh..(head + 1) * dh),
                    1.0,
                    threads,
                )?;
            }
            // Values transposed: channel `o`'s positions are a row of `n_audio_ctx`.
            matmul(
                Out {
                    data: cache.v,
                    shape: Shape {
                        rows: n,
                        cols: d,
                        rs: 1,
                        cs: n_audio_ctx,
                    },
                },
                View::rows(h, n, d),
                c.v.wt(0..d),
                1.0,
                threads,
            )?;
            if let Some(bias) = &c.v.b {
                for (row, b) in cache.v.chunks_exact_mut(n_audio_ctx).zip(bias) {
                    for v in &mut row[..n] {
                        *v += b;
                    }
                }
            }
        }
        self.pending = None;
        Ok(())
    }
}

/// The error of a part run before the stem of its window.
fn not_started(what: &str) -> BackendError {
    BackendError::InvalidInput(format!(
        "no window is being encoded: run the encoder's stem (its convolutions) before {what}"
    ))
}

/// `x += y`.
fn add(x: &mut [f32], y: &[f32]) {
    for (x, y) in x.iter_mut().zip(y) {
        *x += y;
    }
}

/// A block's queries, keys and values (`n` rows of `d`, heads side by side).
struct Heads<'a> {
    q: &'a [f32],
    k: &'a [f32],
    v: &'a [f32],
    n: usize,
    d: usize,
    n_head: usize,
}

/// Multi-head attention without a mask into `out` (`n` rows of `d`). Heads run in
/// `threads` groups at once, each with its own score matrix; each head's output goes to
/// its own block of `heads` and is then laid side by side.
fn attention(
    x: Heads<'_>,
    heads: &mut Vec<f32>,
    scores: &mut Vec<Vec<f32>>,
    out: &mut [f32],
    threads: usize,
) -> Result<(), BackendError> {
    let (n, d) = (x.n, x.d);
    let dh = d / x.n_head;
    let scale = 1.0 / (dh as f32).sqrt();
    let groups = threads.clamp(1, x.n_head);
    let per_group = x.n_head.div_ceil(groups);
    if scores.len() < groups {
        scores.resize_with(groups, Vec::new);
    }
    let heads = take(heads, n * d);
    let one_head = |head: usize, o: &mut [f32], s: &mut [f32]| {
        matmul(
            Out::rows(s, n, n),
            View::rows(x.q, n, d).cols(head * dh, dh),
            View::rows(x.k, n, d).cols(head * dh, dh).t(),
            scale,
            1,
        )?;
        let (s, sums) = s.split_at_mut(n * n);
        for (row, sum) in s.chunks_exact_mut(n).zip(sums.iter_mut()) {
            *sum = exp_shifted(row);
        }
        matmul(
            Out::rows(o, n, dh),
            View::rows(s, n, n),
            View::rows(x.v, n, d).cols(head * dh, dh),
            1.0,
            1,
        )?;
        // The softmax's division, on the `dh` outputs of a row instead of its `n` weights.
        for (row, sum) in o.chunks_exact_mut(dh).zip(sums.iter()) {
            let inv = 1.0 / sum;
            for v in row {
                *v *= inv;
            }
        }
        Ok::<(), BackendError>(())
    };
    let work: Vec<_> = heads
        .chunks_mut(per_group * n * dh)
        .zip(scores.iter_mut())
        .enumerate()
        .collect();
    let run_group = |(g, (o, s)): (usize, (&mut [f32], &mut Vec<f32>))| {
        let s = take(s, n * n + n);
        for (i, o) in o.chunks_exact_mut(n * dh).enumerate() {
            one_head(g * per_group + i, o, s)?;
        }
        Ok::<_, BackendError>(())
    };
    if groups == 1 {
        work.into_iter().try_for_each(run_group)?;
    } else {
        work.into_par_iter().try_for_each(run_group)?;
    }
    for (head, o) in heads.chunks_exact(n * dh).enumerate() {
        for (t, row) in o.chunks_exact(dh).enumerate() {
            out[t * d + head * dh..t * d + (head + 1) * dh].copy_from_slice(row);
        }
    }
    Ok(())
}
