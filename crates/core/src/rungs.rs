//! Quality rungs: the named ways a model can run a job, from the richest (the full-quality
//! result, what runs while the device has headroom) down to cheaper ones that trade some
//! accuracy for time. The policy declares them per model (`[[rungs.vision]]`,
//! `[[rungs.asr]]`), `mmsched profile` measures each one's cost and accuracy on the device,
//! and a scheduler picks one per job.
//!
//! - **vision** (PP-OCRv4): the detector's input, its long side in pixels (the frame scaled
//!   to it keeping its aspect ratio, each side padded up to a multiple of 32: 640×360 at
//!   320 is the 320×192 plan of the camera stream), and optionally recognition of only the
//!   `max_lines` boxes the detector is most confident of.
//! - **asr** (Whisper): what the encoder runs over, the whole 30 s window or the audio plus
//!   a second of padding ([`EncoderSpan`]).
//!
//! Rungs are listed richest first; each must be cheaper than the one before it in at least
//! one parameter and richer in none, so the order is the order of cost.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use serde::{Deserialize, Serialize};

use crate::policy::FieldError;

/// What Whisper's encoder runs over in each 30 s window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum EncoderSpan {
    /// The whole window, silent padding included, as Whisper (and CTranslate2) run it: the
    /// reference transcripts, and the default.
    #[default]
    Window,
    /// The audio and one second of the silent padding after it (the whole window at most):
    /// a 10 s clip costs 40 % of the whole window's time, a 3 s utterance less still. Whisper
    /// was trained on whole windows, and transcripts change: the shipped clip's is the same,
    /// but of six short `espeak-ng` sentences five came out different, mostly in
    /// punctuation, once in a word ("locked, I dust" for "locked by dust") and once as "S"
    /// for "Yes." (more padding, 3 s, or a span of at least 15 s, did not make them equal).
    /// A trade of accuracy for time.
    Audio,
}

/// Mel frames (10 ms each) in one Whisper window of 30 s.
pub const WHISPER_WINDOW_FRAMES: usize = 3000;
/// Audio samples (at 16 kHz) per mel frame.
pub const WHISPER_HOP_SAMPLES: usize = 160;
/// Frames of silent padding the [`EncoderSpan::Audio`] encoder reads after the audio (1 s).
const PADDING_FRAMES: usize = 100;

impl EncoderSpan {
    /// Mel frames the encoder reads for a window holding `samples` samples at 16 kHz: an
    /// even count (the second convolution halves it), at most the window's.
    pub fn frames(self, samples: usize) -> usize {
        match self {
            EncoderSpan::Window => WHISPER_WINDOW_FRAMES,
            EncoderSpan::Audio => {
                let frames = samples.div_ceil(WHISPER_HOP_SAMPLES) + PADDING_FRAMES;
                (frames + frames % 2).min(WHISPER_WINDOW_FRAMES)
            }
        }
    }

    /// The span's short name (`audio` or `window`).
    pub fn as_str(self) -> &'static str {
        match self {
            EncoderSpan::Audio => "audio",
            EncoderSpan::Window => "window",
        }
    }

    /// Cost rank: 0 for the whole window, more for cheaper spans.
    fn rank(self) -> u8 {
        match self {
            EncoderSpan::Window => 0,
            EncoderSpan::Audio => 1,
        }
    }
}

/// `[[rungs.vision]]` as written: one way to read a frame.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct VisionRungSpec {
    /// The rung's name (letters, digits, `-`, `_`, `.`; unique among the model's rungs),
    /// as traces, results and the profile show it.
    pub name: String,
    /// The detector input's long side in pixels, a multiple of 32 from 32 to 4096: the
    /// frame is scaled to it keeping its aspect ratio and each side is padded up to a
    /// multiple of 32 (a 640×360 frame at 320 is read through a 320×192 input).
    pub det_long_side: u32,
    /// Recognise only this many lines, those whose boxes the detector is most confident of
    /// (1 to 1000; absent: every line found).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_lines: Option<u32>,
}

/// `[[rungs.asr]]` as written: one way to transcribe an utterance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct AsrRungSpec {
    /// The rung's name (letters, digits, `-`, `_`, `.`; unique among the model's rungs).
    pub name: String,
    /// What the encoder runs over: `window` (the whole 30 s window) or `audio` (the audio
    /// and one second of padding).
    pub span: EncoderSpan,
}

/// `[rungs]` section: the quality rungs per model, richest first. A model left out gets
/// the default rungs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct RungsSpec {
    /// PP-OCRv4's rungs (default: `det320`, `det256`, `det192`, `det192-top3`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vision: Option<Vec<VisionRungSpec>>,
    /// Whisper's rungs (default: `window`, `audio`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asr: Option<Vec<AsrRungSpec>>,
}

