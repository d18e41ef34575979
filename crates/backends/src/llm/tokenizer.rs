//! The text model's tokenizer: for the default Gemma-3, a SentencePiece (BPE with scores
//! and byte fallback) tokenizer built from the GGUF metadata (`tokenizer.ggml.*`), so the
//! LLM needs no separate `tokenizer.json`, on either engine; for any other vocabulary (a
//! model of the user's own), llama.cpp's own ([`crate::llm::llama_vocab`]).
//!
//! Encoding follows SentencePiece's BPE as llama.cpp implements it for `llama`-type
//! vocabularies: the text (spaces written as `▁`) starts as one symbol per character;
//! the adjacent pair whose concatenation is a vocabulary piece with the highest score is
//! merged, leftmost first on ties, until no pair merges; symbols that are not pieces fall
//! back to `<0xXX>` byte tokens.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};

use candle_core::quantized::gguf_file;

use crate::backend::BackendError;

/// SentencePiece token types as stored in GGUF.
const TYPE_CONTROL: i32 = 3;
const TYPE_BYTE: i32 = 6;
const SPACE: char = '\u{2581}';

/// The tokenizer of a GGUF text model.
#[derive(Debug, Clone)]
pub struct GgufTokenizer(Inner);

#[derive(Debug, Clone)]
enum Inner {
    SentencePiece(SentencePiece),
    #[cfg(feature = "llama")]
    Llama(crate::llm::llama_vocab::LlamaVocab),
}

/// Tokenizer for a GGUF `llama`-type (SentencePiece) vocabulary.
#[derive(Debug, Clone)]
struct SentencePiece {
    pieces: Vec<String>,
    scores: Vec<f32>,
    types: Vec<i32>,
    lookup: HashMap<String, u32>,
    byte_tokens: Vec<Option<u32>>,
    bos: u32,
    eos: u32,
    unk: u32,
    add_bos: bool,
    add_space_prefix: bool,
    stop_tokens: Vec<u32>,
}

fn meta<'a>(ct: &'a gguf_file::Content, key: &str) -> Result<&'a gguf_file::Value, BackendError> {
    ct.metadata.get(key).ok_or_else(|| {
        BackendError::load(
            "GGUF",
            format!("no {key} in the GGUF metadata (no embedded tokenizer)"),
        )
    })
}

fn load_err(e: impl std::fmt::Display) -> BackendError {
    BackendError::load("GGUF tokenizer", e.to_string())
}

#[derive(Debug)]
struct Bigram {
    score: f32,
    left: usize,
    right: usize,
    len: usize,
}

impl PartialEq for Bigram {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Bigram {}

impl Ord for Bigram {
    fn cmp(&self, other: &Self) -> Ordering {
        // Highest score first; on ties the leftmost pair first.
        self.score
            .total_cmp(&other.score)
            .then_with(|| other.left.cmp(&self.left))
    }
}

impl PartialOrd for Bigram {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

#[derive(Debug, Clone, Copy)]
struct Symbol {
    start: usize,
    len: usize,
    prev: Option<usize>,
    next: Option<usize>,
}

impl GgufTokenizer {
    /// The SentencePiece tokenizer of a GGUF file's metadata (a `llama`-type vocabulary).
    pub fn from_gguf(ct: &gguf_file::Content) -> Result<Self, BackendError> {
        SentencePiece::from_gguf(ct).map(|t| Self(Inner::SentencePiece(t)))
    }

    /// llama.cpp's tokenizer of loaded weights.
    #[cfg(feature = "llama")]
    pub(crate) fn llama(vocab: crate::llm::llama_vocab::LlamaVocab) -> Self {
        Self(Inner::Llama(vocab))
    }

    /// The vocabulary type a GGUF file declares (`tokenizer.ggml.model`: `llama` for
    /// SentencePiece, `gpt2` for byte-level BPE, …).
    pub fn vocab_type(ct: &gguf_file::Content) -> Option<String> {
        ct.metadata
            .get("tokenizer.ggml.model")
            .and_then(|v| v.to_string().ok())
            .cloned()
    }

