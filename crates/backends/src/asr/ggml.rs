//! Whisper on ggml: the q8_0 GGUF that `mmsched models fetch` makes, run by the ggml that
//! llama.cpp is built with (`llama-cpp-sys-2` binds its `ggml_*` and `gguf_*` functions).
//!
//! Why ggml and not candle: on the same q8_0 weights candle's Whisper takes about twice the
//! time of CTranslate2 int8; ggml's CPU kernels (q8_0 matrix products, im2col convolutions,
//! fused softmax) are the ones llama.cpp and whisper.cpp use. whisper.cpp itself cannot be
//! linked: it brings a second static copy of a different ggml version.
//!
//! The network is OpenAI's Whisper (`whisper/model.py`) written as ggml graphs:
//!
//! - **encoder** (once per 30 s window): not on ggml but in float32 on the `gemm` crate
//!   ([`Encoder`], about twice as fast at 1 500 positions); it writes the decoder's
//!   cross-attention keys and values of every layer into the caches here, kept for the
//!   window. It runs whole ([`GgmlWhisper::encode`]) or in parts, for a transcription
//!   advanced in steps: the convolutions, groups of blocks, then the cross-attention keys
//!   and values;
//! - **decoder** (once per token): token and position embeddings, blocks of causal
//!   self-attention over a KV cache, cross-attention over the window, the MLP, and the
//!   logits of the last token only, through the token embedding quantised to q8_0 (tied
//!   weights, as in candle's quantised Whisper).
//!
//! The decoder's weights keep the file's types (q8_0 projections, float16 embedding);
//! biases, norms and position tables are widened to float32 at load, and so is every
//! encoder weight. Activations are float32. Scratch memory comes from one graph allocator
//! that reuses its buffer.
//!
//! ggml aborts on malformed graphs; the shapes here are fixed by the configuration and
//! checked against the file at load, and inputs are checked before a graph is built.
#![allow(unsafe_code)]

use std::ffi::CString;
use std::path::Path;
use std::ptr::{NonNull, null, null_mut};

use candle_transformers::models::whisper::Config;
use llama_cpp_sys_2 as sys;

use crate::asr::encoder::{CrossCache, Encoder};
use crate::backend::BackendError;
use crate::threads::EngineThreads;

/// Graph nodes reserved per graph (a decoder step of a 4-layer model needs about 200).
const GRAPH_NODES: usize = 2048;
/// Layer-norm epsilon of every Whisper norm.
const LN_EPS: f32 = 1e-5;

type Tensor = *mut sys::ggml_tensor;

/// `y = W x + b`.
#[derive(Debug, Clone, Copy)]
struct Linear {
    w: Tensor,
    b: Option<Tensor>,
}

/// Layer norm with its scale and shift.
#[derive(Debug, Clone, Copy)]
struct Norm {
    w: Tensor,
    b: Tensor,
}

/// One attention's projections.
#[derive(Debug, Clone, Copy)]
struct Attention {
    q: Linear,
    k: Linear,
    v: Linear,
    out: Linear,
}

/// One decoder block. The cross-attention's keys and values come from the caches the
/// encoder fills, so only its query and output projections are here.
#[derive(Debug, Clone, Copy)]
struct Block {
    attn_ln: Norm,
    attn: Attention,
    cross_ln: Norm,
    cross_q: Linear,
    cross_out: Linear,
    mlp_ln: Norm,
    fc1: Linear,
    fc2: Linear,
}

/// A decoder layer's caches: self-attention keys and values (`d × n_text_ctx`), and the
/// window's cross-attention keys (`d_head × n_audio_ctx × n_head`) and values
/// (`n_audio_ctx × d_head × n_head`), each stored in the layout the attention products read
/// (ggml's fast matrix kernels need contiguous operands).
#[derive(Debug, Clone, Copy)]
struct Caches {
    self_k: Tensor,
    self_v: Tensor,
    cross_k: Tensor,
    cross_v: Tensor,
}

/// Model sizes from the configuration.
#[derive(Debug, Clone, Copy)]
struct Dims {
    n_state: i64,
    n_head: i64,
    n_audio_ctx: i64,
    n_text_ctx: i64,
    n_vocab: i64,
}

impl Dims {
    fn head(&self) -> i64 {
        self.n_state / self.n_head
    }
}

