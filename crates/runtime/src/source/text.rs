//! Text requests: prompts arriving at a fixed rate, cycling through a list (for example,
//! lines of a transcript) or read once from a prompts file.

use std::path::Path;

use mmsched_core::Modality;
use mmsched_core::time::{Clock, Nanos};

use super::{Cadence, Source, SourceClock, SourceEvent};

/// One prompt for the language model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextRequest {
    /// The prompt.
    pub prompt: String,
    /// How many tokens to generate at most.
    pub max_tokens: u32,
    /// The prompt is the user's own (from a prompts file): ask it as written, never
    /// replace it with a question about what was heard.
    pub as_written: bool,
}

/// One prompt of a [`TextConfig`], with its own token budget if it has one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompt {
    /// The text.
    pub text: String,
    /// Tokens to generate at most (`None`: the source's default).
    pub max_tokens: Option<u32>,
}

impl From<&str> for Prompt {
    fn from(text: &str) -> Self {
        Self {
            text: text.to_string(),
            max_tokens: None,
        }
    }
}

/// One line of a JSONL prompts file.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct PromptLine {
    prompt: String,
    #[serde(default)]
    max_tokens: Option<u32>,
}

/// Reads a prompts file: one prompt per line, or one JSON object per line
/// (`{"prompt": "…", "max_tokens": 48}`, `max_tokens` optional); the two may mix. Empty
/// lines are skipped.
pub fn read_prompts(path: &Path) -> Result<Vec<Prompt>, TextSourceError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| TextSourceError::File {
        path: shown.clone(),
        reason: e.to_string(),
    })?;
    parse_prompts(&text).map_err(|(line, reason)| TextSourceError::Line {
        path: shown,
        line,
        reason,
    })
}

/// Parses the text of a prompts file; an error gives the 1-based line and why.
pub fn parse_prompts(text: &str) -> Result<Vec<Prompt>, (usize, String)> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if line.starts_with('{') {
            let p: PromptLine = serde_json::from_str(line).map_err(|e| {
                (
                    n + 1,
                    format!("{e}: write {{\"prompt\": \"…\", \"max_tokens\": 32}} or plain text"),
                )
            })?;
            if p.prompt.trim().is_empty() {
                return Err((n + 1, "the prompt is empty".into()));
            }
            if p.max_tokens == Some(0) {
                return Err((n + 1, "max_tokens must be at least 1".into()));
            }
            out.push(Prompt {
                text: p.prompt,
                max_tokens: p.max_tokens,
            });
        } else {
            out.push(Prompt::from(line));
        }
    }
    Ok(out)
}

/// Settings of a [`TextRequests`] source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextConfig {
    /// The prompts, used in turn (must not be empty; see also
    /// [`TextRequests::with_prompts`]).
    pub prompts: Vec<Prompt>,
    /// Time between two requests, in nanoseconds (≥ 1).
    pub period_nanos: Nanos,
    /// Tokens to generate per request, unless the prompt says.
    pub max_tokens: u32,
    /// The prompts are the user's own: ask them as written (see [`TextRequest::as_written`]).
    pub as_written: bool,
    /// Device time of the first request.
    pub start_nanos: Nanos,
    /// Stop after this many requests (`None`: never).
    pub limit: Option<u64>,
    /// The requester's own clock error.
    pub clock: SourceClock,
}

/// Why a source could not be built.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TextSourceError {
    /// No prompts given.
    #[error("the text source needs at least one prompt")]
    NoPrompts,
    /// The prompts file could not be read.
    #[error(
        "cannot read prompts file {path}: {reason} (give the path of a text file, one prompt per line)"
    )]
    File {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
    /// A line of the prompts file is not a prompt.
    #[error("{path}:{line}: {reason}")]
    Line {
        /// The file.
        path: String,
        /// 1-based line.
        line: usize,
        /// What is wrong.
        reason: String,
    },
}

/// A source of text requests.
#[derive(Debug)]
pub struct TextRequests<C: Clock> {
    device: C,
    cadence: Cadence,
    clock: SourceClock,
    prompts: Vec<Prompt>,
    max_tokens: u32,
    as_written: bool,
}

impl<C: Clock> TextRequests<C> {
    /// A text source polled against `device`.
    pub fn new(config: TextConfig, device: C) -> Result<Self, TextSourceError> {
        if config.prompts.is_empty() {
            return Err(TextSourceError::NoPrompts);
        }
        let mut cadence = Cadence::every(config.start_nanos, config.period_nanos);
        if let Some(l) = config.limit {
            cadence = cadence.with_limit(l);
        }
        Ok(Self {
            device,
            cadence,
            clock: config.clock,
            prompts: config.prompts,
            max_tokens: config.max_tokens,
            as_written: config.as_written,
        })
    }

