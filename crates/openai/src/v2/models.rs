//! The built-in models as the v2 protocol describes them: names, inputs and outputs (with
//! `-1` for a dimension of any size), and which runtime class runs each.

use mmsched_pipeline::stats::Kind;
use serde_json::{Value, json};

use crate::{ASR_ID, LLM_ID, OCR_ID};

/// The one version of every built-in model.
pub const VERSION: &str = "1";

/// A model's tensor as its metadata lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spec {
    /// Its name.
    pub name: &'static str,
    /// Its datatype.
    pub datatype: &'static str,
    /// Its shape, `-1` where any size goes.
    pub shape: &'static [i64],
}

impl Spec {
    fn json(&self) -> Value {
        json!({"name": self.name, "datatype": self.datatype, "shape": self.shape})
    }
}

/// A model the v2 endpoints serve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Builtin {
    /// PP-OCRv4: an image in, its lines out.
    Ocr,
    /// Whisper tiny.en: 16 kHz speech in, its transcript out.
    Asr,
    /// Gemma-3 270M: a prompt in, its continuation out.
    Llm,
}

/// OCR: RGB pixels, or an encoded PNG or JPEG file (as Triton's image clients send one).
const OCR_INPUTS: &[Spec] = &[
    Spec {
        name: "image",
        datatype: "UINT8",
        shape: &[-1, -1, 3],
    },
    Spec {
        name: "image_file",
        datatype: "BYTES",
        shape: &[1],
    },
];

/// OCR: a line per element, top to bottom, with its recognition score, its box's corners
/// (clockwise from top-left, frame pixels) and the detector's confidence in the box.
const OCR_OUTPUTS: &[Spec] = &[
    Spec {
        name: "text",
        datatype: "BYTES",
        shape: &[-1],
    },
    Spec {
        name: "scores",
        datatype: "FP32",
        shape: &[-1],
    },
    Spec {
        name: "boxes",
        datatype: "FP32",
        shape: &[-1, 4, 2],
    },
    Spec {
        name: "box_scores",
        datatype: "FP32",
        shape: &[-1],
    },
];

/// Speech: mono 16 kHz samples (`[N]` or `[1, N]`), or a WAV file.
const ASR_INPUTS: &[Spec] = &[
    Spec {
        name: "audio",
        datatype: "FP32",
        shape: &[-1],
    },
    Spec {
        name: "audio_file",
        datatype: "BYTES",
        shape: &[1],
    },
];

const ASR_OUTPUTS: &[Spec] = &[Spec {
    name: "text",
    datatype: "BYTES",
    shape: &[1],
}];

const LLM_INPUTS: &[Spec] = &[Spec {
    name: "text_input",
    datatype: "BYTES",
    shape: &[1],
}];

const LLM_OUTPUTS: &[Spec] = &[Spec {
    name: "text_output",
    datatype: "BYTES",
    shape: &[1],
}];

impl Builtin {
    /// Every built-in model, in the order metadata lists them.
    pub const ALL: [Builtin; 3] = [Builtin::Ocr, Builtin::Asr, Builtin::Llm];

    /// The model called `name`, if built in.
    pub fn named(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.id() == name)
    }

    /// Its name.
    pub fn id(self) -> &'static str {
        match self {
            Builtin::Ocr => OCR_ID,
            Builtin::Asr => ASR_ID,
            Builtin::Llm => LLM_ID,
        }
    }

    /// The runtime class that runs it.
    pub fn kind(self) -> Kind {
        match self {
            Builtin::Ocr => Kind::Vision,
            Builtin::Asr => Kind::Asr,
            Builtin::Llm => Kind::Llm,
        }
    }

    /// Its inputs: a request gives exactly one of them.
    pub fn inputs(self) -> &'static [Spec] {
        match self {
            Builtin::Ocr => OCR_INPUTS,
            Builtin::Asr => ASR_INPUTS,
            Builtin::Llm => LLM_INPUTS,
        }
    }

    /// Its outputs.
    pub fn outputs(self) -> &'static [Spec] {
        match self {
            Builtin::Ocr => OCR_OUTPUTS,
            Builtin::Asr => ASR_OUTPUTS,
            Builtin::Llm => LLM_OUTPUTS,
        }
    }

    /// The names of its inputs or outputs, as an error message lists them.
    pub fn names(specs: &[Spec]) -> String {
        specs
            .iter()
            .map(|s| format!("{} ({} {:?})", s.name, s.datatype, s.shape))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// `GET /v2/models/{name}`'s body, for the model served as `name`.
    pub fn metadata(self, name: &str) -> Value {
        json!({
            "name": name,
            "versions": [VERSION],
            "platform": "mmsched",
            "inputs": self.inputs().iter().map(Spec::json).collect::<Vec<_>>(),
            "outputs": self.outputs().iter().map(Spec::json).collect::<Vec<_>>(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_model_is_found_by_its_name_and_lists_its_tensors() {
        for m in Builtin::ALL {
            assert_eq!(Builtin::named(m.id()), Some(m));
            let v = m.metadata(m.id());
            assert_eq!(v["versions"], json!(["1"]));
            assert!(!v["inputs"].as_array().expect("inputs").is_empty());
        }
        assert_eq!(Builtin::named("gpt-9"), None);
        assert_eq!(
            Builtin::Ocr.metadata(OCR_ID)["inputs"][0]["shape"],
            json!([-1, -1, 3])
        );
    }
}
