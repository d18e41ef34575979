//! The models a scenario needs, loaded once before the run starts.
//!
//! Every engine runs single-threaded: the scheduler owns the cores, so one job uses one
//! worker's core and two jobs on two workers never fight inside an engine's own pool.
//! Vision gets one OCR pipeline per worker (a frame may run on either); the VAD and Whisper
//! hold state, and the book gives each at most one job at a time; the LLM has a place per
//! request that may run at once ([`LlmPool`]: sequences of one batch decoder on llama.cpp,
//! else forks sharing one copy of the weights, each with its own KV cache).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use mmsched_backends::asr::{AsrEngine, AsrOptions, AsrSession, WhisperFiles, own_whisper};
use mmsched_backends::audio::AudioClip;
use mmsched_backends::llm::{LlmOptions, LlmSession};

pub use crate::sessions::{LlmLease, LlmPool};
use mmsched_backends::ocr::{DetInputSize, OcrConfig, OcrPipeline};
use mmsched_backends::onnx::{OnnxInput, OnnxModel, OnnxModelSpec, OnnxRungSpec};
use mmsched_backends::vad::{SileroVad, VadConfig};
use mmsched_backends::{Backend, BackendError, EngineOptions, RgbFrame, run_timed};
use mmsched_core::Modality;
use mmsched_core::time::{Clock, MonotonicClock};
use mmsched_models::{Artifact, ModelPaths};
use mmsched_scenario::{ModelKind, Scenario};

use crate::config::RunError;
use crate::stats::Kind;

/// Detector input of the camera stream: one fixed plan for the 16:9 frames (640×360 scaled
/// to 320×180, padded to a multiple of 32), small enough for 5+ fps on one core.
pub const CAMERA_DET_SIZE: DetInputSize = DetInputSize::Fixed {
    width: 320,
    height: 192,
};

/// A model shared between worker threads.
pub type Shared<T> = Arc<Mutex<T>>;

/// Locks a shared model; a worker that panicked mid-job leaves the model usable.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The loaded models (only those the scenario's streams use). A clone shares them.
#[derive(Default, Clone)]
pub struct Engines {
    /// One OCR pipeline per worker.
    pub ocr: Vec<Shared<OcrPipeline>>,
    /// Silero VAD.
    pub vad: Option<Shared<SileroVad>>,
    /// Whisper: tiny.en, or one of the user's own.
    pub asr: Option<Shared<AsrSession>>,
    /// The name a Whisper of the user's own is served under (`None`: the default tiny.en).
    pub asr_name: Option<String>,
    /// The text model (Gemma-3 270M, or a GGUF of the user's own), a place (a batch
    /// sequence or a session) per text request that may run at once.
    pub llm: Option<LlmPool>,
    /// The name a text model of the user's own was given (`None`: the default Gemma-3).
    pub llm_name: Option<String>,
    /// The user's own models, each with a copy per worker.
    pub user: Vec<UserModel>,
    /// Memory held by the loaded models, bytes (best estimate).
    pub memory_bytes: u64,
}

/// A model of the user's own, loaded: its class and, for each of its rungs, a copy per
/// worker (a job runs on whichever copy of its rung is free at its step).
#[derive(Clone)]
pub struct UserModel {
    /// Its class ([`Kind::Model`]).
    pub kind: Kind,
    /// How it was declared.
    pub spec: OnnxModelSpec,
    /// Its rungs, richest first: the declared ones, else the model as it is (one rung
    /// with an empty name).
    pub rungs: Vec<UserRung>,
}

/// One rung of a model of the user's own, loaded.
#[derive(Clone, Debug)]
pub struct UserRung {
    /// Its name (empty: the model declares no rungs).
    pub name: String,
    /// Its copies.
    pub pool: Vec<Shared<OnnxModel>>,
    /// How long each warm-up run of a whole job took on this device (the scheduler's
    /// prior for its cost until its jobs are measured).
    pub warm_up_nanos: Vec<mmsched_core::time::Nanos>,
}

