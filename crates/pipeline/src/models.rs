//! What the runtime asks of the models: the [`Work`] of one request, how many requests of a
//! kind can run at once, and the text model's limits. The loaded engines ([`Engines`]) are
//! the real models; tests of the runtime in virtual time give fakes ([`fake`]) that answer
//! at once, so its decisions can be checked without models.

use std::sync::mpsc::Sender;

use mmsched_core::rungs::{AsrRung, Rungs, VisionRung};
use mmsched_runtime::sched::Work;

use crate::engines::Engines;
use crate::jobs::{self, Output};
use crate::request::{Cancel, Input};
use crate::stats::Kind;

/// The quality rung a job runs at: one of the policy's rungs of its model, or one of the
/// rungs a model of the user's own declares.
#[derive(Debug, Clone, PartialEq)]
pub enum Rung {
    /// OCR at this detector input and line limit.
    Vision(VisionRung),
    /// Whisper over this encoder span.
    Asr(AsrRung),
    /// A model of the user's own at its rung of this name (its file and image size).
    Own(String),
}

impl Rung {
    /// The rung's name, as traces, results and the profile show it.
    pub fn name(&self) -> &str {
        match self {
            Rung::Vision(r) => &r.name,
            Rung::Asr(r) => &r.name,
            Rung::Own(name) => name,
        }
    }
}

/// One request's job, as the book orders it from the models.
#[derive(Debug)]
pub struct JobOrder {
    /// What to run.
    pub input: Input,
    /// The book's job number, for the outputs.
    pub tag: u64,
    /// Where each step sends its output.
    pub out: Sender<Output>,
    /// A text request yields at every token (off: the whole answer in one step).
    pub preemptible: bool,
    /// Set when the client no longer wants the answer.
    pub cancel: Cancel,
    /// The rung to run at (none: the model's richest default rung).
    pub rung: Option<Rung>,
    /// Run every step of the job in one dispatch (OCR beside a camera whose standing
    /// reservation is booked for whole frames).
    pub fused: bool,
    /// How many of the lines found to read is decided after detection (OCR; the rung's
    /// line limit is then not applied at detection).
    pub lines_later: bool,
    /// What the input shows or says, where the run knows it. Only a simulated model reads
    /// it ([`crate::simulate`]): the real ones read the input itself.
    pub truth: Option<crate::truth::Truth>,
}

/// How many jobs of a model of the user's own the book admits at once per loaded copy
/// ([`Models::capacity`]). Such a job takes a free copy at each step and holds none while
/// it waits, so a job can be admitted while another runs: it is then decided on arrival
/// and queued by its deadline. With one per copy, a frame's classifier waited in the
/// book until the previous frame's classifier ended, and by then the next frame's OCR
/// step, due later, held the one worker: in virtual time (`sim run`,
/// `scenarios/examples/own-model-rungs.toml`, seed 1) 186 of 600 were shed; with two, 3.
pub const OWN_JOBS_PER_COPY: usize = 2;

/// The models of a runtime. Each job's work sends its [`Output`] tagged with its job
/// number before its step returns (see [`crate::jobs`]).
pub trait Models: Send + Sync {
    /// Whether jobs of `kind` have a model (a kind without one is not run).
    fn has(&self, kind: Kind) -> bool;

    /// How many jobs of `kind` can run at once (sessions or pipelines loaded); the book
    /// keeps the rest waiting in arrival order.
    fn capacity(&self, kind: Kind) -> usize;

    /// The work of one request.
    fn work(&self, order: JobOrder) -> Box<dyn Work>;

    /// Tokens of `text` for the text model (`None` without one): a client checks a prompt
    /// against the context before it submits.
    fn count_tokens(&self, text: &str) -> Option<usize>;

    /// Longest sequence (prompt and answer) the text model holds, tokens (`None` without
    /// one).
    fn context_tokens(&self) -> Option<usize>;

    /// A chat's messages (role, content) written as the text model reads a chat: with
    /// its file's chat template (a model of the user's own that carries one); `None` where
    /// the model takes a plain transcript (the default).
    fn format_chat(
        &self,
        messages: &[(String, String)],
    ) -> Option<Result<String, mmsched_backends::llm::ChatTemplateError>> {
        let _ = messages;
        None
    }

    /// The name the text model is served under, where the user named it (a GGUF of their
    /// own); `None` for the default model.
    fn text_model_name(&self) -> Option<String> {
        None
    }

