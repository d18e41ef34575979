//! A Whisper of the user's own: the Hugging Face layout every Whisper checkpoint is
//! published in (`model.safetensors`, `config.json`, `tokenizer.json` in one directory;
//! tiny, base, small, their `.en` versions, distilled and fine-tuned ones alike), given by
//! the directory or its `model.safetensors`. The default engine reads q8_0 weights: they
//! are made from the safetensors once (`mmsched_models::whisper_quantize`, the conversion
//! `mmsched models fetch` makes of the default model) and kept in the model cache under
//! the safetensors' sha256, so a second load reads them at once and a changed file gets
//! new ones. A q8_0 GGUF made that way may be given instead of the safetensors.
//!
//! whisper.cpp's own files (`ggml-*.bin`) are a different layout (OpenAI's tensor names,
//! the vocabulary without its merges) and are refused with the fix.

use std::path::{Path, PathBuf};

use mmsched_models::hash::sha256_file;
use mmsched_models::whisper_quantize;

use super::model::WhisperFiles;
use crate::backend::BackendError;

/// The files of the Hugging Face Whisper at `path` (its directory, its
/// `model.safetensors`, or a q8_0 GGUF beside its `config.json` and `tokenizer.json`),
/// its q8_0 weights made into `cache` if they are not there yet.
pub fn own_whisper(path: &Path, cache: &Path) -> Result<WhisperFiles, BackendError> {
    let (dir, weights, quantized) = layout(path)?;
    let beside = |name: &str| {
        let p = dir.join(name);
        if p.is_file() {
            Ok(p)
        } else {
            Err(BackendError::load(
                path.display(),
                format!(
                    "no {name} in {}: a Hugging Face Whisper directory holds model.safetensors, config.json and tokenizer.json together",
                    dir.display()
                ),
            ))
        }
    };
    let config = beside("config.json")?;
    let tokenizer = beside("tokenizer.json")?;
    let quantized = match quantized {
        Some(q) => q,
        None => quantized_in(&weights, cache)?,
    };
    Ok(WhisperFiles {
        weights,
        quantized,
        config,
        tokenizer,
    })
}

/// The directory, the safetensors and, if given, the q8_0 GGUF of `path`.
fn layout(path: &Path) -> Result<(PathBuf, PathBuf, Option<PathBuf>), BackendError> {
    if path.is_dir() {
        let weights = path.join("model.safetensors");
        if !weights.is_file() {
            let why = if path.join("pytorch_model.bin").is_file() {
                "it holds pytorch_model.bin only: save the model as safetensors (`model.save_pretrained(dir, safe_serialization=True)` in transformers) and give that"
            } else {
                "no model.safetensors in it: give a Hugging Face Whisper directory (model.safetensors, config.json, tokenizer.json)"
            };
            return Err(BackendError::load(path.display(), why));
        }
        return Ok((path.to_path_buf(), weights, None));
    }
    if !path.is_file() {
        return Err(BackendError::ModelMissing {
            path: path.display().to_string(),
        });
    }
    let dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    match ext {
        "safetensors" => Ok((dir, path.to_path_buf(), None)),
        "gguf" => Ok((
            dir.clone(),
            dir.join("model.safetensors"),
            Some(path.to_path_buf()),
        )),
        "bin" => Err(BackendError::load(
            path.display(),
            "whisper.cpp's ggml files are not read: give the model's Hugging Face directory (model.safetensors, config.json, tokenizer.json), as published beside it",
        )),
        _ => Err(BackendError::load(
            path.display(),
            "not a Whisper file: give a Hugging Face Whisper directory, its model.safetensors, or a q8_0 .gguf beside its config.json and tokenizer.json",
        )),
    }
}

/// The q8_0 GGUF of `weights` in `cache`, made if it is not there.
fn quantized_in(weights: &Path, cache: &Path) -> Result<PathBuf, BackendError> {
    let sha = sha256_file(weights, |_| {}).map_err(|e| BackendError::load(weights.display(), e))?;
    let dest = cache
        .join("own-whisper")
        .join(format!("{}-q8_0.gguf", &sha[..16]));
    if dest.is_file() {
        return Ok(dest);
    }
    let bytes = std::fs::read(weights).map_err(|e| BackendError::load(weights.display(), e))?;
    let gguf =
        whisper_quantize::quantize(&bytes).map_err(|e| BackendError::load(weights.display(), e))?;
    mmsched_models::atomic::write_whole(&dest, &gguf)
        .map_err(|e| BackendError::load(dest.display(), e))?;
    Ok(dest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_without_its_files_is_refused_with_the_fix() {
        let d = tempfile::tempdir().expect("tempdir");
        let cache = d.path().join("cache");
        let msg = |e: BackendError| e.chain();
        let e = own_whisper(d.path(), &cache).expect_err("empty directory");
        assert!(msg(e).contains("no model.safetensors"));
        std::fs::write(d.path().join("pytorch_model.bin"), b"x").expect("write");
        let e = own_whisper(d.path(), &cache).expect_err("pickle only");
        assert!(msg(e).contains("safe_serialization=True"));
        let e = own_whisper(&d.path().join("pytorch_model.bin"), &cache).expect_err("ggml-like");
        assert!(msg(e).contains("whisper.cpp"));
        std::fs::write(d.path().join("model.safetensors"), b"x").expect("write");
        let e = msg(own_whisper(d.path(), &cache).expect_err("no config"));
        assert!(e.contains("no config.json"), "{e}");
    }

    #[test]
    fn weights_that_are_not_safetensors_are_refused_naming_the_file() {
        let d = tempfile::tempdir().expect("tempdir");
        for name in ["model.safetensors", "config.json", "tokenizer.json"] {
            std::fs::write(d.path().join(name), b"not a model").expect("write");
        }
        let e = own_whisper(d.path(), &d.path().join("cache")).expect_err("bad weights");
        let m = e.chain();
        assert!(
            m.contains("model.safetensors") && m.contains("reading the Whisper safetensors"),
            "{m}"
        );
    }
}
