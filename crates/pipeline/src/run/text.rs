//! The text branch: the scenario's text requests go to the book as they arrive; the book
//! runs them as sessions allow (one token per step, each step due when the request's
//! remaining tokens still fit, later steps committed), and a stream's request whose first
//! step is shed keeps its place and competes again until its deadline.

use mmsched_core::time::{Clock, Nanos};

use super::{Run, arrived};
use crate::book::Reply;
use crate::request::{Input, Origin, Prompt};
use crate::stats::Kind;

impl<C: Clock + Clone + Send + 'static> Run<'_, C> {
    /// Every request delivered by `now`, to the book. Every other one asks about what was
    /// just heard, when there is a transcript (not in a comparison, where the transcript
    /// depends on the scheduler, nor for prompts from a file).
    pub(super) fn poll_text(&mut self, now: Nanos) {
        let (name, arrivals) = arrived(&mut self.inputs.text);
        let sla = self.sla_nanos(Kind::Llm);
        for a in arrivals {
            self.place(&name, &a);
            if !self.models.has(Kind::Llm) {
                continue;
            }
            self.book.offer(Kind::Llm, Origin::Streams);
            let text = match &self.speech.last_transcript {
                Some(t)
                    if a.event.seq % 2 == 0
                        && !self.config.fixed_prompts
                        && !a.event.payload.as_written =>
                {
                    format!("In one sentence, what is this about: {t}")
                }
                _ => a.event.payload.prompt,
            };
            let arrival = a.arrival_nanos.min(now);
            let prompt = Prompt::greedy(text, a.event.payload.max_tokens);
            let mut req =
                self.stream_request(Input::Prompt(prompt), arrival, arrival, arrival + sla);
            req.retry_when_shed = true;
            self.submit(now, req, Reply::Loop);
        }
    }
}