/// Declares an owning handle of a ggml object that `$free` releases when it drops.
macro_rules! owned {
    ($(#[$doc:meta])* $name:ident, $ty:ty, $free:path) => {
        $(#[$doc])*
        struct $name(NonNull<$ty>);

        impl $name {
            /// Takes ownership of `p`, or `None` when the constructor returned null.
            fn new(p: *mut $ty) -> Option<Self> {
                NonNull::new(p).map(Self)
            }

            fn ptr(&self) -> *mut $ty {
                self.0.as_ptr()
            }
        }

        impl Drop for $name {
            fn drop(&mut self) {
                // SAFETY: the pointer came from its ggml constructor (`new`) and is freed
                // once, here; graphs that use it live only inside one call of the model.
                unsafe { $free(self.0.as_ptr()) }
            }
        }
    };
}

owned!(
    /// A ggml context and the tensors in it.
    Context,
    sys::ggml_context,
    sys::ggml_free
);
owned!(
    /// ggml's CPU backend, which computes the graphs.
    CpuBackend,
    sys::ggml_backend,
    sys::ggml_backend_free
);
owned!(
    /// The graph allocator and its scratch buffer.
    Allocator,
    sys::ggml_gallocr,
    sys::ggml_gallocr_free
);

/// The tensors the decoder's graphs read: weights, derived tables and caches.
#[derive(Debug)]
struct Net {
    token_embedding: Tensor,
    decoder_positions: Tensor,
    decoder: Vec<Block>,
    decoder_ln: Norm,
    output: Tensor,
    caches: Vec<Caches>,
}

/// Whisper on ggml with its weights, caches, CPU backend and scratch allocator.
pub struct GgmlWhisper {
    dims: Dims,
    /// Fills the cross-attention caches of `net` once per window.
    encoder: Encoder,
    /// The encoder's threads, made at its first grant of more than one (one per core;
    /// idle between windows): the calling thread's pool may be smaller than that grant.
    encoder_pool: Option<EngineThreads>,
    /// Pointers into `weights` and `derived`, which outlive them (fields drop after it).
    net: Net,
    galloc: Allocator,
    backend: CpuBackend,
    /// Widened and quantised copies, position tables and caches.
    derived: Context,
    /// The file's tensors, with their data.
    weights: Context,
    /// Tensor and graph headers of the graph being built (no tensor data).
    graph_mem: Vec<u8>,
    /// Audio positions of the current window (0 before the first one).
    n_audio: i64,
    /// Mel frames of the window being encoded.
    encoding_frames: usize,
    /// Tokens in the self-attention caches.
    cached: usize,
    threads: usize,
}

impl std::fmt::Debug for GgmlWhisper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The pointers and the graph buffer say nothing to a reader.
        f.debug_struct("GgmlWhisper")
            .field("dims", &self.dims)
            .field("threads", &self.threads)
            .field("cached", &self.cached)
            .field("memory_bytes", &self.memory_bytes())
            .finish_non_exhaustive()
    }
}

// SAFETY: every ggml object here is owned by this value alone and used through `&mut self`
// by one thread at a time; ggml ties no context, backend or allocator to a thread.
unsafe impl Send for GgmlWhisper {}

fn load_err(path: &Path, reason: impl Into<crate::Cause>) -> BackendError {
    BackendError::load(path.display(), reason)
}

fn to_i64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The float32 values of `t` (float32, float16 or q8_0).
///
/// # Safety
/// `t` is a live tensor whose data is in host memory.
unsafe fn values_f32(t: Tensor) -> Option<Vec<f32>> {
    // SAFETY: per the contract; the data holds `nelements` values of the tensor's type,
    // which ggml's conversion for that type reads.
    unsafe {
        let n = usize::try_from(sys::ggml_nelements(t)).ok()?;
        let data = (*t).data;
        match (*t).type_ {
            sys::GGML_TYPE_F32 => Some(std::slice::from_raw_parts(data as *const f32, n).to_vec()),
            ty @ (sys::GGML_TYPE_F16 | sys::GGML_TYPE_Q8_0) => {
                let to_float = (*sys::ggml_get_type_traits(ty)).to_float?;
                let mut out = vec![0f32; n];
                to_float(data, out.as_mut_ptr(), to_i64(n));
                Some(out)
            }
            _ => None,
        }
    }
}