    /// The name the speech model is served under, where the user named it (a Whisper of
    /// their own); `None` for the default model.
    fn speech_model_name(&self) -> Option<String> {
        None
    }

    /// The rungs a model of the user's own declares for `kind`, richest first (none for a
    /// built-in kind, whose rungs are the policy's, or a model without rungs).
    fn own_rungs(&self, kind: Kind) -> Vec<String> {
        let _ = kind;
        Vec::new()
    }

    /// What a job of `kind` at `rung` (empty: a model without rungs) cost in the warm-up
    /// runs on this device (a model of the user's own, which no device profile knows), as
    /// a prior until its jobs are measured; `None` where there were none (the default).
    fn warm_up_cost(&self, kind: Kind, rung: &str) -> Option<mmsched_runtime::sched::cost::Prior> {
        let _ = (kind, rung);
        None
    }
}

impl Models for Engines {
    fn has(&self, kind: Kind) -> bool {
        match kind {
            Kind::Vision => !self.ocr.is_empty(),
            Kind::Vad => self.vad.is_some(),
            Kind::Asr => self.asr.is_some(),
            Kind::Llm => self.llm.is_some(),
            Kind::Model(_) => self.user_model(kind).is_some(),
        }
    }

    fn capacity(&self, kind: Kind) -> usize {
        match kind {
            Kind::Vision => self.ocr.len(),
            // Silero VAD carries its state from chunk to chunk; Whisper holds one
            // transcription's decoder state: one job at a time each.
            Kind::Vad | Kind::Asr => 1,
            Kind::Llm => self.llm.as_ref().map_or(0, |p| p.len()),
            Kind::Model(_) => self
                .user_model(kind)
                .map_or(0, |m| m.pool().len() * OWN_JOBS_PER_COPY),
        }
        .max(1)
    }

    fn work(&self, o: JobOrder) -> Box<dyn Work> {
        let defaults = Rungs::default();
        match o.input {
            Input::Frame(frame) => {
                let rung = match &o.rung {
                    Some(Rung::Vision(r)) => r,
                    _ => &defaults.vision()[0],
                };
                match self.ocr.is_empty() {
                    true => jobs::missing("OCR"),
                    false => {
                        let how = (o.fused, o.lines_later);
                        jobs::vision(self.ocr.clone(), frame, rung, how, o.tag, o.out)
                    }
                }
            }
            Input::Chunk { samples, .. } => match &self.vad {
                Some(vad) => jobs::vad(vad.clone(), samples, o.tag, o.out),
                None => jobs::missing("VAD"),
            },
            Input::Utterance(samples) => {
                let rung = match &o.rung {
                    Some(Rung::Asr(r)) => r,
                    _ => &defaults.asr()[0],
                };
                match &self.asr {
                    Some(asr) => jobs::asr(asr.clone(), samples, rung, o.tag, o.out),
                    None => jobs::missing("speech recognition"),
                }
            }
            Input::Prompt(prompt) => match &self.llm {
                Some(pool) => {
                    jobs::llm(pool.clone(), prompt, o.preemptible, o.cancel, o.tag, o.out)
                }
                None => jobs::missing("text generation"),
            },
            Input::Model { kind, input } => {
                let rung = match &o.rung {
                    Some(Rung::Own(name)) => Some(name.as_str()),
                    _ => None,
                };
                match self.user_model(kind).and_then(|m| m.rung(rung)) {
                    Some(r) => jobs::model(r.pool.clone(), kind.model_name(), input, o.tag, o.out),
                    None => jobs::missing(kind.model_name()),
                }
            }
        }
    }

    fn count_tokens(&self, text: &str) -> Option<usize> {
        self.llm.as_ref().map(|p| p.tokenizer().encode(text).len())
    }

    fn context_tokens(&self) -> Option<usize> {
        self.llm.as_ref().map(|p| p.max_seq_len())
    }

    fn format_chat(
        &self,
        messages: &[(String, String)],
    ) -> Option<Result<String, mmsched_backends::llm::ChatTemplateError>> {
        self.llm.as_ref()?.format_chat(messages)
    }

    fn text_model_name(&self) -> Option<String> {
        self.llm_name.clone()
    }

    fn speech_model_name(&self) -> Option<String> {
        self.asr_name.clone()
    }

