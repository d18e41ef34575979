//! Scoring results against the truth: whether what a model read or heard is right.
//!
//! One place for every judgement, so that `mmsched profile` (the accuracy of each quality
//! rung), the pipeline (each result's `correct`) and the benchmarks count the same way:
//!
//! - **OCR** ([`score_lines`]): a true line is read right when some line read equals it
//!   case- and space-insensitively ([`line_key`]); a frame is correct when every true line
//!   is. Line accuracy is the share of true lines read right, and the character error rate
//!   (CER) is the edit distance of the true lines to the lines read (each true line paired
//!   with one read line, closest pairs first; unpaired lines count whole) over the true
//!   characters.
//! - **Speech** ([`word_error_rate`]): word error rate after [`words`] (lowercase, no
//!   punctuation); an utterance is correct at a WER of at most [`ASR_CORRECT_MAX_WER`].

use alloc::string::String;
use alloc::vec::Vec;

/// The largest word error rate at which a transcript counts as correct.
pub const ASR_CORRECT_MAX_WER: f64 = 0.1;

/// Lowercases, drops punctuation (apostrophes kept inside words) and splits on spaces.
pub fn words(text: &str) -> Vec<String> {
    text.to_lowercase()
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '\'' {
                c
            } else {
                ' '
            }
        })
        .collect::<String>()
        .split_whitespace()
        .map(|w| String::from(w.trim_matches('\'')))
        .filter(|w| !w.is_empty())
        .collect()
}

