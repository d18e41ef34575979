//! The vocabulary of weights loaded by llama.cpp: its own tokenizer, for every vocabulary
//! type llama.cpp reads (SentencePiece, byte-level BPE as Llama 3, Qwen or SmolLM use,
//! WordPiece, …), and the chat template the file carries.
//!
//! Why llama.cpp's tokenizer for a model of the user's own: a byte-level BPE vocabulary
//! needs the merges and the pre-tokenizer of its model family, which llama.cpp already
//! implements for every family it loads; a second implementation here would only drift
//! from it. The default Gemma-3 keeps the SentencePiece tokenizer read from its metadata
//! ([`super::tokenizer`]), which both engines share.
#![allow(unsafe_code)]

use std::ffi::{CStr, CString, c_char};
use std::sync::Arc;

use llama_cpp_sys_2 as sys;

use super::chat::ChatTemplateError;
use super::llama::Weights;

/// The vocabulary of loaded weights (a clone shares them).
#[derive(Debug, Clone)]
pub struct LlamaVocab {
    weights: Arc<Weights>,
}

impl LlamaVocab {
    pub(crate) fn new(weights: Arc<Weights>) -> Self {
        Self { weights }
    }

    fn vocab(&self) -> *const sys::llama_vocab {
        // SAFETY: the model is valid while `self.weights` lives; its vocabulary lives as
        // long as the model.
        unsafe { sys::llama_model_get_vocab(self.weights.as_ptr()) }
    }

    /// Tokens of `text`, with the beginning-of-sequence token when the model wants one and
    /// special tokens written in the text (a chat template's turn markers) read as such.
    pub fn tokenize(&self, text: &str) -> Vec<u32> {
        let len = i32::try_from(text.len()).unwrap_or(i32::MAX);
        let mut out: Vec<sys::llama_token> = vec![0; text.len() + 2];
        for _ in 0..2 {
            let room = i32::try_from(out.len()).unwrap_or(i32::MAX);
            // SAFETY: `text` is valid for `len` bytes (no terminator needed), `out` for
            // `room` tokens; the vocabulary is only read.
            let n = unsafe {
                sys::llama_tokenize(
                    self.vocab(),
                    text.as_ptr().cast::<c_char>(),
                    len,
                    out.as_mut_ptr(),
                    room,
                    true,
                    true,
                )
            };
            match usize::try_from(n) {
                Ok(n) => {
                    out.truncate(n);
                    return out
                        .into_iter()
                        .filter_map(|t| u32::try_from(t).ok())
                        .collect();
                }
                // Too small: `-n` is the count needed.
                Err(_) => out.resize(n.unsigned_abs() as usize, 0),
            }
        }
        Vec::new()
    }

    /// The bytes of token `id`'s text (empty for a control token, or an id outside the
    /// vocabulary). A character may be split over several tokens' bytes.
    pub fn piece(&self, id: u32) -> Vec<u8> {
        let Ok(token) = sys::llama_token::try_from(id) else {
            return Vec::new();
        };
        if id as usize >= self.n_tokens() {
            return Vec::new();
        }
        let mut buf = vec![0u8; 32];
        for _ in 0..2 {
            let room = i32::try_from(buf.len()).unwrap_or(i32::MAX);
            // SAFETY: `buf` is valid for `room` bytes; the token is inside the vocabulary.
            let n = unsafe {
                sys::llama_token_to_piece(
                    self.vocab(),
                    token,
                    buf.as_mut_ptr().cast::<c_char>(),
                    room,
                    0,
                    false,
                )
            };
            match usize::try_from(n) {
                Ok(n) => {
                    buf.truncate(n);
                    return buf;
                }
                Err(_) => buf.resize(n.unsigned_abs() as usize, 0),
            }
        }
        Vec::new()
    }

    /// Whether `id` ends generation (end of sequence, end of turn, …).
    pub fn is_end(&self, id: u32) -> bool {
        // SAFETY: reads the vocabulary.
        sys::llama_token::try_from(id)
            .is_ok_and(|t| unsafe { sys::llama_vocab_is_eog(self.vocab(), t) })
    }

    /// The beginning-of-sequence token.
    pub fn bos(&self) -> u32 {
        // SAFETY: reads the vocabulary.
        u32::try_from(unsafe { sys::llama_vocab_bos(self.vocab()) }).unwrap_or(0)
    }

    /// The end-of-sequence token.
    pub fn eos(&self) -> u32 {
        // SAFETY: reads the vocabulary.
        u32::try_from(unsafe { sys::llama_vocab_eos(self.vocab()) }).unwrap_or(0)
    }

    /// Tokens in the vocabulary.
    pub fn n_tokens(&self) -> usize {
        // SAFETY: reads the vocabulary.
        usize::try_from(unsafe { sys::llama_vocab_n_tokens(self.vocab()) }).unwrap_or(0)
    }

    /// The chat template in the file's metadata (`tokenizer.chat_template`), if any.
    pub fn chat_template(&self) -> Option<String> {
        // SAFETY: the model is valid; a null name asks for the default template; the
        // returned string belongs to the model and is copied at once.
        let p = unsafe { sys::llama_model_chat_template(self.weights.as_ptr(), std::ptr::null()) };
        if p.is_null() {
            return None;
        }
        // SAFETY: a non-null result is a NUL-terminated string owned by the model.
        let s = unsafe { CStr::from_ptr(p) };
        Some(s.to_string_lossy().into_owned()).filter(|t| !t.trim().is_empty())
    }
}

/// `messages` (role, content) written with chat template `template`, ending with the
/// assistant's turn opened, as llama.cpp writes them for the template families it knows.
pub(crate) fn apply_chat_template(
    template: &str,
    messages: &[(String, String)],
) -> Result<String, ChatTemplateError> {
    let tmpl = CString::new(template).map_err(|_| ChatTemplateError::Unknown)?;
    let mut owned = Vec::with_capacity(messages.len());
    for (index, (role, content)) in messages.iter().enumerate() {
        let role = CString::new(role.as_str()).map_err(|_| ChatTemplateError::Nul { index })?;
        let content =
            CString::new(content.as_str()).map_err(|_| ChatTemplateError::Nul { index })?;
        owned.push((role, content));
    }
    let chat: Vec<sys::llama_chat_message> = owned
        .iter()
        .map(|(role, content)| sys::llama_chat_message {
            role: role.as_ptr(),
            content: content.as_ptr(),
        })
        .collect();
    let total: usize = messages.iter().map(|(r, c)| r.len() + c.len()).sum();
    let mut buf = vec![0u8; 2 * total + 256];
    for _ in 0..2 {
        let room = i32::try_from(buf.len()).unwrap_or(i32::MAX);
        // SAFETY: every pointer in `chat` points into `owned`, alive for the call; `buf`
        // is valid for `room` bytes.
        let n = unsafe {
            sys::llama_chat_apply_template(
                tmpl.as_ptr(),
                chat.as_ptr(),
                chat.len(),
                true,
                buf.as_mut_ptr().cast::<c_char>(),
                room,
            )
        };
        let Ok(n) = usize::try_from(n) else {
            return Err(ChatTemplateError::Unknown);
        };
        if n <= buf.len() {
            buf.truncate(n);
            return Ok(String::from_utf8_lossy(&buf).into_owned());
        }
        // Too small: `n` is the length needed.
        buf.resize(n, 0);
    }
    Err(ChatTemplateError::Unknown)
}
