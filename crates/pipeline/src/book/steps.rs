//! What the end of a step does: a yielded step competes again (or, interrupted, ends the
//! request), a finished job's result goes to its client and into the figures, a failed
//! one is counted and reported, a shed step of a started job waits and retries.

use mmsched_core::steps::WhenShed;
use mmsched_core::time::Nanos;
use mmsched_runtime::sched::{ExecEvent, StepOutcome, Work, WorkError};
use mmsched_trace::ids::TraceId;
use mmsched_trace::record::stage;

use super::{Book, Ctx, EndResult, Ended, Intake, Job, JobEnd, RETRY_NANOS, Reply};
use crate::jobs::Output;
use crate::request::{Answer, Reply as Result_, ShedReason, Update};
use crate::results::{ResultRecord, Times};
use crate::stats::Kind;
use crate::trace_out::JobSpan;

impl Book {
    pub(super) fn on_event(
        &mut self,
        cx: &mut Ctx<'_>,
        now: Nanos,
        intake: Intake,
        ev: ExecEvent,
        ended: &mut Vec<Ended>,
    ) {
        self.own_step_ended(&ev);
        match ev {
            ExecEvent::Done {
                info,
                worker,
                outcome,
                work,
                started_nanos,
                ended_nanos,
                job,
            } => {
                let tag = info.tag;
                if !self.jobs.contains_key(&tag) {
                    return;
                }
                let output = self.outputs.remove(&tag);
                if self.jobs.get(&tag).is_some_and(|j| j.kind != Kind::Vad) {
                    self.decisions.busy(started_nanos, ended_nanos);
                }
                // A model's first step on a lane is not a cost to predict from (it warms
                // caches), unless its job runs to be measured: a warm-up's figure is
                // nearer than a prior the device has never confirmed.
                let explored = self.jobs.get(&tag).is_some_and(|j| j.explored);
                if !self.warm.insert((info.class, worker)) || explored {
                    let cost = ended_nanos.saturating_sub(started_nanos);
                    if let Some(j) = self.jobs.get(&tag) {
                        let rung = j.rung.as_ref().map_or("", |r| r.name()).to_string();
                        // A text step's kind is known once it ran (how many requests its
                        // call served), not when it was submitted.
                        let kind_of_step = match &output {
                            Some(Output::Llm { step, .. }) => *step,
                            _ => j.running,
                        };
                        self.costs
                            .record_step(j.kind, &rung, kind_of_step, cost, ended_nanos);
                    }
                }
                let trace_id = self.trace_step(
                    job.0,
                    worker,
                    tag,
                    (started_nanos, ended_nanos),
                    output.as_ref(),
                );
                let step = Step {
                    now,
                    started: started_nanos,
                    ended: ended_nanos,
                    trace_id,
                };
                match outcome {
                    Ok(StepOutcome::Yield) => self.on_yield(cx, step, tag, intake, output, work),
                    Ok(StepOutcome::Finished) => self.on_finished(cx, step, tag, output, ended),
                    Err(e) => self.on_failed(cx, now, tag, e, ended),
                }
            }
            ExecEvent::Shed {
                info,
                work: Some(work),
                ..
            } if self.deferrable(info.tag, now, intake) => {
                // A started job (mmsched never sheds its committed steps; the baselines
                // never shed) or a request that keeps its place: shedding it would throw
                // away the work before it. It waits and competes again every retry while
                // its deadline allows; past it, it counts as shed.
                self.deferred.push((info.tag, now + RETRY_NANOS, work));
            }
            ExecEvent::Shed {
                info,
                work: Some(work),
                ..
            } if self.keeps_over_core(info.tag, now) => {
                self.submit_step(cx.exec, now, info.tag, work)
            }
            ExecEvent::Shed { info, .. } => {
                self.shed(cx, now, info.tag, ShedReason::Overload, ended)
            }
            ExecEvent::Pruned { info, .. } => {
                self.shed(cx, now, info.tag, ShedReason::BatterySaver, ended)
            }
        }
    }