/// A validated vision rung.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VisionRung {
    /// Its name.
    pub name: String,
    /// The detector input's long side, pixels (a multiple of 32).
    pub det_long_side: u32,
    /// Lines recognised at most (`None`: all).
    pub max_lines: Option<u32>,
}

impl VisionRung {
    /// The rung's parameters as one line (`det_long_side=320`, `det_long_side=192
    /// max_lines=3`): what a device profile records with its measurement, so that a rung
    /// whose parameters changed under the same name is not predicted from stale figures.
    pub fn params(&self) -> String {
        match self.max_lines {
            Some(n) => format!("det_long_side={} max_lines={n}", self.det_long_side),
            None => format!("det_long_side={}", self.det_long_side),
        }
    }
}

/// A validated speech-recognition rung.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AsrRung {
    /// Its name.
    pub name: String,
    /// What the encoder runs over.
    pub span: EncoderSpan,
}

impl AsrRung {
    /// The rung's parameters as one line (`span=window`), as [`VisionRung::params`].
    pub fn params(&self) -> String {
        format!("span={}", self.span.as_str())
    }
}

/// The validated rungs of every model, richest first, never empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rungs {
    vision: Vec<VisionRung>,
    asr: Vec<AsrRung>,
}

/// The default vision rungs: the camera stream's 320 plan, two smaller detector inputs, and
/// the smallest reading only its three most confident lines.
const DEFAULT_VISION: [(&str, u32, Option<u32>); 4] = [
    ("det320", 320, None),
    ("det256", 256, None),
    ("det192", 192, None),
    ("det192-top3", 192, Some(3)),
];

/// The longest rung name.
pub const MAX_RUNG_NAME_CHARS: usize = 32;

/// Most rungs a model of your own may declare (`[[models.rungs]]`).
pub const MAX_OWN_RUNGS: usize = 8;

/// Whether `name` is a well-formed rung name: 1 to [`MAX_RUNG_NAME_CHARS`] letters, digits,
/// `-`, `_` or `.` (the policy's rungs and a model of your own's alike).
pub fn is_rung_name(name: &str) -> bool {
    !name.is_empty()
        && name.chars().count() <= MAX_RUNG_NAME_CHARS
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

impl Default for Rungs {
    fn default() -> Self {
        Self {
            vision: DEFAULT_VISION
                .iter()
                .map(|&(name, det_long_side, max_lines)| VisionRung {
                    name: name.to_string(),
                    det_long_side,
                    max_lines,
                })
                .collect(),
            asr: [EncoderSpan::Window, EncoderSpan::Audio]
                .into_iter()
                .map(|span| AsrRung {
                    name: span.as_str().to_string(),
                    span,
                })
                .collect(),
        }
    }
}

impl Rungs {
    /// PP-OCRv4's rungs, richest first.
    pub fn vision(&self) -> &[VisionRung] {
        &self.vision
    }

    /// Whisper's rungs, richest first.
    pub fn asr(&self) -> &[AsrRung] {
        &self.asr
    }

    /// The vision rung named `name`.
    pub fn vision_rung(&self, name: &str) -> Option<&VisionRung> {
        self.vision.iter().find(|r| r.name == name)
    }

    /// The speech-recognition rung named `name`.
    pub fn asr_rung(&self, name: &str) -> Option<&AsrRung> {
        self.asr.iter().find(|r| r.name == name)
    }

    /// The rungs written out in full.
    pub fn to_spec(&self) -> RungsSpec {
        RungsSpec {
            vision: Some(
                self.vision
                    .iter()
                    .map(|r| VisionRungSpec {
                        name: r.name.clone(),
                        det_long_side: r.det_long_side,
                        max_lines: r.max_lines,
                    })
                    .collect(),
            ),
            asr: Some(
                self.asr
                    .iter()
                    .map(|r| AsrRungSpec {
                        name: r.name.clone(),
                        span: r.span,
                    })
                    .collect(),
            ),
        }
    }

    /// Checks `spec`, adding one [`FieldError`] per problem to `errors`; a model left out
    /// keeps its default rungs.
    pub(crate) fn check(spec: &RungsSpec, errors: &mut Vec<FieldError>) -> Rungs {
        let defaults = Rungs::default();
        let vision = match &spec.vision {
            None => defaults.vision,
            Some(list) => {
                check_list(
                    "vision",
                    list.iter().map(|r| r.name.as_str()),
                    list.len(),
                    errors,
                );
                let mut out: Vec<VisionRung> = Vec::with_capacity(list.len());
                for (i, r) in list.iter().enumerate() {
                    let field = format!("rungs.vision[{i}]");
                    let side = r.det_long_side;
                    if !(32..=4096).contains(&side) || side % 32 != 0 {
                        errors.push(fail(
                            &format!("{field}.det_long_side"),
                            side,
                            "must be a multiple of 32 from 32 to 4096",
                        ));
                    }
                    if let Some(n) = r.max_lines
                        && !(1..=1000).contains(&n)
                    {
                        errors.push(fail(
                            &format!("{field}.max_lines"),
                            n,
                            "must be a whole number from 1 to 1000 (leave it out to read every line)",
                        ));
                    }
                    let rung = VisionRung {
                        name: r.name.clone(),
                        det_long_side: side,
                        max_lines: r.max_lines,
                    };
                    if let Some(prev) = out.last() {
                        check_vision_order(&field, prev, &rung, errors);
                    }
                    out.push(rung);
                }
                out
            }
        };
        let asr = match &spec.asr {
            None => defaults.asr,
            Some(list) => {
                check_list(
                    "asr",
                    list.iter().map(|r| r.name.as_str()),
                    list.len(),
                    errors,
                );
                for (i, pair) in list.windows(2).enumerate() {
                    if pair[1].span.rank() <= pair[0].span.rank() {
                        errors.push(fail(
                            &format!("rungs.asr[{}].span", i + 1),
                            pair[1].span.as_str(),
                            format!(
                                "rungs go from the richest to the cheapest: after `{}` only a cheaper span may follow (`window`, then `audio`)",
                                pair[0].span.as_str()
                            ),
                        ));
                    }
                }
                list.iter()
                    .map(|r| AsrRung {
                        name: r.name.clone(),
                        span: r.span,
                    })
                    .collect()
            }
        };
        Rungs { vision, asr }
    }
}

fn fail(field: &str, value: impl core::fmt::Display, reason: impl Into<String>) -> FieldError {
    FieldError {
        field: field.to_string(),
        value: value.to_string(),
        reason: reason.into(),
    }
}

/// A model's list: not empty, names well formed and unique.
fn check_list<'a>(
    model: &str,
    names: impl Iterator<Item = &'a str>,
    len: usize,
    errors: &mut Vec<FieldError>,
) {
    if len == 0 {
        errors.push(fail(
            &format!("rungs.{model}"),
            "[]",
            "a model needs at least one rung, its full-quality one (leave the list out for the default rungs)",
        ));
    }
    let mut seen: Vec<&str> = Vec::new();
    for (i, name) in names.enumerate() {
        let field = format!("rungs.{model}[{i}].name");
        if !is_rung_name(name) {
            errors.push(fail(
                &field,
                format_args!("{:?}", crate::text::shorten(name, 40)),
                format!(
                    "a rung name is 1 to {MAX_RUNG_NAME_CHARS} letters, digits, `-`, `_` or `.`"
                ),
            ));
        } else if seen.contains(&name) {
            errors.push(fail(
                &field,
                format_args!("{name:?}"),
                "another rung of this model has that name",
            ));
        }
        seen.push(name);
    }
}

