//! Text requests: prompts arriving at a fixed rate, cycling through a list (for example,
//! lines of a transcript).

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
}

/// Settings of a [`TextRequests`] source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextConfig {
    /// The prompts, used in turn (must not be empty).
    pub prompts: Vec<String>,
    /// Time between two requests, in nanoseconds (≥ 1).
    pub period_nanos: Nanos,
    /// Tokens to generate per request.
    pub max_tokens: u32,
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
}

/// A source of text requests.
#[derive(Debug)]
pub struct TextRequests<C: Clock> {
    device: C,
    cadence: Cadence,
    clock: SourceClock,
    prompts: Vec<String>,
    max_tokens: u32,
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
        })
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
                prompt: self.prompts[i].clone(),
                max_tokens: self.max_tokens,
            },
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
            prompts: vec!["a".into(), "b".into()],
            period_nanos: 5 * NANOS_PER_SEC,
            max_tokens: 16,
            start_nanos: NANOS_PER_SEC,
            limit: Some(3),
            clock: SourceClock::new(-1_000, -2_000),
        };
        let mut src = TextRequests::new(config, &device).expect("valid");
        assert!(src.poll().is_none(), "nothing before the first request");
        device.set(20 * NANOS_PER_SEC);
        let got: Vec<_> = std::iter::from_fn(|| src.poll()).collect();
        let prompts: Vec<&str> = got.iter().map(|e| e.payload.prompt.as_str()).collect();
        assert_eq!(prompts, ["a", "b", "a"]);
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
            start_nanos: 0,
            limit: None,
            clock: SourceClock::default(),
        }
    }
}
