//! `simulate`: the real run loop in virtual time on simulated models. What it decides
//! depends on the seed and the profile only, never on the machine running the test.

use mmsched_core::policy::Policy;
use mmsched_pipeline::run::Quiet;
use mmsched_pipeline::simulate::simulate;
use mmsched_pipeline::{Mechanisms, RunConfig};
use mmsched_report::{ModalitySummary, RunSummary};
use mmsched_runtime::sched::SchedulerKind;
use mmsched_scenario::Scenario;

/// A device profile measured by `mmsched profile` on a 2-core AMD EPYC, with its rungs'
/// steps and accuracy.
const MEASURED_PROFILE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/profile-epyc-2core.json"
);

fn simulated(scenario: Scenario, secs: u64, mechanisms: Mechanisms) -> RunSummary {
    simulated_under(SchedulerKind::Mmsched, scenario, secs, mechanisms)
}

fn simulated_under(
    scheduler: SchedulerKind,
    scenario: Scenario,
    secs: u64,
    mechanisms: Mechanisms,
) -> RunSummary {
    let mut config = RunConfig::new(scenario, Policy::default(), scheduler);
    config.fixed_prompts = true;
    config.duration_nanos = secs * 1_000_000_000;
    config.profile = Some(MEASURED_PROFILE.into());
    config.mechanisms = mechanisms;
    simulate(config, &mut Quiet).expect("simulated").summary
}

fn accounted(name: &str, m: &ModalitySummary) {
    let sum = m.on_time + m.late + m.shed + m.skipped + m.dropped + m.unfinished + m.failed;
    assert_eq!(m.offered, sum, "{name}: {m:?}");
}

/// The figures a decision changes (not the loop's own CPU time, which the notes carry).
fn decided(s: &RunSummary) -> String {
    let m = |m: &ModalitySummary| {
        format!(
            "{} {} {} {} {} {:.3} {:?}",
            m.offered, m.on_time, m.late, m.shed, m.correct_on_time, m.p99_ms, m.rung_counts
        )
    };
    format!(
        "{} | {} | {} | {} | {:.6}",
        m(&s.vision),
        m(&s.vad),
        m(&s.asr),
        m(&s.llm.modality),
        s.utility_correct
    )
}

/// One general worker, a camera at `fps` due in 120 ms, the recorded speech and prompts.
fn one_worker(fps: u32) -> Scenario {
    device_with(1, 0, fps)
}

/// `workers` general workers beside `load_pct` of one core's background load, a camera
/// at `fps` due in 120 ms, the recorded speech and prompts.
fn device_with(workers: u32, load_pct: u32, fps: u32) -> Scenario {
    let toml = format!(
        r#"
version = 1
name = "one-worker-camera"
duration_s = 20
seed = 5

[device]
workers = {workers}
background_load_pct = {load_pct}

[[models]]
name = "ocr"
kind = "vision"
file = "models/ppocr-v4/det.onnx"

[[models]]
name = "vad"
kind = "vad"
file = "models/silero-vad/silero_vad.onnx"

[[models]]
name = "asr"
kind = "asr"
file = "models/whisper-tiny.en/model.safetensors"

[[models]]
name = "llm"
kind = "llm"
file = "models/gemma3-270m/gemma-3-270m-q4_k_m.gguf"

[[streams]]
name = "camera"
kind = "camera"
models = ["ocr"]
fps = {fps}
sla_ms = 120
importance = 0.8

[[streams]]
name = "mic"
kind = "audio"
models = ["vad", "asr"]
packet_ms = 20
sla_ms = 60
importance = 0.9

[[streams]]
name = "prompts"
kind = "text"
models = ["llm"]
requests_per_min = 6
tokens_per_request = 24
sla_ms = 8000
importance = 0.3
"#
    );
    Scenario::from_toml(&toml, "one-worker-camera.toml").expect("scenario")
}

