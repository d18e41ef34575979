//! A text request's progress between its steps, and the text figures of a run: time to
//! first token and per output token as the client saw them, tokens per served second.

use mmsched_core::time::Nanos;

use crate::request::{Finish, Reply};

/// One text request's tokens so far.
#[derive(Debug, Clone, Default)]
pub(super) struct TextProgress {
    tokens: u32,
    answer: String,
    first_token_at: Option<Nanos>,
    last_token_at: Option<Nanos>,
    finish: Option<Finish>,
}

impl TextProgress {
    /// A step that ran from `started` to `ended` made `tokens` tokens adding `text`, the
    /// first of them `first_after` into the step; `finish` when generation ended.
    pub(super) fn step(
        &mut self,
        started: Nanos,
        ended: Nanos,
        first_after: Nanos,
        tokens: u32,
        text: &str,
        finish: Option<Finish>,
    ) {
        if tokens > 0 {
            self.tokens += tokens;
            self.last_token_at = Some(ended);
            self.first_token_at.get_or_insert(started + first_after);
        }
        self.answer.push_str(text);
        if finish.is_some() {
            self.finish = finish;
        }
    }

    /// Tokens made so far.
    pub(super) fn tokens(&self) -> u32 {
        self.tokens
    }

    /// Whether the request ended because its client went away.
    pub(super) fn cancelled(&self) -> bool {
        self.finish == Some(Finish::Cancelled)
    }

    /// The whole answer, as the model wrote it (a chat answer usually starts with a
    /// space after `Assistant:`; the results feed trims it).
    pub(super) fn reply(&self) -> Reply {
        Reply::Text {
            text: self.answer.clone(),
            tokens: self.tokens,
            finish: self.finish.unwrap_or(Finish::Length),
        }
    }
}

/// The text figures of a run, over every request that made a token.
#[derive(Debug, Clone, Default)]
pub struct TextFigures {
    /// Tokens generated.
    pub tokens: u64,
    /// Per request: time to first token, ms.
    pub ttft_ms: crate::latency::Latencies,
    /// Per request with two tokens or more: time per output token after the first, as the
    /// client saw it (first to last token over the tokens after the first), ms.
    pub tpot_ms: crate::latency::Latencies,
    /// Sum over requests of release to last token (for `tokens_per_s`).
    pub request_nanos: u64,
}

impl TextFigures {
    /// A request released at `release` ended (finished, shed, failed or cut short).
    pub(super) fn close(&mut self, release: Nanos, t: &TextProgress) {
        self.tokens += u64::from(t.tokens);
        if let Some(first) = t.first_token_at {
            self.ttft_ms
                .push(first.saturating_sub(release) as f64 / 1e6);
        }
        if let (Some(first), Some(last)) = (t.first_token_at, t.last_token_at)
            && t.tokens > 1
        {
            let per_token = last.saturating_sub(first) as f64 / f64::from(t.tokens - 1);
            self.tpot_ms.push(per_token / 1e6);
        }
        if let Some(last) = t.last_token_at {
            self.request_nanos += last.saturating_sub(release);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Nanos = 1_000_000;

    #[test]
    fn a_request_gives_its_time_to_first_token_and_per_token() {
        let mut t = TextProgress::default();
        // A prefill chunk without a token, then three tokens.
        t.step(100 * MS, 150 * MS, 0, 0, "", None);
        t.step(150 * MS, 200 * MS, 40 * MS, 1, " a", None);
        t.step(200 * MS, 230 * MS, 30 * MS, 1, " b", None);
        t.step(230 * MS, 260 * MS, 30 * MS, 1, " c", Some(Finish::Length));
        let mut f = TextFigures::default();
        f.close(90 * MS, &t);
        assert_eq!(f.tokens, 3);
        assert_eq!(f.ttft_ms.exact(), Some(&[100.0][..]));
        // First token at 190 ms, last at 260 ms: 70 ms over two tokens.
        assert_eq!(f.tpot_ms.exact(), Some(&[35.0][..]));
        assert_eq!(f.request_nanos, 170 * MS);
        assert_eq!(
            t.reply(),
            Reply::Text {
                text: " a b c".into(),
                tokens: 3,
                finish: Finish::Length
            }
        );
        assert!(!t.cancelled());
    }
}
