//! The user's own models as the command line declares them: `--model NAME=FILE` and
//! `--model-config FILE` (`[[models]]` entries), checked before anything loads.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use mmsched_backends::onnx::OnnxModelSpec;

/// A `--model-config` file: its `[[models]]`.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ModelFile {
    models: Vec<OnnxModelSpec>,
}

/// A GGUF text model of the user's own (`--model NAME=FILE.gguf`): served as NAME in place
/// of the default text model.
#[derive(Debug, Clone, PartialEq)]
pub struct TextModel {
    /// The id clients ask for.
    pub name: String,
    /// The GGUF file.
    pub file: PathBuf,
}

/// The `--model` items that name a GGUF text model, taken out of `items` (the rest are
/// ONNX models, for [`specs`]); at most one, an existing file with a plain name.
pub fn text_model(items: &[String]) -> Result<(Option<TextModel>, Vec<String>)> {
    let mut text = None;
    let mut rest = Vec::new();
    for item in items {
        let gguf = item
            .split_once('=')
            .map(|(name, file)| (name.trim(), PathBuf::from(file.trim())))
            .filter(|(_, file)| file.extension().is_some_and(|e| e == "gguf"));
        let Some((name, file)) = gguf else {
            rest.push(item.clone());
            continue;
        };
        if text.is_some() {
            bail!(
                "--model {item:?}: one GGUF text model per server; run a second server for another"
            );
        }
        check_name(item, name)?;
        if !file.is_file() {
            bail!(
                "model `{name}`: no file at {}: give the path of your .gguf file",
                file.display()
            );
        }
        text = Some(TextModel {
            name: name.to_string(),
            file,
        });
    }
    Ok((text, rest))
}

/// A Whisper of the user's own (`--model NAME=DIR`): served as NAME in place of the default
/// speech model, read as `mmsched_backends::asr::own` reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct SpeechModel {
    /// The id clients ask for.
    pub name: String,
    /// Its Hugging Face directory, its `model.safetensors`, or a q8_0 GGUF beside its
    /// `config.json`.
    pub path: PathBuf,
}

/// The `--model` items that name a Whisper, taken out of `items` (the rest are for
/// [`text_model`] and [`specs`]): a directory, a `.safetensors` file, or a `.gguf` file
/// with a Whisper's `config.json` beside it (`"model_type": "whisper"`); at most one.
pub fn speech_model(items: &[String]) -> Result<(Option<SpeechModel>, Vec<String>)> {
    let mut speech = None;
    let mut rest = Vec::new();
    for item in items {
        let Some((name, path)) = item
            .split_once('=')
            .map(|(name, file)| (name.trim(), PathBuf::from(file.trim())))
        else {
            rest.push(item.clone());
            continue;
        };
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        // A directory or a safetensors file must be a Whisper; a GGUF is one only beside a
        // Whisper's configuration (else a text model); anything else is not.
        let must_be = path.is_dir() || ext == "safetensors";
        if !must_be && ext != "gguf" {
            rest.push(item.clone());
            continue;
        }
        let config = if path.is_dir() {
            path.join("config.json")
        } else {
            path.with_file_name("config.json")
        };
        let is_whisper = is_whisper_config(&config);
        if !must_be && !is_whisper {
            rest.push(item.clone());
            continue;
        }
        if speech.is_some() {
            bail!("--model {item:?}: one Whisper per server; run a second server for another");
        }
        check_name(item, name)?;
        if !is_whisper {
            bail!(
                "model `{name}`: {} is not a Whisper: a Hugging Face Whisper directory holds model.safetensors, config.json (\"model_type\": \"whisper\") and tokenizer.json",
                path.display()
            );
        }
        speech = Some(SpeechModel {
            name: name.to_string(),
            path,
        });
    }
    Ok((speech, rest))
}

