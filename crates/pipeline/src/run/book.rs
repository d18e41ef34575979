//! The book of jobs in flight: each job's record by tag, the outputs its steps sent, and
//! what the end of a step does — a finished job's result goes to its branch, a yielded
//! text-generation step competes again, a shed one waits or counts as shed.

use std::collections::{HashMap, HashSet};
use std::sync::mpsc::{Receiver, Sender, channel};

use mmsched_core::arbiter::ClassId;
use mmsched_core::time::{Clock, Nanos};
use mmsched_runtime::sched::{ExecEvent, StepOutcome};
use mmsched_trace::ids::TraceId;
use mmsched_trace::record::stage;

use super::{Intake, JobRec, LLM_RETRY_NANOS, Run, ThreadCpu};
use crate::jobs::Output;
use crate::stats::Kind;
use crate::trace_out::JobSpan;

/// Jobs in flight by the loop's tag, and the outputs their steps sent.
pub(super) struct JobBook {
    /// Where a job's work sends its output (cloned into each job).
    pub(super) tx: Sender<Output>,
    rx: Receiver<Output>,
    outputs: HashMap<u64, Output>,
    pub(super) jobs: HashMap<u64, JobRec>,
    next_tag: u64,
    events: Vec<mmsched_runtime::sched::ExecEvent>,
    /// (class, lane) pairs that have run a job: a model's first job on a lane is not a
    /// cost to predict from.
    warm: HashSet<(ClassId, usize)>,
}

impl JobBook {
    pub(super) fn new() -> Self {
        let (tx, rx) = channel();
        Self {
            tx,
            rx,
            outputs: HashMap::new(),
            jobs: HashMap::new(),
            next_tag: 0,
            events: Vec::new(),
            warm: HashSet::new(),
        }
    }

    pub(super) fn new_tag(&mut self) -> u64 {
        self.next_tag += 1;
        self.next_tag
    }
}