#[test]
fn one_seed_gives_one_prediction_and_every_input_is_accounted_for() {
    let s = || Scenario::load("ar-glasses").expect("shipped");
    let a = simulated(s(), 20, Mechanisms::default());
    let b = simulated(s(), 20, Mechanisms::default());
    assert_eq!(decided(&a), decided(&b));
    for (name, m) in [
        ("vision", &a.vision),
        ("vad", &a.vad),
        ("asr", &a.asr),
        ("llm", &a.llm.modality),
    ] {
        accounted(name, m);
        assert!(m.offered > 0, "{name}: {m:?}");
    }
    // 5 fps for 20 s, the microphone's 32 ms chunks.
    assert!((95..=101).contains(&a.vision.offered), "{:?}", a.vision);
    assert!(a.vad.offered > 550, "{:?}", a.vad);
    assert!(
        a.platform.iter().any(|n| n.contains("simulated")),
        "{:?}",
        a.platform
    );
}

#[test]
fn past_capacity_the_book_chooses_cheaper_rungs_and_it_pays() {
    // Frames cost 40–60 ms at the richest rung on one worker, arriving every 50 ms beside
    // speech: a transcription at its richest rung (≈ 420 ms) fits among them only by taking
    // the frames' time.
    let with = simulated(one_worker(20), 20, Mechanisms::default());
    let without = simulated(
        one_worker(20),
        20,
        Mechanisms {
            rungs: false,
            ..Mechanisms::default()
        },
    );
    for s in [&with, &without] {
        accounted("vision", &s.vision);
        accounted("asr", &s.asr);
    }
    let cheaper = |m: &ModalitySummary, richest: &str| -> u64 {
        m.rung_counts
            .iter()
            .filter(|(rung, _)| rung.as_str() != richest)
            .map(|(_, n)| n)
            .sum()
    };
    // Every transcription ran over the audio alone rather than the whole window.
    assert_eq!(
        cheaper(&with.asr, "window"),
        with.asr.offered,
        "{}",
        decided(&with)
    );
    assert_eq!(cheaper(&without.asr, "window"), 0, "{}", decided(&without));
    // Without rungs a transcription's whole window still fits by its deadline, its steps
    // moving ahead of the frames as its slack runs out, but the frames pay for it.
    assert!(
        with.vision.on_time > without.vision.on_time,
        "{}\n{}",
        decided(&with),
        decided(&without)
    );
    assert!(
        with.utility_correct > without.utility_correct,
        "with rungs {}, without {}",
        decided(&with),
        decided(&without)
    );
}

#[test]
fn a_transcription_runs_in_its_measured_steps_between_frames() {
    // One worker, a camera at 4 fps: a whole transcription (≈ 420 ms) is longer than the
    // gap between two frames; in steps it fits between them and both are on time.
    let s = simulated(one_worker(4), 30, Mechanisms::default());
    accounted("asr", &s.asr);
    assert!(s.asr.offered >= 4, "{:?}", s.asr);
    assert_eq!(s.asr.on_time, s.asr.offered, "{:?}", s.asr);
    assert_eq!(s.vision.on_time, s.vision.offered, "{:?}", s.vision);
}

#[test]
fn past_capacity_mmsched_answers_more_right_and_on_time_than_either_queue() {
    // Two workers, a neighbour taking one core's worth, a camera at 40 fps due in 120 ms:
    // the richest rung no longer keeps up. Every scheduler on the same lanes, inputs and
    // step costs.
    let run = |scheduler| {
        let s = simulated_under(
            scheduler,
            device_with(2, 100, 40),
            30,
            Mechanisms::default(),
        );
        for (name, m) in [
            ("vision", &s.vision),
            ("asr", &s.asr),
            ("llm", &s.llm.modality),
        ] {
            accounted(name, m);
        }
        s
    };
    let mmsched = run(SchedulerKind::Mmsched);
    let static_priority = run(SchedulerKind::StaticPriority);
    let fifo = run(SchedulerKind::Fifo);
    assert_eq!(static_priority.scheduler, "static-priority");
    for (name, other) in [("static-priority", &static_priority), ("fifo", &fifo)] {
        assert!(
            mmsched.utility_correct > other.utility_correct + 0.05,
            "mmsched {} ({}) against {name} {} ({})",
            mmsched.utility_correct,
            decided(&mmsched),
            other.utility_correct,
            decided(other)
        );
    }
}