/// Bytes the derived context needs: widened 1-D tensors and the decoder position table,
/// the q8_0 output matrix, the caches, and tensor headers.
fn derived_size(d: Dims, weights: &Context, config: &Config) -> usize {
    let f32s = |n: i64| usize::try_from(n).unwrap_or(0) * 4;
    let mut bytes = 0usize;
    let mut tensors = 0usize;
    // SAFETY: walks the live weights context's tensor list.
    unsafe {
        let mut t = sys::ggml_get_first_tensor(weights.ptr());
        while !t.is_null() {
            // 1-D float tensors (biases, norms) are widened; the context also holds
            // the file's whole data as one 1-D byte tensor, which is not.
            let float = matches!((*t).type_, sys::GGML_TYPE_F32 | sys::GGML_TYPE_F16);
            if float && sys::ggml_n_dims(t) == 1 {
                bytes += f32s(sys::ggml_nelements(t));
                tensors += 1;
            }
            t = sys::ggml_get_next_tensor(weights.ptr(), t);
        }
        bytes += sys::ggml_row_size(sys::GGML_TYPE_Q8_0, d.n_state) * config.vocab_size;
    }
    bytes += f32s(d.n_state * d.n_text_ctx);
    let layers = config.decoder_layers;
    bytes += layers * 2 * f32s(d.n_state * (d.n_text_ctx + d.n_audio_ctx));
    tensors += 2 + 4 * layers;
    // SAFETY: a plain value.
    let overhead = unsafe { sys::ggml_tensor_overhead() };
    bytes + (tensors + 16) * (overhead + 64) + (1 << 20)
}

/// Reads the weights and builds the derived tensors (see [`GgmlWhisper::load`]).
struct Loader<'a> {
    path: &'a Path,
    weights: *mut sys::ggml_context,
    derived: *mut sys::ggml_context,
}

