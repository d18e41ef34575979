//! Shadow comparisons: what a cheaper rung gives up, measured on this device's own inputs
//! where their truth is unknown. On a bounded share of OCR, speech and own-model jobs (one
//! in [`SHADOW_EVERY`] of each kind, one at a time), a job that ended in time while the
//! device is idle is run again at another rung: the richest, if it ran at a cheaper one;
//! else the cheaper rung compared least so far. The two answers are compared (the
//! richest's taken as the truth, by the same rules results are scored by; a model of the
//! user's own by [`OnnxOutput::agrees_with`](mmsched_backends::onnx::OnnxOutput::agrees_with))
//! and the agreement feeds the rung's chance to be right ([`super::accuracy`]); the
//! shadow's steps are measured like any other, so a rung never chosen gets a cost too.
//!
//! A shadow is nobody's request: it is not counted, traced as a result or answered. It
//! runs at importance 0 and a lax deadline, so admission sheds it first and earliest
//! deadline first runs it last; it starts only while its model has a free place and no
//! other job is admitted on the general lanes.
//!
//! A device past its capacity is never idle, yet that is where what a cheaper rung gives
//! up matters most: a cheaper rung compared fewer than [`SHADOWS_TO_TELL`] times is
//! compared even while the device is busy. Such a shadow is due one deadline span after
//! it starts, as if it were one more input of its kind, and is committed (admission does
//! not shed it, or it would never run past capacity); the count bounds what it costs: at
//! most that many inputs' time per cheaper rung in a run.

use mmsched_core::time::Nanos;

use super::{Book, Ctx, Job, Reply};
use crate::jobs::Output;
use crate::models::{JobOrder, Rung};
use crate::request::{Input, Reply as Answer};
use crate::stats::Kind;
use crate::truth::Truth;

/// One in this many jobs of a kind may be compared.
pub const SHADOW_EVERY: u64 = 10;

/// A cheaper rung compared fewer times than this is compared while the device is busy too.
pub const SHADOWS_TO_TELL: u32 = 6;

/// A shadow job's part in its comparison.
#[derive(Debug, Clone)]
pub(super) struct ShadowOf {
    /// The answer it is compared with.
    other: Answer,
    /// Whether the shadow runs the richest rung (the other answer is the cheaper rung's).
    richest: bool,
    /// The cheaper rung of the two.
    cheaper: String,
    /// Started while the device was busy: due one deadline span later, and committed.
    pub(super) busy: bool,
}

/// The book's shadow bookkeeping.
#[derive(Debug, Clone, Default)]
pub(super) struct Shadows {
    /// Jobs of each kind finished since that kind's last shadow.
    since: crate::per_kind::PerKind<u64>,
    /// A shadow in flight.
    running: bool,
}

impl Book {
    /// Whether a `kind` job about to be admitted keeps its input for a shadow.
    pub(super) fn keeps_input(&self, kind: Kind) -> bool {
        self.rules.shadows()
            && !matches!(kind, Kind::Vad | Kind::Llm)
            && !self.shadows.running
            && self.shadows.since[kind] + 1 >= SHADOW_EVERY
            && self.rungs_of(kind).len() > 1
    }

    /// A job that kept its input ended at `end` with `answer`: its shadow starts if the
    /// device is idle and the job ended in time.
    pub(super) fn maybe_shadow(
        &mut self,
        cx: &mut Ctx<'_>,
        job: &mut Job,
        answer: Option<&Answer>,
        end: Nanos,
    ) {
        if matches!(job.kind, Kind::Vad | Kind::Llm) {
            return;
        }
        let k = job.kind;
        self.shadows.since[k] += 1;
        let (Some(input), Some(answer)) = (job.kept_input.take(), answer) else {
            return;
        };
        let busy = self
            .jobs
            .values()
            .any(|j| j.admitted && j.kind != Kind::Vad);
        let room =
            self.places[k].taken() < self.places[k].capacity() && self.places[k].waiting() == 0;
        if end > job.deadline || !room || self.shadows.running {
            return;
        }
        let Some((rung, mut of)) = self.shadow_rung(job, answer) else {
            return;
        };
        if busy && self.accuracy.shadow(job.kind, &of.cheaper).runs >= SHADOWS_TO_TELL {
            return;
        }
        of.busy = busy;
        self.shadows.since[k] = 0;
        self.shadows.running = true;
        self.start_shadow(cx, end, job, input, rung, of);
    }