#[test]
fn os_threads_is_not_simulated_and_says_where_to_measure_it() {
    let mut config = RunConfig::new(
        Scenario::load("car").expect("shipped"),
        Policy::default(),
        SchedulerKind::OsThreads,
    );
    config.duration_nanos = 1_000_000_000;
    let e = simulate(config, &mut Quiet).unwrap_err().to_string();
    assert!(e.contains("os-threads") && e.contains("bench e2e"), "{e}");
}

/// The reference profile shipped with mmsched: what a new user's device is priced by
/// before `mmsched profile` measures it.
const REFERENCE_PROFILE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../profiles/reference-2core.json"
);

/// The many-lines bench scenario (`scenarios/bench/many-lines.toml`) on generated frames:
/// a 15 fps camera due in 120 ms beside a quarter of a core's load, the recorded speech
/// and prompts, on two workers.
const PAST_CAPACITY: &str = r#"
version = 1
name = "many-lines"
description = "past capacity on real frames of 3-5 lines with known text: 15 fps camera due in 120 ms, speech, prompts, 25 % background load"
duration_s = 60
seed = 31

[device]
workers = 2
background_load_pct = 25

[battery]
start_pct = 70
drain_pct_per_hour = 2

[[models]]
name = "ocr"
kind = "vision"
file = "models/ppocr-v4/det.onnx"

[[models]]
name = "vad"
kind = "vad"
file = "models/silero-vad/silero_vad.onnx"

[[models]]
name = "asr"
kind = "asr"
file = "models/whisper-tiny.en/model.safetensors"

[[models]]
name = "llm"
kind = "llm"
file = "models/gemma3-270m/gemma-3-270m-q4_k_m.gguf"

[[streams]]
name = "camera"
kind = "camera"
models = ["ocr"]
fps = 15
sla_ms = 120
importance = 0.7
latency_ms = 14

[[streams]]
name = "mic"
kind = "audio"
models = ["vad", "asr"]
packet_ms = 20
sla_ms = 60
importance = 0.9
latency_ms = 56
jitter = { shape = 2, scale_ms = 8 }

[[streams]]
name = "prompts"
kind = "text"
models = ["llm"]
requests_per_min = 20
tokens_per_request = 48
sla_ms = 3000
importance = 0.5
"#;

#[test]
fn past_capacity_a_transcriptions_steps_move_ahead_of_frames_as_its_slack_runs_out() {
    // Priced by the reference profile, as a new user's device is: more frames than the
    // workers read, and transcriptions of about two seconds' work due 60 ms plus the
    // utterance's length after it ends. With every step carrying the transcription's own
    // deadline, earliest deadline first runs every frame due sooner first, and the steps
    // left no longer fit.
    let run = |step_deadlines| {
        let scenario = Scenario::from_toml(PAST_CAPACITY, "many-lines.toml").expect("scenario");
        let mut config = RunConfig::new(scenario, Policy::default(), SchedulerKind::Mmsched);
        config.fixed_prompts = true;
        config.duration_nanos = 30 * 1_000_000_000;
        config.profile = Some(REFERENCE_PROFILE.into());
        config.mechanisms = Mechanisms {
            step_deadlines,
            ..Mechanisms::default()
        };
        simulate(config, &mut Quiet).expect("simulated").summary
    };
    let with = run(true);
    let without = run(false);
    for s in [&with, &without] {
        accounted("vision", &s.vision);
        accounted("asr", &s.asr);
        assert!(s.asr.offered >= 4, "{:?}", s.asr);
        assert!(
            s.vision.shed + s.vision.late > 0,
            "past capacity: {:?}",
            s.vision
        );
    }
    assert!(
        with.asr.on_time >= without.asr.on_time + 2,
        "with {:?}\nwithout {:?}",
        with.asr,
        without.asr
    );
    assert!(
        with.utility_correct > without.utility_correct,
        "{} {}",
        with.utility_correct,
        without.utility_correct
    );
}

/// One worker, a camera at 12 fps due in 150 ms feeding a model of your own with two
/// rungs: 90 ms a frame at `full`, 30 ms at `small` (the scenario's costs, so no profile
/// matters).
const OWN_MODEL_RUNGS: &str = r#"
version = 1
name = "own-model-rungs"
duration_s = 20
seed = 3

[device]
workers = 1

[[models]]
name = "finder"
engine = "onnx"
file = "/models/finder.onnx"
cost_ms = 90