impl UserModel {
    /// The copies at its richest rung.
    pub fn pool(&self) -> &[Shared<OnnxModel>] {
        self.rungs.first().map_or(&[], |r| &r.pool)
    }

    /// The rung named `name`, else the richest.
    pub fn rung(&self, name: Option<&str>) -> Option<&UserRung> {
        name.and_then(|n| self.rungs.iter().find(|r| r.name == n))
            .or(self.rungs.first())
    }

    /// The names of its declared rungs, richest first (none without rungs).
    pub fn rung_names(&self) -> Vec<String> {
        self.rungs
            .iter()
            .filter(|r| !r.name.is_empty())
            .map(|r| r.name.clone())
            .collect()
    }
}

impl std::fmt::Debug for UserModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UserModel")
            .field("kind", &self.kind)
            .field("spec", &self.spec)
            .field("rungs", &self.rung_names())
            .field("copies", &self.pool().len())
            .finish()
    }
}

impl std::fmt::Debug for Engines {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engines")
            .field("ocr", &self.ocr.len())
            .field("vad", &self.vad.is_some())
            .field("asr", &self.asr.is_some())
            .field("llm_sessions", &self.llm.as_ref().map_or(0, LlmPool::len))
            .field("user", &self.user)
            .field("memory_bytes", &self.memory_bytes)
            .finish()
    }
}

fn model_err(model: &'static str) -> impl Fn(BackendError) -> RunError {
    move |source| RunError::Model { model, source }
}

/// A model file of the scenario: absolute, or relative to the model cache.
fn scenario_file(scenario: &Scenario, kind: ModelKind, paths: &ModelPaths) -> Option<PathBuf> {
    let file = scenario
        .models()
        .iter()
        .find(|m| m.kind == kind)?
        .file
        .as_ref()?;
    let p = PathBuf::from(file);
    Some(if p.is_absolute() {
        p
    } else {
        paths.root().join(p)
    })
}

/// The Whisper of the user's own `scenario` names for its speech (`kind = "asr"`): a file or
/// directory that is not the fetched default's ([`mmsched_backends::asr::own`]).
fn own_whisper_file(scenario: &Scenario, paths: &ModelPaths) -> Option<PathBuf> {
    let p = scenario_file(scenario, ModelKind::Asr, paths)?;
    let mut defaults = [Artifact::WhisperModel, Artifact::WhisperQ8]
        .into_iter()
        .flat_map(|a| [paths.cached(a), paths.path_of(a)]);
    let default = defaults.any(|d| d == p || d.parent() == Some(p.as_path()));
    (!default).then_some(p)
}

/// A scenario's model of the user's own as the engine loads it: its file absolute or
/// relative to the model cache, its `image` and `classes` tables read as their specs.
fn own_model_spec(
    m: &mmsched_scenario::Model,
    paths: &ModelPaths,
) -> Result<OnnxModelSpec, RunError> {
    let bad = |field: &'static str, source: serde_json::Error| RunError::OwnModelSpec {
        name: m.name.clone(),
        field,
        source,
    };
    let read = |field: &'static str,
                t: &Option<mmsched_scenario::TomlTable>|
     -> Result<Option<serde_json::Value>, RunError> {
        t.as_ref()
            .map(|t| serde_json::to_value(t).map_err(|e| bad(field, e)))
            .transpose()
    };
    let image = read("image", &m.image)?
        .map(|v| serde_json::from_value(v).map_err(|e| bad("image", e)))
        .transpose()?;
    let classes = read("classes", &m.classes)?
        .map(|v| serde_json::from_value(v).map_err(|e| bad("classes", e)))
        .transpose()?;
    let detections = read("detections", &m.detections)?
        .map(|v| serde_json::from_value(v).map_err(|e| bad("detections", e)))
        .transpose()?;
    let in_cache = |file: &str| {
        let file = PathBuf::from(file);
        if file.is_absolute() {
            file
        } else {
            paths.root().join(file)
        }
    };
    let rungs = m
        .rungs
        .iter()
        .map(|r| OnnxRungSpec {
            name: r.name.clone(),
            file: r.file.as_deref().map(in_cache),
            size: r.size,
        })
        .collect();
    Ok(OnnxModelSpec {
        name: m.name.clone(),
        file: in_cache(m.file.as_deref().unwrap_or_default()),
        image,
        classes,
        detections,
        rungs,
    })
}

