//! What a request's right answer is, where the run knows it, and whether a result matches
//! it: the lines of a generated or labelled frame, the words of a known recording.
//!
//! The judgements themselves are the core's ([`mmsched_core::score`]), the same ones
//! `mmsched profile` measures each quality rung's accuracy with: a frame is correct when
//! every true line was read (case- and space-insensitive), an utterance when its word
//! error rate is at most [`mmsched_core::score::ASR_CORRECT_MAX_WER`].

use mmsched_core::score::{score_lines, transcript_correct, word_error_rate};

use crate::request::Reply;

/// The right answer to one request.
#[derive(Debug, Clone, PartialEq)]
pub enum Truth {
    /// The lines of text a frame shows.
    Lines(Vec<String>),
    /// The words said in an utterance (empty: nothing was said in it).
    Transcript(String),
}

impl Truth {
    /// The lines of a frame's text (`\n`-separated); `None` when it has none (a recorded
    /// frame without a label).
    pub fn of_frame_text(text: &str) -> Option<Truth> {
        let lines: Vec<String> = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect();
        (!lines.is_empty()).then_some(Truth::Lines(lines))
    }
}

/// How one result compares with its truth.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Score {
    /// Whether the result counts as right.
    pub correct: bool,
    /// How much of it is right, 0..=1: the share of true lines read, or 1 − WER (at
    /// least 0).
    pub accuracy: f64,
}

/// Scores `reply` against `truth`; `None` when they are of different kinds (nothing to
/// compare).
pub fn score(truth: &Truth, reply: &Reply) -> Option<Score> {
    match (truth, reply) {
        (Truth::Lines(t), Reply::Lines(read)) => {
            let read: Vec<&str> = read.iter().map(|l| l.text.as_str()).collect();
            let s = score_lines(t, &read);
            Some(Score {
                correct: s.correct(),
                accuracy: s.line_accuracy(),
            })
        }
        (Truth::Transcript(t), Reply::Transcript(heard)) => {
            let wer = word_error_rate(t, heard);
            Some(Score {
                correct: transcript_correct(wer),
                accuracy: (1.0 - wer).max(0.0),
            })
        }
        _ => None,
    }
}

/// Where known words are in a microphone's sample stream: each span of samples and what is
/// said in it, repeating every `period` samples when the recording loops.
#[derive(Debug, Clone, PartialEq)]
pub struct SpeechScript {
    /// Spans of one pass, `(first sample, end sample, words)`, in order.
    spans: Vec<(u64, u64, String)>,
    /// Samples of one pass when the recording loops.
    period: Option<u64>,
}

impl SpeechScript {
    /// One recording of `len` samples saying `words`, followed by `pause` samples of
    /// silence, once or looped.
    pub fn recording(len: u64, words: impl Into<String>, pause: u64, looped: bool) -> Self {
        Self {
            spans: vec![(0, len, words.into())],
            period: looped.then_some(len + pause),
        }
    }

    /// The truth of an utterance covering samples `[start, end)`: the words of every span
    /// it holds nearly all of ([`HELD_WHOLE`]), in order; empty when it overlaps none (a
    /// false start in a pause, which a right transcript leaves empty). `None` when it holds
    /// part of a span and not nearly all: which of the words it heard is not known (voice
    /// activity may cut a sentence at a pause between its words), so it is not scored.
    pub fn truth(&self, start: u64, end: u64) -> Option<Truth> {
        let mut words: Vec<&str> = Vec::new();
        let passes = match self.period {
            Some(p) if p > 0 => (start / p)..=(end / p),
            _ => 0..=0,
        };
        for pass in passes {
            let offset = pass * self.period.unwrap_or(0);
            for (a, b, w) in &self.spans {
                let (a, b) = (a + offset, b + offset);
                let held = end.min(b).saturating_sub(start.max(a));
                if held * HELD_WHOLE.1 >= (b - a) * HELD_WHOLE.0 {
                    words.push(w);
                } else if held > 0 {
                    return None;
                }
            }
        }
        Some(Truth::Transcript(words.join(" ")))
    }
}

/// The share of a span (numerator, denominator) an utterance must hold to be scored
/// against its words: voice activity trims a little of a sentence's first and last
/// sounds, and a transcript of nearly all of it should say every word.
const HELD_WHOLE: (u64, u64) = (9, 10);