/// Whether `config` is a Hugging Face Whisper configuration: its `model_type` says so, or
/// (written by a converter that leaves it out) it has a Whisper's audio encoder.
fn is_whisper_config(config: &Path) -> bool {
    std::fs::read(config)
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .is_some_and(|v| {
            v["model_type"] == "whisper"
                || (v["model_type"].is_null()
                    && v["num_mel_bins"].is_u64()
                    && v["max_source_positions"].is_u64())
        })
}

/// A model's name is what clients ask for: plain, short.
fn check_name(item: &str, name: &str) -> Result<()> {
    let plain = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.:".contains(c));
    if !plain {
        bail!(
            "--model {item:?}: name the model with letters, digits, `-`, `_`, `.` or `:` (it is the `model` clients ask for)"
        );
    }
    Ok(())
}

/// Every model declared by `--model NAME=FILE` items and `--model-config` files, each
/// name once; a relative file in a config file is relative to that file.
pub fn specs(items: &[String], configs: &[PathBuf]) -> Result<Vec<OnnxModelSpec>> {
    let mut specs = Vec::new();
    for item in items {
        let Some((name, file)) = item.split_once('=') else {
            bail!("--model {item:?}: write NAME=FILE, e.g. --model detector=/data/yolo.onnx");
        };
        specs.push(OnnxModelSpec {
            name: name.trim().to_string(),
            file: PathBuf::from(file.trim()),
            ..OnnxModelSpec::default()
        });
    }
    for path in configs {
        specs.extend(from_file(path)?);
    }
    for (i, s) in specs.iter().enumerate() {
        if specs[..i].iter().any(|o| o.name == s.name) {
            bail!(
                "model `{}` is declared twice: give each model its own name",
                s.name
            );
        }
        check_file(s)?;
    }
    Ok(specs)
}

fn from_file(path: &Path) -> Result<Vec<OnnxModelSpec>> {
    let text = std::fs::read_to_string(path).with_context(|| {
        format!(
            "cannot read the model file {}: pass --model-config a readable TOML file",
            path.display()
        )
    })?;
    let file: ModelFile = toml::from_str(&text).with_context(|| {
        format!(
            "{} is not a model file: it needs [[models]] entries with `name` and `file` (see docs/own-models.md)",
            path.display()
        )
    })?;
    let base = path.parent().unwrap_or(Path::new("."));
    Ok(file
        .models
        .into_iter()
        .map(|mut s| {
            if s.file.is_relative() {
                s.file = base.join(&s.file);
            }
            for rung in &mut s.rungs {
                if let Some(file) = rung.file.as_mut().filter(|f| f.is_relative()) {
                    *file = base.join(&*file);
                }
            }
            s
        })
        .collect())
}

/// The model's file, and each of its rungs' files, exists and is an ONNX file (the one
/// engine for a model of your own here); its rungs are well formed.
fn check_file(s: &OnnxModelSpec) -> Result<()> {
    check_one_file(s)?;
    for (_, rung) in s.rung_specs()? {
        check_one_file(&rung)?;
    }
    Ok(())
}

