//! The one book of jobs. Every client's request — a scenario stream's frame, chunk,
//! utterance or prompt, an HTTP client's, the library's — is booked here, and only here:
//! the book turns it into a job (through the job factory, [`crate::models::Models::work`]),
//! decides each step's task info (class, the step's deadline, the predicted cost from the
//! one cost model, importance, whether the step is committed), keeps requests beyond a
//! model's capacity waiting in arrival order, lets a shed step of a started job compete
//! again until its deadline (by core's rules, [`mmsched_core::places`] and
//! [`mmsched_core::steps`], which the simulator follows too), records every step in the
//! trace, counts every outcome in the run's stats (split by origin), and hands each result to
//! its client: a stream's to the run loop's branch ([`Ended`]), an outside client's to its
//! sink ([`crate::request::Update`]).
//!
//! Files: `mod.rs` the book and booking, `steps.rs` what the end of a step does,
//! `text.rs` a text request's progress and figures, `batch.rs` how many text requests a
//! decoding step serves.

mod accuracy;
mod batch;
mod costs;
mod decide;
mod hindsight;
mod in_flight;
mod lines;
mod own_load;
mod record;
mod rungs;
mod shadow;
mod steps;
mod text;
mod to_come;

use std::collections::{HashMap, HashSet};
use std::sync::mpsc::{Receiver, Sender, channel};

use mmsched_core::arbiter::ClassId;
use mmsched_core::places::Places;
use mmsched_core::policy::Policy;
use mmsched_core::steps::{Chain, Deferred};
use mmsched_core::time::Nanos;
use mmsched_runtime::sched::{ExecEvent, Executor, SchedulerKind, Task, TaskInfo, Work};
use mmsched_trace::ids::TraceId;

use crate::config::Mechanisms;
use crate::jobs::Output;
use crate::models::{JobOrder, Models, Rung};
use crate::per_kind::PerKind;
use crate::request::{Cancel, Input, Origin, Request, ShedReason, Update, UpdateSink};
use crate::run::Observer;
use crate::stats::{Kind, RunStats};
use crate::trace_out::TraceOut;

use costs::Costs;
pub use record::{JobEnd, JobRecord};
pub use rungs::{RungMode, Standing};
pub use text::TextFigures;
use text::TextProgress;

/// How long a measured step cost is trusted for prediction.
pub const COST_MAX_AGE_NANOS: Nanos = 10_000_000_000;
/// Recent step costs the cost model keeps per class, and how many it needs.
const COST_WINDOW: usize = 64;
const COST_MIN_SAMPLES: usize = 3;
/// How long a shed step of a started job (or of a request that keeps its place) waits
/// before it competes again (the core's, which the simulator follows too).
pub use mmsched_core::steps::RETRY_NANOS;

/// Where a request's result goes.
pub enum Reply {
    /// To the run loop (a scenario stream's request): its branch reacts to the [`Ended`].
    Loop,
    /// To an outside client, as [`Update`]s.
    Sink(UpdateSink),
}

impl std::fmt::Debug for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Reply::Loop => "Loop",
            Reply::Sink(_) => "Sink",
        })
    }
}

/// Whether the runtime still takes work: new inputs and retries only while `Open`; a
/// drain lets the jobs in flight finish (an answer keeps generating its tokens), an
/// interrupted runtime does not start another step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Intake {
    /// Taking inputs.
    Open,
    /// The inputs have stopped; jobs in flight finish.
    Draining,
    /// Stopped early (Ctrl-C): a text answer stops at its next token.
    Interrupted,
}

/// How a job ended, for the run loop.
#[derive(Debug)]
pub enum EndResult {
    /// Its last step finished: its output (none if the model sent nothing) and the trace
    /// id of its last step.
    Finished(Option<Output>, TraceId),
    /// Shed (or pruned) by the scheduler.
    Shed,
    /// Its step failed (or it was stopped).
    Failed,
}

/// A job that ended, as the run loop sees it (every origin: the loop's samples and the
/// health figures count them all; a stream's branch reacts to its own).
#[derive(Debug)]
pub struct Ended {
    /// Its kind.
    pub kind: Kind,
    /// Streams or an outside client.
    pub origin: Origin,
    /// A VAD chunk's number in its stream.
    pub chunk: u64,
    /// When it was released and due.
    pub release: Nanos,
    /// When it was due.
    pub deadline: Nanos,
    /// When it ended.
    pub end: Nanos,
    /// How.
    pub result: EndResult,
}

