//! A loaded LLM with a token-step API: prefill the prompt in chunks, then one token per
//! [`LlmSession::step`], so that every decode step is a separately schedulable unit.

use std::path::Path;
use std::sync::Arc;

use candle_core::quantized::gguf_file;
use candle_core::{Device, Tensor};
use candle_transformers::generation::LogitsProcessor;
use mmsched_core::time::{Clock, Nanos};
use serde::Serialize;

use crate::backend::{Backend, BackendError};
use crate::llm::engine::{LlmEngine, LoadedModel};
#[cfg(feature = "llama")]
use crate::llm::llama::LlamaGemma;
use crate::llm::model::{DEFAULT_MAX_SEQ_LEN, Gemma3};
use crate::llm::tokenizer::{GgufTokenizer, TextStream};

/// How to load and run the LLM.
#[derive(Debug, Clone, PartialEq)]
pub struct LlmOptions {
    /// Which engine runs the model (default: llama.cpp where compiled in).
    pub engine: LlmEngine,
    /// Threads for this engine (0: one per core); the scheduler may change it between
    /// calls ([`Backend::grant_threads`]) where the engine allows.
    pub threads: usize,
    /// Maximum sequence length (prompt + generated tokens); sizes the rotary tables.
    pub max_seq_len: usize,
    /// Sampling temperature; `None` (or 0) is greedy, deterministic decoding.
    pub temperature: Option<f64>,
    /// Seed of the sampler (only used when sampling).
    pub seed: u64,
    /// Prompt tokens per prefill chunk in [`Backend::execute`].
    pub prefill_chunk: usize,
    /// Record each token's top two logits ([`Generation::top_two`]): a pass over the
    /// vocabulary per token that only a comparison of builds needs (`infer llm --json`).
    pub top_two: bool,
    /// Tokenize with the engine's own tokenizer (llama.cpp's), which reads every
    /// vocabulary type and the special tokens a chat template writes: for a model of the
    /// user's own. Off, a SentencePiece vocabulary (the default Gemma-3) is read from the
    /// file's metadata, the same on both engines; any other vocabulary type still takes
    /// llama.cpp's.
    pub engine_tokenizer: bool,
}

impl Default for LlmOptions {
    fn default() -> Self {
        Self {
            engine: LlmEngine::default(),
            threads: 0,
            max_seq_len: DEFAULT_MAX_SEQ_LEN,
            temperature: None,
            seed: 0,
            prefill_chunk: 64,
            top_two: false,
            engine_tokenizer: false,
        }
    }
}

/// Time of one forward pass (and sampling) by stage, summed over layers, in nanoseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct StepStages {
    /// Appending to and reading back the KV cache.
    pub kv_cache_nanos: Nanos,
    /// q/k/v/o projections, rotary embedding, scores, softmax, weighted sum.
    pub attention_nanos: Nanos,
    /// Embedding, norms, MLP, LM head and sampling.
    pub rest_nanos: Nanos,
}

impl StepStages {
    /// Sum of the stages.
    pub fn total_nanos(&self) -> Nanos {
        self.kv_cache_nanos + self.attention_nanos + self.rest_nanos
    }

    fn add(&mut self, o: &StepStages) {
        self.kv_cache_nanos += o.kv_cache_nanos;
        self.attention_nanos += o.attention_nanos;
        self.rest_nanos += o.rest_nanos;
    }
}

/// One generated token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Token {
    /// Token id.
    pub id: u32,
    /// Its text (may be empty for control tokens or a partial UTF-8 sequence).
    pub text: String,
    /// Whether it ends generation (end of sequence / end of turn).
    pub stop: bool,
    /// Stage timing of the work that produced it.
    pub stages: StepStages,
    /// Wall time of the call that produced it (prefill chunk or step), nanoseconds.
    pub nanos: Nanos,
}

/// How close a token's choice was: the second-highest logit of the step that produced it.
/// Two builds whose kernels sum in different orders (x86 and Arm) may swap a greedy token
/// only where this margin is within their rounding.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TopTwo {
    /// The token with the second-highest logit.
    pub runner_up: u32,
    /// The highest logit minus the second-highest (0 or more).
    pub margin: f32,
}