    /// The rung a shadow of `job` runs, and its part in the comparison.
    fn shadow_rung(&self, job: &Job, answer: &Answer) -> Option<(Rung, ShadowOf)> {
        let rungs = self.rungs_of(job.kind);
        let ran = job.rung.as_ref()?.name().to_string();
        if rungs.first()?.name() != ran {
            let of = ShadowOf {
                other: answer.clone(),
                richest: true,
                cheaper: ran,
                busy: false,
            };
            return Some((rungs[0].clone(), of));
        }
        let cheaper = rungs[1..]
            .iter()
            .min_by_key(|r| self.accuracy.shadow(job.kind, r.name()).runs)?
            .clone();
        let of = ShadowOf {
            other: answer.clone(),
            richest: false,
            cheaper: cheaper.name().to_string(),
            busy: false,
        };
        Some((cheaper, of))
    }

    fn start_shadow(
        &mut self,
        cx: &mut Ctx<'_>,
        now: Nanos,
        job: &Job,
        input: Input,
        rung: Rung,
        of: ShadowOf,
    ) {
        self.next_tag += 1;
        let tag = self.next_tag;
        let k = job.kind;
        // Lax: a shadow waits behind every job due, and is never late enough to matter;
        // while the device is busy, as one more input of its kind arriving now.
        let deadline = if of.busy {
            now.saturating_add(job.deadline.saturating_sub(job.release))
        } else {
            let mean = self.costs.job_dist(job.kind, rung.name(), now).mean();
            now.saturating_add(mean.saturating_mul(20).max(2_000_000_000))
        };
        let mut shadow = job.shadow_of(now, deadline, of);
        shadow.rung = Some(rung.clone());
        self.jobs.insert(tag, shadow);
        // A free place and nobody waiting were checked: the shadow is admitted at once.
        self.places[k].wait((tag, input));
        let Some((_, input)) = self.places[k].admit() else {
            return;
        };
        let order = JobOrder {
            input,
            tag,
            out: self.tx.clone(),
            preemptible: self.rules.preemptible(),
            cancel: crate::request::Cancel::new(),
            rung: Some(rung),
            fused: job.kind == Kind::Vision && self.fuse_vision,
            lines_later: false,
            truth: job.truth.clone(),
        };
        let work = cx.models.work(order);
        self.submit_step(cx.exec, now, tag, work);
    }

    /// A shadow ended at `end` (`output`: its answer, none if it failed, was shed or the
    /// run stopped): its cost is measured and the two answers compared.
    pub(super) fn shadow_ended(&mut self, job: Job, output: Option<&Output>, end: Nanos) {
        self.shadows.running = false;
        self.release(job.kind);
        if output.is_some() && job.running.is_some() {
            let rung = job.rung.as_ref().map_or("", |r| r.name()).to_string();
            self.costs.record_job(job.kind, &rung, job.work, end);
        }
        let (Some(of), Some(output)) = (job.shadow, output) else {
            return;
        };
        let mine = match output {
            Output::Vision { lines, .. } => Answer::Lines(lines.clone()),
            Output::Asr { text, .. } => Answer::Transcript(text.clone()),
            Output::Model { output, .. } => Answer::Model(output.clone()),
            _ => return,
        };
        let (richest, cheaper) = if of.richest {
            (mine, of.other)
        } else {
            (of.other, mine)
        };
        let agreed = match (richest, cheaper) {
            (Answer::Model(richest), Answer::Model(cheaper)) => cheaper.agrees_with(&richest),
            (richest, cheaper) => {
                let truth = match richest {
                    Answer::Lines(l) => Truth::Lines(l.into_iter().map(|l| l.text).collect()),
                    Answer::Transcript(t) => Truth::Transcript(t),
                    _ => return,
                };
                let Some(score) = crate::truth::score(&truth, &cheaper) else {
                    return;
                };
                score.correct
            }
        };
        self.accuracy.compared(job.kind, &of.cheaper, agreed);
        self.decisions.shadows += 1;
        self.decisions.shadows_busy += u64::from(of.busy);
    }
}

impl Job {
    /// A shadow of this job: its kind and stream, released at `now` and due at
    /// `deadline`, importance 0, nobody to answer.
    fn shadow_of(&self, now: Nanos, deadline: Nanos, of: ShadowOf) -> Job {
        let mut job = Job::new(
            (self.kind, self.origin, self.stream.clone()),
            (now, now, deadline),
            Reply::Loop,
            crate::request::Cancel::new(),
            mmsched_core::steps::Chain::new(deadline, 1, false),
        );
        job.importance = Some(0.0);
        job.admitted = true;
        job.lines_planned = true;
        job.shadow = Some(of);
        job
    }
}
