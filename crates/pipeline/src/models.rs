//! What the run loop asks of the models: the [`Work`] of one job per kind. The loaded
//! engines ([`Engines`]) are the real models; a test of the loop in virtual time gives
//! fakes that answer at once, so the loop's decisions can be checked without models.

use std::sync::mpsc::Sender;

use mmsched_backends::RgbFrame;
use mmsched_runtime::sched::Work;

use crate::engines::Engines;
use crate::jobs::{self, Output};
use crate::stats::Kind;

/// The models of a run. Each job's work sends its [`Output`] tagged `tag` on `out`
/// before its step returns (see [`crate::jobs`]).
pub trait Models: Send {
    /// Whether jobs of `kind` have a model (a kind without one is not run).
    fn has(&self, kind: Kind) -> bool;

    /// OCR on one frame.
    fn vision(&self, frame: RgbFrame, tag: u64, out: Sender<Output>) -> Box<dyn Work>;

    /// Voice activity in one chunk of 16 kHz samples.
    fn vad(&self, chunk: Vec<f32>, tag: u64, out: Sender<Output>) -> Box<dyn Work>;

    /// The transcript of one utterance of 16 kHz samples.
    fn asr(&self, samples: Vec<f32>, tag: u64, out: Sender<Output>) -> Box<dyn Work>;

    /// An answer of at most `max_tokens` to `prompt`: one token per step when
    /// `preemptible`, else the whole answer in one step.
    fn llm(
        &self,
        prompt: String,
        max_tokens: u32,
        preemptible: bool,
        tag: u64,
        out: Sender<Output>,
    ) -> Box<dyn Work>;
}

impl Models for Engines {
    fn has(&self, kind: Kind) -> bool {
        match kind {
            Kind::Vision => !self.ocr.is_empty(),
            Kind::Vad => self.vad.is_some(),
            Kind::Asr => self.asr.is_some(),
            Kind::Llm => self.llm.is_some(),
        }
    }

    fn vision(&self, frame: RgbFrame, tag: u64, out: Sender<Output>) -> Box<dyn Work> {
        jobs::vision(self.ocr.clone(), frame, tag, out)
    }

    fn vad(&self, chunk: Vec<f32>, tag: u64, out: Sender<Output>) -> Box<dyn Work> {
        match &self.vad {
            Some(vad) => jobs::vad(vad.clone(), chunk, tag, out),
            None => jobs::missing("VAD", tag, out),
        }
    }

    fn asr(&self, samples: Vec<f32>, tag: u64, out: Sender<Output>) -> Box<dyn Work> {
        match &self.asr {
            Some(asr) => jobs::asr(asr.clone(), samples, tag, out),
            None => jobs::missing("speech recognition", tag, out),
        }
    }

    fn llm(
        &self,
        prompt: String,
        max_tokens: u32,
        preemptible: bool,
        tag: u64,
        out: Sender<Output>,
    ) -> Box<dyn Work> {
        match &self.llm {
            Some(llm) => jobs::llm(llm.clone(), prompt, max_tokens, preemptible, tag, out),
            None => jobs::missing("text generation", tag, out),
        }
    }
}

/// Models for tests of the loops in virtual time.
#[cfg(test)]
pub(crate) mod fake {
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::mpsc::Sender;
    use std::sync::{Arc, OnceLock};

    use mmsched_backends::RgbFrame;
    use mmsched_core::policy::Policy;
    use mmsched_core::time::Nanos;
    use mmsched_runtime::sched::exec::MmschedExecutor;
    use mmsched_runtime::sched::lanes::standard_lanes;
    use mmsched_runtime::sched::virtual_time::{VirtualClock, VirtualLanes};
    use mmsched_runtime::sched::{Executor, StepOutcome, TaskInfo, Work, WorkError};

    use super::Models;
    use crate::jobs::Output;
    use crate::platform::mmsched_setup;
    use crate::stats::Kind;

    const MS: Nanos = 1_000_000;

    /// How long one step of each kind takes on a virtual lane (text generation: per
    /// token).
    #[derive(Debug, Clone, Copy)]
    pub(crate) struct Costs {
        pub(crate) vision: Nanos,
        pub(crate) vad: Nanos,
        pub(crate) asr: Nanos,
        pub(crate) llm_token: Nanos,
    }