    /// Vocabulary size.
    pub fn vocab_size(&self) -> usize {
        match &self.0 {
            Inner::SentencePiece(t) => t.vocab_size(),
            #[cfg(feature = "llama")]
            Inner::Llama(v) => v.n_tokens(),
        }
    }

    /// Beginning-of-sequence token.
    pub fn bos(&self) -> u32 {
        match &self.0 {
            Inner::SentencePiece(t) => t.bos(),
            #[cfg(feature = "llama")]
            Inner::Llama(v) => v.bos(),
        }
    }

    /// Whether `id` ends generation (end of sequence or of turn).
    pub fn is_stop(&self, id: u32) -> bool {
        match &self.0 {
            Inner::SentencePiece(t) => t.is_stop(id),
            #[cfg(feature = "llama")]
            Inner::Llama(v) => v.is_end(id),
        }
    }

    /// End-of-sequence token.
    pub fn eos(&self) -> u32 {
        match &self.0 {
            Inner::SentencePiece(t) => t.eos(),
            #[cfg(feature = "llama")]
            Inner::Llama(v) => v.eos(),
        }
    }

    /// Tokens of `text`, with BOS when the vocabulary wants it. With llama.cpp's
    /// tokenizer, special tokens written in the text (a chat template's turn markers) are
    /// read as those tokens.
    pub fn encode(&self, text: &str) -> Vec<u32> {
        match &self.0 {
            Inner::SentencePiece(t) => t.encode(text),
            #[cfg(feature = "llama")]
            Inner::Llama(v) => v.tokenize(text),
        }
    }

    /// Decodes token ids to text; control tokens (BOS, EOS, …) are skipped.
    pub fn decode(&self, ids: &[u32]) -> String {
        let bytes: Vec<u8> = ids.iter().flat_map(|&id| self.piece(id)).collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// The bytes of one token's text (a character may span several tokens).
    pub fn piece(&self, id: u32) -> Vec<u8> {
        match &self.0 {
            Inner::SentencePiece(t) => t.piece(id),
            #[cfg(feature = "llama")]
            Inner::Llama(v) => v.piece(id),
        }
    }

    /// The chat template the model's file carries, where the tokenizer can tell (llama.cpp's
    /// reads it from `tokenizer.chat_template`).
    pub fn chat_template(&self) -> Option<String> {
        match &self.0 {
            Inner::SentencePiece(_) => None,
            #[cfg(feature = "llama")]
            Inner::Llama(v) => v.chat_template(),
        }
    }
}

impl SentencePiece {
    /// Builds the tokenizer from GGUF metadata.
    fn from_gguf(ct: &gguf_file::Content) -> Result<Self, BackendError> {
        let model = meta(ct, "tokenizer.ggml.model")?
            .to_string()
            .map_err(load_err)?;
        if model != "llama" {
            return Err(load_err(format!(
                "tokenizer model `{model}` is not supported (only SentencePiece `llama`)"
            )));
        }
        let pieces: Vec<String> = meta(ct, "tokenizer.ggml.tokens")?
            .to_vec()
            .map_err(load_err)?
            .iter()
            .map(|v| v.to_string().cloned())
            .collect::<Result<_, _>>()
            .map_err(load_err)?;
        let scores: Vec<f32> = meta(ct, "tokenizer.ggml.scores")?
            .to_vec()
            .map_err(load_err)?
            .iter()
            .map(|v| v.to_f32())
            .collect::<Result<_, _>>()
            .map_err(load_err)?;
        let types: Vec<i32> = meta(ct, "tokenizer.ggml.token_type")?
            .to_vec()
            .map_err(load_err)?
            .iter()
            .map(|v| v.to_i32())
            .collect::<Result<_, _>>()
            .map_err(load_err)?;
        if scores.len() != pieces.len() || types.len() != pieces.len() {
            return Err(load_err("tokens, scores and token types differ in length"));
        }
        let id =
            |key: &str| -> Result<u32, BackendError> { meta(ct, key)?.to_u32().map_err(load_err) };
        let flag = |key: &str, default: bool| {
            ct.metadata
                .get(key)
                .and_then(|v| v.to_bool().ok())
                .unwrap_or(default)
        };
        let mut lookup = HashMap::with_capacity(pieces.len());
        let mut byte_tokens = vec![None; 256];
        for (i, p) in pieces.iter().enumerate() {
            let i = u32::try_from(i).map_err(load_err)?;
            if types[i as usize] == TYPE_BYTE {
                if let Some(b) = parse_byte_piece(p) {
                    byte_tokens[usize::from(b)] = Some(i);
                }
            } else if types[i as usize] != TYPE_CONTROL {
                lookup.entry(p.clone()).or_insert(i);
            }
        }
        let eos = id("tokenizer.ggml.eos_token_id")?;
        let mut stop_tokens = vec![eos];
        if let Some(&t) = lookup.get("<end_of_turn>") {
            stop_tokens.push(t);
        } else if let Some(t) = pieces.iter().position(|p| p == "<end_of_turn>") {
            stop_tokens.push(u32::try_from(t).map_err(load_err)?);
        }
        Ok(Self {
            bos: id("tokenizer.ggml.bos_token_id")?,
            unk: id("tokenizer.ggml.unknown_token_id").unwrap_or(0),
            add_bos: flag("tokenizer.ggml.add_bos_token", true),
            add_space_prefix: flag("tokenizer.ggml.add_space_prefix", false),
            eos,
            stop_tokens,
            pieces,
            scores,
            types,
            lookup,
            byte_tokens,
        })
    }

