//! CTC greedy decoding for the PP-OCR recogniser.

/// The recogniser's alphabet: index 0 is the CTC blank, then the model's characters
/// (ONNX metadata key `character`, one per line), then a space (PP-OCR's `use_space_char`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Alphabet {
    symbols: Vec<String>,
}

impl Alphabet {
    /// Builds the alphabet from the metadata string.
    pub fn from_metadata(character: &str) -> Self {
        let mut symbols = vec![String::new()];
        symbols.extend(character.lines().map(str::to_string));
        symbols.push(" ".to_string());
        Self { symbols }
    }

    /// Number of classes, blank included.
    pub fn len(&self) -> usize {
        self.symbols.len()
    }

    /// Whether the alphabet is empty (never, once built: it holds at least the blank).
    pub fn is_empty(&self) -> bool {
        self.symbols.is_empty()
    }

    /// Greedy CTC decode of `probs` (`steps × classes`, row-major, already softmaxed):
    /// take the best class per step, merge repeats, drop blanks. The score is the mean
    /// probability of the kept characters (0 for an empty line).
    pub fn decode(&self, probs: &[f32], classes: usize) -> (String, f32) {
        let mut text = String::new();
        let (mut sum, mut kept) = (0.0f32, 0usize);
        let mut previous = usize::MAX;
        for row in probs.chunks_exact(classes.max(1)) {
            let (best, p) = row
                .iter()
                .copied()
                .enumerate()
                .fold(
                    (0, f32::MIN),
                    |acc, (i, v)| if v > acc.1 { (i, v) } else { acc },
                );
            if best != 0
                && best != previous
                && let Some(s) = self.symbols.get(best)
            {
                text.push_str(s);
                sum += p;
                kept += 1;
            }
            previous = best;
        }
        let score = if kept == 0 { 0.0 } else { sum / kept as f32 };
        (text, score)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_repeats_and_drops_blanks() {
        let a = Alphabet::from_metadata("a\nb");
        assert_eq!(a.len(), 4); // blank, a, b, space
        let step = |i: usize| {
            let mut r = vec![0.0; 4];
            r[i] = 1.0;
            r
        };
        let probs: Vec<f32> = [1, 1, 0, 1, 2, 3, 2]
            .iter()
            .flat_map(|&i| step(i))
            .collect();
        assert_eq!(a.decode(&probs, 4), ("aab b".to_string(), 1.0));
        assert_eq!(a.decode(&step(0), 4), (String::new(), 0.0));
    }
}
