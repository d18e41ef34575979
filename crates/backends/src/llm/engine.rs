//! Which engine runs the LLM, and the few calls the session needs from either.
//!
//! Why llama.cpp is the default: on a 2-core Intel Xeon (AVX-512) of the target kind,
//! Gemma-3 270M Q4_K_M prefilled at about 90 tokens/s on candle against 213 / 431 on
//! llama.cpp at 1 / 2 threads, and decoded at 29 / 26 tokens/s on candle (no gain from the
//! second core: candle's quantised matmuls run on one process-wide pool that cannot be
//! resized per call) against 22.6 / 39.1 on llama.cpp. `mmsched bench models` prints both
//! engines' figures on the machine at hand. So llama.cpp is the default wherever it is
//! compiled in (cargo feature `llama`, on by default), and candle stays available
//! (`--llm-engine candle`) as the pure-Rust engine that builds without a C++ toolchain.

use std::path::Path;

use candle_core::quantized::gguf_file;
use candle_core::{Device, Tensor};
use mmsched_core::time::Clock;

use crate::backend::BackendError;
#[cfg(feature = "llama")]
use crate::llm::batch::prompt_calls;
#[cfg(feature = "llama")]
use crate::llm::llama::LlamaGemma;
use crate::llm::model::{Gemma3, StageTimer};
use crate::llm::session::StepStages;
use crate::llm::tokenizer::GgufTokenizer;
use crate::threads::EngineThreads;

/// The LLM engines mmsched can use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LlmEngine {
    /// llama.cpp (C++, cargo feature `llama`): the default where compiled in.
    Llama,
    /// candle's quantised Gemma-3 (pure Rust, cargo feature `candle`).
    Candle,
}

impl LlmEngine {
    /// The engine's short name (`llama` or `candle`).
    pub fn as_str(self) -> &'static str {
        match self {
            LlmEngine::Llama => "llama",
            LlmEngine::Candle => "candle",
        }
    }

    /// Whether this engine was compiled into this build.
    pub fn is_compiled_in(self) -> bool {
        match self {
            LlmEngine::Llama => cfg!(feature = "llama"),
            LlmEngine::Candle => true,
        }
    }
}

impl Default for LlmEngine {
    /// llama.cpp when compiled in, else candle.
    fn default() -> Self {
        if cfg!(feature = "llama") {
            LlmEngine::Llama
        } else {
            LlmEngine::Candle
        }
    }
}

impl std::fmt::Display for LlmEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for LlmEngine {
    type Err = BackendError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "llama" | "llama.cpp" => Ok(LlmEngine::Llama),
            "candle" => Ok(LlmEngine::Candle),
            other => Err(BackendError::InvalidInput(format!(
                "unknown LLM engine `{other}`: use `llama` or `candle`"
            ))),
        }
    }
}

/// A loaded model on one of the engines, with its KV cache.
pub(crate) enum LoadedModel {
    /// candle, on its own rayon pool.
    Candle {
        model: Box<Gemma3>,
        threads: EngineThreads,
    },
    /// llama.cpp.
    #[cfg(feature = "llama")]
    Llama(LlamaGemma),
}

impl std::fmt::Debug for LoadedModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.engine().as_str())
    }
}

fn candle_err(e: candle_core::Error) -> BackendError {
    BackendError::engine("candle", crate::backend::candle_cause(e))
}

impl LoadedModel {
    /// Loads `path` on `engine` with `threads` threads (0: one per core).
    pub(crate) fn load(
        engine: LlmEngine,
        path: &Path,
        ct: &gguf_file::Content,
        file: &mut std::fs::File,
        max_seq_len: usize,
        threads: usize,
    ) -> Result<Self, BackendError> {
        let threads = if threads == 0 {
            std::thread::available_parallelism().map_or(1, usize::from)
        } else {
            threads
        };
        let shown = path.display();
        match engine {
            LlmEngine::Candle => {
                let threads = EngineThreads::new("llm", threads)?;
                let model = threads
                    .install(|| Gemma3::from_gguf(ct, file, max_seq_len, &Device::Cpu))
                    .map_err(|e| BackendError::load(shown, crate::backend::candle_cause(e)))?;
                Ok(LoadedModel::Candle {
                    model: Box::new(model),
                    threads,
                })
            }
            #[cfg(feature = "llama")]
            LlmEngine::Llama => Ok(LoadedModel::Llama(
                LlamaGemma::load(path, max_seq_len, threads)
                    .map_err(|e| BackendError::load(shown, e))?,
            )),
            #[allow(unreachable_patterns)]
            other => Err(BackendError::unavailable(
                other.as_str(),
                format!(
                    "it is not compiled into this build: rebuild with `cargo build -p mmsched --features {other}`"
                ),
            )),
        }
    }

    /// A second model on the same weights with a KV cache of its own (and, on candle, a
    /// pool of its own with as many threads).
    pub(crate) fn fork(&self) -> Result<Self, BackendError> {
        match self {
            LoadedModel::Candle { model, threads } => Ok(LoadedModel::Candle {
                model: Box::new(model.fork()),
                threads: EngineThreads::new("llm", threads.threads())?,
            }),
            #[cfg(feature = "llama")]
            LoadedModel::Llama(m) => m
                .fork()
                .map(LoadedModel::Llama)
                .map_err(|e| BackendError::engine("llama.cpp", e)),
        }
    }

    /// Which engine this is.
    pub(crate) fn engine(&self) -> LlmEngine {
        match self {
            LoadedModel::Candle { .. } => LlmEngine::Candle,
            #[cfg(feature = "llama")]
            LoadedModel::Llama(_) => LlmEngine::Llama,
        }
    }

