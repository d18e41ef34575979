//! Whisper speech recognition as a [`Backend`]: pre = resample + log-mel, exec = encoder +
//! greedy decoder, post = detokenise. The same work advanced one step at a time is
//! [`crate::asr::steps`].

use candle_core::{Device, Tensor};
use candle_transformers::models::whisper;

use crate::asr::audio::{AudioClip, SAMPLE_RATE_HZ, resample};
use crate::asr::mel::log_mel_spectrogram;
use crate::asr::model::{AsrEngine, AudioFeatures, WhisperFiles, WhisperModel, WhisperNet, candle};
use crate::backend::{Backend, BackendError};
use crate::threads::EngineThreads;

pub use mmsched_core::rungs::EncoderSpan;

/// Longest transcript per 30 s window, in tokens (Whisper's own limit is 224).
pub(super) const MAX_TOKENS_PER_WINDOW: usize = 224;
/// Longest accepted clip: ten minutes.
const MAX_CLIP_SECONDS: u64 = 600;

/// How to run Whisper.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AsrOptions {
    /// Worker threads for this engine (0: one per core); the ggml engine also takes later
    /// grants ([`Backend::grant_threads`]). candle's quantised matrix kernels (the q8
    /// engine's projections) run on candle's own process-wide pool instead, sized by
    /// `CANDLE_NUM_THREADS` (default: one per core).
    pub threads: usize,
    /// Which weights and model code run.
    pub engine: AsrEngine,
    /// What the encoder runs over.
    pub span: EncoderSpan,
}

/// Log-mel windows of one clip: one `1 × n_mels × 3000` tensor per 30 s of audio.
#[derive(Debug, Clone)]
pub struct MelWindows {
    windows: Vec<Tensor>,
}

impl MelWindows {
    /// The windows, in order (tensors are reference counted: cloning one is cheap).
    pub fn windows(&self) -> &[Tensor] {
        &self.windows
    }
}

/// What the session drives on every window, lent out so that the engine can be called
/// without the session (`mmsched bench models` measures the session against that).
#[derive(Debug)]
pub struct EngineParts<'a> {
    /// The loaded model (encoder, decoder, tokenizer, special tokens).
    pub model: &'a mut WhisperModel,
    /// Logit mask added at every decoding step after the first (0 or −∞ per token).
    pub suppress: &'a Tensor,
    /// Logit mask added at the first decoding step (also bans end-of-text and a blank).
    pub suppress_first: &'a Tensor,
}

/// A loaded Whisper model with its thread pool.
#[derive(Debug)]
pub struct AsrSession {
    pub(super) whisper: WhisperModel,
    span: EncoderSpan,
    pub(super) threads: EngineThreads,
    pub(super) suppress: Tensor,
    pub(super) suppress_first: Tensor,
    /// The transcription whose window the engine holds (its encoder activations, caches
    /// and decoder state), if one advanced in steps does; a one-shot call clears it.
    pub(super) engine_owner: Option<u64>,
}

impl AsrSession {
    /// Loads Whisper from `files`.
    pub fn load(files: &WhisperFiles, options: &AsrOptions) -> Result<Self, BackendError> {
        let threads = EngineThreads::new("asr", options.threads)?;
        let n = threads.threads();
        let whisper = threads.install(|| WhisperModel::load(files, options.engine, n))?;
        let vocab = whisper.config.vocab_size;
        let eot = whisper.special.eot as usize;
        // Never generated: the configured suppressed tokens, and every special token
        // after end-of-text (start/task/language markers, no-timestamps, and the
        // timestamp tokens: timestamps are suppressed).
        let mut mask = vec![0f32; vocab];
        for &t in &whisper.config.suppress_tokens {
            if let Some(m) = mask.get_mut(t as usize) {
                *m = f32::NEG_INFINITY;
            }
        }
        for m in mask.iter_mut().skip(eot + 1) {
            *m = f32::NEG_INFINITY;
        }
        let mut first = mask.clone();
        // As Whisper does, the first token is neither a blank nor end-of-text.
        let blank = whisper.tokenizer.token_to_id("\u{120}").map(|t| t as usize);
        for t in [Some(eot), blank].into_iter().flatten() {
            if let Some(m) = first.get_mut(t) {
                *m = f32::NEG_INFINITY;
            }
        }
        let suppress = Tensor::new(mask.as_slice(), &Device::Cpu).map_err(candle)?;
        let suppress_first = Tensor::new(first.as_slice(), &Device::Cpu).map_err(candle)?;
        Ok(Self {
            whisper,
            span: options.span,
            threads,
            suppress,
            suppress_first,
            engine_owner: None,
        })
    }