impl Ended {
    /// Whether it finished after its deadline (or did not finish).
    pub fn missed(&self) -> bool {
        !matches!(self.result, EndResult::Finished(..)) || self.end > self.deadline
    }
}

/// One booked request.
struct Job {
    kind: Kind,
    origin: Origin,
    stream: String,
    capture: Nanos,
    release: Nanos,
    deadline: Nanos,
    importance: Option<f64>,
    chunk: u64,
    reply: Reply,
    cancel: Cancel,
    /// Its steps: how many may follow, committed or not, what a shed step becomes.
    chain: Chain,
    /// Whether it holds a place of its kind (handed to the executor, not waiting).
    admitted: bool,
    /// When its first step started.
    started: Option<Nanos>,
    /// When its last step so far ended.
    ended: Option<Nanos>,
    /// Steps run, and their time on the workers.
    steps: u32,
    work: Nanos,
    /// Its quality rung (chosen when it is admitted).
    rung: Option<Rung>,
    /// The predicted chance, when it was admitted, that it ends by its deadline at its
    /// rung (mmsched's choice only).
    p_on_time: Option<f64>,
    /// Admitted to measure a cost not measured on this device ([`decide::Verdict::Explore`]).
    explored: bool,
    /// How many lines to read was decided after detection (OCR).
    lines_planned: bool,
    /// The kind of the step in flight (for the cost model), if its steps differ.
    running: Option<&'static str>,
    /// How many steps the work said the whole job takes, when its step in flight was
    /// submitted (prices a kind of step never measured).
    running_hint: Option<u32>,
    /// The core's admission shed its first step by the high-percentile sum, and the book's
    /// expected value kept it ([`decide`]): its steps are committed.
    kept: bool,
    /// A text request's tokens so far.
    text: Option<TextProgress>,
    /// Its right answer, where known.
    truth: Option<crate::truth::Truth>,
    /// Its input, kept for a shadow comparison ([`shadow`]).
    kept_input: Option<Input>,
    /// Set on a shadow job: what it is compared with.
    shadow: Option<shadow::ShadowOf>,
}

impl Job {
    /// A job of `kind` from `origin`'s `stream`, captured, released and due at `times`,
    /// not admitted yet, nothing run: what every job starts as.
    fn new(
        (kind, origin, stream): (Kind, Origin, String),
        (capture, release, deadline): (Nanos, Nanos, Nanos),
        reply: Reply,
        cancel: Cancel,
        chain: Chain,
    ) -> Self {
        Self {
            kind,
            origin,
            stream,
            capture,
            release,
            deadline,
            importance: None,
            chunk: 0,
            reply,
            cancel,
            chain,
            admitted: false,
            started: None,
            ended: None,
            steps: 0,
            work: 0,
            rung: None,
            p_on_time: None,
            explored: false,
            lines_planned: false,
            running: None,
            running_hint: None,
            kept: false,
            text: None,
            truth: None,
            kept_input: None,
            shadow: None,
        }
    }
}

/// What a step's deadline and a text job's steps follow: mmsched's token preemption, or a
/// baseline's rules.
#[derive(Debug, Clone, Copy)]
struct Rules {
    scheduler: SchedulerKind,
    mechanisms: Mechanisms,
    rungs: RungMode,
}

impl Rules {
    /// A text step yields at every token: with mmsched's token preemption, and under every
    /// baseline (which then decide between tokens in their own way).
    fn preemptible(&self) -> bool {
        self.scheduler != SchedulerKind::Mmsched || self.mechanisms.token_preemption
    }

    /// How many lines an OCR job reads is decided after its detection (mmsched's choice
    /// by expected value, with the mechanism on).
    fn lines_later(&self) -> bool {
        self.rungs == RungMode::Adaptive && self.mechanisms.lines_after_detection
    }

    /// Cheaper rungs are compared with the richest ([`shadow`]).
    fn shadows(&self) -> bool {
        self.rungs == RungMode::Adaptive && self.mechanisms.shadows
    }

    /// A text step is due when the request's remaining tokens still fit (mmsched with
    /// token preemption only).
    fn spreads_text_deadlines(&self) -> bool {
        self.scheduler == SchedulerKind::Mmsched && self.mechanisms.token_preemption
    }
}

