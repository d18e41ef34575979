//! `profile --model NAME=FILE` / `--model-config FILE`: each model of your own measured on
//! this device into the profile at `--out` (its other sections kept; a new profile is
//! started if there is none): an entry per model (per rung, for a model with rungs), the
//! job cost of its class, and each rung's cost under `rungs.NAME`, which the scheduler
//! prices its jobs from until it has measured them itself.

use anyhow::{Context, Result};
use mmsched_backends::EngineOptions;
use mmsched_backends::onnx::{OnnxInput, OnnxModel, OnnxModelSpec};
use mmsched_backends::profile::{EntryLabel, MeasureOptions, profile_backend};
use mmsched_core::profile::{DeviceProfile, Percentiles, RungAccuracy, RungProfile, StepCost};
use mmsched_core::time::MonotonicClock;

/// What one job of a model of your own is measured on: a camera frame for a model that
/// takes images, else zeros of its inputs' shapes (a free dimension as 1).
fn job_input(model: &OnnxModel, frame: &mmsched_backends::RgbFrame) -> (OnnxInput, String) {
    if let Some((w, h)) = model.image_size() {
        let label = format!("{}x{}@{w}x{h}", frame.width(), frame.height());
        return (OnnxInput::Image(frame.clone()), label);
    }
    let label = model
        .inputs()
        .iter()
        .map(|i| i.shape_text())
        .collect::<Vec<_>>()
        .join("+");
    (model.zeros(), format!("zeros {label}"))
}

/// Measures each of `specs` into `profile` on `frame` (the run's camera frame) with
/// `options`: the model as declared, or each of its rungs (the class's job cost from the
/// richest, each rung's cost under `rungs.NAME`); returns a line per model and rung saying
/// what one job costs.
pub fn measure(
    profile: &mut DeviceProfile,
    specs: &[OnnxModelSpec],
    frame: &mmsched_backends::RgbFrame,
    options: MeasureOptions,
) -> Result<Vec<String>> {
    let mut lines = Vec::new();
    for spec in specs {
        let mut measured = Vec::new();
        for (i, (name, rung)) in spec.runs()?.iter().enumerate() {
            let (mut entry, mut label) = measure_one(rung, frame, options)?;
            let mut what = spec.name.clone();
            if !name.is_empty() {
                label = format!("{label} rung {name}");
                what = format!("{what} rung {name}");
            }
            entry.input = label.clone();
            let engine = entry.engine.clone();
            let total = entry.stages.total;
            profile.upsert(entry);
            // The class's job cost is the richest rung's.
            if i == 0 {
                profile.derive_job(
                    &spec.name,
                    (&spec.name, &engine, &label),
                    (1, 1),
                    "one input",
                );
            }
            lines.push(cost_line(&what, &total, &engine, &label, rung));
            if !name.is_empty() {
                measured.push(rung_profile(name, rung, &engine, options, total));
            }
        }
        if !measured.is_empty() {
            profile.rungs.insert(spec.name.clone(), measured);
        }
    }
    Ok(lines)
}

/// One model (or one rung of it) loaded and timed on its job input.
fn measure_one(
    spec: &OnnxModelSpec,
    frame: &mmsched_backends::RgbFrame,
    options: MeasureOptions,
) -> Result<(mmsched_core::profile::ProfileEntry, String)> {
    let clock = MonotonicClock::new();
    let engine = EngineOptions::default();
    let mut model = OnnxModel::load(spec, &engine)
        .with_context(|| format!("loading model `{}` ({})", spec.name, spec.file.display()))?;
    let (input, input_label) = job_input(&model, frame);
    let label = EntryLabel {
        engine: engine.kind.as_str().to_string(),
        input: input_label.clone(),
        threads: 1,
    };
    let entry = profile_backend(&mut model, &label, &input, options, &clock, || {})
        .with_context(|| format!("measuring model `{}`", spec.name))?;
    Ok((entry, input_label))
}

/// A rung of a model of your own as the profile keeps it: its one `run` step's cost; no
/// accuracy (no truth is known: what a cheaper rung gives up is measured in runs, by
/// comparing its answers with the richest rung's).
fn rung_profile(
    name: &str,
    spec: &OnnxModelSpec,
    engine: &str,
    options: MeasureOptions,
    total: Percentiles,
) -> RungProfile {
    let size = spec
        .image
        .as_ref()
        .and_then(|i| i.size)
        .map_or(String::new(), |[w, h]| format!(", size={w}x{h}"));
    RungProfile {
        name: name.to_string(),
        params: format!("file={}{size}", spec.file.display()),
        engine: engine.to_string(),
        threads: 1,
        jobs: options.runs,
        job: total,
        steps: [(
            mmsched_backends::onnx::RUN_STEP.to_string(),
            StepCost {
                per_job: 1.0,
                unit: "one input".into(),
                stats: total,
            },
        )]
        .into_iter()
        .collect(),
        accuracy: RungAccuracy {
            inputs: "no truth known: agreement with the richest rung is measured in runs".into(),
            ..RungAccuracy::default()
        },
    }
}

fn cost_line(
    what: &str,
    cost: &Percentiles,
    engine: &str,
    input_label: &str,
    spec: &OnnxModelSpec,
) -> String {
    format!(
        "{what}: one job {:.2} ms P50, {:.2} ms P95 ({engine} on {input_label}, {})",
        cost.p50_nanos as f64 / 1e6,
        cost.p95_nanos as f64 / 1e6,
        spec.file.display()
    )
}