impl Loader<'_> {
    /// The file's tensor `name` with the shape `ne` (ggml order, innermost first).
    fn get(&self, name: &str, ne: &[i64]) -> Result<Tensor, BackendError> {
        let c = CString::new(name).map_err(|_| load_err(self.path, "tensor name with NUL"))?;
        // SAFETY: the context is live; the name is a valid C string for the call.
        let t = unsafe { sys::ggml_get_tensor(self.weights, c.as_ptr()) };
        if t.is_null() {
            return Err(load_err(self.path, format!("tensor {name} is missing")));
        }
        // SAFETY: `t` is a live tensor of the context.
        let have = unsafe { (*t).ne };
        let fits = ne.iter().enumerate().all(|(i, &n)| have[i] == n)
            && have[ne.len()..].iter().all(|&n| n == 1);
        if !fits {
            return Err(load_err(
                self.path,
                format!("tensor {name} has shape {have:?}, the configuration needs {ne:?}"),
            ));
        }
        Ok(t)
    }

    /// A new tensor of `ty` and shape `ne` in the derived context, its data not set.
    fn new_tensor(&self, ty: sys::ggml_type, ne: &[i64]) -> Tensor {
        // SAFETY: the derived context has room for every tensor made here (see
        // `derived_size`); `ne` holds at most 4 dimensions.
        unsafe { sys::ggml_new_tensor(self.derived, ty, ne.len() as i32, ne.as_ptr()) }
    }

    /// A new float32 tensor in the derived context filled with `values`.
    fn new_f32(&self, ne: &[i64], values: &[f32]) -> Tensor {
        let t = self.new_tensor(sys::GGML_TYPE_F32, ne);
        // SAFETY: `values` holds exactly the new tensor's element count.
        unsafe {
            std::ptr::copy_nonoverlapping(values.as_ptr(), (*t).data as *mut f32, values.len())
        };
        t
    }

    /// The file's tensor `name` with the shape `ne` as float32 values.
    fn values(&self, name: &str, ne: &[i64]) -> Result<Vec<f32>, BackendError> {
        let t = self.get(name, ne)?;
        // SAFETY: `t` is a live tensor of the loaded file, data in host memory.
        unsafe { values_f32(t) }.ok_or_else(|| {
            load_err(
                self.path,
                format!("tensor {name} is neither float32, float16 nor q8_0"),
            )
        })
    }

    /// The file's tensor `name` as a float32 tensor (a widened copy unless it is one).
    fn get_f32(&self, name: &str, ne: &[i64]) -> Result<Tensor, BackendError> {
        let values = self.values(name, ne)?;
        Ok(self.new_f32(ne, &values))
    }

    fn linear(
        &self,
        prefix: &str,
        n_in: i64,
        n_out: i64,
        bias: bool,
    ) -> Result<Linear, BackendError> {
        Ok(Linear {
            w: self.get(&format!("{prefix}.weight"), &[n_in, n_out])?,
            b: if bias {
                Some(self.get_f32(&format!("{prefix}.bias"), &[n_out])?)
            } else {
                None
            },
        })
    }

    fn norm(&self, prefix: &str, n: i64) -> Result<Norm, BackendError> {
        Ok(Norm {
            w: self.get_f32(&format!("{prefix}.weight"), &[n])?,
            b: self.get_f32(&format!("{prefix}.bias"), &[n])?,
        })
    }

    fn attention(&self, prefix: &str, n: i64) -> Result<Attention, BackendError> {
        Ok(Attention {
            q: self.linear(&format!("{prefix}.q_proj"), n, n, true)?,
            k: self.linear(&format!("{prefix}.k_proj"), n, n, false)?,
            v: self.linear(&format!("{prefix}.v_proj"), n, n, true)?,
            out: self.linear(&format!("{prefix}.out_proj"), n, n, true)?,
        })
    }

    fn block(&self, prefix: &str, n: i64) -> Result<Block, BackendError> {
        let cross = format!("{prefix}.encoder_attn");
        Ok(Block {
            attn_ln: self.norm(&format!("{prefix}.self_attn_layer_norm"), n)?,
            attn: self.attention(&format!("{prefix}.self_attn"), n)?,
            cross_ln: self.norm(&format!("{prefix}.encoder_attn_layer_norm"), n)?,
            cross_q: self.linear(&format!("{cross}.q_proj"), n, n, true)?,
            cross_out: self.linear(&format!("{cross}.out_proj"), n, n, true)?,
            mlp_ln: self.norm(&format!("{prefix}.final_layer_norm"), n)?,
            fc1: self.linear(&format!("{prefix}.fc1"), n, 4 * n, true)?,
            fc2: self.linear(&format!("{prefix}.fc2"), 4 * n, n, true)?,
        })
    }

    /// Finds and prepares every tensor the decoder's graphs use.
    fn net(&self, d: Dims, config: &Config) -> Result<Net, BackendError> {
        let dec = "model.decoder";
        let token_embedding = self.get(
            &format!("{dec}.embed_tokens.weight"),
            &[d.n_state, d.n_vocab],
        )?;
        // The logits' matrix: the token embedding (tied weights) quantised to q8_0, as
        // every other projection is.
        // SAFETY: a live tensor of the file.
        let table = unsafe { values_f32(token_embedding) }.ok_or_else(|| {
            load_err(
                self.path,
                "the token embedding is neither float32 nor float16",
            )
        })?;
        if d.n_state % 32 != 0 {
            return Err(load_err(
                self.path,
                "the model width is not a multiple of 32",
            ));
        }
        let output = self.new_tensor(sys::GGML_TYPE_Q8_0, &[d.n_state, d.n_vocab]);
        // SAFETY: the new tensor holds `n_vocab` q8_0 rows of `n_state` values, and the
        // table as many float rows, each a whole number of 32-value blocks (checked above).
        unsafe {
            sys::ggml_quantize_chunk(
                sys::GGML_TYPE_Q8_0,
                table.as_ptr(),
                (*output).data,
                0,
                d.n_vocab,
                d.n_state,
                null(),
            )
        };
        // Caches are written before they are read (a token's keys and values before its
        // attention, a window's cross-attention before its first token): no zeroing.
        let (dh, nh) = (d.head(), d.n_head);
        let f32 = sys::GGML_TYPE_F32;
        let caches = (0..config.decoder_layers)
            .map(|_| Caches {
                self_k: self.new_tensor(f32, &[d.n_state, d.n_text_ctx]),
                self_v: self.new_tensor(f32, &[d.n_state, d.n_text_ctx]),
                cross_k: self.new_tensor(f32, &[dh, d.n_audio_ctx, nh]),
                cross_v: self.new_tensor(f32, &[d.n_audio_ctx, dh, nh]),
            })
            .collect();
        Ok(Net {
            token_embedding,
            decoder_positions: self.get_f32(
                &format!("{dec}.embed_positions.weight"),
                &[d.n_state, d.n_text_ctx],
            )?,
            decoder: (0..config.decoder_layers)
                .map(|i| self.block(&format!("{dec}.layers.{i}"), d.n_state))
                .collect::<Result<_, _>>()?,
            decoder_ln: self.norm(&format!("{dec}.layer_norm"), d.n_state)?,
            output,
            caches,
        })
    }
}

