//! Measuring quality rungs on real models: costs per step kind and per job, and accuracy
//! against the rendered text and the spoken words (the truth, not the code's output).

mod common;

use mmsched_backends::asr::{AsrOptions, AsrSession, WhisperFiles, read_wav};
use mmsched_backends::ocr::{OcrConfig, OcrPipeline};
use mmsched_backends::profile::{DeviceProfile, this_device};
use mmsched_backends::rung_profile::{
    RungRuns, SignSample, SpeechSample, measure_asr_rung, measure_vision_rung,
};
use mmsched_core::rungs::{AsrRung, EncoderSpan, VisionRung};
use mmsched_core::time::MonotonicClock;
use mmsched_models::{Artifact, ModelPaths, require};

fn signs() -> Vec<SignSample> {
    let texts: [&[&str]; 2] = [
        &["EXIT 12", "North Station", "Airport 19 km"],
        &["Room 118", "Meeting at 10:00", "Bring reports", "Level 2"],
    ];
    texts
        .iter()
        .map(|lines| SignSample {
            frame: common::render_text(640, 360, lines, 40.0, 30.0, 20.0),
            lines: lines.iter().map(|l| l.to_string()).collect(),
        })
        .collect()
}

#[test]
fn vision_rungs_are_timed_per_step_and_scored_against_the_rendered_lines() {
    common::require_models();
    let mut ocr = OcrPipeline::new(OcrConfig::default()).expect("models load");
    let samples = signs();
    let clock = MonotonicClock::new();
    let runs = RungRuns { warmup: 1, jobs: 3 };
    let full = VisionRung {
        name: "det320".into(),
        det_long_side: 320,
        max_lines: None,
    };
    let mut jobs = 0;
    let p = measure_vision_rung(
        &mut ocr,
        &full,
        &samples,
        runs,
        &clock,
        ("signs", || jobs += 1),
    )
    .expect("measures");
    assert_eq!(jobs, 4, "one warm-up and three timed jobs");
    assert_eq!((p.jobs, p.params.as_str()), (3, "det_long_side=320"));
    let detect = p.step("detect").expect("detect steps");
    let recognize = p.step("recognize").expect("recognize steps");
    assert_eq!(detect.per_job, 1.0);
    // The warm-up read the first sign; the three timed jobs the second, first and second:
    // 4 + 3 + 4 lines.
    assert!(
        (recognize.per_job - 11.0 / 3.0).abs() < 1e-9,
        "{recognize:?}"
    );
    assert!(p.job.p50_nanos >= detect.stats.p50_nanos);
    assert_eq!(p.accuracy.samples, 2);
    assert_eq!(p.accuracy.correct, 1.0, "{:?}", p.accuracy);
    assert_eq!(p.accuracy.cer, Some(0.0));
    assert!(
        p.accuracy.inputs.contains("2 frames, 7 lines"),
        "{}",
        p.accuracy.inputs
    );
    // Two lines at most: the second sign cannot be read whole, and no more lines are read.
    let two = VisionRung {
        name: "top2".into(),
        det_long_side: 320,
        max_lines: Some(2),
    };
    let runs = RungRuns { warmup: 0, jobs: 2 };
    let q = measure_vision_rung(&mut ocr, &two, &samples, runs, &clock, ("signs", || {}))
        .expect("measures");
    assert_eq!(q.step("recognize").map(|s| s.per_job), Some(2.0));
    assert_eq!(q.accuracy.correct, 0.0);
    assert!(
        (q.accuracy.accuracy - 4.0 / 7.0).abs() < 1e-9,
        "{:?}",
        q.accuracy
    );
    // Both go into a profile that validates.
    let mut profile = DeviceProfile::empty(this_device());
    profile.rungs.insert("vision".into(), vec![p, q]);
    profile.validate().expect("a valid profile");
}

#[test]
fn a_speech_rung_is_timed_per_step_kind_and_scored_by_word_error_rate() {
    let paths = ModelPaths::from_env();
    let mut asr = AsrSession::load(
        &WhisperFiles::from_cache(&paths).unwrap_or_else(|e| panic!("{e}")),
        &AsrOptions {
            threads: 1,
            ..AsrOptions::default()
        },
    )
    .expect("Whisper loads");
    let dir = tempfile::tempdir().expect("tempdir");
    let beckett =
        read_wav(&require(Artifact::Beckett).unwrap_or_else(|e| panic!("{e}"))).expect("reads");
    let wrong = "Please open the door.";
    let samples = vec![
        SpeechSample {
            clip: beckett,
            text: "Ever tried, ever failed. No matter, try again. Fail again. Fail better.".into(),
        },
        // Scored against words it does not say: every word wrong.
        SpeechSample {
            clip: read_wav(&common::espeak(
                dir.path(),
                "other",
                "Turn left at the corner.",
            ))
            .expect("reads"),
            text: wrong.into(),
        },
    ];
    let rung = AsrRung {
        name: "audio".into(),
        span: EncoderSpan::Audio,
    };
    let runs = RungRuns { warmup: 0, jobs: 2 };
    let p = measure_asr_rung(
        &mut asr,
        &rung,
        &samples,
        runs,
        &MonotonicClock::new(),
        ("clips", || {}),
    )
    .expect("measures");
    for kind in [
        "mel",
        "encoder-stem",
        "encoder-layers",
        "encoder-cross",
        "decode",
    ] {
        let s = p
            .step(kind)
            .unwrap_or_else(|| panic!("no {kind} steps: {:?}", p.steps));
        assert!(s.stats.p50_nanos > 0 && !s.unit.is_empty(), "{kind}: {s:?}");
    }
    assert_eq!(p.step("encoder-layers").map(|s| s.per_job), Some(4.0));
    assert_eq!(p.accuracy.correct, 0.5, "{:?}", p.accuracy);
    let wer = p.accuracy.wer.expect("a WER");
    assert!(
        wer >= 0.5,
        "the wrong reference costs a whole utterance: {wer}"
    );
    assert_eq!(p.engine, "ggml-q8");
}