/// Starts hashing the cached files `kind` loads, each on a thread of its own, so the
/// checks of all the scenario's models run while the first ones load; every loader waits
/// for its own file's verdict before it reads the file
/// ([`mmsched_models::verify::verify_file`]). A missing file is left to the loader, which
/// names the fetch command; a user's own file has no pin.
fn begin_checks(paths: &ModelPaths, kind: ModelKind) {
    let asr_weights = match AsrOptions::default().engine {
        AsrEngine::F32 => Artifact::WhisperModel,
        AsrEngine::Ggml | AsrEngine::Q8 => Artifact::WhisperQ8,
    };
    let artifacts: &[Artifact] = match kind {
        ModelKind::Vision => &[Artifact::PpocrDet, Artifact::PpocrRec],
        ModelKind::Vad => &[Artifact::SileroVadOpenvino16k],
        ModelKind::Asr => &[
            asr_weights,
            Artifact::WhisperConfig,
            Artifact::WhisperTokenizer,
        ],
        ModelKind::Llm => &[Artifact::Gemma3],
        // A model of the user's own is checked as it loads (a cached artifact against its
        // pin; the user's own file has none).
        ModelKind::Onnx => &[],
    };
    for &a in artifacts {
        // The hash goes on by itself; the loader collects its verdict.
        let _ = paths.begin_check(a);
    }
}

/// Runs each copy of a model of the user's own a few times — on a camera-like frame if it
/// takes images, else on zeros of its inputs' shapes — keeping how long each run after the
/// first took: the device's own figure for a job of it.
fn warm_up_user(user: &mut UserModel, clock: &MonotonicClock) -> Result<(), RunError> {
    const RUNS: usize = 4;
    let fail = model_err(user.kind.model_name());
    for rung in &mut user.rungs {
        for copy in &rung.pool {
            let mut m = lock(copy);
            let input = match m.image_size() {
                Some(_) => OnnxInput::Image(warm_up_frame().map_err(&fail)?),
                None => m.zeros(),
            };
            for run in 0..RUNS {
                let t0 = clock.now_nanos();
                mmsched_backends::step::run_to_end(&mut *m, input.clone()).map_err(&fail)?;
                // The first run builds the engine's plan: not what a job costs.
                if run > 0 {
                    rung.warm_up_nanos
                        .push(clock.now_nanos().saturating_sub(t0));
                }
            }
        }
    }
    Ok(())
}

/// A cheaper rung of a model must be fed and read as its richest rung is: the same
/// inputs and outputs, by name and type (sizes may differ where the graph leaves them
/// free).
fn same_signature(richest: &OnnxModel, rung: &OnnxModel) -> Result<(), BackendError> {
    let names = |t: &[mmsched_backends::tensor::TensorInfo]| -> Vec<String> {
        t.iter()
            .map(|i| format!("`{}` {}", i.name, i.datatype))
            .collect()
    };
    for (what, a, b) in [
        ("inputs", names(richest.inputs()), names(rung.inputs())),
        ("outputs", names(richest.outputs()), names(rung.outputs())),
    ] {
        if a != b {
            return Err(BackendError::InvalidInput(format!(
                "its file has the {what} {} where the richest rung's has {}: a rung's file must take the same inputs and give the same outputs",
                b.join(", "),
                a.join(", ")
            )));
        }
    }
    Ok(())
}