impl GgmlWhisper {
    /// Loads the q8_0 GGUF at `path` (Hugging Face tensor names) for `config`, to run on
    /// `threads` threads.
    pub fn load(path: &Path, config: &Config, threads: usize) -> Result<Self, BackendError> {
        crate::llm::llama::init_backend();
        let dims = Dims {
            n_state: to_i64(config.d_model),
            n_head: to_i64(config.encoder_attention_heads),
            n_audio_ctx: to_i64(config.max_source_positions),
            n_text_ctx: to_i64(config.max_target_positions),
            n_vocab: to_i64(config.vocab_size),
        };
        if dims.n_head == 0
            || dims.n_state % dims.n_head != 0
            || config.decoder_attention_heads != config.encoder_attention_heads
        {
            return Err(load_err(
                path,
                "the configuration's widths and head counts do not divide",
            ));
        }
        let c_path = CString::new(path.to_string_lossy().as_bytes())
            .map_err(|_| load_err(path, "the path contains a NUL byte"))?;
        let mut tensors: *mut sys::ggml_context = null_mut();
        // SAFETY: the path is a valid C string; on success `tensors` receives a context
        // holding every tensor with its data (`no_alloc: false`).
        unsafe {
            let gguf = sys::gguf_init_from_file(
                c_path.as_ptr(),
                sys::gguf_init_params {
                    no_alloc: false,
                    ctx: &mut tensors,
                },
            );
            // Only the metadata is freed: the tensors live in their own context.
            if !gguf.is_null() {
                sys::gguf_free(gguf);
            }
        }
        let weights = Context::new(tensors)
            .ok_or_else(|| load_err(path, "not a readable GGUF file with tensors"))?;
        let derived_bytes = derived_size(dims, &weights, config);
        // SAFETY: a plain allocation of `derived_bytes` owned by the new context.
        let derived = Context::new(unsafe {
            sys::ggml_init(sys::ggml_init_params {
                mem_size: derived_bytes,
                mem_buffer: null_mut(),
                no_alloc: false,
            })
        })
        .ok_or_else(|| load_err(path, "cannot allocate the model's working memory"))?;
        // SAFETY: plain constructors, checked for null.
        let (backend, galloc) = unsafe {
            (
                CpuBackend::new(sys::ggml_backend_cpu_init()),
                Allocator::new(sys::ggml_gallocr_new(sys::ggml_backend_cpu_buffer_type())),
            )
        };
        let (Some(backend), Some(galloc)) = (backend, galloc) else {
            return Err(load_err(path, "cannot start ggml's CPU backend"));
        };
        let loader = Loader {
            path,
            weights: weights.ptr(),
            derived: derived.ptr(),
        };
        let net = loader.net(dims, config)?;
        let encoder = Encoder::load(config, |name, ne| {
            let ne: Vec<i64> = ne.iter().map(|&n| to_i64(n)).collect();
            loader.values(name, &ne)
        })?;
        // SAFETY: graph headers only: the size ggml asks for a graph of GRAPH_NODES nodes
        // and as many tensor headers.
        let graph_bytes = unsafe {
            sys::ggml_tensor_overhead() * GRAPH_NODES
                + sys::ggml_graph_overhead_custom(GRAPH_NODES, false)
        };
        Ok(Self {
            dims,
            encoder,
            encoder_pool: None,
            net,
            galloc,
            backend,
            derived,
            weights,
            graph_mem: vec![0; graph_bytes],
            n_audio: 0,
            encoding_frames: 0,
            cached: 0,
            threads: threads.max(1),
        })
    }

    /// Bytes held: the file's tensors, the derived ones (caches included), the graphs'
    /// scratch buffer and the encoder's float32 weights and working buffers.
    pub fn memory_bytes(&self) -> u64 {
        // SAFETY: reads sizes of a live context and allocator.
        let bytes = unsafe {
            sys::ggml_get_mem_size(self.weights.ptr())
                + sys::ggml_get_mem_size(self.derived.ptr())
                + sys::ggml_gallocr_get_buffer_size(self.galloc.ptr(), 0)
        };
        bytes as u64 + self.encoder.memory_bytes()
    }

    /// Threads the next calls use.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Runs the next calls on `threads` threads.
    pub fn set_threads(&mut self, threads: usize) {
        self.threads = threads.max(1);
    }

    /// Tokens decoded since the window started.
    pub fn cached(&self) -> usize {
        self.cached
    }

    /// Encodes one window's log-mel spectrogram (`n_mels` rows of `frames` values, row
    /// major) and forgets the previous window's tokens: the encoder's three parts back to
    /// back.
    pub fn encode(&mut self, mel: &[f32], frames: usize) -> Result<(), BackendError> {
        self.encode_stem(mel, frames)?;
        self.encode_layers(self.encoder.layers())?;
        self.encode_cross()
    }

    /// Encoder blocks (layers), which [`GgmlWhisper::encode_layers`] runs in groups.
    pub fn encoder_layers(&self) -> usize {
        self.encoder.layers()
    }