/// How many of `pending` prompt tokens a prefill step asked for `chunk` of them feeds: at
/// least two, and never all but one, so no step leaves a last call of one row — a
/// one-row call attends with another product than a call of several rows, and a greedy
/// answer would depend on the chunk sizes the runtime asked for (they follow the device's
/// load). Only a one-token prompt is fed in one row.
pub(crate) fn prompt_take(pending: usize, chunk: usize) -> usize {
    let n = chunk.max(2).min(pending);
    if pending - n == 1 { n + 1 } else { n }
}

/// The two highest logits' token ids (the first index of a tie ranks first, as [`argmax`]
/// picks it) and their difference, in one pass; `None` for fewer than two logits or any
/// that is not finite.
pub fn top_two(logits: &[f32]) -> Option<TopTwo> {
    if logits.len() < 2 || logits.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let (mut best, mut second) = ((0, logits[0]), (1, logits[1]));
    if second.1 > best.1 {
        std::mem::swap(&mut best, &mut second);
    }
    for (i, &x) in logits.iter().enumerate().skip(2) {
        if x > best.1 {
            second = best;
            best = (i, x);
        } else if x > second.1 {
            second = (i, x);
        }
    }
    Some(TopTwo {
        runner_up: u32::try_from(second.0).ok()?,
        margin: best.1 - second.1,
    })
}

/// A whole generation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Generation {
    /// Generated text (prompt excluded).
    pub text: String,
    /// Generated token ids (a final stop token included).
    pub tokens: Vec<u32>,
    /// Each token's step's top two logits, in the order of `tokens` (`None` where the
    /// logits were not finite); empty unless [`LlmOptions::top_two`] asked for them.
    pub top_two: Vec<Option<TopTwo>>,
    /// Number of prompt tokens (with the beginning-of-sequence token).
    pub prompt_tokens: usize,
    /// Time to first token: all prefill chunks plus sampling the first token.
    pub ttft_nanos: Nanos,
    /// Mean time per output token after the first (0 when only one token).
    pub tpot_nanos: Nanos,
    /// Stage timing of each decode step (the first token's prefill excluded).
    pub step_stages: Vec<StepStages>,
    /// Stage timing of the prefill.
    pub prefill_stages: StepStages,
}

/// A loaded Gemma-3 GGUF model with its tokenizer, KV cache and sampler.
pub struct LlmSession {
    model: LoadedModel,
    tokenizer: GgufTokenizer,
    /// The file's chat template, if it carries one.
    chat_template: Option<String>,
    /// The sequence's text so far, for characters split over tokens.
    text: TextStream,
    clock: Arc<dyn Clock + Send + Sync>,
    sampler: LogitsProcessor,
    options: LlmOptions,
    /// Prompt tokens not yet fed to the model.
    pending: Vec<u32>,
    /// Tokens in the KV cache.
    position: usize,
    /// The last token produced (fed to the model by the next step).
    last: Option<u32>,
    /// Time and stages of the most recent forward pass.
    last_chunk_nanos: Nanos,
    last_chunk_stages: StepStages,
    /// The top two logits of the last token produced.
    last_top_two: Option<TopTwo>,
    weight_bytes: u64,
}

impl std::fmt::Debug for LlmSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmSession")
            .field("options", &self.options)
            .field("position", &self.position)
            .field("pending", &self.pending.len())
            .finish_non_exhaustive()
    }
}

fn engine(e: candle_core::Error) -> BackendError {
    BackendError::engine("candle", crate::backend::candle_cause(e))
}

/// A vocabulary that only llama.cpp's tokenizer reads, on another engine.
#[derive(Debug, thiserror::Error)]
#[error(
    "its vocabulary (`{vocab}`) is read by llama.cpp's tokenizer only: run the model on the llama.cpp engine (the default)"
)]
struct VocabNeedsLlama {
    vocab: String,
}