    /// The engine's own tokenizer, where it has one (llama.cpp's, for any vocabulary).
    pub(crate) fn engine_tokenizer(&self) -> Option<GgufTokenizer> {
        match self {
            #[cfg(feature = "llama")]
            LoadedModel::Llama(m) => Some(GgufTokenizer::llama(
                crate::llm::llama_vocab::LlamaVocab::new(m.weights().clone()),
            )),
            _ => None,
        }
    }

    /// Threads the next calls run on.
    pub(crate) fn threads(&self) -> usize {
        match self {
            LoadedModel::Candle { threads, .. } => threads.threads(),
            #[cfg(feature = "llama")]
            LoadedModel::Llama(m) => m.threads(),
        }
    }

    /// Runs the next calls on `threads` threads if the engine can change its thread count
    /// between calls, and returns the count it will use; `None` if it cannot. candle
    /// cannot: its quantised matmuls run on one process-wide pool sized at first use.
    pub(crate) fn grant_threads(&mut self, threads: usize) -> Option<usize> {
        match self {
            LoadedModel::Candle { .. } => None,
            #[cfg(feature = "llama")]
            LoadedModel::Llama(m) => {
                m.set_threads(threads);
                Some(m.threads())
            }
        }
    }

    pub(crate) fn max_seq_len(&self) -> usize {
        match self {
            LoadedModel::Candle { model, .. } => model.max_seq_len(),
            #[cfg(feature = "llama")]
            LoadedModel::Llama(m) => m.max_seq_len(),
        }
    }

    pub(crate) fn vocab_size(&self) -> usize {
        match self {
            LoadedModel::Candle { model, .. } => model.vocab_size(),
            #[cfg(feature = "llama")]
            LoadedModel::Llama(m) => m.vocab_size(),
        }
    }

    /// Drops the KV cache.
    pub(crate) fn clear(&mut self) {
        match self {
            LoadedModel::Candle { model, .. } => model.clear_kv_cache(),
            #[cfg(feature = "llama")]
            LoadedModel::Llama(m) => m.clear(),
        }
    }

    /// Bytes of the KV cache (candle) or of the whole context state (llama.cpp).
    pub(crate) fn cache_bytes(&self) -> u64 {
        match self {
            LoadedModel::Candle { model, .. } => model.kv_cache_bytes(),
            #[cfg(feature = "llama")]
            LoadedModel::Llama(m) => m.state_bytes(),
        }
    }

    /// The candle model, for benchmarks that drive it directly.
    pub(crate) fn candle(&self) -> Option<&Gemma3> {
        match self {
            LoadedModel::Candle { model, .. } => Some(model.as_ref()),
            #[cfg(feature = "llama")]
            LoadedModel::Llama(_) => None,
        }
    }

    /// The llama.cpp model, for benchmarks that drive it directly.
    #[cfg(feature = "llama")]
    pub(crate) fn llama(&self) -> Option<&LlamaGemma> {
        match self {
            LoadedModel::Llama(m) => Some(m),
            LoadedModel::Candle { .. } => None,
        }
    }

    /// Feeds `ids` at `index_pos..` and returns the last position's logits with the stage
    /// split (llama.cpp has no per-stage timing: its whole call counts as `rest`).
    pub(crate) fn forward(
        &mut self,
        ids: &[u32],
        index_pos: usize,
        clock: &(dyn Clock + Send + Sync),
    ) -> Result<(Vec<f32>, StepStages), BackendError> {
        match self {
            LoadedModel::Candle { model, threads } => threads
                .install(|| {
                    let mut timer = StageTimer::start(clock);
                    let input = Tensor::new(ids, &Device::Cpu)?.unsqueeze(0)?;
                    timer.rest();
                    let logits = model.forward(&input, index_pos, &mut timer)?;
                    let logits = logits.to_vec1::<f32>()?;
                    timer.rest();
                    Ok::<_, candle_core::Error>((
                        logits,
                        StepStages {
                            kv_cache_nanos: timer.kv_cache_nanos,
                            attention_nanos: timer.attention_nanos,
                            rest_nanos: timer.rest_nanos,
                        },
                    ))
                })
                .map_err(candle_err),
            #[cfg(feature = "llama")]
            LoadedModel::Llama(m) => {
                let t0 = clock.now_nanos();
                // In the calls of `prompt_calls`, as the batch decoder feeds prompts: from
                // 8 rows on llama.cpp takes another matrix product, and one row another
                // attention product, so a prompt fed in other calls would fill the cache
                // with slightly other values and a greedy answer would depend on the chunk
                // size the runtime asked for (64 tokens when a request has the device
                // alone, 4 beside others): "the German inventor, Karl…" alone, "the German
                // inventor Karl…" beside three other requests.
                let engine = |e| BackendError::engine("llama.cpp", e);
                let mut at = 0;
                let mut logits = &[][..];
                // No tokens: one empty call, which llama.cpp's wrapper refuses by name.
                let calls = if ids.is_empty() {
                    vec![0]
                } else {
                    prompt_calls(ids.len())
                };
                for n in calls {
                    logits = m.forward(&ids[at..at + n]).map_err(engine)?;
                    at += n;
                }
                let logits = logits.to_vec();
                let stages = StepStages {
                    rest_nanos: clock.now_nanos().saturating_sub(t0),
                    ..StepStages::default()
                };
                Ok((logits, stages))
            }
        }
    }
}
