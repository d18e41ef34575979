//! `mmsched profile`: measure every available model on this device and write the device
//! latency profile (`$MMSCHED_HOME/profile.json`): the raw measurements per model, engine
//! and input size, the cost of one scheduler job per kind as `mmsched run` makes them
//! (`jobs`), which `run` takes its cost priors from and `sim` draws job costs from, and the
//! cost and accuracy of every quality rung the policy declares (`rungs`,
//! [`crate::cmd::profile_rungs`]).
//!
//! Adding a model is one call of [`Profiler::add`] with any `Backend`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use std::sync::Arc;

use mmsched_backends::asr::{AsrEngine, AsrOptions, AsrSession, WhisperFiles};
use mmsched_backends::audio::read_wav;
use mmsched_backends::llm::{LlmEngine, LlmJob, LlmOptions, LlmSession};
use mmsched_backends::ocr::{DetInputSize, OcrConfig, OcrPipeline, TextDetector, TextRecognizer};
use mmsched_backends::profile::{
    DeviceProfile, EntryLabel, MeasureOptions, profile_backend, this_device,
};
use mmsched_backends::rung_profile::RungRuns;
use mmsched_backends::vad::{SileroVad, VadConfig};
use mmsched_backends::{Backend, EngineKind, EngineOptions, paths};
use mmsched_core::rungs::Rungs;
use mmsched_core::time::{Clock, MonotonicClock};
use mmsched_models::{Artifact, ModelPaths};
use mmsched_pipeline::engines::CAMERA_DET_SIZE;

use crate::cmd::engine_arg::{EngineArg, ms};
use crate::cmd::profile_rungs;
use crate::cmd::synthetic::{audio_chunk, text_like_frame};
use crate::policy_file;

/// Arguments of `profile`.
#[derive(Debug, Args)]
pub struct ProfileArgs {
    /// Timed runs per model and input size (after the warm-up).
    #[arg(long, value_name = "N", default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    runs: u32,
    /// Untimed warm-up runs per model and input size.
    #[arg(long, value_name = "N", default_value_t = 3)]
    warmup: u32,
    /// Engines to profile (default: every engine compiled in whose runtime is present). The
    /// vision rungs run on the first one given, else on the engine `run` uses.
    #[arg(long, value_enum, value_delimiter = ',')]
    engine: Vec<EngineArg>,
    /// Where to write the profile (default `$MMSCHED_HOME/profile.json`).
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Print the profile as JSON on stdout too.
    #[arg(long)]
    json: bool,
    /// The policy whose quality rungs are measured (`[[rungs.vision]]`, `[[rungs.asr]]`;
    /// default: the built-in policy's rungs).
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
    /// Measure only the quality rungs, and replace them in the profile at --out (its other
    /// sections are kept; a new profile is started if there is none).
    #[arg(long)]
    rungs_only: bool,
    /// Measure only this model of your own, as NAME=FILE (an `.onnx` file; repeatable),
    /// into the profile at --out (its other sections are kept): an entry, and the job cost
    /// of its class, which `run` and `serve` price its jobs from until they have measured
    /// them. A model that takes images is measured on a camera frame, one fed tensors on
    /// zeros of its inputs' shapes.
    #[arg(long, value_name = "NAME=FILE")]
    model: Vec<String>,
    /// Measure only the models of your own declared in this TOML file (`[[models]]`, as for
    /// `serve --model-config`), as --model does; a model with `[[models.rungs]]` is measured
    /// at each rung, written under `rungs.NAME`.
    #[arg(long, value_name = "FILE")]
    model_config: Vec<PathBuf>,
}

/// Measures backends and collects the entries.
#[derive(Debug)]
pub struct Profiler {
    profile: DeviceProfile,
    options: MeasureOptions,
    clock: MonotonicClock,
    bar: ProgressBar,
}

impl Profiler {
    /// Measures `backend` on `input` and records it as (`engine`, `input_label`).
    pub fn add<B: Backend + ?Sized>(
        &mut self,
        backend: &mut B,
        engine: &str,
        input_label: &str,
        threads: u32,
        input: &B::Input,
    ) -> Result<()> {
        self.bar
            .set_message(format!("{} [{engine}, {input_label}]", backend.name()));
        let label = EntryLabel {
            engine: engine.to_string(),
            input: input_label.to_string(),
            threads,
        };
        let bar = self.bar.clone();
        let entry = profile_backend(backend, &label, input, self.options, &self.clock, || {
            bar.inc(1)
        })?;
        self.profile.upsert(entry);
        Ok(())
    }
}

