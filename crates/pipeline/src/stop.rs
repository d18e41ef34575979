//! Stop sequences of a text request: text that may be the start of one is held back until
//! the next tokens say whether it is, so a stop sequence split over several tokens is never
//! sent.

/// Holds back text that may be the start of a stop sequence.
#[derive(Debug, Clone, Default)]
pub struct StopFilter {
    stops: Vec<String>,
    pending: String,
}

impl StopFilter {
    /// A filter for `stops` (empty strings are ignored).
    pub fn new(stops: Vec<String>) -> Self {
        Self {
            stops: stops.into_iter().filter(|s| !s.is_empty()).collect(),
            pending: String::new(),
        }
    }

    /// Adds `text`; returns what may be sent now and whether a stop sequence was reached
    /// (then the text before it is all that is sent).
    pub fn push(&mut self, text: &str) -> (String, bool) {
        self.pending.push_str(text);
        if let Some(at) = self
            .stops
            .iter()
            .filter_map(|s| self.pending.find(s.as_str()))
            .min()
        {
            let out = self.pending[..at].to_string();
            self.pending.clear();
            return (out, true);
        }
        // Keep the longest tail that is a prefix of a stop sequence.
        let keep = self
            .stops
            .iter()
            .flat_map(|s| {
                (1..s.len().min(self.pending.len() + 1))
                    .rev()
                    .filter(|&n| s.is_char_boundary(n))
                    .find(|&n| self.pending.ends_with(&s[..n]))
            })
            .max()
            .unwrap_or(0);
        let cut = self.pending.len() - keep;
        let out = self.pending[..cut].to_string();
        self.pending.drain(..cut);
        (out, false)
    }

    /// What is held back, once generation has ended.
    pub fn flush(&mut self) -> String {
        std::mem::take(&mut self.pending)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_stop_sequence_split_over_tokens_is_never_sent() {
        let mut f = StopFilter::new(vec!["\nUser:".into()]);
        assert_eq!(f.push(" Red"), (" Red".into(), false));
        assert_eq!(f.push(", green.\nUs"), (", green.".into(), false));
        assert_eq!(f.push("er: and"), (String::new(), true));
        let mut f = StopFilter::new(vec!["\nUser:".into()]);
        assert_eq!(f.push("a\nU"), ("a".into(), false));
        assert_eq!(f.push("nder"), ("\nUnder".into(), false));
        assert_eq!(f.flush(), "");
    }

    proptest! {
        /// However the text is cut into tokens, what is sent is the text up to the first
        /// stop sequence (or all of it, with what is held back flushed at the end).
        #[test]
        fn what_is_sent_is_the_text_before_the_first_stop(
            text in "[ab\\n:]{0,40}",
            cuts in proptest::collection::vec(1usize..6, 0..20),
        ) {
            let stop = "a\n:".to_string();
            let mut f = StopFilter::new(vec![stop.clone()]);
            let mut sent = String::new();
            let mut stopped = false;
            let mut rest = text.as_str();
            for c in cuts.iter().copied().chain(std::iter::repeat(3)) {
                if rest.is_empty() || stopped {
                    break;
                }
                let n = c.min(rest.len());
                let (piece, tail) = rest.split_at(n);
                rest = tail;
                let (out, hit) = f.push(piece);
                sent.push_str(&out);
                stopped = hit;
            }
            if !stopped {
                sent.push_str(&f.flush());
            }
            let expected = match text.find(&stop) {
                Some(at) => &text[..at],
                None => text.as_str(),
            };
            prop_assert_eq!(sent, expected);
        }
    }
}