    fn own_rungs(&self, kind: Kind) -> Vec<String> {
        self.user_model(kind)
            .map_or_else(Vec::new, crate::engines::UserModel::rung_names)
    }

    fn warm_up_cost(&self, kind: Kind, rung: &str) -> Option<mmsched_runtime::sched::cost::Prior> {
        let model = self.user_model(kind)?;
        let runs = &model.rungs.iter().find(|r| r.name == rung)?.warm_up_nanos;
        let mut sorted = runs.clone();
        sorted.sort_unstable();
        let p50 = *sorted.get(sorted.len() / 2)?;
        let worst = *sorted.last()?;
        Some(mmsched_runtime::sched::cost::Prior::new(
            p50,
            worst.max(p50),
        ))
    }
}

/// Models for tests in virtual time, here and in the crates built on the runtime (feature
/// `fakes`): they answer at once, and mmsched's executor on virtual lanes gives each step
/// its cost.
#[cfg(any(test, feature = "fakes"))]
pub mod fake {
    use std::collections::HashSet;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::mpsc::Sender;
    use std::sync::{Arc, Mutex, OnceLock};

    use mmsched_backends::ocr::OcrLine;
    use mmsched_core::policy::Policy;
    use mmsched_core::time::Nanos;
    use mmsched_runtime::sched::exec::MmschedExecutor;
    use mmsched_runtime::sched::lanes::standard_lanes;
    use mmsched_runtime::sched::virtual_time::{StepStart, VirtualClock, VirtualLanes};
    use mmsched_runtime::sched::{Executor, StepOutcome, TaskInfo, Work, WorkError};

    use super::{JobOrder, Models};
    use crate::jobs::Output;
    use crate::platform::mmsched_setup;
    use crate::request::{Finish, Input};
    use crate::stats::Kind;
    use crate::stop::StopFilter;

    const MS: Nanos = 1_000_000;

    /// How long one step of each kind takes on a virtual lane (text generation: per
    /// token).
    #[derive(Debug, Clone, Copy)]
    pub struct Costs {
        /// One OCR frame.
        pub vision: Nanos,
        /// One VAD chunk.
        pub vad: Nanos,
        /// One transcription.
        pub asr: Nanos,
        /// One generated token.
        pub llm_token: Nanos,
        /// Every fourth OCR frame takes this instead of `vision` (0: none does), so the
        /// frames' high percentile lies well above their mean, as on a real device.
        pub vision_slow: Nanos,
        /// A frame at any rung but the richest takes this instead of `vision` (0: as
        /// `vision`): a ladder whose cheaper rungs save time and read as right.
        pub vision_cheaper: Nanos,
    }

    /// Costs of the order of this machine's models.
    pub const QUICK: Costs = Costs {
        vision: 40 * MS,
        vad: MS,
        asr: 300 * MS,
        llm_token: 30 * MS,
        vision_slow: 0,
        vision_cheaper: 0,
    };

    /// The frames run at a cheaper rung, by tag, until their step is priced.
    type CheaperFrames = Arc<Mutex<HashSet<u64>>>;

    /// The text the fake OCR reads on every frame.
    pub const OCR_TEXT: &str = "STOP";
    /// The fake transcript of every utterance.
    pub const TRANSCRIPT: &str = "turn left at the next sign";
    /// The text of every fake token.
    pub const TOKEN: &str = " word";