    /// Starts encoding a window (the convolutions) and forgets the previous window's
    /// tokens; the decoder cannot run until [`GgmlWhisper::encode_cross`] has.
    pub fn encode_stem(&mut self, mel: &[f32], frames: usize) -> Result<(), BackendError> {
        // Until the encoder's last part succeeds no window is encoded: the caches may be
        // half written.
        self.cached = 0;
        self.n_audio = 0;
        self.on_encoder_threads(|encoder, threads| encoder.stem(mel, frames, threads))?;
        self.encoding_frames = frames;
        Ok(())
    }

    /// Runs the next `count` encoder blocks of the window being encoded.
    pub fn encode_layers(&mut self, count: usize) -> Result<(), BackendError> {
        self.on_encoder_threads(|encoder, threads| encoder.run_layers(count, threads))
    }

    /// Finishes encoding the window: writes every decoder layer's cross-attention keys and
    /// values, after which the decoder runs over it.
    pub fn encode_cross(&mut self) -> Result<(), BackendError> {
        // SAFETY: each cache is a float32 tensor of the derived context, alive as long as
        // `self`, and no graph runs while the encoder writes them.
        let caches: Vec<CrossCache<'_>> = self
            .net
            .caches
            .iter()
            .map(|c| unsafe {
                let len = |t: Tensor| usize::try_from(sys::ggml_nelements(t)).unwrap_or(0);
                CrossCache {
                    k: std::slice::from_raw_parts_mut((*c.cross_k).data.cast(), len(c.cross_k)),
                    v: std::slice::from_raw_parts_mut((*c.cross_v).data.cast(), len(c.cross_v)),
                }
            })
            .collect();
        self.on_encoder_threads(|encoder, threads| encoder.cross(threads, caches))?;
        self.n_audio = to_i64(self.encoding_frames / 2);
        Ok(())
    }

    /// Runs `part` on the granted threads: on the calling thread alone for one, else on
    /// the encoder's own pool (made at the first grant of more than one).
    fn on_encoder_threads(
        &mut self,
        part: impl FnOnce(&mut Encoder, usize) -> Result<(), BackendError> + Send,
    ) -> Result<(), BackendError> {
        if self.threads > 1 {
            let pool = match &mut self.encoder_pool {
                Some(pool) => pool,
                pool => pool.insert(EngineThreads::new("asr-encoder", 0)?),
            };
            let threads = self.threads.min(pool.threads());
            let encoder = &mut self.encoder;
            pool.install(|| part(encoder, threads))
        } else {
            part(&mut self.encoder, 1)
        }
    }

