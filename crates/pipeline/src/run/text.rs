//! The text branch: requests queue and run one at a time, one token per step (with token
//! preemption), each step due when the request's remaining tokens still fit before its
//! deadline (`Run::step_deadline`). Steps after the first are committed: admission never
//! sheds them, since that would throw away the work already spent on the answer. A shed
//! first step waits and competes again until the request's deadline.

use std::collections::VecDeque;

use mmsched_core::time::{Clock, Nanos};
use mmsched_runtime::sched::{SchedulerKind, Work};

use super::{JobRec, Run, arrived};
use crate::jobs::Output;
use crate::stats::Kind;

/// The request being answered.
#[derive(Debug)]
pub(super) struct LlmRequest {
    arrival: Nanos,
    first_token_at: Option<Nanos>,
    last_token_at: Option<Nanos>,
    /// The answer so far (for results).
    pub(super) answer: String,
    pub(super) tokens: u32,
    /// Whether a step (a prompt chunk or a token) has run: from then on shedding a step
    /// would waste the work before it, so later steps are committed (`Job::committed`).
    pub(super) started: bool,
    /// Most tokens the request may generate.
    pub(super) max_tokens: u32,
}

/// A request waiting: when it arrived, its prompt and its token budget.
pub(super) struct Queued {
    arrival: Nanos,
    prompt: String,
    max_tokens: u32,
}

/// The text branch's state and figures.
#[derive(Default)]
pub(super) struct TextBranch {
    pub(super) queue: VecDeque<Queued>,
    pub(super) request: Option<LlmRequest>,
    /// A shed step of the request under way, waiting to compete again: its tag, record,
    /// work and when it retries.
    pub(super) deferred: Option<(u64, JobRec, Box<dyn Work>, Nanos)>,
    /// Tokens generated in the run.
    pub(super) tokens: u64,
    /// Per request: time to first token, and time per output token after the first, ms.
    pub(super) ttft_ms: Vec<f64>,
    pub(super) tpot_ms: Vec<f64>,
    /// Sum over requests of arrival to last token (for `tokens_per_s`).
    pub(super) request_nanos: u64,
}

impl<C: Clock + Clone + Send + 'static> Run<'_, C> {
    /// Every request delivered by `now` into the queue. Every other one asks about what
    /// was just heard, when there is a transcript (not in a comparison, where the
    /// transcript depends on the scheduler, nor for prompts from a file).
    pub(super) fn poll_text(&mut self, now: Nanos) {
        let (name, arrivals) = arrived(&mut self.inputs.text);
        for a in arrivals {
            self.place(&name, &a);
            if !self.models.has(Kind::Llm) {
                continue;
            }
            self.stats.offered(Kind::Llm);
            let prompt = match &self.speech.last_transcript {
                Some(t)
                    if a.event.seq % 2 == 0
                        && !self.config.fixed_prompts
                        && !a.event.payload.as_written =>
                {
                    format!("In one sentence, what is this about: {t}")
                }
                _ => a.event.payload.prompt,
            };
            self.text.queue.push_back(Queued {
                arrival: a.arrival_nanos.min(now),
                prompt,
                max_tokens: a.event.payload.max_tokens,
            });
        }
    }

    /// The next request when none is under way.
    pub(super) fn start_llm(&mut self, now: Nanos) {
        if self.text.request.is_some() || !self.models.has(Kind::Llm) {
            return;
        }
        let Some(q) = self.text.queue.pop_front() else {
            return;
        };
        let sla = self.sla_nanos(Kind::Llm);
        let tag = self.book.new_tag();
        self.stats.job(Kind::Llm);
        let max_tokens = q.max_tokens;
        let preemptible = self.mmsched_has(|m| m.token_preemption)
            || self.config.scheduler != SchedulerKind::Mmsched;
        let work = self.models.llm(
            q.prompt,
            q.max_tokens,
            preemptible,
            tag,
            self.book.tx.clone(),
        );
        self.text.request = Some(LlmRequest {
            arrival: q.arrival,
            first_token_at: None,
            last_token_at: None,
            answer: String::new(),
            tokens: 0,
            started: false,
            max_tokens,
        });
        self.submit(
            now,
            tag,
            JobRec {
                kind: Kind::Llm,
                capture: q.arrival,
                release: q.arrival,
                deadline: q.arrival + sla,
                chunk: 0,
            },
            work,
        );
    }

    /// A text-generation step that ran from `started` to `ended` produced `output`.
    pub(super) fn on_llm_step(&mut self, started: Nanos, ended: Nanos, output: Option<&Output>) {
        let (
            Some(r),
            Some(Output::Llm {
                token,
                tokens,
                first_token_after_nanos,
                ..
            }),
        ) = (&mut self.text.request, output)
        else {
            return;
        };
        r.started = true;
        if *tokens > 0 {
            self.text.tokens += u64::from(*tokens);
            r.tokens += tokens;
            r.last_token_at = Some(ended);
            r.first_token_at
                .get_or_insert(started + first_token_after_nanos);
            if let Some(t) = token {
                r.answer.push_str(t);
            }
        }
    }

    /// Ends the request in flight (finished, shed, failed or cut by the end of the run):
    /// its time to first token, its time per output token as the user saw it (first to
    /// last token over the tokens after the first, preemption included), and the time from
    /// its arrival to its last token for `tokens_per_s`.
    pub(super) fn close_request(&mut self) {
        let t = &mut self.text;
        let Some(r) = t.request.take() else { return };
        if let Some(first) = r.first_token_at {
            t.ttft_ms.push(first.saturating_sub(r.arrival) as f64 / 1e6);
        }
        if let (Some(first), Some(last)) = (r.first_token_at, r.last_token_at)
            && r.tokens > 1
        {
            let per_token = last.saturating_sub(first) as f64 / f64::from(r.tokens - 1);
            t.tpot_ms.push(per_token / 1e6);
        }
        if let Some(last) = r.last_token_at {
            t.request_nanos += last.saturating_sub(r.arrival);
        }
    }

    /// Submits the deferred text-generation step again when its retry is due, or counts
    /// it shed once its deadline has passed.
    pub(super) fn retry_deferred(&mut self, now: Nanos) {
        let Some((tag, rec, work, at)) = self.text.deferred.take() else {
            return;
        };
        if now >= rec.deadline {
            self.stats.shed(rec.kind, now);
            self.observer.shed(rec.kind.as_str());
            self.release_branch(rec, now);
        } else if now >= at {
            self.submit(now, tag, rec, work);
        } else {
            self.text.deferred = Some((tag, rec, work, at));
        }
    }
}