    /// A step left the executor: out of the run's own load in flight, and its lane time
    /// into it if it ran.
    fn own_step_ended(&mut self, ev: &ExecEvent) {
        let (tag, ran) = match ev {
            ExecEvent::Done {
                info,
                started_nanos,
                ended_nanos,
                ..
            } => (info.tag, Some((*started_nanos, *ended_nanos))),
            ExecEvent::Shed { info, .. } | ExecEvent::Pruned { info, .. } => (info.tag, None),
        };
        let kind = self.jobs.get(&tag).map(|j| j.kind);
        self.own.ended(kind, tag, ran);
    }

    fn deferrable(&self, tag: u64, now: Nanos, intake: Intake) -> bool {
        self.jobs
            .get(&tag)
            .is_some_and(|j| j.chain.when_shed(now, intake == Intake::Open) == WhenShed::Retry)
    }

    /// Records the step of `tag` (a booked job) that ran from `start` to `end`; returns
    /// its trace id.
    fn trace_step(
        &mut self,
        job: u64,
        worker: usize,
        tag: u64,
        (start, end): (Nanos, Nanos),
        output: Option<&Output>,
    ) -> TraceId {
        let (kind, release, deadline, origin, rung) =
            self.jobs
                .get(&tag)
                .map_or((Kind::Vision, start, end, "streams", None), |j| {
                    let rung = j.rung.as_ref().map(|r| r.name().to_string());
                    (j.kind, j.release, j.deadline, j.origin.as_str(), rung)
                });
        let stage_name = match output {
            Some(Output::Llm { tokens: 0, .. }) => stage::PREFILL,
            _ if kind == Kind::Llm => stage::DECODE,
            _ => stage::EXEC,
        };
        let track = format!("worker-{worker}");
        self.trace.job(JobSpan {
            job,
            modality: kind.modality(),
            model: kind.as_str(),
            track: &track,
            release_nanos: release.min(start),
            start_nanos: start,
            end_nanos: end,
            deadline_nanos: deadline,
            stage: stage_name,
            origin,
            rung: rung.as_deref(),
        })
    }

    /// A text step that yielded: its tokens go to the client, and its next step competes
    /// again — unless the runtime was interrupted, which ends the request unfinished.
    fn on_yield(
        &mut self,
        cx: &mut Ctx<'_>,
        step: Step,
        tag: u64,
        intake: Intake,
        output: Option<Output>,
        work: Box<dyn Work>,
    ) {
        self.progress(tag, &step, output.as_ref());
        if intake == Intake::Interrupted {
            self.unfinished(tag, "the runtime was stopped");
            return;
        }
        self.submit_step(cx.exec, step.now, tag, work);
    }

    /// Applies a step's output to its job: the first start, a text request's tokens (sent
    /// on to an outside client as they come).
    fn progress(&mut self, tag: u64, step: &Step, output: Option<&Output>) {
        let Some(job) = self.jobs.get_mut(&tag) else {
            return;
        };
        job.started.get_or_insert(step.started);
        job.ended = Some(step.ended);
        job.steps += 1;
        job.work += step.ended.saturating_sub(step.started);
        let made = match output {
            Some(Output::Llm { tokens, .. }) => *tokens,
            _ => 1,
        };
        job.chain.ran(made);
        if let (
            Some(t),
            Some(Output::Llm {
                text,
                tokens,
                first_token_after_nanos,
                finish,
                ..
            }),
        ) = (&mut job.text, output)
        {
            let first = *first_token_after_nanos;
            t.step(step.started, step.ended, first, *tokens, text, *finish);
            if let (Reply::Sink(sink), false) = (&mut job.reply, text.is_empty()) {
                sink(Update::Token(text.clone()));
            }
        }
    }

