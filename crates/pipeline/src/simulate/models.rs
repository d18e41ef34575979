//! The simulated models of a run: the same [`Models`] the loaded engines are, so the book,
//! the jobs and the branches are the real ones; only what a step costs and what it answers
//! is drawn ([`super::draws`]). Each model but text generation runs through the real
//! generic job ([`crate::jobs::StepJob`]) as the engines do, with as many copies as a real
//! run loads: an OCR pipeline and a copy of each model of the user's own per worker, one
//! VAD, one Whisper session, one text session.

use std::sync::{Arc, Mutex};

use mmsched_backends::onnx::OnnxOutput;
use mmsched_backends::{BackendError, StepModel};
use mmsched_core::rungs::Rungs;
use mmsched_runtime::sched::Work;
use mmsched_scenario::{ModelKind, Scenario};

use super::draws::{SharedDraws, lock};
use super::ocr::{SimFrame, SimOcr};
use super::speech::{SimAsr, SimUtterance, SimVad};
use super::text::SimText;
use crate::engines::Shared;
use crate::jobs::{self, Output, StepJob};
use crate::models::{JobOrder, Models, OWN_JOBS_PER_COPY, Rung};
use crate::request::Input;
use crate::stats::Kind;
use crate::truth::Truth;

/// The longest prompt and answer the simulated text model holds, tokens (the default
/// model's context as `run` loads it).
const CONTEXT_TOKENS: usize = 2048;

/// A model of the user's own, simulated: one `run` step drawn from its job cost at the
/// job's rung. Its answer is empty, the same at every rung: with no truth and no measured
/// agreement, the simulator does not invent what a cheaper rung gets wrong.
#[derive(Debug)]
pub struct SimOwn {
    kind: Kind,
    draws: SharedDraws,
}

/// A simulated own-model job: its rung (none: the model declares none), and whether it
/// ran.
#[derive(Debug)]
pub struct SimOwnJob {
    rung: Option<String>,
    ran: bool,
}

impl StepModel for SimOwn {
    type Input = Option<String>;
    type Job = SimOwnJob;
    type Output = OnnxOutput;

    const FIRST_STEP: &'static str = "run";

    fn begin(&mut self, rung: Option<String>) -> Result<SimOwnJob, BackendError> {
        Ok(SimOwnJob { rung, ran: false })
    }

    fn next_step(job: &SimOwnJob) -> Option<&'static str> {
        (!job.ran).then_some(Self::FIRST_STEP)
    }

    fn step(&mut self, job: &mut SimOwnJob, _threads: usize) -> Result<(), BackendError> {
        let mut d = lock(&self.draws);
        let nanos = d.own_job(self.kind, job.rung.as_deref());
        d.leave(self.kind, nanos);
        job.ran = true;
        Ok(())
    }

    fn finish(&mut self, _job: SimOwnJob) -> Result<OnnxOutput, BackendError> {
        Ok(OnnxOutput {
            tensors: Vec::new(),
            classes: None,
            detections: None,
        })
    }
}

/// Every simulated model of a run.
#[derive(Debug)]
pub struct SimulatedModels {
    draws: SharedDraws,
    kinds: Vec<Kind>,
    ocr: Vec<Shared<SimOcr>>,
    vad: Shared<SimVad>,
    asr: Shared<SimAsr>,
    own: Vec<(Kind, Vec<Shared<SimOwn>>)>,
    /// Each model of the user's own with its rungs, richest first.
    own_rungs: Vec<(Kind, Vec<String>)>,
}

fn shared<T>(t: T) -> Shared<T> {
    Arc::new(Mutex::new(t))
}

impl SimulatedModels {
    /// The models `scenario` declares, on `workers` workers, drawing from `draws`. Its
    /// models of the user's own run under the classes registered for them
    /// ([`crate::classes::register`], as [`super::simulate`] does first); one without is
    /// left out.
    pub fn new(scenario: &Scenario, workers: usize, draws: SharedDraws) -> Self {
        let mut kinds = Vec::new();
        let mut own = Vec::new();
        let mut own_rungs = Vec::new();
        for m in scenario.models() {
            let Some(kind) = super::class_of(m) else {
                continue;
            };
            if m.kind == ModelKind::Onnx {
                let copies = (0..workers.max(1))
                    .map(|_| {
                        shared(SimOwn {
                            kind,
                            draws: Arc::clone(&draws),
                        })
                    })
                    .collect();
                own.push((kind, copies));
                own_rungs.push((kind, m.rungs.iter().map(|r| r.name.clone()).collect()));
            }
            kinds.push(kind);
        }
        let ocr = (0..workers.max(1))
            .map(|_| {
                shared(SimOcr {
                    draws: Arc::clone(&draws),
                })
            })
            .collect();
        Self {
            vad: shared(SimVad::new(Arc::clone(&draws))),
            asr: shared(SimAsr {
                draws: Arc::clone(&draws),
            }),
            draws,
            kinds,
            ocr,
            own,
            own_rungs,
        }
    }