    /// mmsched's executor on the standard layout of `workers`, its steps on virtual lanes
    /// on `clock` taking `costs` by kind, and fake models whose text steps tell the lanes
    /// how many tokens they made.
    pub fn virtual_mmsched(
        policy: &Policy,
        workers: usize,
        no_shedding: bool,
        clock: &VirtualClock,
        costs: Costs,
    ) -> (Box<dyn Executor>, FakeModels) {
        let setup = mmsched_setup(&standard_lanes(workers, false, &[]), false, no_shedding);
        let tokens_last_step = Arc::new(AtomicU32::new(1));
        let made = Arc::clone(&tokens_last_step);
        // The classes by kind, known once the executor has named them.
        let ids: Arc<OnceLock<[mmsched_core::arbiter::ClassId; 4]>> = Arc::default();
        let known = Arc::clone(&ids);
        let frames = AtomicU32::new(0);
        let cheaper = CheaperFrames::default();
        let at_cheaper = Arc::clone(&cheaper);
        let cost = Box::new(move |info: &TaskInfo, _: &StepStart| {
            let kind = known
                .get()
                .and_then(|ids| ids.iter().position(|&c| c == info.class));
            match kind {
                Some(0) => {
                    let n = frames.fetch_add(1, Ordering::SeqCst);
                    let cheap = at_cheaper
                        .lock()
                        .map(|mut m| m.remove(&info.tag))
                        .unwrap_or(false);
                    if cheap && costs.vision_cheaper > 0 {
                        costs.vision_cheaper
                    } else if costs.vision_slow > 0 && n % 4 == 3 {
                        costs.vision_slow
                    } else {
                        costs.vision
                    }
                }
                Some(1) => costs.vad,
                Some(2) => costs.asr,
                _ => costs.llm_token * Nanos::from(made.load(Ordering::SeqCst).max(1)),
            }
        });
        let lanes = VirtualLanes::new(setup.lanes.len(), clock.clone(), cost);
        let mut exec = MmschedExecutor::with_lanes(policy, &setup, clock.clone(), lanes)
            .expect("an executor on virtual lanes");
        let _ = ids.set(Kind::ALL.map(|k| exec.class(k.as_str())));
        let mut models = FakeModels::new(tokens_last_step);
        models.cheaper_frames = cheaper;
        (Box::new(exec), models)
    }

    /// Models that answer at once. The VAD hears speech where a chunk is loud; a text
    /// step makes one token when preemptible, else the whole answer, and says how many it
    /// made so the step's virtual cost can follow. A prompt containing `FAIL` fails as the
    /// engine's fault, an empty one as the input's.
    #[derive(Debug)]
    pub struct FakeModels {
        tokens_last_step: Arc<AtomicU32>,
        llm_sessions: usize,
        asr_steps: u32,
        /// OCR breaks after this many frames: every later frame fails (`u32::MAX`: never).
        ocr_breaks_after: u32,
        ocr_frames: Arc<AtomicU32>,
        /// Where a frame at a cheaper rung is noted for the lanes to price.
        cheaper_frames: CheaperFrames,
    }

    /// Why a fake OCR that broke mid-run fails its frames.
    pub const OCR_BROKEN: &str = "the fake OCR engine broke mid-run";

    impl FakeModels {
        /// Fakes that store each text step's token count in `tokens_last_step`, one text
        /// session.
        pub fn new(tokens_last_step: Arc<AtomicU32>) -> Self {
            Self {
                tokens_last_step,
                llm_sessions: 1,
                asr_steps: 1,
                ocr_breaks_after: u32::MAX,
                ocr_frames: Arc::default(),
                cheaper_frames: CheaperFrames::default(),
            }
        }

        /// OCR that reads `n` frames, then fails every frame after as the engine's fault
        /// (a device whose accelerator or model file broke while running).
        pub fn with_ocr_breaking_after(mut self, n: u32) -> Self {
            self.ocr_breaks_after = n;
            self
        }

        /// Transcriptions in `n` steps (each taking the lanes' `asr` cost), as Whisper runs
        /// in steps: its encoder in groups of layers, its decoder a token at a time.
        pub fn with_asr_steps(mut self, n: u32) -> Self {
            self.asr_steps = n.max(1);
            self
        }

        /// With `n` text sessions (requests that can run at once).
        pub fn with_llm_sessions(mut self, n: usize) -> Self {
            self.llm_sessions = n.max(1);
            self
        }
    }

    /// A transcription in `steps` steps. In more than one it runs as Whisper does: a
    /// `mel` step, then `encoder-layers` steps, each a kind of step the device profile
    /// may not know, and it hints its count as the real one does.
    struct FakeAsr {
        steps: u32,
        ran: u32,
        tag: u64,
        out: Sender<Output>,
    }

    impl Work for FakeAsr {
        fn step(&mut self) -> Result<StepOutcome, WorkError> {
            self.ran += 1;
            if self.ran < self.steps {
                return Ok(StepOutcome::Yield);
            }
            let (tag, text, timing) = (self.tag, TRANSCRIPT.into(), Default::default());
            done(&self.out, Output::Asr { tag, text, timing })
        }

        fn next_step(&self) -> Option<&'static str> {
            match (self.steps, self.ran) {
                (1, _) => None,
                (_, 0) => Some("mel"),
                _ => Some("encoder-layers"),
            }
        }

