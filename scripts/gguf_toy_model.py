#!/usr/bin/env python3
"""Writes a tiny text model in GGUF with gguf-py (the format's own Python package): a
one-block `llama` architecture with random weights, a byte-level BPE vocabulary (the
`gpt2` type Llama 3, Qwen and SmolLM use, not Gemma's SentencePiece) and a ChatML chat
template -- a model of the user's own that mmsched's SentencePiece reader cannot read.

Beside it, a JSON file of reference tokenizations computed here, independently of
llama.cpp: ASCII texts split as GPT-2's pre-tokenizer splits them, each piece's bytes
mapped to GPT-2's byte characters and merged by rank.

Usage: gguf_toy_model.py OUT.gguf OUT.json
"""

import json
import re
import sys

import numpy as np
import gguf

CHATML = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
    "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
MERGES = [("h", "e"), ("l", "l"), ("he", "ll"), ("hell", "o"), ("Ġ", "w"), ("o", "r"),
          ("Ġw", "or"), ("l", "d"), ("Ġwor", "ld"), ("Ġ", "hello")]
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
TEXTS = ["hello world", "hello, hello world!", "old words held"]


def byte_chars():
    """GPT-2's map of bytes to printable characters."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    chars = keep[:]
    n = 0
    for b in range(256):
        if b not in keep:
            keep.append(b)
            chars.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(keep, chars)}


def vocabulary():
    bc = byte_chars()
    tokens = [bc[b] for b in range(256)]
    for a, b in MERGES:
        tokens.append(a + b)
    tokens += SPECIALS
    types = [1] * (len(tokens) - len(SPECIALS)) + [3] * len(SPECIALS)
    return tokens, types


def encode(text, tokens):
    """GPT-2 pre-tokenization (ASCII letters and punctuation suffice here), then merges by rank."""
    bc = byte_chars()
    ids = {t: i for i, t in enumerate(tokens)}
    ranks = {pair: r for r, pair in enumerate(MERGES)}
    out = []
    for piece in re.findall(r" ?[A-Za-z]+| ?[0-9]+| ?[^\sA-Za-z0-9]+|\s+", text):
        word = [bc[b] for b in piece.encode()]
        while len(word) > 1:
            pairs = [(ranks.get((word[i], word[i + 1]), 1 << 30), i) for i in range(len(word) - 1)]
            rank, i = min(pairs)
            if rank == 1 << 30:
                break
            word = word[:i] + [word[i] + word[i + 1]] + word[i + 2:]
        out += [ids[w] for w in word]
    return out


def main():
    path, ref_path = sys.argv[1], sys.argv[2]
    tokens, types = vocabulary()
    n_vocab, n_embd, n_ff, n_head = len(tokens), 64, 128, 4
    w = gguf.GGUFWriter(path, "llama")
    w.add_name("toy byte-level BPE model")
    w.add_context_length(256)
    w.add_embedding_length(n_embd)
    w.add_block_count(1)
    w.add_feed_forward_length(n_ff)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_head)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_dimension_count(n_embd // n_head)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("gpt-2")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges([f"{a} {b}" for a, b in MERGES])
    w.add_bos_token_id(tokens.index("<|endoftext|>"))
    w.add_eos_token_id(tokens.index("<|im_end|>"))
    w.add_add_bos_token(False)
    w.add_chat_template(CHATML)
    rng = np.random.default_rng(7)

    def t(name, *shape, scale=0.2):
        w.add_tensor(name, (rng.standard_normal(shape) * scale).astype(np.float32))

    t("token_embd.weight", n_vocab, n_embd, scale=1.0)
    w.add_tensor("blk.0.attn_norm.weight", np.ones(n_embd, dtype=np.float32))
    for part in ["attn_q", "attn_k", "attn_v", "attn_output"]:
        t(f"blk.0.{part}.weight", n_embd, n_embd)
    w.add_tensor("blk.0.ffn_norm.weight", np.ones(n_embd, dtype=np.float32))
    t("blk.0.ffn_gate.weight", n_ff, n_embd)
    t("blk.0.ffn_up.weight", n_ff, n_embd)
    t("blk.0.ffn_down.weight", n_embd, n_ff)
    w.add_tensor("output_norm.weight", np.ones(n_embd, dtype=np.float32))
    t("output.weight", n_vocab, n_embd, scale=1.0)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    reference = {
        "vocab": n_vocab,
        "specials": {s: tokens.index(s) for s in SPECIALS},
        "encodings": {text: encode(text, tokens) for text in TEXTS},
    }
    with open(ref_path, "w") as f:
        json.dump(reference, f)


if __name__ == "__main__":
    main()