    /// The draws the models and the lanes share.
    pub fn draws(&self) -> &SharedDraws {
        &self.draws
    }
}

/// The rungs a job runs at by default: the policy's richest.
fn richest() -> Rungs {
    Rungs::default()
}

impl Models for SimulatedModels {
    fn has(&self, kind: Kind) -> bool {
        self.kinds.contains(&kind)
    }

    fn capacity(&self, kind: Kind) -> usize {
        match kind {
            Kind::Vision => self.ocr.len(),
            Kind::Vad | Kind::Asr | Kind::Llm => 1,
            Kind::Model(_) => self
                .own
                .iter()
                .find(|(k, _)| *k == kind)
                .map_or(1, |(_, c)| c.len() * OWN_JOBS_PER_COPY),
        }
    }

    fn work(&self, o: JobOrder) -> Box<dyn Work> {
        let (tag, out) = (o.tag, o.out);
        match o.input {
            Input::Frame(_) => {
                let rung = match o.rung {
                    Some(Rung::Vision(r)) => r,
                    _ => richest().vision()[0].clone(),
                };
                let lines = match o.truth {
                    Some(Truth::Lines(lines)) => lines,
                    _ => vec!["UNLABELLED".to_string()],
                };
                let frame = SimFrame {
                    lines,
                    rung,
                    lines_later: o.lines_later && !o.fused,
                };
                Box::new(StepJob::new(
                    self.ocr.clone(),
                    "OCR",
                    frame,
                    o.fused,
                    Box::new(move |lines, timing| Output::Vision { tag, lines, timing }),
                    out,
                ))
            }
            Input::Chunk { samples, .. } => Box::new(StepJob::new(
                vec![Arc::clone(&self.vad)],
                "VAD",
                samples,
                true,
                Box::new(move |prob, timing| Output::Vad { tag, prob, timing }),
                out,
            )),
            Input::Utterance(samples) => {
                let rung = match o.rung {
                    Some(Rung::Asr(r)) => r,
                    _ => richest().asr()[0].clone(),
                };
                let said = match o.truth {
                    Some(Truth::Transcript(t)) => Some(t),
                    _ => None,
                };
                let utterance = SimUtterance {
                    seconds: samples.len() as f64 / 16_000.0,
                    said,
                    rung,
                };
                Box::new(StepJob::new(
                    vec![Arc::clone(&self.asr)],
                    "speech recognition",
                    utterance,
                    false,
                    Box::new(move |text: String, timing| Output::Asr { tag, text, timing }),
                    out,
                ))
            }
            Input::Prompt(prompt) => Box::new(SimText::new(
                Arc::clone(&self.draws),
                prompt,
                (o.preemptible, o.cancel),
                tag,
                out,
            )),
            Input::Model { kind, .. } => match self.own.iter().find(|(k, _)| *k == kind) {
                Some((_, copies)) => Box::new(StepJob::new(
                    copies.clone(),
                    kind.model_name(),
                    match o.rung {
                        Some(Rung::Own(name)) => Some(name),
                        _ => None,
                    },
                    false,
                    Box::new(move |output, timing| Output::Model {
                        tag,
                        output,
                        timing,
                    }),
                    out,
                )),
                None => jobs::missing(kind.model_name()),
            },
        }
    }

    fn own_rungs(&self, kind: Kind) -> Vec<String> {
        self.own_rungs
            .iter()
            .find(|(k, _)| *k == kind)
            .map_or_else(Vec::new, |(_, r)| r.clone())
    }

    fn count_tokens(&self, text: &str) -> Option<usize> {
        self.has(Kind::Llm)
            .then(|| (text.split_whitespace().count() * 4).div_ceil(3))
    }

    fn context_tokens(&self) -> Option<usize> {
        self.has(Kind::Llm).then_some(CONTEXT_TOKENS)
    }
}
