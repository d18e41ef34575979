//! Whisper advanced one step at a time gives the one-shot transcript, token for token: on
//! the shipped `beckett.wav` clip and on `espeak-ng` sentences, with both encoder spans,
//! with other work between the steps, on the ggml engine (encoder in parts) and on candle's
//! q8 engine (encoder whole). Needs `mmsched models fetch` and the Debian package
//! `espeak-ng`.

mod common;

use mmsched_backends::asr::{
    AsrEngine, AsrOptions, AsrPlan, AsrSession, AsrStepKind, AudioClip, EncoderSpan, Transcription,
    WhisperFiles, read_wav, word_error_rate,
};
use mmsched_backends::{Backend, run_timed};
use mmsched_core::time::MonotonicClock;
use mmsched_models::{Artifact, ModelPaths, require};

/// Tests in this file share one model-sized budget of memory and cores: one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn session(engine: AsrEngine, span: EncoderSpan) -> AsrSession {
    let files = WhisperFiles::from_cache(&ModelPaths::from_env()).unwrap_or_else(|e| panic!("{e}"));
    AsrSession::load(
        &files,
        &AsrOptions {
            threads: 1,
            engine,
            span,
        },
    )
    .unwrap_or_else(|e| panic!("Whisper ({engine}) loads: {e}"))
}

const BECKETT: &str = "Ever tried, ever failed. No matter, try again. Fail again. Fail better.";

fn beckett() -> AudioClip {
    let wav = require(Artifact::Beckett).unwrap_or_else(|e| panic!("{e}"));
    read_wav(&wav).expect("beckett.wav reads")
}

/// The one-shot transcript on one thread.
fn one_shot(s: &mut AsrSession, clip: &AudioClip) -> String {
    s.grant_threads(1);
    run_timed(s, clip, &MonotonicClock::new())
        .expect("transcription")
        .0
}

/// Runs every step of `t` on one thread, calling `between` after each; returns the kinds
/// of the steps in order.
fn run_steps(
    s: &mut AsrSession,
    t: &mut Transcription,
    mut between: impl FnMut(),
) -> Vec<AsrStepKind> {
    let mut kinds = Vec::new();
    while let Some(next) = t.next_step() {
        let step = s
            .step(t, 1)
            .unwrap_or_else(|e| panic!("step {next:?}: {e}"));
        assert_eq!(step.kind, next);
        assert_eq!(step.finished, t.is_finished());
        kinds.push(step.kind);
        between();
    }
    kinds
}

fn stepwise(s: &mut AsrSession, clip: &AudioClip, plan: AsrPlan) -> (String, Vec<AsrStepKind>) {
    let mut t = s.begin(clip.clone(), plan).expect("begins");
    let kinds = run_steps(s, &mut t, || {});
    (s.transcript(t).expect("finished"), kinds)
}

#[test]
fn the_stepwise_beckett_transcript_is_the_one_shot_one() {
    let _serial = serial();
    let clip = beckett();
    for span in [EncoderSpan::Window, EncoderSpan::Audio] {
        let mut s = session(AsrEngine::Ggml, span);
        let whole = one_shot(&mut s, &clip);
        // The reference text, independently of either path: exact on both spans.
        assert_eq!(word_error_rate(BECKETT, &whole), 0.0, "{span:?}: {whole:?}");
        for layers_per_step in [1, 3, 4] {
            let (text, kinds) = stepwise(
                &mut s,
                &clip,
                AsrPlan {
                    span,
                    layers_per_step,
                },
            );
            assert_eq!(text, whole, "{span:?}, {layers_per_step} layers a step");
            let count = |k| kinds.iter().filter(|&&x| x == k).count();
            assert_eq!(count(AsrStepKind::Mel), 1);
            assert_eq!(count(AsrStepKind::EncoderStem), 1);
            assert_eq!(
                count(AsrStepKind::EncoderLayers),
                s.encoder_layers().div_ceil(layers_per_step)
            );
            assert_eq!(count(AsrStepKind::EncoderCross), 1);
            assert_eq!(count(AsrStepKind::Encoder), 0);
            assert!(kinds.is_sorted(), "steps out of order: {kinds:?}");
        }
    }
}