/// Why a GGUF file could not be read: the file is not one, and candle's reason.
#[derive(Debug, thiserror::Error)]
#[error("not a GGUF file")]
struct NotGguf(#[source] crate::Cause);

/// The first highest logit: greedy decoding, the same rule for both engines.
pub fn argmax(logits: &[f32]) -> u32 {
    let mut best = 0;
    for (i, &x) in logits.iter().enumerate() {
        if x > logits[best] {
            best = i;
        }
    }
    u32::try_from(best).unwrap_or(u32::MAX)
}

/// The next token from `logits`: drawn by `sampler` when sampling, else the argmax. The
/// one rule of the session and the batch decoder, so that both pick the same tokens from
/// the same logits.
pub(crate) fn pick(
    logits: &[f32],
    sampler: Option<&mut LogitsProcessor>,
) -> Result<u32, BackendError> {
    match sampler {
        Some(sampler) => {
            let logits = Tensor::from_slice(logits, logits.len(), &Device::Cpu).map_err(engine)?;
            sampler.sample(&logits).map_err(engine)
        }
        None => Ok(argmax(logits)),
    }
}

impl LlmSession {
    /// Loads a Gemma-3 GGUF file.
    pub fn load(
        path: &Path,
        options: LlmOptions,
        clock: Arc<dyn Clock + Send + Sync>,
    ) -> Result<Self, BackendError> {
        let shown = path.display().to_string();
        if !path.is_file() {
            return Err(BackendError::ModelMissing { path: shown });
        }
        mmsched_models::verify::verify_file(path)?;
        if options.max_seq_len == 0 {
            return Err(BackendError::InvalidInput(
                "max_seq_len must be at least 1".into(),
            ));
        }
        let mut file = std::fs::File::open(path).map_err(|e| BackendError::load(&shown, e))?;
        let ct = gguf_file::Content::read(&mut file)
            .map_err(|e| BackendError::load(&shown, NotGguf(crate::backend::candle_cause(e))))?;
        let weight_bytes: u64 = ct
            .tensor_infos
            .values()
            .map(|t| {
                let n = t.shape.elem_count();
                (n / t.ggml_dtype.block_size() * t.ggml_dtype.type_size()) as u64
            })
            .sum();
        let sentencepiece = GgufTokenizer::vocab_type(&ct).as_deref() == Some("llama");
        let from_metadata = (sentencepiece && !options.engine_tokenizer)
            .then(|| GgufTokenizer::from_gguf(&ct))
            .transpose()?;
        let chat_template = ct
            .metadata
            .get("tokenizer.chat_template")
            .and_then(|v| v.to_string().ok())
            .filter(|t| !t.trim().is_empty())
            .cloned();
        let model = LoadedModel::load(
            options.engine,
            path,
            &ct,
            &mut file,
            options.max_seq_len,
            options.threads,
        )?;
        let tokenizer = match from_metadata {
            Some(t) => t,
            None => model.engine_tokenizer().ok_or_else(|| {
                let vocab = GgufTokenizer::vocab_type(&ct).unwrap_or_else(|| "undeclared".into());
                BackendError::load(&shown, VocabNeedsLlama { vocab })
            })?,
        };
        let sampler = Self::sampler(&options);
        Ok(Self {
            model,
            tokenizer,
            chat_template,
            text: TextStream::default(),
            clock,
            sampler,
            options,
            pending: Vec::new(),
            position: 0,
            last: None,
            last_chunk_nanos: 0,
            last_chunk_stages: StepStages::default(),
            last_top_two: None,
            weight_bytes,
        })
    }

    /// A second session on the same weights, with a KV cache and a sampler of its own:
    /// two requests in two sessions never share or clear each other's cache. It costs the
    /// cache's memory, not the weights'.
    pub fn fork(&self) -> Result<Self, BackendError> {
        Ok(Self {
            model: self.model.fork()?,
            tokenizer: self.tokenizer.clone(),
            chat_template: self.chat_template.clone(),
            text: TextStream::default(),
            clock: Arc::clone(&self.clock),
            sampler: Self::sampler(&self.options),
            options: self.options.clone(),
            pending: Vec::new(),
            position: 0,
            last: None,
            last_chunk_nanos: 0,
            last_chunk_stages: StepStages::default(),
            last_top_two: None,
            weight_bytes: self.weight_bytes,
        })
    }

    fn sampler(o: &LlmOptions) -> LogitsProcessor {
        let t = o.temperature.filter(|t| *t > 0.0);
        LogitsProcessor::new(o.seed, t, None)
    }

    /// The clock the session times its calls with.
    pub(crate) fn clock(&self) -> &Arc<dyn Clock + Send + Sync> {
        &self.clock
    }

    /// Bytes of the model's weights (shared by forked sessions).
    pub fn weight_bytes(&self) -> u64 {
        self.weight_bytes
    }

    /// The tokenizer.
    pub fn tokenizer(&self) -> &GgufTokenizer {
        &self.tokenizer
    }

    /// The chat template the model's file carries (`tokenizer.chat_template`), if any.
    pub fn chat_template(&self) -> Option<&str> {
        self.chat_template.as_deref()
    }

    /// The options the session was loaded with.
    pub fn options(&self) -> &LlmOptions {
        &self.options
    }

    /// Sets the sampling of the sequences started from now on: `temperature` `None` (or
    /// 0) is greedy decoding, otherwise sampling seeded with `seed`.
    pub fn set_sampling(&mut self, temperature: Option<f64>, seed: u64) {
        self.options.temperature = temperature;
        self.options.seed = seed;
    }

    /// Longest sequence (prompt + generated tokens) the session holds.
    pub fn max_seq_len(&self) -> usize {
        self.model.max_seq_len()
    }

    /// Tokens currently in the KV cache.
    pub fn position(&self) -> usize {
        self.position
    }

    /// Threads the engine's next calls run on.
    pub fn threads(&self) -> usize {
        self.model.threads()
    }

    /// The engine running the model.
    pub fn engine(&self) -> LlmEngine {
        self.model.engine()
    }

    /// The candle model (`None` on llama.cpp), for calls that bypass the session
    /// (`mmsched bench models` measures the session against them). Cloning it is cheap:
    /// the clone shares the weights and has its own KV cache.
    pub fn model(&self) -> Option<&Gemma3> {
        self.model.candle()
    }

    /// The llama.cpp model (`None` on candle), for calls that bypass the session;
    /// [`LlamaGemma::fork`] gives a context of its own on the same weights.
    #[cfg(feature = "llama")]
    pub fn llama_model(&self) -> Option<&LlamaGemma> {
        self.model.llama()
    }

    /// Forgets the current sequence: empty KV cache, nothing queued, nothing to continue.
    fn end_sequence(&mut self) {
        self.model.clear();
        self.text = TextStream::default();
        self.pending.clear();
        self.position = 0;
        self.last = None;
    }

    /// Starts a new sequence with `prompt`: clears the KV cache, resets the sampler and
    /// queues the prompt's tokens for prefill. Returns the number of prompt tokens.
    pub fn start(&mut self, prompt: &str) -> Result<usize, BackendError> {
        if prompt.trim().is_empty() {
            return Err(BackendError::InvalidInput(
                "the prompt is empty: give some text to continue".into(),
            ));
        }
        let tokens = self.tokenizer.encode(prompt);
        self.start_tokens(tokens)
    }

    /// Like [`start`](Self::start) with already tokenised input.
    pub fn start_tokens(&mut self, tokens: Vec<u32>) -> Result<usize, BackendError> {
        if tokens.is_empty() {
            return Err(BackendError::InvalidInput("no prompt tokens".into()));
        }
        if tokens.len() >= self.model.max_seq_len() {
            return Err(BackendError::InvalidInput(format!(
                "the prompt has {} tokens; the maximum sequence is {} tokens",
                tokens.len(),
                self.model.max_seq_len()
            )));
        }
        if let Some(bad) = tokens
            .iter()
            .find(|&&t| t as usize >= self.model.vocab_size())
        {
            return Err(BackendError::InvalidInput(format!(
                "token id {bad} is outside the vocabulary"
            )));
        }
        self.model.clear();
        self.sampler = Self::sampler(&self.options);
        self.position = 0;
        self.last = None;
        let n = tokens.len();
        self.pending = tokens;
        Ok(n)
    }

    /// Feeds up to `chunk` queued prompt tokens to the model. When the prompt is
    /// exhausted, samples and returns the first generated token; until then `None`.
    pub fn prefill_chunk(&mut self, chunk: usize) -> Result<Option<Token>, BackendError> {
        if self.pending.is_empty() {
            return Err(BackendError::InvalidInput(
                "nothing to prefill: call start() with a prompt first".into(),
            ));
        }
        let n = prompt_take(self.pending.len(), chunk);
        let ids: Vec<u32> = self.pending.drain(..n).collect();
        let done = self.pending.is_empty();
        let (logits, stages, nanos) = self.forward(&ids)?;
        if !done {
            return Ok(None);
        }
        self.sample(&logits, stages, nanos).map(Some)
    }

    /// Prefills the whole prompt in chunks of `chunk` tokens and returns the first token.
    pub fn prefill(&mut self, prompt: &str, chunk: usize) -> Result<Token, BackendError> {
        self.start(prompt)?;
        self.prefill_queued(chunk)
    }

    /// Runs every queued prompt chunk; the first token carries the summed time and stages.
    fn prefill_queued(&mut self, chunk: usize) -> Result<Token, BackendError> {
        let mut stages = StepStages::default();
        let mut nanos = 0;
        loop {
            if let Some(mut t) = self.prefill_chunk(chunk)? {
                stages.add(&t.stages);
                t.stages = stages;
                t.nanos += nanos;
                return Ok(t);
            }
            nanos += self.last_chunk_nanos;
            stages.add(&self.last_chunk_stages);
        }
    }

    /// One decode step: feeds the last token and samples the next one.
    pub fn step(&mut self) -> Result<Token, BackendError> {
        let Some(last) = self.last else {
            return Err(BackendError::InvalidInput(
                "no token to continue from: prefill a prompt first".into(),
            ));
        };
        if self.position + 1 > self.model.max_seq_len() {
            return Err(BackendError::InvalidInput(format!(
                "the sequence reached the maximum of {} tokens",
                self.model.max_seq_len()
            )));
        }
        let (logits, stages, nanos) = self.forward(&[last])?;
        self.sample(&logits, stages, nanos)
    }

    fn forward(&mut self, ids: &[u32]) -> Result<(Vec<f32>, StepStages, Nanos), BackendError> {
        let clock: &(dyn Clock + Send + Sync) = &*self.clock;
        let t0 = clock.now_nanos();
        let (logits, stages) = self.model.forward(ids, self.position, clock)?;
        self.position += ids.len();
        let nanos = clock.now_nanos() - t0;
        self.last_chunk_nanos = nanos;
        self.last_chunk_stages = stages;
        Ok((logits, stages, nanos))
    }

    fn sample(
        &mut self,
        logits: &[f32],
        mut stages: StepStages,
        nanos: Nanos,
    ) -> Result<Token, BackendError> {
        let t0 = self.clock.now_nanos();
        let sampler = self
            .options
            .temperature
            .is_some_and(|t| t > 0.0)
            .then_some(&mut self.sampler);
        let id = pick(logits, sampler)?;
        if self.options.top_two {
            self.last_top_two = top_two(logits);
        }
        let sample_nanos = self.clock.now_nanos() - t0;
        stages.rest_nanos += sample_nanos;
        self.last = Some(id);
        Ok(Token {
            id,
            text: self.text.push(&self.tokenizer.piece(id)),
            stop: self.tokenizer.is_stop(id),
            stages,
            nanos: nanos + sample_nanos,
        })
    }

    /// Generates up to `max_tokens` tokens after `prompt` (stopping early at a stop
    /// token), prefilling in chunks of the configured size.
    pub fn generate(
        &mut self,
        prompt: &str,
        max_tokens: usize,
    ) -> Result<Generation, BackendError> {
        if max_tokens == 0 {
            return Err(BackendError::InvalidInput(
                "max tokens is 0: ask for at least one token".into(),
            ));
        }
        let first = self.prefill(prompt, self.options.prefill_chunk)?;
        let prompt_tokens = self.position;
        let mut g = self.decode_from(first, prompt_tokens, max_tokens)?;
        g.text = self.tokenizer.decode(&g.tokens);
        Ok(g)
    }

    /// Continues a prefilled sequence whose first token is `first`, the last one sampled
    /// (text left empty).
    fn decode_from(
        &mut self,
        first: Token,
        prompt_tokens: usize,
        max_tokens: usize,
    ) -> Result<Generation, BackendError> {
        let ttft_nanos = first.nanos;
        let prefill_stages = first.stages;
        let mut tokens = vec![first.id];
        let keep = self.options.top_two;
        let mut top_two: Vec<_> = keep.then_some(self.last_top_two).into_iter().collect();
        let mut stop = first.stop;
        let mut step_stages = Vec::new();
        let mut decode_nanos = 0;
        while !stop && tokens.len() < max_tokens && self.position < self.model.max_seq_len() {
            let t = self.step()?;
            decode_nanos += t.nanos;
            step_stages.push(t.stages);
            tokens.push(t.id);
            if keep {
                top_two.push(self.last_top_two);
            }
            stop = t.stop;
        }
        let steps = step_stages.len() as u64;
        Ok(Generation {
            text: String::new(),
            tokens,
            top_two,
            prompt_tokens,
            ttft_nanos,
            tpot_nanos: decode_nanos.checked_div(steps).unwrap_or(0),
            step_stages,
            prefill_stages,
        })
    }

    /// Reference decoding without the KV cache: for every new token the whole sequence is
    /// run again from position 0 and the argmax taken. Quadratic and slow; it exists to
    /// check that the cached, chunked, step-wise path produces the same tokens.
    pub fn greedy_uncached(
        &mut self,
        prompt: &str,
        max_tokens: usize,
    ) -> Result<Vec<u32>, BackendError> {
        let mut seq = self.tokenizer.encode(prompt);
        let mut out = Vec::new();
        while out.len() < max_tokens {
            self.start_tokens(seq.clone())?;
            let (logits, _, _) = self.forward(&seq)?;
            let id = argmax(&logits);
            out.push(id);
            seq.push(id);
            if self.tokenizer.is_stop(id) {
                break;
            }
        }
        self.end_sequence();
        Ok(out)
    }
}

/// A text-generation job: continue `prompt` for up to `max_tokens` tokens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LlmJob {
    /// Text to continue.
    pub prompt: String,
    /// Maximum number of generated tokens (at least 1).
    pub max_tokens: usize,
}

