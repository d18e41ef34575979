//! Co-running jobs, measured: how much longer a job of each kind takes while another model
//! computes on the other core (shared caches and memory), as the profile's
//! `corun_factor`. The simulator applies it while both compute lanes are busy.
//!
//! Each kind is timed alone and then beside a neighbour, back to back, on two pinned CPUs:
//! a camera frame beside Whisper, a Whisper utterance and a Gemma-3 generation beside
//! camera frames. The factor is the ratio of the medians (at least 1).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use anyhow::{Context, Result};
use mmsched_backends::asr::{AsrOptions, AsrSession, WhisperFiles};
use mmsched_backends::audio::read_wav;
use mmsched_backends::llm::{LlmJob, LlmOptions, LlmSession};
use mmsched_backends::ocr::{OcrConfig, OcrPipeline};
use mmsched_backends::profile::DeviceProfile;
use mmsched_backends::{EngineOptions, run_timed};
use mmsched_core::time::{Clock, MonotonicClock};
use mmsched_models::{Artifact, ModelPaths};
use mmsched_pipeline::engines::CAMERA_DET_SIZE;
use mmsched_runtime::platform::rt;

/// Something to run again and again: one inference.
type Job = Box<dyn FnMut() -> Result<()> + Send>;

/// Median of `runs` timed runs of `job` on `cpu` (after one warm-up), with `neighbour`
/// looping on `other_cpu` meanwhile if given.
fn median_nanos(
    job: &mut Job,
    runs: u32,
    cpu: usize,
    other_cpu: usize,
    neighbour: Option<&mut Job>,
) -> Result<u64> {
    std::thread::scope(|scope| {
        let stop = Arc::new(AtomicBool::new(false));
        let busy = neighbour.map(|n| {
            let stop = Arc::clone(&stop);
            scope.spawn(move || -> Result<()> {
                let _ = rt::pin_current(other_cpu);
                while !stop.load(Ordering::Relaxed) {
                    n()?;
                }
                Ok(())
            })
        });
        let timed = scope.spawn(|| -> Result<u64> {
            let _ = rt::pin_current(cpu);
            job()?;
            let mut t = Vec::with_capacity(runs as usize);
            for _ in 0..runs {
                let t0 = Instant::now();
                job()?;
                t.push(u64::try_from(t0.elapsed().as_nanos()).unwrap_or(u64::MAX));
            }
            t.sort_unstable();
            Ok(t[t.len() / 2])
        });
        let result = timed
            .join()
            .map_err(|_| anyhow::anyhow!("a timed run panicked"))?;
        stop.store(true, Ordering::Relaxed);
        if let Some(h) = busy {
            h.join()
                .map_err(|_| anyhow::anyhow!("the neighbour panicked"))??;
        }
        result
    })
}

fn ocr_job(engine: EngineOptions, frame: mmsched_backends::RgbFrame) -> Result<Job> {
    let mut ocr = OcrPipeline::new(OcrConfig {
        det_size: CAMERA_DET_SIZE,
        engine,
        ..OcrConfig::default()
    })?;
    let clock = MonotonicClock::new();
    Ok(Box::new(move || {
        run_timed(&mut ocr, &frame, &clock)?;
        Ok(())
    }))
}

fn asr_job(paths: &ModelPaths) -> Result<Job> {
    let clip = read_wav(&paths.require(Artifact::Beckett)?)?;
    let mut asr = AsrSession::load(
        &WhisperFiles::from_cache(paths)?,
        &AsrOptions {
            threads: 1,
            ..AsrOptions::default()
        },
    )
    .context("loading Whisper")?;
    let clock = MonotonicClock::new();
    Ok(Box::new(move || {
        run_timed(&mut asr, &clip, &clock)?;
        Ok(())
    }))
}

fn llm_job(paths: &ModelPaths) -> Result<Job> {
    let clock: Arc<dyn Clock + Send + Sync> = Arc::new(MonotonicClock::new());
    let mut llm = LlmSession::load(
        &paths.require(Artifact::Gemma3)?,
        LlmOptions {
            threads: 1,
            ..LlmOptions::default()
        },
        clock,
    )
    .context("loading Gemma-3")?;
    let job = LlmJob {
        prompt: "The three primary colours of light are".to_string(),
        max_tokens: 16,
    };
    let clock = MonotonicClock::new();
    Ok(Box::new(move || {
        run_timed(&mut llm, &job, &clock)?;
        Ok(())
    }))
}

/// Measures the co-run factors of `vision`, `asr` and `llm` into `profile.jobs` (kinds
/// present there only). Returns what could not be measured, to say.
pub fn measure(
    profile: &mut DeviceProfile,
    engine: EngineOptions,
    frame: mmsched_backends::RgbFrame,
    runs: u32,
) -> Result<Vec<String>> {
    let cpus = rt::available_cpus();
    let (Some(&a), Some(&b)) = (cpus.first(), cpus.get(1)) else {
        return Ok(vec![
            "co-run factors not measured: this process has one CPU".into(),
        ]);
    };
    // Both sides run pinned, each on its own CPU; where the OS refuses, say so and measure
    // nothing rather than a figure of unknown placement.
    let pinned = std::thread::scope(|s| {
        s.spawn(|| rt::pin_current(b))
            .join()
            .unwrap_or(rt::RtStatus::Failed {
                reason: "the probe thread panicked".into(),
            })
    });
    if !matches!(pinned, rt::RtStatus::Applied { .. }) {
        return Ok(vec![format!(
            "co-run factors not measured: a thread cannot be pinned ({pinned:?})"
        )]);
    }
    let paths = ModelPaths::from_env();
    let mut frames = ocr_job(engine, frame.clone())?;
    let mut frames_beside = ocr_job(engine, frame)?;
    let mut speech = asr_job(&paths)?;
    let mut speech_beside = asr_job(&paths)?;
    let mut text = llm_job(&paths)?;
    // Whisper's utterance takes seconds: fewer runs keep the profile short.
    let few = runs.clamp(3, 8);
    let factor = |job: &mut Job, beside: &mut Job, n: u32| -> Result<f64> {
        let alone = median_nanos(job, n, a, b, None)?;
        let shared = median_nanos(job, n, a, b, Some(beside))?;
        Ok((shared as f64 / alone.max(1) as f64).max(1.0))
    };
    let measured = [
        ("vision", factor(&mut frames, &mut speech_beside, runs)?),
        ("asr", factor(&mut speech, &mut frames_beside, few)?),
        ("llm", factor(&mut text, &mut frames_beside, runs)?),
    ];
    let mut missing = Vec::new();
    for (kind, f) in measured {
        match profile.jobs.get_mut(kind) {
            Some(cost) => cost.corun_factor = Some((f * 100.0).round() / 100.0),
            None => missing.push(format!("co-run factor of {kind}: no {kind} job cost")),
        }
    }
    Ok(missing)
}