/// A vision rung must be no richer than the one before it, and cheaper in something.
fn check_vision_order(
    field: &str,
    prev: &VisionRung,
    rung: &VisionRung,
    errors: &mut Vec<FieldError>,
) {
    let lines = |r: &VisionRung| r.max_lines.unwrap_or(u32::MAX);
    if rung.det_long_side > prev.det_long_side {
        errors.push(fail(
            &format!("{field}.det_long_side"),
            rung.det_long_side,
            format!(
                "rungs go from the richest to the cheapest: the rung before it reads at {}",
                prev.det_long_side
            ),
        ));
    } else if lines(rung) > lines(prev) {
        errors.push(fail(
            &format!("{field}.max_lines"),
            rung.max_lines
                .map_or_else(|| "(every line)".to_string(), |n| n.to_string()),
            format!(
                "rungs go from the richest to the cheapest: the rung before it reads {} lines at most",
                lines(prev)
            ),
        ));
    } else if rung.det_long_side == prev.det_long_side && lines(rung) == lines(prev) {
        errors.push(fail(
            field,
            format_args!("{:?}", rung.name),
            format!(
                "the same detector side and line limit as `{}` before it: each rung must be cheaper than the one before it",
                prev.name
            ),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(json: &str) -> Result<Rungs, Vec<FieldError>> {
        let spec: RungsSpec = serde_json::from_str(json).expect("parses");
        let mut errors = Vec::new();
        let r = Rungs::check(&spec, &mut errors);
        if errors.is_empty() {
            Ok(r)
        } else {
            Err(errors)
        }
    }

    #[test]
    fn the_audio_span_covers_the_audio_and_a_second_of_padding() {
        // 10 s: 1000 frames of audio, 100 of padding.
        assert_eq!(EncoderSpan::Audio.frames(160_000), 1100);
        // Odd counts round up to even (the stride-2 convolution halves them).
        assert_eq!(EncoderSpan::Audio.frames(161), 102);
        // Never beyond the window.
        assert_eq!(EncoderSpan::Audio.frames(480_000), WHISPER_WINDOW_FRAMES);
        assert_eq!(EncoderSpan::Window.frames(160), WHISPER_WINDOW_FRAMES);
    }

    #[test]
    fn defaults_go_from_richest_to_cheapest_and_round_trip() {
        let r = check("{}").expect("defaults are valid");
        assert_eq!(r, Rungs::default());
        let names: Vec<&str> = r.vision().iter().map(|v| v.name.as_str()).collect();
        assert_eq!(names, ["det320", "det256", "det192", "det192-top3"]);
        assert_eq!(r.asr()[0].span, EncoderSpan::Window);
        assert_eq!(
            r.asr_rung("audio").map(|a| a.span),
            Some(EncoderSpan::Audio)
        );
        assert_eq!(r.vision()[3].params(), "det_long_side=192 max_lines=3");
        assert_eq!(r.vision()[0].params(), "det_long_side=320");
        assert_eq!(r.asr()[1].params(), "span=audio");
        let again = check(&serde_json::to_string(&r.to_spec()).expect("serialises"))
            .expect("the written-out rungs are valid");
        assert_eq!(again, r);
        // Checking the written-out defaults once more finds the same rungs.
        let mut errors = Vec::new();
        assert_eq!(Rungs::check(&r.to_spec(), &mut errors), r);
        assert!(errors.is_empty());
    }

    #[test]
    fn one_rung_per_model_is_enough() {
        let r = check(r#"{"vision":[{"name":"full","det_long_side":640}],"asr":[{"name":"w","span":"window"}]}"#)
            .expect("valid");
        assert_eq!(r.vision().len(), 1);
        assert_eq!(r.vision_rung("full").map(|v| v.det_long_side), Some(640));
        assert_eq!(r.asr().len(), 1);
    }

    /// Each invalid list and the error it must produce (field, value, reason fragment).
    #[test]
    fn bad_rungs_name_the_field_the_value_and_the_fix() {
        let table: &[(&str, &str, &str, &str)] = &[
            (
                r#"{"vision":[]}"#,
                "rungs.vision",
                "[]",
                "at least one rung",
            ),
            (
                r#"{"vision":[{"name":"a","det_long_side":300}]}"#,
                "rungs.vision[0].det_long_side",
                "300",
                "multiple of 32",
            ),
            (
                r#"{"vision":[{"name":"a","det_long_side":320,"max_lines":0}]}"#,
                "rungs.vision[0].max_lines",
                "0",
                "from 1 to 1000",
            ),
            (
                r#"{"vision":[{"name":"a","det_long_side":256},{"name":"b","det_long_side":320}]}"#,
                "rungs.vision[1].det_long_side",
                "320",
                "reads at 256",
            ),
            (
                r#"{"vision":[{"name":"a","det_long_side":256,"max_lines":3},{"name":"b","det_long_side":256}]}"#,
                "rungs.vision[1].max_lines",
                "(every line)",
                "3 lines at most",
            ),
            (
                r#"{"vision":[{"name":"a","det_long_side":256},{"name":"b","det_long_side":256}]}"#,
                "rungs.vision[1]",
                "\"b\"",
                "cheaper than the one before",
            ),
            (
                r#"{"vision":[{"name":"a","det_long_side":256},{"name":"a","det_long_side":192}]}"#,
                "rungs.vision[1].name",
                "\"a\"",
                "another rung",
            ),
            (
                r#"{"asr":[{"name":"has space","span":"window"}]}"#,
                "rungs.asr[0].name",
                "\"has space\"",
                "letters, digits",
            ),
            (
                r#"{"asr":[{"name":"a","span":"audio"},{"name":"w","span":"window"}]}"#,
                "rungs.asr[1].span",
                "window",
                "cheaper span",
            ),
        ];
        for (doc, field, value, reason) in table {
            let errs = check(doc).expect_err(doc);
            let e = errs
                .iter()
                .find(|e| e.field == *field)
                .unwrap_or_else(|| panic!("{doc}: {errs:?}"));
            assert_eq!(e.value, *value, "{doc}");
            assert!(e.reason.contains(reason), "{doc}: {}", e.reason);
        }
    }

    #[test]
    fn unknown_keys_and_spans_are_refused_by_name() {
        let e = serde_json::from_str::<RungsSpec>(r#"{"vision":[{"name":"a","det_side":320}]}"#)
            .expect_err("unknown key");
        assert!(e.to_string().contains("det_side"), "{e}");
        let e = serde_json::from_str::<RungsSpec>(r#"{"asr":[{"name":"a","span":"half"}]}"#)
            .expect_err("unknown span");
        assert!(e.to_string().contains("window"), "{e}");
        let e = serde_json::from_str::<RungsSpec>(r#"{"llm":[]}"#).expect_err("no llm rungs");
        assert!(e.to_string().contains("vision"), "{e}");
    }
}