    /// Worker threads of the session's engine pool.
    pub fn threads(&self) -> usize {
        self.threads.threads()
    }

    /// The engine that runs this session.
    pub fn engine(&self) -> AsrEngine {
        self.whisper.engine
    }

    /// What the encoder runs over.
    pub fn span(&self) -> EncoderSpan {
        self.span
    }

    /// The model and the logit masks the session decodes with.
    pub fn engine_parts(&mut self) -> EngineParts<'_> {
        EngineParts {
            model: &mut self.whisper,
            suppress: &self.suppress,
            suppress_first: &self.suppress_first,
        }
    }
}

/// The tokens a window's transcript starts with: start-of-transcript, for a multilingual
/// model English and transcribe, then no-timestamps.
pub(super) fn prefix(m: &WhisperModel) -> Vec<u32> {
    let s = &m.special;
    let mut p = vec![s.sot];
    p.extend(s.language_task.iter().flatten());
    p.push(s.no_timestamps);
    p
}

/// How many tokens [`prefix`] gives (counted without building it: once per token).
fn prefix_len(m: &WhisperModel) -> usize {
    2 + m.special.language_task.iter().flatten().count()
}

/// One greedy decoding step (no timestamps) of a window whose tokens so far, prefix
/// included, are `tokens`: the next token, or `None` when the window's transcript is
/// complete (end-of-text, the decoder's context full, or the window's token limit reached).
pub(super) fn next_token(
    m: &mut WhisperModel,
    suppress: &Tensor,
    suppress_first: &Tensor,
    tokens: &[u32],
    features: &AudioFeatures,
) -> Result<Option<u32>, BackendError> {
    let decoded = tokens.len().saturating_sub(prefix_len(m));
    if decoded >= MAX_TOKENS_PER_WINDOW {
        return Ok(None);
    }
    let logits = m.net.next_logits(tokens, features)?;
    let mask = if decoded == 0 {
        suppress_first
    } else {
        suppress
    };
    let next = (logits + mask)
        .and_then(|l| l.argmax(candle_core::D::Minus1)?.to_scalar::<u32>())
        .map_err(candle)?;
    if next == m.special.eot || tokens.len() >= m.config.max_target_positions {
        return Ok(None);
    }
    Ok(Some(next))
}

/// Encodes one 30 s window and decodes it greedily, one token per step.
fn decode_window(
    m: &mut WhisperModel,
    suppress: &Tensor,
    suppress_first: &Tensor,
    mel: &Tensor,
) -> Result<Vec<u32>, BackendError> {
    let features = m.net.start_window(mel)?;
    let mut tokens = prefix(m);
    let start = tokens.len();
    while let Some(next) = next_token(m, suppress, suppress_first, &tokens, &features)? {
        tokens.push(next);
    }
    Ok(tokens.split_off(start))
}