    /// Costs of the order of this machine's models.
    pub(crate) const QUICK: Costs = Costs {
        vision: 40 * MS,
        vad: MS,
        asr: 300 * MS,
        llm_token: 30 * MS,
    };

    /// mmsched's executor on the standard layout of `workers`, its steps on virtual lanes
    /// on `clock` taking `costs` by kind, and the fake models whose text steps tell the
    /// lanes how many tokens they made.
    pub(crate) fn virtual_mmsched(
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
        let cost = Box::new(move |info: &TaskInfo| {
            let kind = known
                .get()
                .and_then(|ids| ids.iter().position(|&c| c == info.class));
            match kind {
                Some(0) => costs.vision,
                Some(1) => costs.vad,
                Some(2) => costs.asr,
                _ => costs.llm_token * Nanos::from(made.load(Ordering::SeqCst)),
            }
        });
        let lanes = VirtualLanes::new(setup.lanes.len(), clock.clone(), cost);
        let mut exec = MmschedExecutor::with_lanes(policy, &setup, clock.clone(), lanes)
            .expect("an executor on virtual lanes");
        let _ = ids.set(Kind::ALL.map(|k| exec.class(k.as_str())));
        (Box::new(exec), FakeModels::new(tokens_last_step))
    }

    /// Models that answer at once. The VAD hears speech where a chunk is loud; a text step
    /// makes one token when preemptible, else the whole answer, and says how many it made so
    /// the step's virtual cost can follow.
    pub(crate) struct FakeModels {
        tokens_last_step: Arc<AtomicU32>,
    }

    impl FakeModels {
        /// Fakes that store each text step's token count in `tokens_last_step`.
        pub(crate) fn new(tokens_last_step: Arc<AtomicU32>) -> Self {
            Self { tokens_last_step }
        }
    }

    fn done(out: &Sender<Output>, o: Output) -> Result<StepOutcome, WorkError> {
        let _ = out.send(o);
        Ok(StepOutcome::Finished)
    }

    impl Models for FakeModels {
        fn has(&self, _kind: Kind) -> bool {
            true
        }

        fn vision(&self, _frame: RgbFrame, tag: u64, out: Sender<Output>) -> Box<dyn Work> {
            Box::new(move || {
                done(
                    &out,
                    Output::Vision {
                        tag,
                        text: "STOP".into(),
                        lines: vec!["STOP".into()],
                        timing: Default::default(),
                    },
                )
            })
        }

        fn vad(&self, chunk: Vec<f32>, tag: u64, out: Sender<Output>) -> Box<dyn Work> {
            let rms = (chunk.iter().map(|s| s * s).sum::<f32>() / chunk.len().max(1) as f32).sqrt();
            let prob = if rms > 0.01 { 0.95 } else { 0.02 };
            Box::new(move || {
                done(
                    &out,
                    Output::Vad {
                        tag,
                        prob,
                        timing: Default::default(),
                    },
                )
            })
        }

        fn asr(&self, _samples: Vec<f32>, tag: u64, out: Sender<Output>) -> Box<dyn Work> {
            Box::new(move || {
                done(
                    &out,
                    Output::Asr {
                        tag,
                        text: "turn left at the next sign".into(),
                        timing: Default::default(),
                    },
                )
            })
        }

        fn llm(
            &self,
            _prompt: String,
            max_tokens: u32,
            preemptible: bool,
            tag: u64,
            out: Sender<Output>,
        ) -> Box<dyn Work> {
            let made = Arc::clone(&self.tokens_last_step);
            let mut left = max_tokens.max(1);
            Box::new(move || {
                let n = if preemptible { 1 } else { left };
                left -= n;
                made.store(n, Ordering::SeqCst);
                let _ = out.send(Output::Llm {
                    tag,
                    token: Some(" word".repeat(n as usize)),
                    tokens: n,
                    first_token_after_nanos: 0,
                    done: left == 0,
                    stages: Default::default(),
                    nanos: 0,
                });
                Ok(if left == 0 {
                    StepOutcome::Finished
                } else {
                    StepOutcome::Yield
                })
            })
        }
    }
}
