//! Word error rate, for judging transcripts.

/// Lowercases, drops punctuation (apostrophes kept inside words) and splits on spaces.
pub fn normalise(text: &str) -> Vec<String> {
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
        .map(|w| w.trim_matches('\'').to_owned())
        .filter(|w| !w.is_empty())
        .collect()
}

/// Word error rate of `hypothesis` against `reference`: (substitutions + deletions +
/// insertions) / reference words, after [`normalise`]. 0 is perfect; it can exceed 1.
pub fn word_error_rate(reference: &str, hypothesis: &str) -> f64 {
    let r = normalise(reference);
    let h = normalise(hypothesis);
    if r.is_empty() {
        return if h.is_empty() { 0.0 } else { 1.0 };
    }
    // Levenshtein distance over words, one row at a time.
    let mut prev: Vec<usize> = (0..=h.len()).collect();
    for (i, rw) in r.iter().enumerate() {
        let mut cur = vec![i + 1; h.len() + 1];
        for (j, hw) in h.iter().enumerate() {
            let sub = prev[j] + usize::from(rw != hw);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[h.len()] as f64 / r.len() as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_modulo_case_and_punctuation_is_zero() {
        assert_eq!(
            word_error_rate("Ever tried. Ever failed!", "ever tried, ever failed"),
            0.0
        );
    }

    #[test]
    fn counts_substitutions_insertions_and_deletions() {
        assert_eq!(word_error_rate("a b c d", "a x c d"), 0.25);
        assert_eq!(word_error_rate("a b c d", "a b c"), 0.25);
        assert_eq!(word_error_rate("a b c d", "a b c d e"), 0.25);
        assert_eq!(word_error_rate("a b", ""), 1.0);
        assert_eq!(word_error_rate("", ""), 0.0);
    }
}