    /// Vocabulary size.
    pub fn vocab_size(&self) -> usize {
        self.pieces.len()
    }

    /// Beginning-of-sequence token.
    pub fn bos(&self) -> u32 {
        self.bos
    }

    /// Whether generation stops at `id` (end of sequence or end of turn).
    pub fn is_stop(&self, id: u32) -> bool {
        self.stop_tokens.contains(&id)
    }

    /// The end-of-sequence token.
    pub fn eos(&self) -> u32 {
        self.eos
    }

    /// Encodes `text`, with the beginning-of-sequence token first when the model wants it.
    pub fn encode(&self, text: &str) -> Vec<u32> {
        let mut escaped = String::with_capacity(text.len() + 3);
        if self.add_space_prefix && !text.is_empty() {
            escaped.push(SPACE);
        }
        escaped.extend(text.chars().map(|c| if c == ' ' { SPACE } else { c }));
        let mut out = Vec::with_capacity(escaped.len() / 2 + 1);
        if self.add_bos {
            out.push(self.bos);
        }
        self.bpe(&escaped, &mut out);
        out
    }

    fn bpe(&self, text: &str, out: &mut Vec<u32>) {
        let mut symbols: Vec<Symbol> = text
            .char_indices()
            .map(|(start, c)| Symbol {
                start,
                len: c.len_utf8(),
                prev: None,
                next: None,
            })
            .collect();
        let n = symbols.len();
        for (i, s) in symbols.iter_mut().enumerate() {
            s.prev = i.checked_sub(1);
            s.next = (i + 1 < n).then_some(i + 1);
        }
        let mut heap = BinaryHeap::new();
        let try_add =
            |heap: &mut BinaryHeap<Bigram>, symbols: &[Symbol], left: usize, right: usize| {
                let (l, r) = (symbols[left], symbols[right]);
                let piece = &text[l.start..r.start + r.len];
                if let Some(&id) = self.lookup.get(piece) {
                    heap.push(Bigram {
                        score: self.scores[id as usize],
                        left,
                        right,
                        len: piece.len(),
                    });
                }
            };
        for i in 1..n {
            try_add(&mut heap, &symbols, i - 1, i);
        }
        while let Some(b) = heap.pop() {
            let (l, r) = (symbols[b.left], symbols[b.right]);
            // Skip bigrams made stale by an earlier merge.
            if l.len == 0 || r.len == 0 || l.len + r.len != b.len || l.next != Some(b.right) {
                continue;
            }
            symbols[b.left].len += r.len;
            symbols[b.right].len = 0;
            symbols[b.left].next = r.next;
            if let Some(nx) = r.next {
                symbols[nx].prev = Some(b.left);
            }
            if let Some(pv) = symbols[b.left].prev {
                try_add(&mut heap, &symbols, pv, b.left);
            }
            if let Some(nx) = symbols[b.left].next {
                try_add(&mut heap, &symbols, b.left, nx);
            }
        }
        let mut cur = (n > 0).then_some(0);
        while let Some(i) = cur {
            let s = symbols[i];
            let piece = &text[s.start..s.start + s.len];
            match self.lookup.get(piece) {
                Some(&id) => out.push(id),
                None => out.extend(
                    piece
                        .bytes()
                        .map(|b| self.byte_tokens[usize::from(b)].unwrap_or(self.unk)),
                ),
            }
            cur = s.next;
        }
    }