[[models.rungs]]
name = "full"
cost_ms = 90

[[models.rungs]]
name = "small"
size = [160, 160]
cost_ms = 30

[[streams]]
name = "camera"
kind = "camera"
models = ["finder"]
fps = 12
sla_ms = 150
importance = 0.8
"#;

#[test]
fn past_capacity_a_model_of_your_own_runs_at_its_cheaper_rung_and_it_pays() {
    // Every frame at `full` would need 1.08 s of each second: the richest rung alone
    // cannot keep up; at `small` a frame fits almost three times over. Both schedulers on
    // the same lanes, frames and step costs.
    let run = |scheduler| {
        let scenario = Scenario::from_toml(OWN_MODEL_RUNGS, "own-model-rungs.toml")
            .expect("the scenario reads");
        let s = simulated_under(scheduler, scenario, 20, Mechanisms::default());
        let m = s.models.get("finder").expect("the model's section").clone();
        accounted("finder", &m);
        m
    };
    let mmsched = run(SchedulerKind::Mmsched);
    let static_priority = run(SchedulerKind::StaticPriority);
    assert!(mmsched.offered >= 230, "{mmsched:?}");
    assert_eq!(mmsched.offered, static_priority.offered);
    let count = |m: &ModalitySummary, rung: &str| m.rung_counts.get(rung).copied().unwrap_or(0);
    assert!(count(&mmsched, "small") > 0, "{:?}", mmsched.rung_counts);
    assert_eq!(
        count(&static_priority, "full"),
        static_priority.rung_counts.values().sum::<u64>(),
        "the baseline runs the richest rung: {:?}",
        static_priority.rung_counts
    );
    assert!(
        mmsched.on_time > static_priority.on_time + mmsched.offered / 10,
        "mmsched {mmsched:?} against static-priority {static_priority:?}"
    );
}

#[test]
fn a_cheap_model_on_the_camera_beside_the_ocr_is_served_though_the_ocr_is_past_capacity() {
    // The shipped example: a 20 fps camera on one worker feeding the OCR (past capacity)
    // and a 1.3 ms classifier, due together. A classifier job waiting for its place until
    // the previous one ended found the next frame's OCR step on the worker: 122 of 400
    // were shed. Admitted while another runs, 3 of 400 are.
    let scenario = Scenario::from_toml(
        include_str!("../../../scenarios/examples/own-model-rungs.toml"),
        "own-model-rungs.toml",
    )
    .expect("the example reads");
    // The reference profile's OCR (72 ms a frame) is past one worker's capacity at 20 fps;
    // the measured EPYC profile's is not.
    let mut config = RunConfig::new(scenario, Policy::default(), SchedulerKind::Mmsched);
    config.duration_nanos = 20_000_000_000;
    config.profile = Some(REFERENCE_PROFILE.into());
    let s = simulate(config, &mut Quiet).expect("simulated").summary;
    let m = s.models.get("direction").expect("the classifier's section");
    accounted("direction", m);
    accounted("vision", &s.vision);
    assert!(m.offered >= 390, "{m:?}");
    assert!(
        m.on_time * 100 >= m.offered * 95,
        "the classifier: {m:?}; the OCR: {:?}",
        s.vision
    );
    assert!(
        s.vision.on_time * 2 >= s.vision.offered,
        "the OCR keeps its frames: {:?}",
        s.vision
    );
}

#[test]
fn a_camera_that_lists_only_a_model_of_your_own_feeds_no_ocr() {
    // Before, every frame went to the OCR as well: in a real run with no OCR model loaded
    // each failed ("no OCR model is loaded") and the utility halved; in `sim run` the
    // simulated OCR took the worker's time.
    let scenario =
        Scenario::from_toml(OWN_MODEL_RUNGS, "own-model-rungs.toml").expect("the scenario reads");
    let s = simulated_under(SchedulerKind::Mmsched, scenario, 5, Mechanisms::default());
    assert_eq!(s.vision.offered, 0, "{:?}", s.vision);
    // No microphone either: no transcription deadline to state ("NaN ms + …" before).
    assert_eq!(s.asr.sla_rule, None);
    let m = s.models.get("finder").expect("the model's section");
    accounted("finder", m);
    assert!(m.offered >= 55, "{m:?}");
}
