//! `mmsched profile`'s quality rungs: every rung the policy declares, its cost (per job and
//! per kind of step, one thread) and its accuracy on inputs whose truth is known, written to
//! the profile's `rungs` section.
//!
//! - vision: generated signs as the camera source renders them (DejaVu Sans on a shaded
//!   background, 640×360): the camera's default texts and signs of 3 to 5 lines, each
//!   scored by its rendered lines;
//! - speech: the shipped `beckett.wav` clip and sentences spoken by `espeak-ng` (when it
//!   is installed: `scripts/setup.sh` installs it), each scored by its words.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};
use indicatif::ProgressBar;
use mmsched_backends::asr::{AsrOptions, AsrSession, WhisperFiles};
use mmsched_backends::audio::{AudioClip, SAMPLE_RATE_HZ, read_wav, resample};
use mmsched_backends::ocr::{OcrConfig, OcrPipeline};
use mmsched_backends::profile::DeviceProfile;
use mmsched_backends::rung_profile::{
    RungRuns, SignSample, SpeechSample, measure_asr_rung, measure_vision_rung,
};
use mmsched_backends::{EngineOptions, RgbFrame};
use mmsched_core::profile::RungProfile;
use mmsched_core::rungs::Rungs;
use mmsched_core::time::MonotonicClock;
use mmsched_models::{Artifact, ModelPaths};

use crate::cmd::engine_arg::ms;

/// Signs of 3 to 5 short lines, as a frame folder of notices would hold (each line fits the
/// camera's 640-pixel frame without wrapping).
const SIGN_TEXTS: [&str; 16] = [
    "Platform 3\nTrains to Airport\nEvery 10 min\nNext 09:12",
    "Gate B7\nBoarding 14:05\nCloses 14:35",
    "CAUTION\nWet floor\nUse the ramp",
    "Room 118\nMeeting at 10:00\nProject review\nBring reports",
    "Valve V-204\nPressure 3.2 bar\nCheck daily",
    "Exit 12\nNorth Station\nCity Centre 4 km\nAirport 19 km",
    "Bus 42\nOld Town\nHarbour\nMarket Square\nLast bus 23:40",
    "Line 5 stopped\nBack at 16:00\nTake bus 61",
    "Inspect weld 7A\nTorque 45 Nm\nSigned off by QA",
    "Tank T3\nLevel 78 %\nTemp 41 C\nPump B running",
    "Ward 6\nVisiting hours\n14:00 to 19:00",
    "Lift out of order\nStairs on the left\nSorry",
    "Zone C\nHard hats only\nNo entry after 18:00\nSite office 2",
    "Aisle 9\nBread\nMilk and eggs\nCoffee",
    "Car park full\nUse level 4\nPay at exit",
    "Dock 2\nDeliveries 06:00 to 11:00\nRing bell",
];

/// Sentences spoken by `espeak-ng`, with no digits (a transcript may write a number either
/// way) and two short answers (where the audio span is known to differ).
const SENTENCES: [&str; 7] = [
    "Please open the door and turn on the light in the kitchen.",
    "The train to the airport leaves from the platform on the left.",
    "Yes.",
    "Turn left at the next corner and stop at the red building.",
    "Check the pressure on the main valve before you start the pump.",
    "Remember to lock the back door when you leave tonight.",
    "No.",
];

/// The camera's default signs and [`SIGN_TEXTS`], rendered by the camera source at the
/// run's frame size, each with the lines it shows (after the camera's word wrap).
pub fn sign_samples() -> Result<Vec<SignSample>> {
    use mmsched_runtime::source::Source;
    use mmsched_runtime::source::camera::{
        Camera, CameraConfig, DEFAULT_FONT_PATH, Scenes, default_texts,
    };
    let texts: Vec<String> = default_texts()
        .into_iter()
        .chain(SIGN_TEXTS.iter().map(|s| s.to_string()))
        .collect();
    let n = texts.len() as u64;
    let clock = mmsched_sim::clock::VirtualClock::new(0);
    let (width, height) = mmsched_pipeline::inputs::FRAME_SIZE;
    let fps = 5;
    let mut cam = Camera::new(
        CameraConfig {
            scenes: Scenes::Generated {
                texts,
                font_path: DEFAULT_FONT_PATH.into(),
            },
            width,
            height,
            fps,
            frames_per_scene: 1,
            start_nanos: 0,
            limit: Some(n),
            ..CameraConfig::default()
        },
        &clock,
    )
    .context("rendering the signs")?;
    let mut samples = Vec::new();
    for k in 0..n {
        clock.advance_to(k * 1_000_000_000 / u64::from(fps));
        let f = cam.poll().context("the camera rendered no frame")?.payload;
        let lines = f.text.lines().map(str::to_string).collect();
        samples.push(SignSample {
            frame: RgbFrame::new(f.width, f.height, f.rgb)?,
            lines,
        });
    }
    Ok(samples)
}

/// `beckett.wav`, and [`SENTENCES`] spoken by `espeak-ng` into `dir` (left out, with a
/// note, when `espeak-ng` cannot run).
fn speech_samples(paths: &ModelPaths, dir: &Path) -> Result<(Vec<SpeechSample>, Option<String>)> {
    let mut samples = vec![SpeechSample {
        clip: at_16k(read_wav(&paths.require(Artifact::Beckett)?)?),
        text: mmsched_models::BECKETT_TRANSCRIPT.to_string(),
    }];
    for (i, sentence) in SENTENCES.iter().enumerate() {
        let wav = dir.join(format!("sentence{i}.wav"));
        let status = Command::new("espeak-ng")
            .arg("-w")
            .arg(&wav)
            .arg(sentence)
            .status();
        match status {
            Ok(s) if s.success() => samples.push(SpeechSample {
                clip: at_16k(read_wav(&wav)?),
                text: sentence.to_string(),
            }),
            Ok(s) => anyhow::bail!("espeak-ng failed ({s}) speaking {sentence:?}"),
            Err(e) => {
                return Ok((
                    samples,
                    Some(format!(
                        "speech rungs scored on beckett.wav only: cannot run espeak-ng ({e}); install the Debian package espeak-ng (scripts/setup.sh does)"
                    )),
                ));
            }
        }
    }
    Ok((samples, None))
}

