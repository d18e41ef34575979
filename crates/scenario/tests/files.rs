//! Every shipped scenario loads; bad files fail with the line, field and allowed values.

use mmsched_scenario::{BUILTIN, Scenario, ScenarioError};

#[test]
fn shipped_scenarios_load() {
    for (name, _) in BUILTIN {
        let s = Scenario::load(name).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(s.name(), name);
        assert!(!s.streams().is_empty() && !s.models().is_empty());
    }
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios/car.toml");
    let car = Scenario::load(path).expect("loads from a path too");
    assert!(
        car.episodes()
            .iter()
            .any(|e| e.kind.as_str() == "temperature")
    );
}

#[test]
fn benchmark_scenarios_load_under_their_file_names() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios/bench");
    let mut seen = 0;
    for entry in std::fs::read_dir(dir).expect("scenarios/bench exists") {
        let path = entry.expect("a directory entry").path();
        if path.extension().is_none_or(|e| e != "toml") {
            continue;
        }
        let s = Scenario::load(path.to_str().expect("a UTF-8 path"))
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let stem = path.file_stem().and_then(|s| s.to_str()).expect("a name");
        assert_eq!(s.name(), stem, "{}", path.display());
        assert!(!s.streams().is_empty() && !s.models().is_empty());
        seen += 1;
    }
    assert!(seen >= 4, "only {seen} benchmark scenarios found in {dir}");
}

const BASE: &str = r#"
name = "t"

[[models]]
name = "ocr"
kind = "vision"

[[streams]]
name = "camera"
kind = "camera"
models = ["ocr"]
fps = 10
sla_ms = 100
importance = 0.9
"#;

#[test]
fn base_document_is_valid() {
    Scenario::from_toml(BASE, "t.toml").expect("valid");
}

#[test]
fn bad_files_give_precise_errors() {
    // (appended text, expected line, fragments the message must contain)
    let cases: &[(&str, usize, &[&str])] = &[
        (
            "[[streams]]\nname = \"mic\"\nkind = \"microphone\"\nsla_ms = 20\nimportance = 0.5\n",
            18,
            &[
                "unknown variant `microphone`",
                "camera",
                "audio",
                "imu",
                "text",
            ],
        ),
        (
            "[[streams]]\nname = \"mic\"\nkind = \"audio\"\npacket_ms = 20\nsla_ms = 20\nimportance = 1.5\n",
            21,
            &["streams[1].importance", "1.5", "0 … 1"],
        ),
        (
            "[[streams]]\nname = \"mic\"\nkind = \"audio\"\nsla_ms = 20\nimportance = 0.5\n",
            16,
            &["streams[1].packet_ms", "required for audio streams"],
        ),
        (
            "[[streams]]\nname = \"mic\"\nkind = \"audio\"\npacket_ms = 20\nfps = 30\nsla_ms = 20\nimportance = 0.5\n",
            20,
            &["streams[1].fps", "camera streams only"],
        ),
        (
            "[[streams]]\nname = \"mic\"\nkind = \"audio\"\npacket_ms = 20\nsla_ms = 20\nimportance = 0.5\nimportnace = 1\n",
            22,
            &["unknown field `importnace`", "importance"],
        ),
        (
            "[[streams]]\nname = \"mic\"\nkind = \"audio\"\npacket_ms = 20\nsla_ms = 20\nimportance = 0.5\nmodels = [\"whisper\"]\n",
            22,
            &["streams[1].models[0]", "whisper", "defined: ocr"],
        ),
        (
            "[[episodes]]\nkind = \"blurr\"\nstream = \"camera\"\n",
            17,
            &[
                "unknown variant `blurr`",
                "blur",
                "wifi_switching",
                "load_spike",
            ],
        ),
        (
            "[[episodes]]\nkind = \"jitter\"\nstream = \"camera\"\n",
            16,
            &["episodes[0].p99_ms", "required for jitter episodes"],
        ),
        (
            "[[episodes]]\nkind = \"blur\"\nstream = \"cam\"\n",
            18,
            &["episodes[0].stream", "defined: camera"],
        ),
        (
            "[[episodes]]\nkind = \"load_spike\"\nevery_ms = 300\nspike_ms = 40\nload_pct = 60\np99_ms = 3\n",
            21,
            &[
                "episodes[0].p99_ms",
                "does not apply to load_spike",
                "every_ms",
            ],
        ),
        (
            "[[episodes]]\nkind = \"temperature\"\ntemp_min_c = 90\ntemp_max_c = 85\ncycle_h = 24\n",
            18,
            &["temp_min_c", "must not exceed temp_max_c"],
        ),
        (
            "[[episodes]]\nkind = \"packet_loss\"\nstream = \"camera\"\nloss_pct = 120\n",
            19,
            &["episodes[0].loss_pct", "120", "0 … 100"],
        ),
        (
            "[[episodes]]\nkind = \"blur\"\nstream = \"camera\"\nstart_s = 10\nend_s = 5\n",
            20,
            &["episodes[0].end_s", "after start_s"],
        ),
        (
            "[battery]\nstart_pct = \"full\"\n",
            17,
            &["invalid type", "start_pct"],
        ),
        (
            "[[models]]\nname = \"ocr\"\nkind = \"vision\"\n",
            17,
            &["models[1].name", "used twice"],
        ),
        (
            "[[models]]\nname = \"x\"\nkind = \"tts\"\n",
            18,
            &["unknown variant `tts`", "vision", "vad", "asr", "llm"],
        ),
        (
            "[[streams]]\nname = \"mic\"\nkind = \"audio\"\npacket_ms = 20\nsla_ms = 20\nimportance = 0.5\njitter = { scale_ms = 8, p99_ms = 20 }\n",
            22,
            &[
                "streams[1].jitter = scale_ms = 8, p99_ms = 20:",
                "exactly one of scale_ms or p99_ms",
            ],
        ),
        (
            "[[episodes]]\nkind = \"packet_loss\"\nstream = \"camera\"\nloss_pct = 1e300\n",
            19,
            &["episodes[0].loss_pct = 1e300:", "0 … 100"],
        ),
        ("this is not toml\n", 16, &[]),
    ];
    for (extra, line, fragments) in cases {
        let doc = format!("{BASE}\n{extra}");
        let err = Scenario::from_toml(&doc, "bad.toml").expect_err(extra);
        let msg = err.to_string();
        let got_line = match &err {
            ScenarioError::Parse { line, .. } | ScenarioError::Invalid { line, .. } => *line,
            other => panic!("unexpected error kind {other:?}"),
        };
        assert_eq!(got_line, *line, "line for {extra:?}: {msg}");
        assert!(msg.starts_with(&format!("bad.toml:{line}: ")), "{msg}");

        for f in *fragments {
            assert!(msg.contains(f), "{extra:?}: `{msg}` lacks `{f}`");
        }
        // Messages are for people: no Rust debug dump, no 300-digit number.
        assert!(
            !msg.contains("Settings {") && !msg.contains("Some("),
            "{msg}"
        );
        assert!(msg.len() < 400, "{msg}");
    }
}

#[test]
fn a_huge_or_endless_file_is_refused_at_the_cap() {
    let e = Scenario::load("/dev/zero").expect_err("not a scenario");
    assert!(e.to_string().contains("is larger than 1 MiB"), "{e}");
}

#[test]
fn unknown_names_list_the_builtins() {
    let e = Scenario::load("no-such-scenario").expect_err("unknown");
    let m = e.to_string();
    assert!(
        m.contains("car") && m.contains("ar-glasses") && m.contains("inspection"),
        "{m}"
    );
}