impl<C: Clock + Clone + Send + 'static> Run<'_, C> {
    /// Collects what the executor did since the last pass and acts on each event.
    /// `intake`: whether the run still takes work, drains it or was interrupted.
    pub(super) fn handle_events(&mut self, now: Nanos, intake: Intake) {
        let t0 = ThreadCpu::now();
        self.exec.poll(now, &mut self.book.events);
        self.overhead_nanos += t0.elapsed_nanos();
        let sent = self.book.rx.try_iter().map(|o| (tag_of(&o), o));
        self.book.outputs.extend(sent);
        for ev in std::mem::take(&mut self.book.events) {
            let ev = match &mut self.external {
                Some((_, ext)) => match ext.on_event(&mut *self.exec, now, ev) {
                    Some(ev) => ev,
                    None => continue,
                },
                None => ev,
            };
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
                    let Some(rec) = self.book.jobs.remove(&info.tag) else {
                        continue;
                    };
                    let output = self.book.outputs.remove(&info.tag);
                    if !self.book.warm.insert((info.class, worker)) {
                        self.cost.record(
                            info.class,
                            ended_nanos.saturating_sub(started_nanos),
                            ended_nanos,
                        );
                    }
                    let track = format!("worker-{worker}");
                    let stage_name = match (&rec.kind, &output) {
                        (Kind::Llm, Some(Output::Llm { token: None, .. })) => stage::PREFILL,
                        (Kind::Llm, _) => stage::DECODE,
                        _ => stage::EXEC,
                    };
                    let trace_id = self.trace.job(JobSpan {
                        job: job.0,
                        modality: info.modality,
                        model: rec.kind.as_str(),
                        track: &track,
                        release_nanos: rec.release.min(started_nanos),
                        start_nanos: started_nanos,
                        end_nanos: ended_nanos,
                        deadline_nanos: rec.deadline,
                        stage: stage_name,
                    });
                    match outcome {
                        Ok(StepOutcome::Yield) if rec.kind == Kind::Llm => {
                            self.on_llm_step(started_nanos, ended_nanos, output.as_ref());
                            if intake == Intake::Interrupted {
                                // The run was stopped: the request stays unfinished.
                                self.stats.unfinished(Kind::Llm, 1);
                                self.close_request();
                            } else {
                                // The next token competes again with the same deadline;
                                // a drain lets an answer under way finish too.
                                self.submit(now, info.tag, rec, work);
                            }
                        }
                        Ok(_) => {
                            self.on_finished(now, rec, started_nanos, ended_nanos, output, trace_id)
                        }
                        Err(_) => {
                            self.stats.failed(rec.kind, now);
                            self.release_branch(rec, now);
                        }
                    }
                }
                ExecEvent::Shed {
                    info,
                    work: Some(work),
                    ..
                } if rec_is_deferrable(self.book.jobs.get(&info.tag), now, intake) => {
                    // A text request's step (its first: later ones are committed, and
                    // mmsched never sheds them; a baseline never sheds at all): shedding it
                    // would drop the whole request. It waits instead and competes again
                    // every retry while its deadline allows; past it, it counts as shed.
                    if let Some(rec) = self.book.jobs.remove(&info.tag) {
                        self.text.deferred = Some((info.tag, rec, work, now + LLM_RETRY_NANOS));
                    }
                }
                ExecEvent::Shed { info, .. } | ExecEvent::Pruned { info, .. } => {
                    let Some(rec) = self.book.jobs.remove(&info.tag) else {
                        continue;
                    };
                    self.book.outputs.remove(&info.tag);
                    self.stats.shed(rec.kind, now);
                    if rec.kind == Kind::Vision {
                        self.vision.losses.record(true);
                    }
                    self.observer.shed(rec.kind.as_str());
                    self.trace.instant(
                        stage::SHED,
                        rec.kind.as_str(),
                        now,
                        Some(info.modality),
                        "overload",
                    );
                    self.release_branch(rec, now);
                }
            }
        }
    }

    /// A job that will not finish frees its branch (the next utterance or request).
    pub(super) fn release_branch(&mut self, rec: JobRec, now: Nanos) {
        match rec.kind {
            Kind::Asr => self.speech.asr_busy = false,
            Kind::Llm => self.close_request(),
            // A lost chunk counts as silence.
            Kind::Vad => self.on_vad(&rec, now, now, 0.0, None),
            Kind::Vision => {}
        }
    }

    /// A job's last step ended at `end`: its result goes to its branch and its latency
    /// into the figures.
    fn on_finished(
        &mut self,
        now: Nanos,
        rec: JobRec,
        started: Nanos,
        end: Nanos,
        output: Option<Output>,
        trace_id: TraceId,
    ) {
        if rec.kind == Kind::Llm {
            self.on_llm_step(started, end, output.as_ref());
        }
        self.report_result(&rec, end, output.as_ref(), trace_id);
        match (rec.kind, output) {
            (Kind::Llm, _) => self.close_request(),
            (Kind::Asr, output) => self.on_transcript(output),
            (Kind::Vad, Some(Output::Vad { prob, .. })) => {
                self.on_vad(&rec, now, end, prob, Some(trace_id));
            }
            (Kind::Vad, _) => self.on_vad(&rec, now, end, 0.0, Some(trace_id)),
            (Kind::Vision, output) => self.on_ocr(output),
        }
        let missed = self
            .stats
            .completed(rec.kind, rec.release, rec.deadline, end);
        if rec.kind == Kind::Vision {
            self.vision.losses.record(missed);
        }
        let latency_ms = end.saturating_sub(rec.release) as f64 / 1e6;
        self.monitor
            .series
            .record_latency(rec.kind.as_str(), latency_ms);
        if missed {
            let t = self.t_s(end);
            self.monitor
                .series
                .record_miss(t, rec.kind.as_str(), latency_ms);
        }
        self.observer.job(rec.kind.as_str(), latency_ms, missed);
        self.monitor.recent_done.push_back((end, rec.kind));
    }

    /// After the drain: every input still waiting or running is unfinished.
    pub(super) fn count_unfinished(&mut self) {
        if let Some((_, rec, _, _)) = self.text.deferred.take() {
            self.stats.unfinished(rec.kind, 1);
        }
        let running: Vec<Kind> = self.book.jobs.values().map(|r| r.kind).collect();
        for kind in running {
            self.stats.unfinished(kind, 1);
        }
        self.stats
            .unfinished(Kind::Asr, self.speech.asr_queue.len() as u64);
        self.stats
            .unfinished(Kind::Llm, self.text.queue.len() as u64);
    }
}

/// Whether a shed job with this record may wait and compete again: a step of a text
/// request (its request keeps its place) before its deadline, while the run takes work.
fn rec_is_deferrable(rec: Option<&JobRec>, now: Nanos, intake: Intake) -> bool {
    rec.is_some_and(|r| r.kind == Kind::Llm && now < r.deadline) && intake == Intake::Open
}

fn tag_of(o: &Output) -> u64 {
    match o {
        Output::Vision { tag, .. }
        | Output::Vad { tag, .. }
        | Output::Asr { tag, .. }
        | Output::Llm { tag, .. }
        | Output::Failed { tag, .. } => *tag,
    }
}
