//! Text from users, made safe to print: a policy name or a header can be megabytes long,
//! and an error message that echoes it whole is unreadable (and a way to flood a log).

use alloc::borrow::Cow;
use alloc::format;
use alloc::string::String;

/// `s` if it has at most `max_chars` characters; else its first `max_chars` characters,
/// `…`, and how many characters were left out.
pub fn shorten(s: &str, max_chars: usize) -> Cow<'_, str> {
    match s.char_indices().nth(max_chars) {
        None => Cow::Borrowed(s),
        Some((cut, _)) => {
            let rest = s[cut..].chars().count();
            Cow::Owned(format!("{}… ({rest} more characters)", &s[..cut]))
        }
    }
}

/// A number as a person reads it: as written for ordinary magnitudes (`0.45`, `1000`), in
/// scientific notation beyond them (`1e300`, not three hundred digits; `1.5e-9`).
pub fn number(x: f64) -> String {
    let a = x.abs();
    if x.is_finite() && a != 0.0 && !(1e-4..1e9).contains(&a) {
        format!("{x:e}")
    } else {
        format!("{x}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_print_shortly_at_any_magnitude() {
        assert_eq!(number(1e300), "1e300");
        assert_eq!(number(-2.5e-12), "-2.5e-12");
        assert_eq!(number(0.45), "0.45");
        assert_eq!(number(1000.0), "1000");
        assert_eq!(number(0.0), "0");
        assert_eq!(number(f64::NAN), "NaN");
        assert_eq!(number(f64::INFINITY), "inf");
    }

    #[test]
    fn short_text_is_kept_whole() {
        assert_eq!(shorten("edge", 4), "edge");
        assert!(matches!(shorten("edge", 10), Cow::Borrowed(_)));
    }

    #[test]
    fn long_text_is_cut_at_a_character_and_says_how_much_is_left() {
        assert_eq!(shorten("abcdef", 2), "ab… (4 more characters)");
        assert_eq!(shorten("ééééé", 3), "ééé… (2 more characters)");
        let huge = "x".repeat(1_000_000);
        assert!(shorten(&huge, 64).len() < 100);
    }
}