/// Runs per (model, size) pair for the progress bar.
const JOBS_PER_ENGINE: u64 = 7;

/// Input label of the run's camera job.
const RUN_CAMERA_INPUT: &str = "640x360@320x192";

/// A frame as `mmsched run`'s camera renders it (the first generated sign scene).
fn run_camera_frame() -> Result<mmsched_backends::RgbFrame> {
    use mmsched_runtime::source::Source;
    use mmsched_runtime::source::camera::{
        Camera, CameraConfig, DEFAULT_FONT_PATH, Scenes, default_texts,
    };
    let clock = mmsched_sim::clock::VirtualClock::new(0);
    let (width, height) = mmsched_pipeline::inputs::FRAME_SIZE;
    let mut cam = Camera::new(
        CameraConfig {
            scenes: Scenes::Generated {
                texts: default_texts(),
                font_path: DEFAULT_FONT_PATH.into(),
            },
            width,
            height,
            fps: 5,
            frames_per_scene: 1,
            start_nanos: 0,
            limit: Some(1),
            ..CameraConfig::default()
        },
        &clock,
    )
    .context("rendering a camera frame")?;
    let f = cam.poll().context("the camera rendered no frame")?.payload;
    Ok(mmsched_backends::RgbFrame::new(f.width, f.height, f.rgb)?)
}

/// A job kind, the entry (model, engine, input) its cost comes from, the scale applied to
/// the entry's total, and what one job is.
type JobSource<'a> = (&'a str, (&'a str, &'a str, &'a str), (u64, u64), &'a str);

/// Fills the profile's `jobs` from its entries: one job of each kind as `mmsched run`
/// makes it. What cannot be derived (a model not measured) is left out and said.
fn derive_jobs(p: &mut DeviceProfile, engine: &str) -> Vec<String> {
    let mut missing = Vec::new();
    let jobs: [JobSource; 4] = [
        (
            "vision",
            ("ppocr-v4", engine, RUN_CAMERA_INPUT),
            (1, 1),
            "camera frame 640x360: PP-OCRv4 det 320x192 + rec per line",
        ),
        (
            "vad",
            ("silero-vad", engine, "chunk512"),
            (1, 1),
            "32 ms audio chunk",
        ),
        (
            "asr",
            ("whisper-tiny.en", AsrEngine::default().label(), "10s"),
            (1, 1),
            "one utterance (the run's 10 s recorded speech)",
        ),
        // One decode step: the 16-token generation's total over its 17 steps (prefill
        // and 16 tokens).
        (
            "llm",
            (
                "gemma3-270m",
                LlmEngine::default().as_str(),
                "prompt8+16tok",
            ),
            (1, 17),
            "one generation step (prefill or token)",
        ),
    ];
    for (kind, key, scale, unit) in jobs {
        if !p.derive_job(kind, key, scale, unit) {
            missing.push(format!("{kind} (no {}/{}/{} entry)", key.0, key.1, key.2));
        }
    }
    missing
}

fn profile_onnx_models(p: &mut Profiler, engine: EngineOptions) -> Result<()> {
    let name = engine.kind.as_str();
    let threads = u32::try_from(engine.threads).unwrap_or(1);
    let camera = text_like_frame(640, 480)?;
    for size in [
        DetInputSize::Fixed {
            width: 320,
            height: 320,
        },
        DetInputSize::Fixed {
            width: 640,
            height: 480,
        },
    ] {
        let mut det = TextDetector::new(OcrConfig {
            det_size: size,
            engine,
            ..OcrConfig::default()
        })?;
        p.add(&mut det, name, &size.label(), threads, &camera)?;
    }
    let mut rec = TextRecognizer::new(OcrConfig {
        engine,
        ..OcrConfig::default()
    })?;
    for width in [320u32, 640] {
        // A line whose aspect ratio gives a recogniser input exactly `width` wide.
        let line = text_like_frame(width, 48)?;
        p.add(&mut rec, name, &format!("w{width}"), threads, &line)?;
    }
    let mut ocr = OcrPipeline::new(OcrConfig {
        det_size: DetInputSize::Fixed {
            width: 320,
            height: 320,
        },
        engine,
        ..OcrConfig::default()
    })?;
    p.add(&mut ocr, name, "640x480@320x320", threads, &camera)?;
    // The run's camera job: a generated 640x360 sign frame through the detector plan the
    // run uses.
    let mut run_ocr = OcrPipeline::new(OcrConfig {
        det_size: CAMERA_DET_SIZE,
        engine,
        ..OcrConfig::default()
    })?;
    p.add(
        &mut run_ocr,
        name,
        RUN_CAMERA_INPUT,
        threads,
        &run_camera_frame()?,
    )?;
    let mut vad = SileroVad::new(VadConfig {
        engine,
        ..VadConfig::default()
    })?;
    p.add(&mut vad, name, "chunk512", threads, &audio_chunk())?;
    Ok(())
}