/// Tokenised job, ready for the model.
#[derive(Debug, Clone)]
pub struct PreparedJob {
    tokens: Vec<u32>,
    max_tokens: usize,
}

/// The LLM as a [`Backend`]: pre = tokenise, exec = prefill + decode, post = detokenise.
impl Backend for LlmSession {
    type Input = LlmJob;
    type Prepared = PreparedJob;
    type Raw = Generation;
    type Output = Generation;

    fn name(&self) -> &str {
        "gemma3-270m"
    }

    fn prepare(&mut self, input: &LlmJob) -> Result<PreparedJob, BackendError> {
        if input.prompt.trim().is_empty() {
            return Err(BackendError::InvalidInput(
                "the prompt is empty: give some text to continue".into(),
            ));
        }
        if input.max_tokens == 0 {
            return Err(BackendError::InvalidInput(
                "max tokens is 0: ask for at least one token".into(),
            ));
        }
        Ok(PreparedJob {
            tokens: self.tokenizer.encode(&input.prompt),
            max_tokens: input.max_tokens,
        })
    }

    fn execute(&mut self, job: PreparedJob) -> Result<Generation, BackendError> {
        let prompt_tokens = self.start_tokens(job.tokens)?;
        let first = self.prefill_queued(self.options.prefill_chunk)?;
        // Text is produced in `finish`, so that detokenising is timed as post-processing.
        self.decode_from(first, prompt_tokens, job.max_tokens)
    }