/// One generated camera frame with text on it.
fn warm_up_frame() -> Result<RgbFrame, BackendError> {
    use mmsched_core::time::ManualClock;
    use mmsched_runtime::source::Source;
    use mmsched_runtime::source::camera::{Camera, CameraConfig};
    let (w, h) = crate::inputs::FRAME_SIZE;
    let mut camera = Camera::new(
        CameraConfig {
            width: w,
            height: h,
            ..CameraConfig::default()
        },
        ManualClock::new(0),
    )
    .map_err(|e| BackendError::InvalidInput(e.to_string()))?;
    let frame = camera
        .poll()
        .ok_or_else(|| BackendError::InvalidInput("the camera gave no frame".into()))?
        .payload;
    RgbFrame::new(frame.width, frame.height, frame.rgb)
}

/// The text model at `path` with `sessions` places; `own`: a file of the user's own,
/// tokenized by llama.cpp (any vocabulary, and the special tokens of its chat template).
fn load_text_pool(path: &Path, sessions: usize, own: bool) -> Result<LlmPool, RunError> {
    let what = if own {
        "LLM (your GGUF)"
    } else {
        "LLM (Gemma-3)"
    };
    let clock: Arc<dyn Clock + Send + Sync> = Arc::new(MonotonicClock::new());
    let options = LlmOptions {
        threads: 1,
        engine_tokenizer: own,
        ..LlmOptions::default()
    };
    let llm = LlmSession::load(path, options, clock).map_err(model_err(what))?;
    let mut pool = LlmPool::new(llm, sessions.max(1) - 1).map_err(model_err(what))?;
    pool.set_own(own);
    Ok(pool)
}

fn uses(scenario: &Scenario, kind: ModelKind) -> bool {
    let names: Vec<&str> = scenario
        .models()
        .iter()
        .filter(|m| m.kind == kind)
        .map(|m| m.name.as_str())
        .collect();
    scenario
        .streams()
        .iter()
        .any(|s| s.models.iter().any(|m| names.contains(&m.as_str())))
}

impl Engines {
    /// Loads the user's model `spec` with `copies` copies (one per worker) under a class of
    /// its own, named as the model: an error names the model, the file and the fix.
    pub fn load_user_model(
        &mut self,
        spec: &OnnxModelSpec,
        copies: usize,
    ) -> Result<Kind, RunError> {
        let kind = crate::classes::register(&spec.name, &spec.name, Modality::Image).map_err(
            |source| RunError::OwnModelClass {
                name: spec.name.clone(),
                source,
            },
        )?;
        if self.user_model(kind).is_some() {
            return Err(RunError::OwnModelClass {
                name: spec.name.clone(),
                source: crate::classes::ClassError::Twice(spec.name.clone()),
            });
        }
        let fail = model_err(kind.model_name());
        let each = spec.runs().map_err(&fail)?;
        let single = EngineOptions::default();
        let mut rungs: Vec<UserRung> = Vec::with_capacity(each.len());
        for (name, rung_spec) in each {
            // A model without rungs fails as the model; a rung's failure names the rung.
            let rung_err = |source| match name.is_empty() {
                true => fail(source),
                false => RunError::OwnModelRung {
                    name: spec.name.clone(),
                    rung: name.clone(),
                    source: Box::new(source),
                },
            };
            let mut pool = Vec::new();
            for _ in 0..copies.max(1) {
                let model = OnnxModel::load(&rung_spec, &single).map_err(rung_err)?;
                self.memory_bytes += Backend::memory_bytes(&model);
                pool.push(Arc::new(Mutex::new(model)));
            }
            if let (Some(richest), Some(this)) = (rungs.first(), pool.first()) {
                same_signature(&lock(&richest.pool[0]), &lock(this)).map_err(rung_err)?;
            }
            rungs.push(UserRung {
                name,
                pool,
                warm_up_nanos: Vec::new(),
            });
        }
        self.user.push(UserModel {
            kind,
            spec: spec.clone(),
            rungs,
        });
        Ok(kind)
    }

    /// The user's model of class `kind`.
    pub fn user_model(&self, kind: Kind) -> Option<&UserModel> {
        self.user.iter().find(|m| m.kind == kind)
    }