#[cfg(test)]
mod tests {
    use super::*;
    use mmsched_backends::ocr::OcrLine;

    fn line(text: &str) -> OcrLine {
        OcrLine {
            text: text.into(),
            score: 0.9,
            corners: [[0.0; 2]; 4],
            box_score: 0.9,
        }
    }

    #[test]
    fn a_frame_is_right_when_every_true_line_is_read() {
        let truth = Truth::of_frame_text("EXIT 12\n\nGate B7\n").unwrap();
        let all = Reply::Lines(vec![line("gate b7"), line("EXIT  12"), line("noise")]);
        assert_eq!(
            score(&truth, &all),
            Some(Score {
                correct: true,
                accuracy: 1.0
            })
        );
        let half = Reply::Lines(vec![line("EXIT 12"), line("GATE 87")]);
        assert_eq!(
            score(&truth, &half),
            Some(Score {
                correct: false,
                accuracy: 0.5
            })
        );
        assert_eq!(Truth::of_frame_text(" \n"), None);
    }

    #[test]
    fn an_utterance_is_right_within_the_word_error_limit() {
        let truth = Truth::Transcript("ever tried ever failed no matter try again".into());
        let s = score(
            &truth,
            &Reply::Transcript("Ever tried. Ever failed.".into()),
        )
        .unwrap();
        assert!(!s.correct);
        assert!((s.accuracy - 0.5).abs() < 1e-9, "{s:?}");
        let s = score(
            &truth,
            &Reply::Transcript("Ever tried, ever failed. No matter, try again.".into()),
        )
        .unwrap();
        assert!(s.correct && s.accuracy == 1.0);
        assert_eq!(score(&truth, &Reply::Speech(0.9)), None);
    }

    #[test]
    fn an_utterance_gets_the_words_of_the_passes_it_nearly_all_holds() {
        let script = SpeechScript::recording(100, "fail better", 50, true);
        let words = |a, b| match script.truth(a, b) {
            Some(Truth::Transcript(t)) => Some(t),
            None => None,
            other => panic!("{other:?}"),
        };
        assert_eq!(words(0, 100).as_deref(), Some("fail better"));
        assert_eq!(
            words(5, 100).as_deref(),
            Some("fail better"),
            "a trimmed start"
        );
        assert_eq!(
            words(140, 260).as_deref(),
            Some("fail better"),
            "the second pass"
        );
        assert_eq!(words(0, 260).as_deref(), Some("fail better fail better"));
        assert_eq!(
            words(0, 40),
            None,
            "a cut: which words it heard is not known"
        );
        assert_eq!(words(0, 80), None, "most of the pass is not all of it");
        assert_eq!(words(100, 150).as_deref(), Some(""), "the pause");
        let once = SpeechScript::recording(100, "once", 50, false);
        assert_eq!(once.truth(150, 260), Some(Truth::Transcript(String::new())));
    }

    /// The passes whose words an utterance gets (`None`: it is not scored).
    fn passes_in(script: &SpeechScript, start: u64, end: u64) -> Option<usize> {
        match script.truth(start, end) {
            Some(Truth::Transcript(t)) => Some(t.split_whitespace().count()),
            None => None,
            other => panic!("{other:?}"),
        }
    }

    proptest::proptest! {
        /// However the stream is cut into utterances, each pass's words go to at most one
        /// of them, and a scored cut gets every pass it holds whole.
        #[test]
        fn a_pass_is_never_heard_twice(
            len in 1u64..500,
            pause in 0u64..500,
            cuts in proptest::collection::vec(1u64..400, 1..30),
        ) {
            let script = SpeechScript::recording(len, "w", pause, true);
            let period = len + pause;
            let mut at = 0;
            let mut heard = 0;
            for c in &cuts {
                if let Some(n) = passes_in(&script, at, at + c) {
                    // Every pass wholly inside the cut.
                    let first_whole = at.div_ceil(period);
                    let whole = (first_whole..)
                        .take_while(|k| k * period + len <= at + c)
                        .count();
                    proptest::prop_assert!(n >= whole, "{n} < {whole} in [{at}, {})", at + c);
                    heard += n;
                }
                at += c;
            }
            // The passes that begin before the last cut ends.
            let touched = at.div_ceil(period) as usize;
            proptest::prop_assert!(heard <= touched, "{heard} > {touched}");
        }
    }
}