    /// Runs the tokens `new` (after the cached ones) through the decoder over the current
    /// window and returns the logits of the last one (`n_vocab` values).
    pub fn step(&mut self, new: &[u32]) -> Result<Vec<f32>, BackendError> {
        let d = self.dims;
        let n = to_i64(new.len());
        let past = to_i64(self.cached);
        if self.n_audio == 0 {
            return Err(BackendError::InvalidInput(
                "no window encoded before decoding".into(),
            ));
        }
        if new.is_empty() || past + n > d.n_text_ctx {
            return Err(BackendError::InvalidInput(format!(
                "the decoder holds at most {} tokens ({past} cached, {n} new)",
                d.n_text_ctx
            )));
        }
        if let Some(&bad) = new.iter().find(|&&t| i64::from(t) >= d.n_vocab) {
            return Err(BackendError::InvalidInput(format!(
                "token {bad} is outside the vocabulary"
            )));
        }
        let ids: Vec<i32> = new.iter().map(|&t| t as i32).collect();
        let g = Graph::new(&mut self.graph_mem)?;
        let mut logits = vec![0f32; usize::try_from(d.n_vocab).unwrap_or(0)];
        // SAFETY: as in `encode`; cache views stay inside the caches (past + n ≤ n_text_ctx,
        // n_audio ≤ n_audio_ctx).
        unsafe {
            let ctx = g.ctx;
            let input = sys::ggml_new_tensor_1d(ctx, sys::GGML_TYPE_I32, n);
            sys::ggml_set_input(input);
            let pos = self.net.decoder_positions;
            let row = (*pos).nb[1];
            let mut x = sys::ggml_get_rows(ctx, self.net.token_embedding, input);
            x = sys::ggml_add(
                ctx,
                x,
                sys::ggml_view_2d(ctx, pos, d.n_state, n, row, row * past as usize),
            );
            let n_kv = past + n;
            for (b, c) in self.net.decoder.iter().zip(&self.net.caches) {
                let h = norm(ctx, x, b.attn_ln);
                let q = linear(ctx, b.attn.q, h);
                let col = (*c.self_k).nb[1];
                for (src, cache) in [(b.attn.k, c.self_k), (b.attn.v, c.self_v)] {
                    let dst = sys::ggml_view_2d(ctx, cache, d.n_state, n, col, col * past as usize);
                    sys::ggml_build_forward_expand(
                        g.graph,
                        sys::ggml_cpy(ctx, linear(ctx, src, h), dst),
                    );
                }
                let k = sys::ggml_view_3d(
                    ctx,
                    c.self_k,
                    d.head(),
                    n_kv,
                    d.n_head,
                    col,
                    (*c.self_k).nb[0] * d.head() as usize,
                    0,
                );
                let v = sys::ggml_view_3d(
                    ctx,
                    c.self_v,
                    d.head(),
                    n_kv,
                    d.n_head,
                    col,
                    (*c.self_v).nb[0] * d.head() as usize,
                    0,
                );
                let v = sys::ggml_cont(ctx, sys::ggml_permute(ctx, v, 1, 0, 2, 3));
                let a = attend(ctx, q, k, v, d, (n > 1).then_some(past));
                x = sys::ggml_add(ctx, x, linear(ctx, b.attn.out, a));
                let q = linear(ctx, b.cross_q, norm(ctx, x, b.cross_ln));
                let ck = c.cross_k;
                let k = sys::ggml_view_3d(
                    ctx,
                    ck,
                    d.head(),
                    self.n_audio,
                    d.n_head,
                    (*ck).nb[1],
                    (*ck).nb[2],
                    0,
                );
                let cv = c.cross_v;
                let v = sys::ggml_view_3d(
                    ctx,
                    cv,
                    self.n_audio,
                    d.head(),
                    d.n_head,
                    (*cv).nb[1],
                    (*cv).nb[2],
                    0,
                );
                let a = attend(ctx, q, k, v, d, None);
                x = sys::ggml_add(ctx, x, linear(ctx, b.cross_out, a));
                x = sys::ggml_add(ctx, x, mlp(ctx, b, x));
            }
            let x = norm(ctx, x, self.net.decoder_ln);
            let last = sys::ggml_view_2d(
                ctx,
                x,
                d.n_state,
                1,
                (*x).nb[1],
                (*x).nb[1] * (n - 1) as usize,
            );
            let out = sys::ggml_mul_mat(ctx, self.net.output, last);
            sys::ggml_set_output(out);
            sys::ggml_build_forward_expand(g.graph, out);
            self.run(&g, &[(input, as_bytes(&ids))])?;
            sys::ggml_backend_tensor_get(out, logits.as_mut_ptr().cast(), 0, logits.len() * 4);
        }
        self.cached += new.len();
        Ok(logits)
    }

    /// Allocates `g`'s tensors, copies the inputs in and computes it.
    ///
    /// # Safety
    /// `g` was built from this model's tensors and every input is a tensor of `g` whose
    /// byte size is that of its data.
    unsafe fn run(&mut self, g: &Graph, inputs: &[(Tensor, &[u8])]) -> Result<(), BackendError> {
        // SAFETY: per the contract.
        unsafe {
            if !sys::ggml_gallocr_alloc_graph(self.galloc.ptr(), g.graph) {
                return Err(BackendError::engine(
                    "ggml",
                    "could not allocate the Whisper graph",
                ));
            }
            for &(t, bytes) in inputs {
                sys::ggml_backend_tensor_set(t, bytes.as_ptr().cast(), 0, bytes.len());
            }
            sys::ggml_backend_cpu_set_n_threads(
                self.backend.ptr(),
                i32::try_from(self.threads).unwrap_or(1),
            );
            let status = sys::ggml_backend_graph_compute(self.backend.ptr(), g.graph);
            if status != sys::GGML_STATUS_SUCCESS {
                return Err(BackendError::engine(
                    "ggml",
                    format!("computing Whisper failed (status {status})"),
                ));
            }
        }
        Ok(())
    }
}

fn as_bytes<T: Copy>(values: &[T]) -> &[u8] {
    // SAFETY: plain numeric values (f32, i32) have no padding; the slice covers exactly
    // their bytes for the same lifetime.
    unsafe { std::slice::from_raw_parts(values.as_ptr().cast(), std::mem::size_of_val(values)) }
}