    /// Runs every loaded model once on a small input, so the first real job does not pay
    /// for plan building and first-touch memory (a cold OCR call costs several times a
    /// warm one).
    pub fn warm_up(&mut self) -> Result<(), RunError> {
        let clock = MonotonicClock::new();
        if !self.ocr.is_empty() {
            // A frame like the camera's, with text, so the recogniser warms up too.
            let frame = warm_up_frame().map_err(model_err("vision (PP-OCRv4)"))?;
            for ocr in &self.ocr {
                for _ in 0..2 {
                    run_timed(&mut *lock(ocr), &frame, &clock)
                        .map_err(model_err("vision (PP-OCRv4)"))?;
                }
            }
        }
        if let Some(vad) = &self.vad {
            let mut v = lock(vad);
            run_timed(&mut *v, &vec![0.0; 512], &clock).map_err(model_err("VAD (Silero)"))?;
            v.reset();
        }
        if let Some(asr) = &self.asr {
            let clip = AudioClip {
                samples: vec![0.0; 16_000],
                sample_rate_hz: 16_000,
            };
            run_timed(&mut *lock(asr), &clip, &clock).map_err(model_err("ASR (Whisper)"))?;
        }
        if let Some(llm) = &self.llm {
            llm.warm_up().map_err(model_err("LLM (Gemma-3)"))?;
        }
        for user in &mut self.user {
            warm_up_user(user, &clock)?;
        }
        Ok(())
    }

    /// Replaces the text model by the user's GGUF `path`, served as `name`, with places
    /// for `llm_sessions` text requests at once: any model llama.cpp reads, tokenized by
    /// llama.cpp, its chats written with the file's chat template.
    pub fn load_own_text_model(
        &mut self,
        name: &str,
        path: &Path,
        llm_sessions: usize,
    ) -> Result<(), RunError> {
        let pool = load_text_pool(path, llm_sessions, true)?;
        if let Some(old) = self.llm.take() {
            self.memory_bytes = self.memory_bytes.saturating_sub(old.memory_bytes());
        }
        self.memory_bytes += pool.memory_bytes();
        self.llm = Some(pool);
        self.llm_name = Some(name.to_string());
        Ok(())
    }

    /// Loads what `scenario` uses, with `ocr_instances` OCR pipelines and one text session.
    /// `on_load` is told each model's name before it loads (for a progress line).
    pub fn load(
        scenario: &Scenario,
        ocr_instances: usize,
        on_load: impl FnMut(&str),
    ) -> Result<Self, RunError> {
        Self::load_with(scenario, ocr_instances, 1, on_load)
    }

    /// Like [`Engines::load`], with places for `llm_sessions` text requests at once (each
    /// costs its KV cache, the weights are shared): a session each
    /// ([`LlmPool::to_batched`] turns them into sequences of one batch decoder).
    pub fn load_with(
        scenario: &Scenario,
        ocr_instances: usize,
        llm_sessions: usize,
        on_load: impl FnMut(&str),
    ) -> Result<Self, RunError> {
        Self::load_models(scenario, ocr_instances, Some(llm_sessions), on_load)
    }

    /// Like [`Engines::load_with`] but for the text model, which the caller loads itself
    /// (a GGUF of the user's own: [`Engines::load_own_text_model`]).
    pub fn load_without_text(
        scenario: &Scenario,
        ocr_instances: usize,
        on_load: impl FnMut(&str),
    ) -> Result<Self, RunError> {
        Self::load_models(scenario, ocr_instances, None, on_load)
    }