    /// Asks `prompts` instead (each with its own token budget if it has one); `as_written`:
    /// they are the user's own (see [`TextRequest::as_written`]).
    pub fn with_prompts(
        mut self,
        prompts: Vec<Prompt>,
        as_written: bool,
    ) -> Result<Self, TextSourceError> {
        if prompts.is_empty() {
            return Err(TextSourceError::NoPrompts);
        }
        self.prompts = prompts;
        self.as_written = as_written;
        Ok(self)
    }
}

impl<C: Clock> Source for TextRequests<C> {
    type Payload = TextRequest;

    fn name(&self) -> &str {
        "text"
    }

    fn modality(&self) -> Modality {
        Modality::Text
    }

    fn next_due_nanos(&self) -> Option<Nanos> {
        self.cadence.next_due_nanos()
    }

    fn poll(&mut self) -> Option<SourceEvent<TextRequest>> {
        let (seq, at) = self.cadence.take_due(self.device.now_nanos())?;
        let i = usize::try_from(seq % self.prompts.len() as u64).unwrap_or(0);
        Some(SourceEvent {
            seq,
            capture_device_nanos: at,
            stamp_nanos: self.clock.stamp(at),
            payload: TextRequest {
                prompt: self.prompts[i].text.clone(),
                max_tokens: self.prompts[i].max_tokens.unwrap_or(self.max_tokens),
                as_written: self.as_written,
            },
            received_nanos: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mmsched_core::time::{ManualClock, NANOS_PER_SEC};

    #[test]
    fn prompts_cycle_at_the_rate_on_their_own_clock() {
        let device = ManualClock::new(0);
        let config = TextConfig {
            prompts: vec!["unused".into()],
            period_nanos: 5 * NANOS_PER_SEC,
            max_tokens: 16,
            as_written: false,
            start_nanos: NANOS_PER_SEC,
            limit: Some(3),
            clock: SourceClock::new(-1_000, -2_000),
        };
        let mut src = TextRequests::new(config, &device)
            .and_then(|t| {
                t.with_prompts(
                    vec![
                        "a".into(),
                        Prompt {
                            text: "b".into(),
                            max_tokens: Some(3),
                        },
                    ],
                    false,
                )
            })
            .expect("valid");
        assert!(src.poll().is_none(), "nothing before the first request");
        device.set(20 * NANOS_PER_SEC);
        let got: Vec<_> = std::iter::from_fn(|| src.poll()).collect();
        let prompts: Vec<&str> = got.iter().map(|e| e.payload.prompt.as_str()).collect();
        assert_eq!(prompts, ["a", "b", "a"]);
        let budgets: Vec<u32> = got.iter().map(|e| e.payload.max_tokens).collect();
        assert_eq!(budgets, [16, 3, 16], "a prompt's own budget wins");
        assert_eq!(got[2].capture_device_nanos, 11 * NANOS_PER_SEC);
        assert_eq!(got[2].stamp_nanos, 11 * NANOS_PER_SEC - 1_000 - 22_000);
        assert_eq!(src.next_due_nanos(), None);
        let empty = TextConfig {
            prompts: vec![],
            ..config_clone()
        };
        assert_eq!(
            TextRequests::new(empty, &device).err(),
            Some(TextSourceError::NoPrompts)
        );
    }

    fn config_clone() -> TextConfig {
        TextConfig {
            prompts: vec!["x".into()],
            period_nanos: 1,
            max_tokens: 1,
            as_written: true,
            start_nanos: 0,
            limit: None,
            clock: SourceClock::default(),
        }
    }

    #[test]
    fn prompts_files_take_plain_lines_and_jsonl() {
        let text = "What is on the sign?\n\n{\"prompt\": \"Summarise: a | b\", \"max_tokens\": 8}\n  {\"prompt\": \"Two\"}\n";
        let got = parse_prompts(text).expect("valid");
        assert_eq!(
            got,
            vec![
                Prompt::from("What is on the sign?"),
                Prompt {
                    text: "Summarise: a | b".into(),
                    max_tokens: Some(8)
                },
                Prompt::from("Two"),
            ]
        );
        let e = parse_prompts("ok\n{\"prompt\": \"x\", \"tokens\": 3}").expect_err("unknown key");
        assert_eq!(e.0, 2);
        assert!(e.1.contains("unknown field"), "{}", e.1);
        assert_eq!(
            parse_prompts("{\"prompt\": \"x\", \"max_tokens\": 0}")
                .expect_err("zero")
                .0,
            1
        );
        assert_eq!(
            parse_prompts("{\"prompt\": \" \"}").expect_err("empty").0,
            1
        );
        let dir = tempfile::tempdir().expect("tempdir");
        let missing = read_prompts(&dir.path().join("nope.txt")).expect_err("missing file");
        assert!(missing.to_string().contains("nope.txt"), "{missing}");
        let f = dir.path().join("p.jsonl");
        std::fs::write(&f, "a\n{broken\n").expect("write");
        let bad = read_prompts(&f).expect_err("bad line");
        assert!(bad.to_string().contains("p.jsonl:2:"), "{bad}");
    }
}