        fn steps_hint(&self) -> Option<u32> {
            (self.steps > 1).then_some(self.steps)
        }
    }

    fn done(out: &Sender<Output>, o: Output) -> Result<StepOutcome, WorkError> {
        let _ = out.send(o);
        Ok(StepOutcome::Finished)
    }

    fn line(text: &str) -> OcrLine {
        OcrLine {
            text: text.into(),
            score: 0.99,
            corners: [[0.0, 0.0], [8.0, 0.0], [8.0, 8.0], [0.0, 8.0]],
            box_score: 0.9,
        }
    }

    impl Models for FakeModels {
        fn has(&self, _kind: Kind) -> bool {
            true
        }

        fn capacity(&self, kind: Kind) -> usize {
            match kind {
                Kind::Vision => 2,
                Kind::Vad | Kind::Asr | Kind::Model(_) => 1,
                Kind::Llm => self.llm_sessions,
            }
        }

        fn work(&self, o: JobOrder) -> Box<dyn Work> {
            let (tag, out) = (o.tag, o.out);
            match o.input {
                Input::Frame(_) => {
                    let richest = mmsched_core::rungs::Rungs::default();
                    let richest = richest.vision().first().map(|r| r.name.as_str());
                    if o.rung.as_ref().is_some_and(|r| Some(r.name()) != richest)
                        && let Ok(mut m) = self.cheaper_frames.lock()
                    {
                        m.insert(tag);
                    }
                    let nth = self.ocr_frames.fetch_add(1, Ordering::SeqCst);
                    let broken = nth >= self.ocr_breaks_after;
                    Box::new(move || {
                        if broken {
                            return Err(WorkError::Engine {
                                model: "OCR",
                                source: OCR_BROKEN.into(),
                            });
                        }
                        let lines = vec![line(OCR_TEXT)];
                        let timing = Default::default();
                        done(&out, Output::Vision { tag, lines, timing })
                    })
                }
                Input::Chunk { samples, .. } => {
                    let n = samples.len().max(1) as f32;
                    let rms = (samples.iter().map(|s| s * s).sum::<f32>() / n).sqrt();
                    let prob = if rms > 0.01 { 0.95 } else { 0.02 };
                    Box::new(move || {
                        let timing = Default::default();
                        done(&out, Output::Vad { tag, prob, timing })
                    })
                }
                // No fake of a user's model: its job fails, naming it.
                Input::Model { kind, .. } => crate::jobs::missing(kind.model_name()),
                Input::Utterance(_) => Box::new(FakeAsr {
                    steps: self.asr_steps,
                    ran: 0,
                    tag,
                    out,
                }),
                Input::Prompt(p) => {
                    let made = Arc::clone(&self.tokens_last_step);
                    let mut left = p.max_tokens.max(1);
                    let mut filter = StopFilter::new(p.stops.clone());
                    let (preemptible, cancel) = (o.preemptible, o.cancel);
                    let fails = p.text.contains("FAIL");
                    let empty = p.text.trim().is_empty();
                    Box::new(move || {
                        if empty {
                            return Err(WorkError::Input {
                                model: "text generation",
                                source: "the prompt is empty".into(),
                            });
                        }
                        if fails {
                            return Err(WorkError::Engine {
                                model: "text generation",
                                source: "the fake model was told to fail".into(),
                            });
                        }
                        let n = if cancel.is_cancelled() {
                            0
                        } else if preemptible {
                            1
                        } else {
                            left
                        };
                        left -= n;
                        made.store(n, Ordering::SeqCst);
                        let (mut text, stopped) = filter.push(&TOKEN.repeat(n as usize));
                        let finish = if cancel.is_cancelled() {
                            Some(Finish::Cancelled)
                        } else if stopped {
                            Some(Finish::Stop)
                        } else if left == 0 {
                            text.push_str(&filter.flush());
                            Some(Finish::Length)
                        } else {
                            None
                        };
                        let _ = out.send(Output::Llm {
                            tag,
                            text,
                            tokens: n,
                            first_token_after_nanos: 0,
                            finish,
                            stages: Default::default(),
                            step: None,
                            nanos: 0,
                        });
                        Ok(if finish.is_some() {
                            StepOutcome::Finished
                        } else {
                            StepOutcome::Yield
                        })
                    })
                }
            }
        }

        fn count_tokens(&self, text: &str) -> Option<usize> {
            Some(text.split_whitespace().count())
        }

        fn context_tokens(&self) -> Option<usize> {
            Some(4096)
        }
    }
}
