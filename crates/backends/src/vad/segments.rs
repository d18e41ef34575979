//! Turning per-chunk speech probabilities into speech segments.
//!
//! Hysteresis as in Silero's own helper: a segment starts at a chunk at or above
//! `threshold` and ends once the probability stays below `threshold - 0.15` for
//! `min_silence_chunks` chunks; segments shorter than `min_speech_chunks` are dropped.

use serde::Serialize;

use super::model::CHUNK_MICROS;

/// Segmentation settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SegmentParams {
    /// Probability at and above which a chunk is speech (the policy's `vad_speech_threshold`).
    pub threshold: f32,
    /// Chunks of silence that close a segment (8 × 32 ms ≈ 256 ms).
    pub min_silence_chunks: usize,
    /// Shortest segment kept, chunks (8 × 32 ms ≈ 256 ms).
    pub min_speech_chunks: usize,
}

impl Default for SegmentParams {
    fn default() -> Self {
        Self {
            threshold: 0.5,
            min_silence_chunks: 8,
            min_speech_chunks: 8,
        }
    }
}

/// A speech segment, in chunks `[start, end)` and microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct SpeechSegment {
    /// First chunk of speech.
    pub start_chunk: usize,
    /// One past the last chunk of speech.
    pub end_chunk: usize,
    /// Start time from the beginning of the stream, µs.
    pub start_micros: u64,
    /// End time, µs.
    pub end_micros: u64,
}

fn segment(start: usize, end: usize) -> SpeechSegment {
    SpeechSegment {
        start_chunk: start,
        end_chunk: end,
        start_micros: start as u64 * CHUNK_MICROS,
        end_micros: end as u64 * CHUNK_MICROS,
    }
}

/// Speech segments found in `probs` (one probability per 32 ms chunk).
pub fn speech_segments(probs: &[f32], params: &SegmentParams) -> Vec<SpeechSegment> {
    let off = (params.threshold - 0.15).max(0.0);
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    let mut last_speech = 0usize;
    for (i, &p) in probs.iter().enumerate() {
        match start {
            None if p >= params.threshold => {
                start = Some(i);
                last_speech = i;
            }
            Some(s) => {
                if p >= off {
                    last_speech = i;
                } else if i - last_speech >= params.min_silence_chunks {
                    if last_speech + 1 - s >= params.min_speech_chunks {
                        out.push(segment(s, last_speech + 1));
                    }
                    start = None;
                }
            }
            None => {}
        }
    }
    if let Some(s) = start
        && last_speech + 1 - s >= params.min_speech_chunks
    {
        out.push(segment(s, last_speech + 1));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hysteresis_merges_short_gaps_and_drops_blips() {
        let mut p = vec![0.0; 10];
        p.extend(vec![0.9; 12]);
        p.extend(vec![0.1; 3]); // short gap: same segment
        p.extend(vec![0.9; 5]);
        p.extend(vec![0.0; 20]);
        p.extend(vec![0.9; 2]); // blip: dropped
        p.extend(vec![0.0; 20]);
        let s = speech_segments(&p, &SegmentParams::default());
        assert_eq!(s.len(), 1, "{s:?}");
        assert_eq!((s[0].start_chunk, s[0].end_chunk), (10, 30));
        assert_eq!(s[0].start_micros, 320_000);
    }

    #[test]
    fn open_segment_at_end_is_closed() {
        let p = vec![0.8; 9];
        let s = speech_segments(&p, &SegmentParams::default());
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].end_chunk, 9);
    }
}