/// The book. See the [module docs](self).
pub struct Book {
    jobs: HashMap<u64, Job>,
    /// Per kind: the jobs the models can run at once, those handed to the executor (or
    /// deferred) and not ended, and the requests beyond them in arrival order, with their
    /// input.
    places: PerKind<Places<(u64, Input)>>,
    /// Shed steps waiting to compete again: tag, when, work.
    deferred: Vec<(u64, Nanos, Box<dyn Work>)>,
    tx: Sender<Output>,
    rx: Receiver<Output>,
    outputs: HashMap<u64, Output>,
    next_tag: u64,
    costs: Costs,
    classes: PerKind<ClassId>,
    /// General lanes (the voice-activity lane aside).
    general_lanes: usize,
    /// OCR runs its steps back to back in one dispatch (while the camera holds a standing
    /// reservation, whose occurrence is booked for a whole frame).
    fuse_vision: bool,
    /// The camera's standing reservation, if one is booked: its frames take the general
    /// lanes' time between a job's start and its deadline.
    standing: Option<Standing>,
    /// (class, lane) pairs that have run a step: a model's first step on a lane is not a
    /// cost to predict from.
    warm: HashSet<(ClassId, usize)>,
    events: Vec<ExecEvent>,
    rules: Rules,
    /// The policy's importance per class, for requests without their own.
    policy: Policy,
    /// When the run's inputs started (results' times count from here).
    start: Nanos,
    /// Everything counted.
    pub stats: RunStats,
    /// The run's trace.
    pub(crate) trace: TraceOut,
    /// Text requests' figures.
    pub text: TextFigures,
    /// Every job that ended, in the order they ended (only with
    /// [`Book::keep_records`]: a long-running process keeps nothing per job).
    pub records: Vec<JobRecord>,
    /// Whether [`Book::records`] grows.
    keep_records: bool,
    /// Per kind: jobs that ended at each quality rung (the summary's `rung_counts`).
    pub rung_counts: PerKind<std::collections::BTreeMap<String, u64>>,
    /// The steps on the general lanes, for the run's own load.
    own: own_load::OwnWork,
    /// Shadow comparisons: how often each cheaper rung agrees with the richest.
    accuracy: accuracy::Accuracy,
    shadows: shadow::Shadows,
    /// How the decisions turned out.
    pub decisions: hindsight::Hindsight,
    /// Jobs that ended without reaching the executor (shed at admission), for the next
    /// [`Book::handle_events`].
    ended_early: Vec<Ended>,
    /// When each kind last explored a cost ([`decide::Verdict::Explore`]), and at which
    /// rung.
    explored_at: PerKind<Option<(Nanos, String)>>,
    /// The rung each kind's jobs were last given.
    last_rung: PerKind<Option<String>>,
    /// The rungs each model of the user's own declares, richest first.
    own_rungs: PerKind<Vec<String>>,
    /// The steps running on the workers when the executor was last asked: tag, started.
    running_steps: Vec<(u64, Nanos)>,
    /// Per kind, the device's own stream as its inputs arrive (the inputs still to come).
    streams: PerKind<to_come::Stream>,
}

impl std::fmt::Debug for Book {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Book")
            .field("jobs", &self.jobs.len())
            .field(
                "admitted",
                &self.places.values().map(Places::taken).collect::<Vec<_>>(),
            )
            .field(
                "capacity",
                &self
                    .places
                    .values()
                    .map(Places::capacity)
                    .collect::<Vec<_>>(),
            )
            .field("deferred", &self.deferred.len())
            .finish_non_exhaustive()
    }
}

/// What the book needs of the loop for one call: the executor, the models and the observer.
#[allow(missing_debug_implementations)]
pub struct Ctx<'a> {
    /// The scheduler.
    pub exec: &'a mut dyn Executor,
    /// The models jobs are made from.
    pub models: &'a dyn Models,
    /// Who watches the run.
    pub observer: &'a mut dyn Observer,
}