#[test]
fn espeak_sentences_stepwise_equal_one_shot_with_other_work_between_steps() {
    let _serial = serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let sentences = [
        "Please open the door and turn on the light in the kitchen.",
        "The train to the airport leaves from platform three at ten past nine.",
        "Yes.",
    ];
    let mut main = session(AsrEngine::Ggml, EncoderSpan::Window);
    // A second session transcribes another sentence between every two steps of the first:
    // nothing is shared between sessions.
    let mut other = session(AsrEngine::Ggml, EncoderSpan::Window);
    let side = read_wav(&common::espeak(
        dir.path(),
        "side",
        "Turn left at the next corner.",
    ))
    .expect("espeak WAV reads");
    let side_whole = one_shot(&mut other, &side);
    let mut one_shot_sessions = [
        session(AsrEngine::Ggml, EncoderSpan::Window),
        session(AsrEngine::Ggml, EncoderSpan::Audio),
    ];
    for (i, sentence) in sentences.iter().enumerate() {
        let clip = read_wav(&common::espeak(dir.path(), &format!("s{i}"), sentence))
            .expect("espeak WAV reads");
        for (span, reference) in [EncoderSpan::Window, EncoderSpan::Audio]
            .into_iter()
            .zip(one_shot_sessions.iter_mut())
        {
            let plan = AsrPlan {
                span,
                layers_per_step: 2,
            };
            let whole = one_shot(reference, &clip);
            let mut t = main.begin(clip.clone(), plan).expect("begins");
            let mut side_t = other
                .begin(side.clone(), AsrPlan::default())
                .expect("begins");
            let mut side_steps = 0;
            run_steps(&mut main, &mut t, || {
                if side_t.next_step().is_some() {
                    other.step(&mut side_t, 1).expect("side step");
                    side_steps += 1;
                }
            });
            assert!(side_steps > 3, "the side transcription ran between steps");
            while side_t.next_step().is_some() {
                other.step(&mut side_t, 1).expect("side step");
            }
            assert_eq!(
                main.transcript(t).expect("finished"),
                whole,
                "{sentence:?} {span:?}"
            );
            assert_eq!(other.transcript(side_t).expect("finished"), side_whole);
        }
        eprintln!("{sentence:?}: equal on both spans");
    }
}

#[test]
fn the_candle_engine_runs_its_encoder_as_one_step_with_the_same_transcript() {
    let _serial = serial();
    let clip = beckett();
    let mut s = session(AsrEngine::Q8, EncoderSpan::Window);
    let whole = one_shot(&mut s, &clip);
    let (text, kinds) = stepwise(&mut s, &clip, AsrPlan::default());
    assert_eq!(text, whole);
    assert_eq!(word_error_rate(BECKETT, &text), 0.0, "{text:?}");
    assert_eq!(kinds[..2], [AsrStepKind::Mel, AsrStepKind::Encoder]);
    assert!(kinds[2..].iter().all(|&k| k == AsrStepKind::Decode));
}

#[test]
fn one_window_at_a_time_per_session_is_enforced_with_a_clear_error() {
    let _serial = serial();
    let clip = beckett();
    let mut s = session(AsrEngine::Ggml, EncoderSpan::Audio);
    let plan = AsrPlan {
        span: EncoderSpan::Audio,
        layers_per_step: 4,
    };
    let mut first = s.begin(clip.clone(), plan).expect("begins");
    for _ in 0..3 {
        s.step(&mut first, 1).expect("mel, stem, layers");
    }
    assert_eq!(first.next_step(), Some(AsrStepKind::EncoderCross));
    // A second transcription takes the engine's window: the first cannot go on.
    let mut second = s.begin(clip.clone(), plan).expect("begins");
    s.step(&mut second, 1).expect("mel");
    s.step(&mut second, 1).expect("stem");
    let err = s.step(&mut first, 1).expect_err("the window is gone");
    assert!(
        err.to_string().contains("one transcription at a time"),
        "{err}"
    );
    assert_eq!(
        first.next_step(),
        None,
        "a failed transcription runs no more steps"
    );
    let err = s.step(&mut first, 1).expect_err("failed before");
    assert!(err.to_string().contains("begin it again"), "{err}");
    assert!(s.transcript(first).is_err());
    // A one-shot call also takes the window.
    let whole = one_shot(&mut s, &clip);
    let err = s
        .step(&mut second, 1)
        .expect_err("the one-shot call took the window");
    assert!(err.is_input(), "{err}");
    // Begun again, it finishes with the one-shot transcript.
    let mut again = s.begin(clip.clone(), plan).expect("begins");
    run_steps(&mut s, &mut again, || {});
    assert_eq!(s.transcript(again).expect("finished"), whole);
}

#[test]
fn bad_plans_and_clips_are_refused_before_any_work() {
    let _serial = serial();
    let mut s = session(AsrEngine::Ggml, EncoderSpan::Window);
    let plan = AsrPlan {
        layers_per_step: 0,
        ..AsrPlan::default()
    };
    let err = s.begin(beckett(), plan).expect_err("no layers per step");
    assert!(err.to_string().contains("layers_per_step"), "{err}");
    let empty = AudioClip {
        samples: vec![],
        sample_rate_hz: 16_000,
    };
    let err = s.begin(empty, AsrPlan::default()).expect_err("no samples");
    assert!(err.to_string().contains("no samples"), "{err}");
    let mut t = s.begin(beckett(), AsrPlan::default()).expect("begins");
    s.step(&mut t, 1).expect("mel");
    let err = s.transcript(t).expect_err("not finished");
    assert!(err.to_string().contains("not finished"), "{err}");
}