/// Levenshtein distance between two sequences (substitutions, insertions and deletions
/// each cost one), one row at a time.
pub fn edit_distance<T: PartialEq>(a: &[T], b: &[T]) -> usize {
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = alloc::vec![0; b.len() + 1];
    for (i, x) in a.iter().enumerate() {
        cur[0] = i + 1;
        for (j, y) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(x != y);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        core::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// Word error rate of `hypothesis` against `reference`: (substitutions + deletions +
/// insertions) / reference words, after [`words`]. 0 is perfect; it can exceed 1. An empty
/// reference scores 0 against an empty hypothesis and 1 against anything else.
pub fn word_error_rate(reference: &str, hypothesis: &str) -> f64 {
    let r = words(reference);
    let h = words(hypothesis);
    if r.is_empty() {
        return if h.is_empty() { 0.0 } else { 1.0 };
    }
    edit_distance(&r, &h) as f64 / r.len() as f64
}

/// Whether a transcript with this word error rate counts as correct.
pub fn transcript_correct(wer: f64) -> bool {
    wer <= ASR_CORRECT_MAX_WER
}

/// A line as it is compared: lowercase, without any whitespace.
pub fn line_key(line: &str) -> Vec<char> {
    line.chars()
        .filter(|c| !c.is_whitespace())
        .flat_map(char::to_lowercase)
        .collect()
}

/// How the lines read from one frame compare with its true lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LineScore {
    /// True lines (blank ones ignored).
    pub truth_lines: usize,
    /// True lines read exactly (case- and space-insensitive).
    pub exact_lines: usize,
    /// Character edits between the true lines and the lines read (see the module docs).
    pub char_edits: usize,
    /// Characters of the true lines, whitespace excluded.
    pub truth_chars: usize,
}

impl LineScore {
    /// Whether every true line was read exactly (lines read beyond them do not count
    /// against it). A frame without true lines is correct.
    pub fn correct(&self) -> bool {
        self.exact_lines == self.truth_lines
    }

    /// The share of true lines read exactly, 0..=1 (1 without true lines).
    pub fn line_accuracy(&self) -> f64 {
        if self.truth_lines == 0 {
            1.0
        } else {
            self.exact_lines as f64 / self.truth_lines as f64
        }
    }

    /// Character error rate: edits over true characters (0 when both are empty; can
    /// exceed 1 when much more is read than is there).
    pub fn cer(&self) -> f64 {
        if self.truth_chars == 0 {
            if self.char_edits == 0 { 0.0 } else { 1.0 }
        } else {
            self.char_edits as f64 / self.truth_chars as f64
        }
    }

    /// The scores of two frames together (line accuracy and CER then weigh each line and
    /// character once).
    pub fn combined(self, other: LineScore) -> LineScore {
        LineScore {
            truth_lines: self.truth_lines + other.truth_lines,
            exact_lines: self.exact_lines + other.exact_lines,
            char_edits: self.char_edits + other.char_edits,
            truth_chars: self.truth_chars + other.truth_chars,
        }
    }
}

/// Scores the lines read from a frame (`read`, in any order) against its true lines.
///
/// Exact matches pair first (each read line serves one true line); the remaining true and
/// read lines pair by smallest edit distance, and what stays unpaired counts all its
/// characters as edits (a missed line is deleted, a spurious one inserted).
pub fn score_lines<T: AsRef<str>, R: AsRef<str>>(truth: &[T], read: &[R]) -> LineScore {
    let truth: Vec<Vec<char>> = truth
        .iter()
        .map(|t| line_key(t.as_ref()))
        .filter(|k| !k.is_empty())
        .collect();
    let read: Vec<Vec<char>> = read
        .iter()
        .map(|r| line_key(r.as_ref()))
        .filter(|k| !k.is_empty())
        .collect();
    let mut truth_used = alloc::vec![false; truth.len()];
    let mut read_used = alloc::vec![false; read.len()];
    let mut exact = 0;
    for (t, used) in truth.iter().zip(truth_used.iter_mut()) {
        if let Some(j) = (0..read.len()).find(|&j| !read_used[j] && read[j] == *t) {
            read_used[j] = true;
            *used = true;
            exact += 1;
        }
    }
    // Closest remaining pairs first.
    let mut pairs: Vec<(usize, usize, usize)> = Vec::new();
    for (i, t) in truth.iter().enumerate().filter(|(i, _)| !truth_used[*i]) {
        for (j, r) in read.iter().enumerate().filter(|(j, _)| !read_used[*j]) {
            pairs.push((edit_distance(t, r), i, j));
        }
    }
    pairs.sort_unstable();
    let mut edits = 0;
    for (d, i, j) in pairs {
        if !truth_used[i] && !read_used[j] {
            truth_used[i] = true;
            read_used[j] = true;
            edits += d;
        }
    }
    let unpaired = |lines: &[Vec<char>], used: &[bool]| -> usize {
        lines
            .iter()
            .zip(used)
            .filter(|(_, u)| !**u)
            .map(|(l, _)| l.len())
            .sum()
    };
    edits += unpaired(&truth, &truth_used) + unpaired(&read, &read_used);
    LineScore {
        truth_lines: truth.len(),
        exact_lines: exact,
        char_edits: edits,
        truth_chars: truth.iter().map(Vec::len).sum(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn identical_modulo_case_and_punctuation_is_zero() {
        assert_eq!(
            word_error_rate("Ever tried. Ever failed!", "ever tried, ever failed"),
            0.0
        );
        assert!(transcript_correct(0.1) && !transcript_correct(0.11));
    }

    #[test]
    fn counts_substitutions_insertions_and_deletions() {
        assert_eq!(word_error_rate("a b c d", "a x c d"), 0.25);
        assert_eq!(word_error_rate("a b c d", "a b c"), 0.25);
        assert_eq!(word_error_rate("a b c d", "a b c d e"), 0.25);
        assert_eq!(word_error_rate("a b", ""), 1.0);
        assert_eq!(word_error_rate("", ""), 0.0);
        assert_eq!(word_error_rate("", "a"), 1.0);
    }

    #[test]
    fn lines_match_ignoring_case_spaces_and_order() {
        let s = score_lines(&["EXIT 12", "North Station"], &["northstation", "Exit 12"]);
        assert_eq!((s.exact_lines, s.truth_lines, s.char_edits), (2, 2, 0));
        assert!(s.correct());
        assert_eq!((s.line_accuracy(), s.cer()), (1.0, 0.0));
        // A spurious extra line does not make the frame wrong, but costs characters.
        let s = score_lines(&["EXIT 12"], &["EXIT 12", "xy"]);
        assert!(s.correct());
        assert_eq!(s.char_edits, 2);
    }

    #[test]
    fn misread_and_missed_lines_cost_their_edits() {
        // "Gate B7" read as "Gate 87": one substitution in 6 characters; "closes" missed.
        let s = score_lines(&["Gate B7", "closes"], &["Gate 87"]);
        assert_eq!(s.exact_lines, 0);
        assert_eq!(s.truth_chars, 12);
        assert_eq!(s.char_edits, 1 + 6);
        assert!(!s.correct());
        assert_eq!(s.line_accuracy(), 0.0);
        assert!((s.cer() - 7.0 / 12.0).abs() < 1e-12);
        // Frames add line by line.
        let both = s.combined(score_lines(&["a"], &["a"]));
        assert_eq!((both.exact_lines, both.truth_lines), (1, 3));
        // Nothing true, nothing read: correct and perfect.
        let empty: [&str; 0] = [];
        assert_eq!(score_lines(&empty, &empty).cer(), 0.0);
        assert!(score_lines(&empty, &["x"]).correct());
        assert_eq!(score_lines(&empty, &["x"]).cer(), 1.0);
    }

    #[test]
    fn each_read_line_serves_one_true_line() {
        let s = score_lines(&["stop", "stop"], &["STOP"]);
        assert_eq!((s.exact_lines, s.char_edits), (1, 4));
    }

    fn text() -> impl Strategy<Value = String> {
        proptest::collection::vec(
            prop_oneof![Just('a'), Just('B'), Just(' '), Just('7')],
            0..8,
        )
        .prop_map(|v| v.into_iter().collect())
    }

    proptest! {
        /// The distance is a metric on sequences: zero exactly on equal ones, symmetric,
        /// and never above the longer length or below the difference of lengths.
        #[test]
        fn edit_distance_is_a_bounded_metric(a in text(), b in text()) {
            let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
            let d = edit_distance(&a, &b);
            prop_assert_eq!(d, edit_distance(&b, &a));
            prop_assert_eq!(d == 0, a == b);
            prop_assert!(d <= a.len().max(b.len()));
            prop_assert!(d >= a.len().abs_diff(b.len()));
        }

        /// Reading the truth back exactly (in any order, any case, any spacing) is
        /// perfect; the counts never exceed their totals.
        #[test]
        fn the_truth_read_back_scores_perfectly(lines in proptest::collection::vec(text(), 0..5)) {
            let shouted: Vec<String> = lines.iter().rev().map(|l| l.to_uppercase().replace(' ', "")).collect();
            let s = score_lines(&lines, &shouted);
            prop_assert!(s.correct());
            prop_assert_eq!(s.char_edits, 0);
            let none: [&str; 0] = [];
            let missed = score_lines(&lines, &none);
            prop_assert_eq!(missed.char_edits, missed.truth_chars);
            prop_assert!(missed.exact_lines <= missed.truth_lines);
            prop_assert_eq!(missed.correct(), missed.truth_lines == 0);
        }

        /// WER is 0 for the same words and 1 for nothing heard.
        #[test]
        fn wer_of_the_reference_itself_is_zero(r in text()) {
            prop_assert_eq!(word_error_rate(&r, &r.to_uppercase()), 0.0);
            let expected = if words(&r).is_empty() { 0.0 } else { 1.0 };
            prop_assert_eq!(word_error_rate(&r, ""), expected);
        }
    }
}
