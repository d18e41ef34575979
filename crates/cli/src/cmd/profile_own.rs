//! `profile --model NAME=FILE` / `--model-config FILE`: each model of your own measured on
//! this device into the profile at `--out` (its other sections kept; a new profile is
//! started if there is none): an entry per model, and the job cost of its class, which the
//! scheduler prices its jobs from until it has measured them itself.

use anyhow::{Context, Result};
use mmsched_backends::EngineOptions;
use mmsched_backends::onnx::{OnnxInput, OnnxModel, OnnxModelSpec};
use mmsched_backends::profile::{EntryLabel, MeasureOptions, profile_backend};
use mmsched_core::profile::DeviceProfile;
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
/// `options`; returns a line per model saying what one job costs.
pub fn measure(
    profile: &mut DeviceProfile,
    specs: &[OnnxModelSpec],
    frame: &mmsched_backends::RgbFrame,
    options: MeasureOptions,
) -> Result<Vec<String>> {
    let clock = MonotonicClock::new();
    let engine = EngineOptions::default();
    let mut lines = Vec::new();
    for spec in specs {
        let mut model = OnnxModel::load(spec, &engine)
            .with_context(|| format!("loading model `{}`", spec.name))?;
        let (input, input_label) = job_input(&model, frame);
        let label = EntryLabel {
            engine: engine.kind.as_str().to_string(),
            input: input_label.clone(),
            threads: 1,
        };
        let entry = profile_backend(&mut model, &label, &input, options, &clock, || {})
            .with_context(|| format!("measuring model `{}`", spec.name))?;
        profile.upsert(entry);
        let source = (
            spec.name.as_str(),
            engine.kind.as_str(),
            input_label.as_str(),
        );
        profile.derive_job(&spec.name, source, (1, 1), "one input");
        if let Some(job) = profile.job(&spec.name) {
            lines.push(format!(
                "{}: one job {:.2} ms P50, {:.2} ms P95 ({} on {}, {})",
                spec.name,
                job.p50_nanos as f64 / 1e6,
                job.p95_nanos as f64 / 1e6,
                engine.kind,
                input_label,
                spec.file.display()
            ));
        }
    }
    Ok(lines)
}
