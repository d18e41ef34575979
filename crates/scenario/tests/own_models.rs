//! `[[models]]` entries of the user's own (`engine = "onnx"`): read with their `image` and
//! `classes` tables, and every mistake named with its fix.

use mmsched_scenario::{ModelKind, Scenario};

const HEAD: &str = "version = 1\nname = \"t\"\n";

const CAMERA: &str = "[[streams]]\nname = \"camera\"\nkind = \"camera\"\nmodels = [\"mine\"]\nfps = 2\nsla_ms = 300\nimportance = 0.5\n";

fn with_model(model: &str, streams: &str) -> Result<Scenario, String> {
    Scenario::from_toml(&format!("{HEAD}{model}{streams}"), "t.toml").map_err(|e| e.to_string())
}

#[test]
fn a_model_of_your_own_is_read_with_its_tables() {
    let s = with_model(
        "[[models]]\nname = \"mine\"\nengine = \"onnx\"\nfile = \"/m.onnx\"\n[models.image]\nresize = \"center-crop\"\n[models.classes]\ntop_k = 2\n",
        CAMERA,
    )
    .expect("a valid scenario");
    let m = &s.models()[0];
    assert_eq!(m.kind, ModelKind::Onnx);
    assert_eq!(m.file.as_deref(), Some("/m.onnx"));
    let image = m.image.as_ref().expect("image table");
    assert_eq!(image["resize"].as_str(), Some("center-crop"));
    assert_eq!(
        m.classes.as_ref().expect("classes")["top_k"].as_integer(),
        Some(2)
    );
    // `kind = "onnx"` says the same.
    let s = with_model(
        "[[models]]\nname = \"mine\"\nkind = \"onnx\"\nfile = \"/m.onnx\"\n",
        CAMERA,
    )
    .expect("a valid scenario");
    assert_eq!(s.models()[0].kind, ModelKind::Onnx);
}

#[test]
fn mistakes_in_a_model_entry_are_named_with_the_fix() {
    let cases = [
        (
            "[[models]]\nname = \"mine\"\nengine = \"onnx\"\n",
            "needs its `file`",
        ),
        (
            "[[models]]\nname = \"mine\"\nengine = \"tflite\"\nfile = \"/m\"\n",
            "engine `tflite` is not known",
        ),
        ("[[models]]\nname = \"mine\"\n", "needs `kind`"),
        (
            "[[models]]\nname = \"mine\"\nkind = \"vision\"\nengine = \"onnx\"\nfile = \"/m\"\n",
            "leave `kind` out",
        ),
        (
            "[[models]]\nname = \"mine\"\nkind = \"vision\"\n[models.image]\nresize = \"stretch\"\n",
            "takes none of them",
        ),
    ];
    for (model, want) in cases {
        let err = with_model(model, CAMERA).expect_err(model);
        assert!(err.contains(want), "{model}: {err}");
    }
    let mic = "[[streams]]\nname = \"mic\"\nkind = \"audio\"\nmodels = [\"mine\"]\npacket_ms = 20\nsla_ms = 80\nimportance = 0.5\n";
    let err = with_model(
        "[[models]]\nname = \"mine\"\nengine = \"onnx\"\nfile = \"/m.onnx\"\n",
        mic,
    )
    .expect_err("an audio stream cannot feed it");
    assert!(
        err.contains("the audio stream `mic` cannot feed it"),
        "{err}"
    );
}

#[test]
fn a_model_of_your_own_declares_its_rungs_richest_first() {
    let s = with_model(
        "[[models]]\nname = \"mine\"\nengine = \"onnx\"\nfile = \"/m.onnx\"\n\
         [[models.rungs]]\nname = \"full\"\n\
         [[models.rungs]]\nname = \"half\"\nsize = [96, 24]\ncost_ms = 2.5\n\
         [[models.rungs]]\nname = \"int8\"\nfile = \"/m-int8.onnx\"\n",
        CAMERA,
    )
    .expect("a valid scenario");
    let rungs = &s.models()[0].rungs;
    let names: Vec<&str> = rungs.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["full", "half", "int8"]);
    assert_eq!(rungs[1].size, Some([96, 24]));
    assert_eq!(rungs[1].cost_ms, Some(2.5));
    assert_eq!(rungs[2].file.as_deref(), Some("/m-int8.onnx"));
}

#[test]
fn mistakes_in_a_models_rungs_are_named_with_the_fix() {
    let own = "[[models]]\nname = \"mine\"\nengine = \"onnx\"\nfile = \"/m.onnx\"\n";
    let cases = [
        (
            format!(
                "{own}[[models.rungs]]\nname = \"a\"\n[[models.rungs]]\nname = \"a\"\nsize = [8, 8]\n"
            ),
            "models[0].rungs[1].name",
        ),
        (
            format!("{own}[[models.rungs]]\nname = \"a b\"\n"),
            "letters, digits",
        ),
        (
            format!("{own}[[models.rungs]]\nname = \"a\"\ncost_ms = -1\n"),
            "models[0].rungs[0].cost_ms",
        ),
        (
            format!("{own}[[models.rungs]]\nname = \"a\"\nwidth = 3\n"),
            "width",
        ),
        (
            "[[models]]\nname = \"mine\"\nkind = \"vision\"\n[[models.rungs]]\nname = \"a\"\n"
                .to_string(),
            "policy's `[rungs]`",
        ),
    ];
    for (model, want) in cases {
        let err = with_model(&model, CAMERA).expect_err(&model);
        assert!(err.contains(want), "{model}: {err}");
    }
}

#[test]
fn the_shipped_documents_scenario_declares_its_model_of_your_own() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scenarios/documents.toml"
    );
    let s = Scenario::load(path).expect("the shipped scenario reads");
    let own: Vec<&str> = s
        .models()
        .iter()
        .filter(|m| m.kind == ModelKind::Onnx)
        .map(|m| m.name.as_str())
        .collect();
    assert_eq!(own, ["orientation"]);
}

#[test]
fn the_shipped_rungs_example_declares_two_rungs_of_its_model() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scenarios/examples/own-model-rungs.toml"
    );
    let s = Scenario::load(path).expect("the shipped example reads");
    let own = s
        .models()
        .iter()
        .find(|m| m.kind == ModelKind::Onnx)
        .expect("a model of your own");
    let names: Vec<&str> = own.rungs.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["full", "small"]);
    assert_eq!(own.rungs[1].size, Some([128, 32]));
}
