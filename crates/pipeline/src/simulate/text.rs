//! Text generation as the simulator runs it: the prompt's prefill, then a token per step
//! (or the whole answer in one step without token preemption), each token drawn from the
//! profile's `llm` job, which is one generation step.
//!
//! The prefill is priced as the profile measured it: one generation step for a prompt of
//! [`PREFILL_TOKENS_PER_STEP`] tokens (`mmsched profile` times an 8-token prompt and 16
//! tokens as 17 steps), a prompt's tokens counted as four for every three words (English
//! under a SentencePiece vocabulary, about).

use std::sync::mpsc::Sender;

use mmsched_core::time::Nanos;
use mmsched_runtime::sched::{StepOutcome, Work, WorkError};

use super::draws::{SharedDraws, lock};
use crate::jobs::Output;
use crate::request::{Cancel, Finish, Prompt};
use crate::stats::Kind;
use crate::stop::StopFilter;

/// Prompt tokens one generation step prefills, as the profile measures it.
pub const PREFILL_TOKENS_PER_STEP: usize = 8;
/// The text of every simulated token.
const TOKEN: &str = " word";

/// One text request's simulated work.
pub struct SimText {
    draws: SharedDraws,
    tag: u64,
    out: Sender<Output>,
    /// Generation steps the prefill costs (paid with the first token).
    prefill_steps: u32,
    left: u32,
    filter: StopFilter,
    preemptible: bool,
    cancel: Cancel,
    empty: bool,
}

impl SimText {
    /// The work of `prompt`, answered to `out` under job number `tag`.
    pub fn new(
        draws: SharedDraws,
        prompt: Prompt,
        (preemptible, cancel): (bool, Cancel),
        tag: u64,
        out: Sender<Output>,
    ) -> Self {
        let words = prompt.text.split_whitespace().count();
        let tokens = (words * 4).div_ceil(3).max(1);
        Self {
            draws,
            tag,
            out,
            prefill_steps: u32::try_from(tokens.div_ceil(PREFILL_TOKENS_PER_STEP)).unwrap_or(1),
            left: prompt.max_tokens.max(1),
            filter: StopFilter::new(prompt.stops),
            preemptible,
            cancel,
            empty: prompt.text.trim().is_empty(),
        }
    }
}

impl Work for SimText {
    fn step(&mut self) -> Result<StepOutcome, WorkError> {
        if self.empty {
            return Err(WorkError::Input {
                model: "text generation",
                source: "the prompt is empty".into(),
            });
        }
        let cancelled = self.cancel.is_cancelled();
        let n = match (cancelled, self.preemptible) {
            (true, _) => 0,
            (false, true) => 1,
            (false, false) => self.left,
        };
        self.left -= n;
        let prefill = std::mem::take(&mut self.prefill_steps);
        // The step's first token comes after the prefill and its own generation step.
        let mut first_token_after_nanos = 0;
        {
            let mut d = lock(&self.draws);
            let mut nanos: Nanos = 0;
            for i in 0..prefill + n {
                nanos += d.job(Kind::Llm);
                if i == prefill {
                    first_token_after_nanos = nanos;
                }
            }
            d.leave(Kind::Llm, nanos);
        }
        let (mut text, stopped) = self.filter.push(&TOKEN.repeat(n as usize));
        let finish = if cancelled {
            Some(Finish::Cancelled)
        } else if stopped {
            Some(Finish::Stop)
        } else if self.left == 0 {
            text.push_str(&self.filter.flush());
            Some(Finish::Length)
        } else {
            None
        };
        let _ = self.out.send(Output::Llm {
            tag: self.tag,
            text,
            tokens: n,
            first_token_after_nanos,
            finish,
            stages: Default::default(),
            step: None,
            nanos: 0,
        });
        Ok(match finish {
            Some(_) => StepOutcome::Finished,
            None => StepOutcome::Yield,
        })
    }
}