/// A graph being built: a context holding only tensor headers (the data comes from the
/// allocator) inside the model's `graph_mem`, freed when dropped.
struct Graph {
    ctx: *mut sys::ggml_context,
    graph: *mut sys::ggml_cgraph,
}

impl Graph {
    fn new(mem: &mut [u8]) -> Result<Self, BackendError> {
        // SAFETY: the context lives inside `mem`, which outlives the graph (both are used
        // within one call of the model); `no_alloc` keeps tensor data out of it.
        unsafe {
            let ctx = sys::ggml_init(sys::ggml_init_params {
                mem_size: mem.len(),
                mem_buffer: mem.as_mut_ptr().cast(),
                no_alloc: true,
            });
            if ctx.is_null() {
                return Err(BackendError::engine("ggml", "could not start a graph"));
            }
            let graph = sys::ggml_new_graph_custom(ctx, GRAPH_NODES, false);
            Ok(Self { ctx, graph })
        }
    }
}

impl Drop for Graph {
    fn drop(&mut self) {
        // SAFETY: made in `Graph::new`, freed once; the memory itself is the model's.
        unsafe { sys::ggml_free(self.ctx) }
    }
}

/// `W x + b`.
///
/// # Safety
/// `ctx` is a live graph context; `x` is `[n_in, n]`.
unsafe fn linear(ctx: *mut sys::ggml_context, l: Linear, x: Tensor) -> Tensor {
    // SAFETY: per the contract.
    unsafe {
        let y = sys::ggml_mul_mat(ctx, l.w, x);
        match l.b {
            Some(b) => sys::ggml_add(ctx, y, b),
            None => y,
        }
    }
}

/// Layer norm over the model dimension.
///
/// # Safety
/// As [`linear`].
unsafe fn norm(ctx: *mut sys::ggml_context, x: Tensor, n: Norm) -> Tensor {
    // SAFETY: per the contract.
    unsafe {
        let y = sys::ggml_norm(ctx, x, LN_EPS);
        sys::ggml_add(ctx, sys::ggml_mul(ctx, y, n.w), n.b)
    }
}

/// The block's MLP branch: `fc2(gelu(fc1(ln(x))))`.
///
/// # Safety
/// As [`linear`].
unsafe fn mlp(ctx: *mut sys::ggml_context, b: &Block, x: Tensor) -> Tensor {
    // SAFETY: per the contract.
    unsafe {
        let h = linear(ctx, b.fc1, norm(ctx, x, b.mlp_ln));
        linear(ctx, b.fc2, sys::ggml_gelu_erf(ctx, h))
    }
}

/// `[d, n]` → `[d_head, n, n_head]` (a view).
///
/// # Safety
/// As [`linear`].
unsafe fn heads(ctx: *mut sys::ggml_context, x: Tensor, d: Dims) -> Tensor {
    // SAFETY: per the contract.
    unsafe {
        let n = (*x).ne[1];
        sys::ggml_permute(
            ctx,
            sys::ggml_reshape_3d(ctx, x, d.head(), d.n_head, n),
            0,
            2,
            1,
            3,
        )
    }
}

/// Scaled dot-product attention of the queries `q` (`[d, n_q]`) over keys `k`
/// (`[d_head, n_kv, n_head]`) and values `v` (`[n_kv, d_head, n_head]`), both best
/// contiguous (ggml falls back to a slow dot product per row pair otherwise); with
/// `causal_past = Some(p)` query `i` sees keys up to `p + i`. Returns `[d, n_q]`.
///
/// # Safety
/// As [`linear`].
unsafe fn attend(
    ctx: *mut sys::ggml_context,
    q: Tensor,
    k: Tensor,
    v: Tensor,
    d: Dims,
    causal_past: Option<i64>,
) -> Tensor {
    // SAFETY: per the contract.
    unsafe {
        let n_q = (*q).ne[1];
        let scale = 1.0 / (d.head() as f32).sqrt();
        let kq = sys::ggml_mul_mat(ctx, k, sys::ggml_cont(ctx, heads(ctx, q, d)));
        let w = match causal_past {
            Some(past) => {
                let masked =
                    sys::ggml_diag_mask_inf(ctx, sys::ggml_scale(ctx, kq, scale), past as i32);
                sys::ggml_soft_max(ctx, masked)
            }
            None => sys::ggml_soft_max_ext(ctx, kq, null_mut(), scale, 0.0),
        };
        let out = sys::ggml_mul_mat(ctx, v, w);
        sys::ggml_cont_2d(ctx, sys::ggml_permute(ctx, out, 0, 2, 1, 3), d.n_state, n_q)
    }
}