/// Jobs measured by [`profile_candle_models`].
const CANDLE_JOBS: u64 = 2;

/// Whisper on the 10 s `beckett.wav` clip and Gemma-3 generating 16 tokens greedily.
fn profile_candle_models(p: &mut Profiler) -> Result<()> {
    let paths = ModelPaths::from_env();
    let clip = read_wav(&paths.require(Artifact::Beckett)?)?;
    let mut asr = AsrSession::load(
        &WhisperFiles::from_cache(&paths)?,
        &AsrOptions {
            threads: 0,
            ..AsrOptions::default()
        },
    )
    .context("loading Whisper")?;
    let engine = asr.engine().label();
    p.add(&mut asr, engine, "10s", 0, &clip)?;
    let clock: Arc<dyn Clock + Send + Sync> = Arc::new(MonotonicClock::new());
    let mut llm = LlmSession::load(
        &paths.require(Artifact::Gemma3)?,
        LlmOptions::default(),
        clock,
    )
    .context("loading Gemma-3")?;
    let job = LlmJob {
        prompt: "The three primary colours of light are".to_string(),
        max_tokens: 16,
    };
    let engine = llm.engine().as_str();
    p.add(&mut llm, engine, "prompt8+16tok", 0, &job)?;
    Ok(())
}

/// The ONNX engine the vision rungs are measured on: the first asked for, else the one
/// `run` uses.
fn rung_engine(a: &ProfileArgs) -> EngineKind {
    a.engine
        .first()
        .map_or_else(EngineKind::preferred, |&e| e.into())
}

/// Measures the policy's rungs into `p`'s profile (vision on `engine`), and prints the
/// notes.
fn measure_rungs(p: &mut Profiler, rungs: &Rungs, engine: EngineKind, runs: u32) -> Result<()> {
    let engine = EngineOptions::new(engine);
    let runs = RungRuns {
        warmup: p.options.warmup_runs,
        jobs: runs,
    };
    for note in profile_rungs::measure(&mut p.profile, rungs, engine, runs, &p.bar)
        .context("measuring the quality rungs")?
    {
        p.bar.println(format!("note: {note}"));
    }
    Ok(())
}

/// `profile --rungs-only`: the rungs measured into the profile at `out` (or a new one).
fn run_rungs_only(a: &ProfileArgs, rungs: &Rungs, out: &Path) -> Result<ExitCode> {
    let profile = if out.exists() {
        mmsched_world::profile::Profile::load(out)?.doc
    } else {
        DeviceProfile::empty(this_device())
    };
    let runs = RungRuns {
        warmup: a.warmup,
        jobs: a.runs,
    };
    let mut p = Profiler {
        profile,
        options: MeasureOptions {
            warmup_runs: a.warmup,
            runs: a.runs,
        },
        clock: MonotonicClock::new(),
        bar: progress_bar(profile_rungs::progress_len(rungs, runs)),
    };
    measure_rungs(&mut p, rungs, rung_engine(a), a.runs)?;
    p.bar.finish_and_clear();
    save_and_print(a, &p.profile, out)
}

/// `profile --model`: the user's own models measured into the profile at `out` (or a new
/// one).
fn run_own_only(a: &ProfileArgs, out: &Path) -> Result<ExitCode> {
    let specs = crate::cmd::own_models::specs(&a.model, &a.model_config)?;
    let mut profile = if out.exists() {
        mmsched_world::profile::Profile::load(out)?.doc
    } else {
        DeviceProfile::empty(this_device())
    };
    let options = MeasureOptions {
        warmup_runs: a.warmup,
        runs: a.runs,
    };
    let lines =
        crate::cmd::profile_own::measure(&mut profile, &specs, &run_camera_frame()?, options)?;
    for line in lines {
        eprintln!("{line}");
    }
    save_and_print(a, &profile, out)
}