    /// The bytes of token `id`'s text; none for a control token.
    fn piece(&self, id: u32) -> Vec<u8> {
        let Some(piece) = self.pieces.get(id as usize) else {
            return Vec::new();
        };
        match self.types[id as usize] {
            TYPE_CONTROL => Vec::new(),
            TYPE_BYTE => parse_byte_piece(piece).into_iter().collect(),
            _ => piece.replace(SPACE, " ").into_bytes(),
        }
    }
}

/// The text of tokens as they come: a character whose bytes span several tokens (a
/// byte-level vocabulary splits most non-ASCII characters) is held until it is whole, so
/// each token's text is valid UTF-8 and the texts joined are the answer's text.
#[derive(Debug, Clone, Default)]
pub struct TextStream {
    held: Vec<u8>,
}

impl TextStream {
    /// The text `bytes` complete, after what was held.
    pub fn push(&mut self, bytes: &[u8]) -> String {
        self.held.extend_from_slice(bytes);
        let mut out = String::new();
        loop {
            match std::str::from_utf8(&self.held) {
                Ok(s) => {
                    out.push_str(s);
                    self.held.clear();
                    return out;
                }
                Err(e) => {
                    let valid = e.valid_up_to();
                    out.push_str(&String::from_utf8_lossy(&self.held[..valid]));
                    match e.error_len() {
                        // A character not finished yet: hold its bytes.
                        None => {
                            self.held.drain(..valid);
                            return out;
                        }
                        // Bytes that are no character: one replacement each run.
                        Some(bad) => {
                            out.push(char::REPLACEMENT_CHARACTER);
                            self.held.drain(..valid + bad);
                        }
                    }
                }
            }
        }
    }

    /// What is still held, at the end of the text (an unfinished character, replaced).
    pub fn flush(&mut self) -> String {
        let out = String::from_utf8_lossy(&self.held).into_owned();
        self.held.clear();
        out
    }
}

fn parse_byte_piece(p: &str) -> Option<u8> {
    let hex = p.strip_prefix("<0x")?.strip_suffix('>')?;
    u8::from_str_radix(hex, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_character_split_over_tokens_comes_out_whole() {
        let mut t = TextStream::default();
        let euro = "€".as_bytes();
        assert_eq!(t.push(b"a"), "a");
        assert_eq!(t.push(&euro[..1]), "");
        assert_eq!(t.push(&euro[1..2]), "");
        assert_eq!(t.push(&[euro[2], b'b']), "€b");
        // A byte that starts no character is replaced, and what follows still comes.
        assert_eq!(t.push(&[0xFF, b'c']), "\u{FFFD}c");
        assert_eq!(t.push(&euro[..2]), "");
        assert_eq!(t.flush(), "\u{FFFD}");
        assert_eq!(t.flush(), "");
    }

    #[test]
    fn byte_pieces_parse() {
        assert_eq!(parse_byte_piece("<0x0A>"), Some(10));
        assert_eq!(parse_byte_piece("<0xFF>"), Some(255));
        assert_eq!(parse_byte_piece("hello"), None);
    }

    #[test]
    fn bigram_order_prefers_score_then_leftmost() {
        let a = Bigram {
            score: -1.0,
            left: 5,
            right: 6,
            len: 2,
        };
        let b = Bigram {
            score: -2.0,
            left: 0,
            right: 1,
            len: 2,
        };
        let c = Bigram {
            score: -1.0,
            left: 1,
            right: 2,
            len: 2,
        };
        let mut h: BinaryHeap<_> = [a, b, c].into_iter().collect();
        assert_eq!(h.pop().map(|b| b.left), Some(1));
        assert_eq!(h.pop().map(|b| b.left), Some(5));
        assert_eq!(h.pop().map(|b| b.left), Some(0));
    }
}