    /// A job's last step ended: its result goes to its client, into the figures and the
    /// results feed.
    fn on_finished(
        &mut self,
        cx: &mut Ctx<'_>,
        step: Step,
        tag: u64,
        output: Option<Output>,
        ended: &mut Vec<Ended>,
    ) {
        self.progress(tag, &step, output.as_ref());
        let Some(mut job) = self.jobs.remove(&tag) else {
            return;
        };
        let end = step.ended;
        if job.shadow.is_some() {
            self.shadow_ended(job, output.as_ref(), end);
            return;
        }
        self.release(job.kind);
        if job.running.is_some() && job.kind != Kind::Llm {
            // A job of several kinds of step: its whole cost, for choosing rungs (a text
            // request's `job` key is its one-token step's cost, and it has no rungs).
            let rung = job.rung.as_ref().map_or("", |r| r.name()).to_string();
            self.costs.record_job(job.kind, &rung, job.work, end);
        }
        if let Some(t) = &job.text {
            self.text.close(job.release, t);
        }
        let cancelled = job.text.as_ref().is_some_and(|t| t.cancelled());
        let reply = reply_of(&job, output.as_ref());
        let score = match (&job.truth, &reply) {
            (Some(truth), Some(reply)) if !cancelled => crate::truth::score(truth, reply),
            _ => None,
        };
        self.record(
            &job,
            match (cancelled, end <= job.deadline) {
                (true, _) => JobEnd::Unfinished,
                (false, true) => JobEnd::OnTime,
                (false, false) => JobEnd::Late,
            },
            score.map(|s| s.correct),
        );
        if !cancelled {
            self.maybe_shadow(cx, &mut job, reply.as_ref(), end);
        }
        if cancelled {
            // The client went away: nothing was delivered.
            self.stats.unfinished(job.kind, job.origin, 1);
        } else {
            let late = self
                .stats
                .completed(job.kind, job.origin, job.release, job.deadline, end);
            if let Some(s) = score {
                self.stats.scored(job.kind, s, !late);
            }
            let latency_ms = end.saturating_sub(job.release) as f64 / 1e6;
            cx.observer.job(job.kind.as_str(), latency_ms, late);
            if let Some(reply) = reply {
                self.report(cx, &job, end, &reply, step.trace_id, score);
                if let Reply::Sink(sink) = &mut job.reply {
                    sink(Update::Finished(Answer {
                        trace_id: step.trace_id.to_hex(),
                        stream: job.stream.clone(),
                        reply,
                        capture_nanos: job.capture,
                        release_nanos: job.release,
                        started_nanos: job.started.unwrap_or(step.started),
                        ended_nanos: end,
                        deadline_nanos: job.deadline,
                        on_time: end <= job.deadline,
                        timing: match &output {
                            Some(
                                Output::Vision { timing, .. }
                                | Output::Asr { timing, .. }
                                | Output::Model { timing, .. },
                            ) => Some(*timing),
                            _ => None,
                        },
                    }));
                }
            }
        }
        if cancelled && let Reply::Sink(sink) = &mut job.reply {
            sink(Update::Failed(WorkError::Cancelled {
                why: "the client went away",
            }));
        }
        ended.push(Ended {
            kind: job.kind,
            origin: job.origin,
            chunk: job.chunk,
            release: job.release,
            deadline: job.deadline,
            end,
            result: EndResult::Finished(output, step.trace_id),
        });
    }

    /// A result record (OCR lines, a transcript, an answer) for the results feed. VAD
    /// chunks are not results on their own: the segments they close are (the run's speech
    /// branch reports them).
    fn report(
        &self,
        cx: &mut Ctx<'_>,
        job: &Job,
        end: Nanos,
        reply: &Result_,
        trace: TraceId,
        score: Option<crate::truth::Score>,
    ) {
        if job.kind == Kind::Vad {
            return;
        }
        let times = Times {
            start: self.start,
            capture: job.capture,
            release: job.release,
            done: end,
            deadline: job.deadline,
        };
        let text = reply.text().trim().to_string();
        let mut r = ResultRecord::new(trace.to_hex(), &job.stream, job.kind, times, text);
        r.origin = job.origin.as_str();
        r.rung = job.rung.as_ref().map(|r| r.name().to_string());
        r.correct = score.map(|s| s.correct);
        r.accuracy = score.map(|s| s.accuracy);
        match reply {
            Result_::Lines(l) => r.lines = Some(l.iter().map(|l| l.text.clone()).collect()),
            Result_::Text { tokens, .. } => r.tokens = Some(*tokens),
            _ => {}
        }
        cx.observer.result(&r);
    }