/// Checks a clip Whisper is to transcribe.
pub(super) fn check_clip(clip: &AudioClip) -> Result<(), BackendError> {
    if clip.sample_rate_hz == 0 {
        return Err(BackendError::InvalidInput("sample rate is 0 Hz".into()));
    }
    if clip.samples.is_empty() {
        return Err(BackendError::InvalidInput(
            "the audio has no samples".into(),
        ));
    }
    if clip.duration_ms() > MAX_CLIP_SECONDS * 1000 {
        return Err(BackendError::InvalidInput(format!(
            "the audio is {} s long; split it into utterances of at most {MAX_CLIP_SECONDS} s",
            clip.duration_ms() / 1000
        )));
    }
    if clip.samples.iter().any(|s| !s.is_finite()) {
        return Err(BackendError::InvalidInput(
            "the audio contains NaN or infinite samples".into(),
        ));
    }
    Ok(())
}

/// The log-mel windows of a checked clip: resampled to 16 kHz (as the one-shot path,
/// outside the pool), one `1 × n_mels × frames` tensor per 30 s computed on `threads`,
/// each cut to the frames `span` reads.
pub(super) fn mel_windows(
    whisper: &WhisperModel,
    clip: &AudioClip,
    span: EncoderSpan,
    threads: &EngineThreads,
) -> Result<Vec<Tensor>, BackendError> {
    let pcm = resample(&clip.samples, clip.sample_rate_hz, SAMPLE_RATE_HZ);
    let filters = whisper.mel_filters.as_slice();
    let n_mels = whisper.config.num_mel_bins;
    let windows = threads.install(|| {
        pcm.chunks(whisper::N_SAMPLES)
            .map(|chunk| {
                let mel = log_mel_spectrogram(chunk, filters, n_mels);
                let frames = mel.len() / n_mels;
                Tensor::from_vec(mel, (1, n_mels, frames), &Device::Cpu)?.narrow(
                    2,
                    0,
                    span.frames(chunk.len()).min(frames),
                )
            })
            .collect::<candle_core::Result<Vec<_>>>()
    });
    windows.map_err(candle)
}

impl AsrSession {
    /// The transcript of each window's tokens, joined.
    pub(super) fn detokenize(&self, windows: &[Vec<u32>]) -> Result<String, BackendError> {
        let mut text = String::new();
        for tokens in windows {
            let part = self
                .whisper
                .tokenizer
                .decode(tokens, true)
                .map_err(|e| BackendError::engine("the Whisper tokenizer", e))?;
            if !text.is_empty() && !part.starts_with(' ') {
                text.push(' ');
            }
            text.push_str(&part);
        }
        Ok(text.trim().to_owned())
    }
}

impl Backend for AsrSession {
    type Input = AudioClip;
    type Prepared = MelWindows;
    type Raw = Vec<Vec<u32>>;
    type Output = String;

    fn name(&self) -> &str {
        "whisper-tiny.en"
    }

    fn prepare(&mut self, clip: &AudioClip) -> Result<MelWindows, BackendError> {
        check_clip(clip)?;
        let windows = mel_windows(&self.whisper, clip, self.span, &self.threads)?;
        Ok(MelWindows { windows })
    }

    fn execute(&mut self, mel: MelWindows) -> Result<Vec<Vec<u32>>, BackendError> {
        // The engine's window is this call's from here on: a transcription advanced in
        // steps on this session can no longer continue its window.
        self.engine_owner = None;
        let (whisper, suppress, first) = (&mut self.whisper, &self.suppress, &self.suppress_first);
        self.threads.install(|| {
            mel.windows
                .iter()
                .map(|w| decode_window(whisper, suppress, first, w))
                .collect::<Result<Vec<_>, _>>()
        })
    }

    fn finish(&mut self, raw: Vec<Vec<u32>>) -> Result<String, BackendError> {
        self.detokenize(&raw)
    }

    fn memory_bytes(&self) -> u64 {
        self.whisper.weight_bytes
    }

    /// The ggml engine takes the granted threads call by call; candle's engines keep the
    /// pool they were loaded with.
    fn grant_threads(&mut self, threads: usize) -> Option<usize> {
        match &mut self.whisper.net {
            #[cfg(feature = "llama")]
            WhisperNet::Ggml(m) => {
                m.set_threads(threads);
                Some(m.threads())
            }
            _ => None,
        }
    }
}