    fn finish(&mut self, mut raw: Generation) -> Result<Generation, BackendError> {
        raw.text = self.tokenizer.decode(&raw.tokens);
        Ok(raw)
    }

    fn memory_bytes(&self) -> u64 {
        self.weight_bytes + self.model.cache_bytes()
    }

    fn grant_threads(&mut self, threads: usize) -> Option<usize> {
        self.model.grant_threads(threads)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_two_names_the_runner_up_and_how_far_below_it_is() {
        let t = top_two(&[0.5, 3.0, 2.75, -1.0]).expect("four logits");
        assert_eq!(t.runner_up, 2);
        assert_eq!(t.margin, 0.25);
    }

    #[test]
    fn top_two_of_a_tie_is_the_later_index_at_margin_zero() {
        // argmax takes the first highest, so the runner-up is the other one.
        let t = top_two(&[1.0, 4.0, 4.0]).expect("three logits");
        assert_eq!(
            (argmax(&[1.0, 4.0, 4.0]), t.runner_up, t.margin),
            (1, 2, 0.0)
        );
    }

    #[test]
    fn top_two_needs_two_finite_logits() {
        assert_eq!(top_two(&[1.0]), None);
        assert_eq!(top_two(&[1.0, f32::NAN, 0.0]), None);
    }
}
