//! The runtime as a library: one scheduler (mmsched's, on the standard worker layout)
//! driven by a [`Service`], and OCR jobs with deadlines submitted to it from this thread.
//!
//! ```sh
//! scenarios/examples/render-signs.sh /tmp/signs
//! cargo run --release -p mmsched-pipeline --example ocr_service -- /tmp/signs/*.png
//! ```
//!
//! Each image becomes one `vision` job due 500 ms after it is submitted; the example prints
//! the text read, the job's latency and whether it met its deadline, or that it was shed.

use std::sync::mpsc;
use std::time::Instant;

use mmsched_backends::{RgbFrame, run_timed};
use mmsched_core::Modality;
use mmsched_core::policy::Policy;
use mmsched_core::time::MonotonicClock;
use mmsched_pipeline::engines::{Engines, lock};
use mmsched_pipeline::inputs::Device;
use mmsched_pipeline::service::{JobEvent, JobRequest, Service};
use mmsched_runtime::sched::{SchedulerKind, StepOutcome, WorkError};
use mmsched_scenario::Scenario;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let images: Vec<String> = std::env::args().skip(1).collect();
    if images.is_empty() {
        return Err("give one or more PNG or JPEG files".into());
    }
    // The model set of a scenario (here the shipped one that uses every model).
    let scenario = Scenario::load("ar-glasses")?;
    let engines = Engines::load(&scenario, 2, |name| eprintln!("loading {name}"))?;
    let clock = Device::new();
    let exec = mmsched_pipeline::platform::executor(
        SchedulerKind::Mmsched,
        &Policy::default(),
        2,
        clock,
        false,
        false,
        false,
        #[cfg(target_os = "linux")]
        None,
    )?;
    let service = Service::start(exec, clock)?;
    let jobs = service.submitter();
    for (i, path) in images.iter().enumerate() {
        let frame = RgbFrame::load(std::path::Path::new(path))?;
        let ocr = engines.ocr[i % engines.ocr.len()].clone();
        let (tx, rx) = mpsc::channel();
        let submitted = Instant::now();
        let events = jobs.submit(JobRequest {
            class: "vision".into(),
            modality: Modality::Image,
            deadline_nanos: jobs.now_nanos() + 500_000_000,
            prior_cost_nanos: 100_000_000,
            importance: 0.8,
            work: Box::new(move || {
                let clock = MonotonicClock::new();
                let (lines, _) = run_timed(&mut *lock(&ocr), &frame, &clock)
                    .map_err(|e| WorkError(e.to_string()))?;
                let _ = tx.send(lines);
                Ok(StepOutcome::Finished)
            }),
        })?;
        match events.recv()? {
            JobEvent::Done { on_time, .. } => {
                let text: Vec<String> = rx.recv()?.into_iter().map(|l| l.text).collect();
                println!(
                    "{path}: {:?} in {} ms, {}",
                    text.join(" | "),
                    submitted.elapsed().as_millis(),
                    if on_time { "on time" } else { "late" }
                );
            }
            JobEvent::Shed => println!("{path}: shed (the deadline could not be met)"),
            other => println!("{path}: {other:?}"),
        }
    }
    Ok(())
}