impl Book {
    /// An empty book for `exec`'s classes, with costs predicted from `profile` until
    /// measured, the models' capacities, and `general_lanes` general lanes.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        exec: &mut dyn Executor,
        models: &dyn Models,
        profile: mmsched_world::profile::Profile,
        policy: &Policy,
        mechanisms: Mechanisms,
        rungs: RungMode,
        general_lanes: usize,
        start: Nanos,
        stats: RunStats,
        trace: TraceOut,
    ) -> Self {
        // A class registered after the book was made has no model in this run: its jobs
        // fail, naming the model, on the class of unknown models.
        let unknown = exec.class("model");
        let classes = PerKind::from_fn(|k| exec.class(k.as_str()), unknown);
        let (tx, rx) = channel();
        Self {
            jobs: HashMap::new(),
            places: PerKind::from_fn(|k| Places::new(models.capacity(k)), Places::new(1)),
            deferred: Vec::new(),
            tx,
            rx,
            outputs: HashMap::new(),
            next_tag: 0,
            costs: Costs::new(profile, models),
            classes,
            general_lanes,
            fuse_vision: false,
            standing: None,
            warm: HashSet::new(),
            events: Vec::new(),
            rules: Rules {
                scheduler: exec.kind(),
                mechanisms,
                rungs,
            },
            policy: policy.clone(),
            start,
            stats,
            trace,
            text: TextFigures::default(),
            records: Vec::new(),
            keep_records: false,
            rung_counts: Default::default(),
            own: own_load::OwnWork::default(),
            accuracy: accuracy::Accuracy::default(),
            shadows: shadow::Shadows::default(),
            decisions: hindsight::Hindsight::with_lanes(general_lanes),
            ended_early: Vec::new(),
            explored_at: Default::default(),
            last_rung: Default::default(),
            own_rungs: PerKind::from_fn(|k| models.own_rungs(k), Vec::new()),
            running_steps: Vec::new(),
            streams: Default::default(),
        }
    }

    /// Keeps a [`JobRecord`] of every job that ended (`bench e2e --bound` reads them).
    pub fn keep_records(&mut self, keep: bool) {
        self.keep_records = keep;
    }

    /// The executor's class of `kind`.
    pub fn class(&self, kind: Kind) -> ClassId {
        self.classes[kind]
    }

    /// The predicted cost (P95) of a whole `kind` job at `now`, at the rung its jobs were
    /// last given (the richest before any): what a frame takes as the jobs run now, which
    /// the camera's standing reservation follows.
    pub fn predict_job(&mut self, kind: Kind, now: Nanos) -> Nanos {
        let rung = self.last_rung[kind]
            .clone()
            .unwrap_or_else(|| self.rungs_of_richest(kind));
        self.costs.job(kind, &rung, now)
    }

    /// OCR runs its steps back to back in one dispatch (`on`: while the camera holds a
    /// standing reservation booked for whole frames) or one at a time.
    pub fn fuse_vision(&mut self, on: bool) {
        self.fuse_vision = on;
    }

    /// The camera's standing reservation as booked now (`None`: none is).
    pub fn set_standing(&mut self, standing: Option<Standing>) {
        self.standing = standing;
    }

    /// Uses `policy`'s class importance from the next step on (hot reload).
    pub fn set_policy(&mut self, policy: &Policy) {
        self.policy = policy.clone();
    }

    /// Jobs booked and not ended (handed to the executor, deferred or waiting).
    pub fn pending(&self) -> usize {
        self.jobs.len()
    }

    /// Jobs of `kind` booked and not ended.
    pub fn pending_of(&self, kind: Kind) -> usize {
        self.jobs.values().filter(|j| j.kind == kind).count()
    }

    /// An input of `kind` from `origin` arrived (whatever becomes of it).
    pub fn offer(&mut self, kind: Kind, origin: Origin) {
        self.stats.offered(kind, origin);
    }

    /// Books `req` (already offered): its job waits while its kind is at capacity, else
    /// its first step goes to the executor. `reply` is where its result goes.
    pub fn submit(&mut self, cx: &mut Ctx<'_>, now: Nanos, req: Request, reply: Reply) {
        self.next_tag += 1;
        let tag = self.next_tag;
        let kind = req.kind();
        let (text, steps) = match &req.input {
            crate::request::Input::Prompt(p) => (Some(TextProgress::default()), p.max_tokens),
            _ => (None, 1),
        };
        let chain = Chain::new(req.deadline_nanos, steps, req.retry_when_shed);
        let chunk = match &req.input {
            crate::request::Input::Chunk { index, .. } => *index,
            _ => 0,
        };
        let times = (req.capture_nanos, req.release_nanos, req.deadline_nanos);
        let mut job = Job::new(
            (kind, req.origin, req.stream),
            times,
            reply,
            req.cancel,
            chain,
        );
        job.importance = req.importance;
        if req.origin == Origin::Streams {
            let span = req.deadline_nanos.saturating_sub(req.release_nanos);
            let importance = self.importance_of(&job);
            self.streams[kind].arrived(req.release_nanos, span, importance);
        }
        job.chunk = chunk;
        job.text = text;
        job.truth = req.truth;
        self.jobs.insert(tag, job);
        self.places[kind].wait((tag, req.input));
        self.start_waiting(cx, now);
    }

    /// Hands waiting jobs to the executor while their kind has room; drops those whose
    /// client has gone.
    pub fn start_waiting(&mut self, cx: &mut Ctx<'_>, now: Nanos) {
        self.look_at_running(cx.exec);
        let kinds: Vec<Kind> = self.places.iter().map(|(k, _)| k).collect();
        for kind in kinds {
            let k = kind;
            while let Some((tag, input)) = self.places[k].admit() {
                if self.jobs.get(&tag).is_some_and(|j| j.cancel.is_cancelled()) {
                    self.places[k].free();
                    self.abandon(tag);
                    continue;
                }
                let choice = self.choose(tag, now);
                self.decisions.admitted(&choice);
                // A job in the book, whether it runs or is shed here.
                self.stats.job(kind);
                if choice.verdict == decide::Verdict::Shed {
                    let mut ended = std::mem::take(&mut self.ended_early);
                    if let Some(j) = self.jobs.get_mut(&tag) {
                        // Holding its place until shed; not an admission to calibrate.
                        j.admitted = true;
                        j.rung = choice.rung;
                    }
                    self.shed(cx, now, tag, ShedReason::Overload, &mut ended);
                    self.ended_early = ended;
                    continue;
                }
                let rung = choice.rung;
                if let Some(r) = &rung {
                    self.last_rung[k] = Some(r.name().to_string());
                }
                let keep = self.keeps_input(kind);
                let Some(j) = self.jobs.get_mut(&tag) else {
                    self.places[k].free();
                    continue;
                };
                j.admitted = true;
                j.rung = rung.clone();
                j.explored = choice.verdict == decide::Verdict::Explore;
                // An explored job's chance was not believed: it is not calibrated.
                j.p_on_time = choice.p_on_time.filter(|_| !j.explored);
                if keep {
                    j.kept_input = Some(input.clone());
                }
                let order = JobOrder {
                    input,
                    tag,
                    out: self.tx.clone(),
                    preemptible: self.rules.preemptible(),
                    cancel: j.cancel.clone(),
                    rung,
                    fused: kind == Kind::Vision && self.fuse_vision,
                    lines_later: self.rules.lines_later(),
                    truth: j.truth.clone(),
                };
                let work = cx.models.work(order);
                self.submit_step(cx.exec, now, tag, work);
            }
        }
    }

    /// When `tag`'s next step, of a `kind` job at `rung` predicted to cost `predicted`, is
    /// due. A text request's step is due when its remaining tokens still fit
    /// ([`Chain::next_deadline`]). Another job in steps (a transcription's encoder layers
    /// and decoding, OCR's detection and recognition) has one step at a time in the
    /// book's chain, so its step is due when the rest of the job after it, at its P99
    /// ([`mmsched_core::steps::latest_finish`]), still fits. The modification assumes
    /// worst-case costs and the P99 is the cost model's nearest to one: at the mean half
    /// the transcriptions still ended a step late, at the P95 one in four (measured in
    /// virtual time). With its whole deadline on
    /// every step, earliest deadline first would run every frame due sooner before it until
    /// too little time was left for the rest (measured in virtual time on many-lines
    /// without a device profile: every transcription late, at 6.8 s, behind a 15 fps
    /// camera).
    fn step_due(
        &mut self,
        tag: u64,
        (kind, rung): (Kind, &str),
        predicted: Nanos,
        now: Nanos,
    ) -> Option<Nanos> {
        let (chain, work, text) = {
            let j = self.jobs.get(&tag)?;
            (j.chain, j.work, j.text.is_some())
        };
        let spread = self.rules.spreads_text_deadlines();
        if text || !spread || !self.rules.mechanisms.step_deadlines {
            return Some(chain.next_deadline(now, predicted, spread));
        }
        let rest = self.rest_of((kind, rung, work, 1), now, decide::Reading::Quantile(0.99));
        let after = rest.saturating_sub(predicted);
        Some(mmsched_core::steps::latest_finish(
            now,
            chain.deadline_nanos,
            predicted,
            after,
        ))
    }

    /// The task info of `tag`'s next step (of kind `step`) at `now`: the one place it is
    /// built.
    fn task_info(
        &mut self,
        now: Nanos,
        tag: u64,
        (step, steps_hint): (Option<&'static str>, Option<u32>),
    ) -> Option<TaskInfo> {
        let (kind, rung) = {
            let j = self.jobs.get_mut(&tag)?;
            j.running = step;
            j.running_hint = steps_hint;
            (j.kind, j.rung.as_ref().map_or("", |r| r.name()).to_string())
        };
        let predicted = self.costs.step_hinted(kind, &rung, step, steps_hint, now);
        let deadline_nanos = self.step_due(tag, (kind, &rung), predicted, now)?;
        let job = self.jobs.get(&tag)?;
        let class = self.class(job.kind);
        Some(TaskInfo {
            class,
            modality: job.kind.modality(),
            deadline_nanos,
            predicted_cost_nanos: predicted,
            importance: self.importance_of(job),
            // An explored job runs to be measured, a shadow past capacity to compare:
            // admission does not shed them.
            committed: job.chain.committed()
                || job.explored
                || job.kept
                || job.shadow.as_ref().is_some_and(|s| s.busy),
            tag,
        })
    }

    /// Submits `tag`'s next step.
    fn submit_step(
        &mut self,
        exec: &mut dyn Executor,
        now: Nanos,
        tag: u64,
        mut work: Box<dyn Work>,
    ) {
        self.limit_batch(now, tag, work.as_mut());
        self.plan_lines(now, tag, work.as_mut());
        if let Some(info) = self.task_info(now, tag, (work.next_step(), work.steps_hint())) {
            if let Some(j) = self.jobs.get(&tag) {
                self.own.submitted(j.kind, tag, info.predicted_cost_nanos);
            }
            exec.submit(now, Task { info, work });
        }
    }

    /// Submits the deferred steps whose retry is due, and sheds those past their deadline.
    pub fn retry_deferred(&mut self, cx: &mut Ctx<'_>, now: Nanos, ended: &mut Vec<Ended>) {
        if self.deferred.is_empty() {
            return;
        }
        for (tag, at, work) in std::mem::take(&mut self.deferred) {
            let Some(when) = self.jobs.get(&tag).map(|j| j.chain.when_deferred(now, at)) else {
                continue;
            };
            match when {
                Deferred::Shed => self.shed(cx, now, tag, ShedReason::Overload, ended),
                Deferred::Retry => self.submit_step(cx.exec, now, tag, work),
                Deferred::Wait => self.deferred.push((tag, at, work)),
            }
        }
    }

    /// Collects what the executor did since the last call and acts on each event; returns
    /// the jobs that ended, in order.
    pub fn handle_events(&mut self, cx: &mut Ctx<'_>, now: Nanos, intake: Intake) -> Vec<Ended> {
        cx.exec.poll(now, &mut self.events);
        self.look_at_running(cx.exec);
        let sent = self.rx.try_iter().map(|o| (o.tag(), o));
        self.outputs.extend(sent);
        let mut ended = std::mem::take(&mut self.ended_early);
        for ev in std::mem::take(&mut self.events) {
            self.on_event(cx, now, intake, ev, &mut ended);
        }
        self.start_waiting(cx, now);
        ended.append(&mut self.ended_early);
        self.decisions.settle(now);
        ended
    }

    /// After the drain (or when the runtime stops): every request still waiting, deferred
    /// or running is unfinished, and an outside client is told so.
    pub fn close(&mut self) {
        self.deferred.clear();
        for p in self.places.values_mut() {
            p.clear_waiting();
        }
        let tags: Vec<u64> = self.jobs.keys().copied().collect();
        for tag in tags {
            self.unfinished(tag, "the runtime stopped before this request finished");
        }
    }

    /// A request whose client went away before it started: unfinished, nothing to tell.
    fn abandon(&mut self, tag: u64) {
        if let Some(job) = self.jobs.remove(&tag) {
            if job.shadow.is_some() {
                self.shadow_ended(job, None, 0);
                return;
            }
            self.outputs.remove(&tag);
            self.stats.unfinished(job.kind, job.origin, 1);
            self.record(&job, JobEnd::Unfinished, None);
        }
    }

    /// A request that will not finish: unfinished; an outside client hears why.
    fn unfinished(&mut self, tag: u64, why: &'static str) {
        let Some(mut job) = self.jobs.remove(&tag) else {
            return;
        };
        self.outputs.remove(&tag);
        if job.shadow.is_some() {
            self.shadow_ended(job, None, 0);
            return;
        }
        if job.admitted {
            self.release(job.kind);
        }
        self.stats.unfinished(job.kind, job.origin, 1);
        if let Some(t) = &job.text {
            self.text.close(job.release, t);
        }
        self.record(&job, JobEnd::Unfinished, None);
        if let Reply::Sink(sink) = &mut job.reply {
            sink(Update::Failed(
                mmsched_runtime::sched::WorkError::Cancelled { why },
            ));
        }
    }

    /// Keeps the record of a job that ended, and sets the decision it was admitted with
    /// against how it ended.
    fn record(&mut self, job: &Job, end: JobEnd, correct: Option<bool>) {
        if let (Some(p), Some(rung)) = (job.p_on_time, &job.rung)
            && matches!(end, JobEnd::OnTime | JobEnd::Late | JobEnd::Shed)
        {
            self.decisions
                .outcome(job.kind, rung.name(), p, end == JobEnd::OnTime);
            if end == JobEnd::OnTime && self.richer_would_fit(job) {
                self.decisions.degraded_needlessly();
            }
        }
        if let Some(rung) = &job.rung {
            let counts = &mut self.rung_counts[job.kind];
            // A rung's name is counted under a key made once, not one per job.
            match counts.get_mut(rung.name()) {
                Some(n) => *n += 1,
                None => {
                    counts.insert(rung.name().to_string(), 1);
                }
            }
        }
        if !self.keep_records {
            return;
        }
        self.records.push(JobRecord {
            kind: job.kind,
            origin: job.origin,
            release_nanos: job.release,
            deadline_nanos: job.deadline,
            importance: self.importance_of(job),
            rung: job.rung.as_ref().map(|r| r.name().to_string()),
            steps: job.steps,
            work_nanos: job.work,
            tokens: job.text.as_ref().map_or(0, TextProgress::tokens),
            end,
            correct,
        });
    }

    /// Whether a job that ran at a cheaper rung and ended in time would have ended in time
    /// at the richest too: the richest's mean cost in place of the work it ran, its waits
    /// between steps as they were.
    fn richer_would_fit(&mut self, job: &Job) -> bool {
        let richest = self.rungs_of_richest(job.kind);
        if job.rung.as_ref().is_none_or(|r| r.name() == richest) {
            return false;
        }
        let Some(end) = job.ended else {
            return false;
        };
        let richer = self.costs.job_dist(job.kind, &richest, end).mean();
        end.saturating_sub(job.work).saturating_add(richer) <= job.deadline
    }

    /// The figures of the decisions for `summary.json` at the end of the run.
    pub fn decisions_summary(&mut self, now: Nanos) -> mmsched_report::DecisionsSummary {
        self.decisions.settle(now);
        let mut s = self.decisions.summary();
        if self.rules.rungs != RungMode::Adaptive {
            return s;
        }
        // A class without rungs has no figures.
        for kind in Kind::all() {
            for f in self.rung_figures(kind, now) {
                let shadow = self.accuracy.shadow(kind, f.rung.name());
                s.rungs.push(mmsched_report::RungEstimate {
                    class: kind.as_str().to_string(),
                    rung: f.rung.name().to_string(),
                    p_right: f.estimate.p_right,
                    source: f.estimate.source.as_str().to_string(),
                    shadow_runs: u64::from(shadow.runs),
                    shadow_agreed: u64::from(shadow.agreed),
                    mean_cost_ms: if f.cost_known {
                        f.mean_cost as f64 / 1e6
                    } else {
                        f64::NAN
                    },
                    dominated: f.dominated,
                });
            }
        }
        s
    }

    /// Frees `kind`'s place for the next waiting job (every job that ended was admitted,
    /// but for one closed while waiting).
    fn release(&mut self, kind: Kind) {
        self.places[kind].free();
    }
}