    /// The models `scenario` uses; the text model with `llm_sessions` places, or none.
    fn load_models(
        scenario: &Scenario,
        ocr_instances: usize,
        llm_sessions: Option<usize>,
        mut on_load: impl FnMut(&str),
    ) -> Result<Self, RunError> {
        let paths = ModelPaths::from_env();
        for kind in [
            ModelKind::Llm,
            ModelKind::Asr,
            ModelKind::Vision,
            ModelKind::Vad,
        ] {
            let own_asr = kind == ModelKind::Asr && own_whisper_file(scenario, &paths).is_some();
            if uses(scenario, kind)
                && (kind != ModelKind::Llm || llm_sessions.is_some())
                && !own_asr
            {
                begin_checks(&paths, kind);
            }
        }
        let single = EngineOptions::default();
        let mut e = Engines::default();
        if uses(scenario, ModelKind::Vision) {
            on_load("PP-OCRv4");
            let mut config = OcrConfig {
                det_size: CAMERA_DET_SIZE,
                engine: single,
                ..OcrConfig::default()
            };
            if let Some(det) = scenario_file(scenario, ModelKind::Vision, &paths) {
                config.det_path = det;
            }
            for _ in 0..ocr_instances.max(1) {
                let ocr = OcrPipeline::with_clock(config.clone(), Box::new(MonotonicClock::new()))
                    .map_err(model_err("vision (PP-OCRv4)"))?;
                e.memory_bytes += Backend::memory_bytes(&ocr);
                e.ocr.push(Arc::new(Mutex::new(ocr)));
            }
        }
        if uses(scenario, ModelKind::Vad) {
            on_load("Silero VAD");
            let mut config = VadConfig {
                engine: single,
                ..VadConfig::default()
            };
            if let Some(p) = scenario_file(scenario, ModelKind::Vad, &paths)
                .filter(|p| p.extension().is_some_and(|x| x == "onnx") && p != &config.path)
                .filter(|p| !p.ends_with("silero_vad.onnx"))
            {
                // The runtime needs the fixed-shape export; the dynamic one is listed in
                // scenarios for documentation and maps to the same cached model.
                config.path = p;
            }
            let vad = SileroVad::new(config).map_err(model_err("VAD (Silero)"))?;
            e.memory_bytes += vad.memory_bytes();
            e.vad = Some(Arc::new(Mutex::new(vad)));
        }
        if uses(scenario, ModelKind::Asr) {
            let files = match own_whisper_file(scenario, &paths) {
                Some(p) => {
                    on_load(&format!("Whisper from {}", p.display()));
                    own_whisper(&p, paths.root()).map_err(model_err("ASR (your Whisper)"))?
                }
                None => {
                    on_load("Whisper tiny.en");
                    WhisperFiles::from_cache(&paths).map_err(model_err("ASR (Whisper)"))?
                }
            };
            let asr = AsrSession::load(
                &files,
                &AsrOptions {
                    threads: 1,
                    ..AsrOptions::default()
                },
            )
            .map_err(model_err("ASR (Whisper)"))?;
            e.memory_bytes += asr.memory_bytes();
            e.asr = Some(Arc::new(Mutex::new(asr)));
        }
        if let Some(llm_sessions) = llm_sessions.filter(|_| uses(scenario, ModelKind::Llm)) {
            on_load("Gemma-3 270M");
            let pool = match scenario_file(scenario, ModelKind::Llm, &paths) {
                // A file of the user's own (not the fetched default): any GGUF llama.cpp
                // reads, tokenized by llama.cpp, chats written with its template.
                Some(p) if p.exists() => {
                    let own = p != paths.path_of(Artifact::Gemma3);
                    load_text_pool(&p, llm_sessions, own)?
                }
                _ => {
                    let path = paths
                        .require(Artifact::Gemma3)
                        .map_err(|m| RunError::Model {
                            model: "LLM (Gemma-3)",
                            source: BackendError::ModelMissing {
                                path: m.path.display().to_string(),
                            },
                        })?;
                    load_text_pool(&path, llm_sessions, false)?
                }
            };
            e.memory_bytes += pool.memory_bytes();
            e.llm = Some(pool);
        }
        for m in scenario
            .models()
            .iter()
            .filter(|m| m.kind == ModelKind::Onnx)
        {
            let fed = scenario
                .streams()
                .iter()
                .any(|s| s.models.contains(&m.name));
            if fed {
                on_load(&m.name);
                e.load_user_model(&own_model_spec(m, &paths)?, ocr_instances)?;
            }
        }
        Ok(e)
    }
}