    fn on_failed(
        &mut self,
        cx: &mut Ctx<'_>,
        now: Nanos,
        tag: u64,
        e: WorkError,
        ended: &mut Vec<Ended>,
    ) {
        let Some(mut job) = self.jobs.remove(&tag) else {
            return;
        };
        self.outputs.remove(&tag);
        if job.shadow.is_some() {
            self.shadow_ended(job, None, now);
            return;
        }
        self.release(job.kind);
        self.stats.failed(job.kind, job.origin, now, &e.chain());
        if let Some(t) = &job.text {
            self.text.close(job.release, t);
        }
        self.record(&job, JobEnd::Failed, None);
        cx.observer.failed(job.kind.as_str(), &e);
        if job.kind != Kind::Vad {
            // A chunk is no result on its own (see `report`); a frame, utterance or
            // request that failed is, with its reason.
            let times = Times {
                start: self.start,
                capture: job.capture,
                release: job.release,
                done: now,
                deadline: job.deadline,
            };
            let mut r =
                ResultRecord::failed(String::new(), &job.stream, job.kind, times, e.chain());
            r.origin = job.origin.as_str();
            cx.observer.result(&r);
        }
        self.trace.instant(
            stage::FAIL,
            job.kind.as_str(),
            now,
            Some(job.kind.modality()),
            &e.chain(),
        );
        if let Reply::Sink(sink) = &mut job.reply {
            sink(Update::Failed(e));
        }
        ended.push(Ended {
            kind: job.kind,
            origin: job.origin,
            chunk: job.chunk,
            release: job.release,
            deadline: job.deadline,
            end: now,
            result: EndResult::Failed,
        });
    }

    /// A job the scheduler shed (or pruned): counted, traced, its client told.
    pub(super) fn shed(
        &mut self,
        cx: &mut Ctx<'_>,
        now: Nanos,
        tag: u64,
        why: ShedReason,
        ended: &mut Vec<Ended>,
    ) {
        let Some(mut job) = self.jobs.remove(&tag) else {
            return;
        };
        self.outputs.remove(&tag);
        if job.shadow.is_some() {
            self.shadow_ended(job, None, now);
            return;
        }
        self.release(job.kind);
        if job.kind != Kind::Vad {
            let cost = self.mean_rest(&job, now);
            self.decisions.shed(now, job.deadline, cost);
        }
        self.stats.shed(job.kind, job.origin, now);
        if let Some(t) = &job.text {
            self.text.close(job.release, t);
        }
        self.record(&job, JobEnd::Shed, None);
        cx.observer.shed(job.kind.as_str());
        self.trace.instant(
            stage::SHED,
            job.kind.as_str(),
            now,
            Some(job.kind.modality()),
            match why {
                ShedReason::BatterySaver => "battery saver",
                _ => "overload",
            },
        );
        if let Reply::Sink(sink) = &mut job.reply {
            sink(Update::Shed(why));
        }
        ended.push(Ended {
            kind: job.kind,
            origin: job.origin,
            chunk: job.chunk,
            release: job.release,
            deadline: job.deadline,
            end: now,
            result: EndResult::Shed,
        });
    }
}

/// When a step ran and what it is in the trace.
struct Step {
    now: Nanos,
    started: Nanos,
    ended: Nanos,
    trace_id: TraceId,
}

/// The reply a finished job's output makes (a text request's: its whole answer).
fn reply_of(job: &Job, output: Option<&Output>) -> Option<Result_> {
    match (output, &job.text) {
        (_, Some(t)) => Some(t.reply()),
        (Some(Output::Vision { lines, .. }), _) => Some(Result_::Lines(lines.clone())),
        (Some(Output::Vad { prob, .. }), _) => Some(Result_::Speech(*prob)),
        (Some(Output::Asr { text, .. }), _) => Some(Result_::Transcript(text.clone())),
        (Some(Output::Model { output, .. }), _) => Some(Result_::Model(output.clone())),
        _ => None,
    }
}