/// `clip` at Whisper's 16 kHz, as a run's microphone delivers it: timed at another rate
/// (espeak-ng speaks at 22.05 kHz), the `mel` step would include a resampling that no step
/// of a run does.
fn at_16k(clip: AudioClip) -> AudioClip {
    AudioClip {
        samples: resample(&clip.samples, clip.sample_rate_hz, SAMPLE_RATE_HZ),
        sample_rate_hz: SAMPLE_RATE_HZ,
    }
}

/// A scratch directory for the spoken sentences, removed when dropped.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        // Best effort: a leftover directory in the temp dir is harmless.
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Jobs `profile` runs per rung, for the progress bar: `runs` (at least one per sample)
/// after `warmup`.
pub fn progress_len(rungs: &Rungs, runs: RungRuns) -> u64 {
    let per = |samples: usize| u64::from(runs.warmup + runs.jobs.max(samples as u32));
    rungs.vision().len() as u64 * per(SIGN_TEXTS.len() + 8)
        + rungs.asr().len() as u64 * per(SENTENCES.len() + 1)
}

/// Measures every rung of `rungs` (vision on `engine`, speech on the default Whisper
/// engine) into `profile.rungs`, replacing what was there. Returns notes for the user.
pub fn measure(
    profile: &mut DeviceProfile,
    rungs: &Rungs,
    engine: EngineOptions,
    runs: RungRuns,
    bar: &ProgressBar,
) -> Result<Vec<String>> {
    let clock = MonotonicClock::new();
    let mut notes = Vec::new();
    let signs = sign_samples()?;
    let mut ocr = OcrPipeline::new(OcrConfig {
        engine,
        ..OcrConfig::default()
    })
    .context("loading PP-OCRv4")?;
    let mut vision = Vec::new();
    for rung in rungs.vision() {
        bar.set_message(format!("ppocr-v4 rung {} [{}]", rung.name, engine.kind));
        let label = "generated signs 640x360";
        vision.push(
            measure_vision_rung(&mut ocr, rung, &signs, runs, &clock, (label, || bar.inc(1)))
                .with_context(|| format!("measuring vision rung {}", rung.name))?,
        );
    }
    drop(ocr);
    let paths = ModelPaths::from_env();
    let dir = Scratch(std::env::temp_dir().join(format!("mmsched-profile-{}", std::process::id())));
    std::fs::create_dir_all(&dir.0).with_context(|| format!("creating {}", dir.0.display()))?;
    let (speech, note) = speech_samples(&paths, &dir.0)?;
    notes.extend(note);
    let mut asr = AsrSession::load(
        &WhisperFiles::from_cache(&paths)?,
        &AsrOptions {
            threads: 1,
            ..AsrOptions::default()
        },
    )
    .context("loading Whisper")?;
    let mut speech_rungs = Vec::new();
    for rung in rungs.asr() {
        bar.set_message(format!("whisper-tiny.en rung {}", rung.name));
        let label = "beckett.wav and espeak-ng sentences";
        speech_rungs.push(
            measure_asr_rung(
                &mut asr,
                rung,
                &speech,
                runs,
                &clock,
                (label, || bar.inc(1)),
            )
            .with_context(|| format!("measuring speech rung {}", rung.name))?,
        );
    }
    profile.rungs.insert("vision".into(), vision);
    profile.rungs.insert("asr".into(), speech_rungs);
    Ok(notes)
}

/// Prints each rung's cost and accuracy.
pub fn print(profile: &DeviceProfile) {
    if profile.rungs.is_empty() {
        return;
    }
    outln!(
        "\n{:<6} {:<12} {:>8} {:>8} {:>7} {:>8} {:>7}  steps: p50 × per job",
        "kind",
        "rung",
        "job p50",
        "job p99",
        "correct",
        "accuracy",
        "CER/WER"
    );
    for (kind, rungs) in &profile.rungs {
        for r in rungs {
            // A rung scored on no input (a model of your own: no truth known) has no
            // shares to show.
            let share = |v: f64| match r.accuracy.samples {
                0 => "—".to_string(),
                _ => format!("{v:.3}"),
            };
            outln!(
                "{:<6} {:<12} {:>8.1} {:>8.1} {:>7} {:>8} {:>7}  {}",
                kind,
                r.name,
                ms(r.job.p50_nanos),
                ms(r.job.p99_nanos),
                share(r.accuracy.correct),
                share(r.accuracy.accuracy),
                share(r.accuracy.cer.or(r.accuracy.wer).unwrap_or(f64::NAN)),
                steps_line(r),
            );
        }
    }
    outln!(
        "(milliseconds, one thread; correct and accuracy are shares, 0..1; CER for vision, WER for asr; — where no truth was scored: a model of your own's rungs are compared with its richest in runs)"
    );
}

fn steps_line(r: &RungProfile) -> String {
    r.steps
        .iter()
        .map(|(k, s)| format!("{k} {:.1}×{:.1}", ms(s.stats.p50_nanos), s.per_job))
        .collect::<Vec<_>>()
        .join(", ")
}