fn progress_bar(total: u64) -> ProgressBar {
    let bar = ProgressBar::new(total);
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} runs  {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar
}

/// Runs `profile`.
pub fn run(a: ProfileArgs) -> Result<ExitCode> {
    let policy = policy_file::load_or_default(a.policy.as_deref())?;
    let rungs = policy.rungs().clone();
    let engines: Vec<EngineKind> = if a.engine.is_empty() {
        [EngineKind::Tract, EngineKind::Ort]
            .into_iter()
            .filter(|k| k.is_compiled_in())
            .collect()
    } else {
        a.engine.iter().map(|&e| e.into()).collect()
    };
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| paths::mmsched_home().join("profile.json"));
    if a.rungs_only {
        return run_rungs_only(&a, &rungs, &out);
    }
    if !a.model.is_empty() || !a.model_config.is_empty() {
        return run_own_only(&a, &out);
    }
    let rung_runs = RungRuns {
        warmup: a.warmup,
        jobs: a.runs,
    };
    let total = (engines.len() as u64 * JOBS_PER_ENGINE + CANDLE_JOBS)
        * u64::from(a.warmup + a.runs)
        + profile_rungs::progress_len(&rungs, rung_runs);
    let bar = progress_bar(total);
    let mut p = Profiler {
        profile: DeviceProfile::empty(this_device()),
        options: MeasureOptions {
            warmup_runs: a.warmup,
            runs: a.runs,
        },
        clock: MonotonicClock::new(),
        bar,
    };
    let explicit = !a.engine.is_empty();
    for kind in engines.iter().copied() {
        match profile_onnx_models(&mut p, EngineOptions::new(kind)) {
            Ok(()) => {}
            // Asked for explicitly: fail. Picked by default: skip an engine whose runtime
            // library is missing, and say so.
            Err(e) if !explicit && kind == EngineKind::Ort => {
                p.bar.println(format!("skipping engine ort: {e:#}"));
            }
            Err(e) => return Err(e.context(format!("profiling with engine {kind}"))),
        }
    }
    profile_candle_models(&mut p).context("profiling Whisper and Gemma-3 (candle)")?;
    measure_rungs(&mut p, &rungs, rung_engine(&a), a.runs)?;
    p.bar.finish_and_clear();
    let engine = engines.first().map_or("tract", |k| k.as_str());
    p.profile.label = format!(
        "measured by mmsched profile on this device ({} runs after {} warm-up runs per model and input)",
        a.runs, a.warmup
    );
    for m in derive_jobs(&mut p.profile, engine) {
        eprintln!("warning: no job cost for {m}; sim and run fall back to nothing for that kind");
    }
    eprintln!("measuring co-running jobs (each kind alone, then beside another model)");
    let corun_engine = engines
        .first()
        .copied()
        .map_or_else(EngineOptions::default, EngineOptions::new);
    for m in crate::cmd::profile_corun::measure(
        &mut p.profile,
        corun_engine,
        run_camera_frame()?,
        a.runs,
    )
    .context("measuring co-running jobs")?
    {
        eprintln!("note: {m}");
    }
    save_and_print(&a, &p.profile, &out)
}

/// Writes the profile to `out` and prints it (as JSON with `--json`).
fn save_and_print(a: &ProfileArgs, profile: &DeviceProfile, out: &Path) -> Result<ExitCode> {
    mmsched_world::profile::Profile::save(profile, out)
        .with_context(|| format!("writing the profile to {}", out.display()))?;
    if a.json {
        outln!("{}", serde_json::to_string_pretty(profile)?);
    } else {
        outln!(
            "{:<14} {:<6} {:<16} {:>9} {:>9} {:>9} {:>9} {:>9}",
            "model",
            "engine",
            "input",
            "pre p50",
            "exec p50",
            "exec p95",
            "post p50",
            "total p99"
        );
        for e in &profile.entries {
            let s = &e.stages;
            outln!(
                "{:<14} {:<6} {:<16} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3}",
                e.model,
                e.engine,
                e.input,
                ms(s.pre.p50_nanos),
                ms(s.exec.p50_nanos),
                ms(s.exec.p95_nanos),
                ms(s.post.p50_nanos),
                ms(s.total.p99_nanos)
            );
        }
        outln!(
            "(milliseconds; {} runs each)  written to {}",
            a.runs,
            out.display()
        );
        profile_rungs::print(profile);
    }
    Ok(ExitCode::SUCCESS)
}