fn check_one_file(s: &OnnxModelSpec) -> Result<()> {
    let ext = s.file.extension().and_then(|e| e.to_str()).unwrap_or("");
    if ext != "onnx" {
        bail!(
            "model `{}`: {} is neither an .onnx file (run on ONNX Runtime) nor, on `serve --models`, a .gguf text model (run on llama.cpp); Whisper files of your own are not supported yet",
            s.name,
            s.file.display()
        );
    }
    if !s.file.is_file() {
        bail!(
            "model `{}`: no file at {}: give the path of your .onnx file",
            s.name,
            s.file.display()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_file_is_read_with_its_paths_relative_to_it() {
        let dir = tempfile::tempdir().expect("dir");
        std::fs::write(dir.path().join("m.onnx"), b"x").expect("model");
        let config = dir.path().join("models.toml");
        std::fs::write(
            &config,
            "[[models]]\nname = \"orientation\"\nfile = \"m.onnx\"\n[models.image]\nresize = \"center-crop\"\nchannels = \"bgr\"\n[models.classes]\ntop_k = 2\n",
        )
        .expect("config");
        let specs = specs(&[], &[config]).expect("specs");
        assert_eq!(specs[0].file, dir.path().join("m.onnx"));
        assert_eq!(specs[0].classes.as_ref().and_then(|c| c.top_k), Some(2));
    }

    #[test]
    fn a_gguf_item_is_the_text_model_and_the_rest_are_onnx() {
        let dir = tempfile::tempdir().expect("dir");
        let gguf = dir.path().join("mine.gguf");
        std::fs::write(&gguf, b"x").expect("model");
        let items = [
            format!("my-llm={}", gguf.display()),
            "det=/data/yolo.onnx".to_string(),
        ];
        let (text, rest) = text_model(&items).expect("split");
        assert_eq!(text.map(|t| t.name), Some("my-llm".to_string()));
        assert_eq!(rest, ["det=/data/yolo.onnx"]);
        let twice = [items[0].clone(), format!("other={}", gguf.display())];
        let err = text_model(&twice).unwrap_err().to_string();
        assert!(err.contains("one GGUF text model"), "{err}");
        let err = text_model(&["x=/no/such.gguf".into()])
            .unwrap_err()
            .to_string();
        assert!(err.contains("no file at /no/such.gguf"), "{err}");
        let err = text_model(&[format!("bad name={}", gguf.display())])
            .unwrap_err()
            .to_string();
        assert!(err.contains("letters, digits"), "{err}");
    }

    #[test]
    fn a_whisper_directory_is_the_speech_model_and_the_rest_stays() {
        let dir = tempfile::tempdir().expect("dir");
        let mine = dir.path().join("my-whisper");
        std::fs::create_dir_all(&mine).expect("mkdir");
        std::fs::write(mine.join("config.json"), r#"{"model_type": "whisper"}"#).expect("cfg");
        let gguf = mine.join("model-q8_0.gguf");
        std::fs::write(&gguf, b"x").expect("gguf");
        let text = dir.path().join("chat.gguf");
        std::fs::write(&text, b"x").expect("text");
        let items = [
            format!("ears={}", mine.display()),
            format!("chat={}", text.display()),
        ];
        let (speech, rest) = speech_model(&items).expect("split");
        assert_eq!(speech.map(|s| s.name), Some("ears".to_string()));
        assert_eq!(rest, [items[1].clone()]);
        // A GGUF beside a Whisper's configuration is that Whisper, not a text model.
        let (speech, rest) = speech_model(&[format!("ears={}", gguf.display())]).expect("gguf");
        assert_eq!(speech.map(|s| s.path), Some(gguf));
        assert!(rest.is_empty());
        let twice = [items[0].clone(), items[0].clone()];
        let err = speech_model(&twice).unwrap_err().to_string();
        assert!(err.contains("one Whisper per server"), "{err}");
        let other = dir.path().join("other");
        std::fs::create_dir_all(&other).expect("mkdir");
        let err = speech_model(&[format!("x={}", other.display())])
            .unwrap_err()
            .to_string();
        assert!(err.contains("is not a Whisper"), "{err}");
    }

    #[test]
    fn bad_declarations_say_what_to_write() {
        let err = specs(&["detector".into()], &[]).unwrap_err().to_string();
        assert!(err.contains("NAME=FILE"), "{err}");
        let err = specs(&["d=/no/such.onnx".into()], &[])
            .unwrap_err()
            .to_string();
        assert!(err.contains("no file at /no/such.onnx"), "{err}");
        let err = specs(&["d=/etc/hostname".into()], &[])
            .unwrap_err()
            .to_string();
        assert!(err.contains("neither an .onnx file"), "{err}");
        let dir = tempfile::tempdir().expect("dir");
        let bad = dir.path().join("bad.toml");
        std::fs::write(&bad, "[[models]]\nname = \"x\"\nfiles = \"a\"\n").expect("write");
        let err = format!("{:#}", specs(&[], &[bad]).unwrap_err());
        assert!(err.contains("unknown field `files`"), "{err}");
    }
}
