//! Streams fed from real sources: the `source` table's kinds, fields, ranges and paths
//! are checked with the line, the field and the fix.

use mmsched_scenario::{AtEnd, Scenario, SourceKind};

/// A scenario with one stream of `kind` whose lines are `body`.
fn doc(kind: &str, body: &str) -> String {
    format!(
        "name = \"t\"\n\n[[streams]]\nname = \"s\"\nkind = \"{kind}\"\nsla_ms = 500\nimportance = 0.5\n{body}\n"
    )
}

fn error(text: &str, base: Option<&std::path::Path>) -> String {
    Scenario::from_toml_in(text, "t.toml", base)
        .expect_err("invalid")
        .to_string()
}

#[test]
fn file_sources_resolve_against_the_scenario_folder() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(dir.path().join("frames")).expect("mkdir");
    std::fs::write(dir.path().join("speech.wav"), b"RIFF").expect("write");
    std::fs::write(dir.path().join("prompts.txt"), "hi\n").expect("write");
    let text = format!(
        "name = \"t\"\n\n[[streams]]\nname = \"cam\"\nkind = \"camera\"\nfps = 1\nsla_ms = 500\nimportance = 0.5\nsource = {{ kind = \"frames\", path = \"frames\", at_end = \"stop\" }}\n\n\
         [[streams]]\nname = \"mic\"\nkind = \"audio\"\npacket_ms = 20\nsla_ms = 500\nimportance = 0.5\nsource = {{ kind = \"wav\", path = \"speech.wav\" }}\n\n\
         [[streams]]\nname = \"chat\"\nkind = \"text\"\nrequests_per_min = 6\nsla_ms = 5000\nimportance = 0.5\nsource = {{ kind = \"prompts\", path = \"{}\" }}\n",
        dir.path().join("prompts.txt").display()
    );
    let s = Scenario::from_toml_in(&text, "t.toml", Some(dir.path())).expect("valid");
    let cam = s.streams()[0].source.as_ref().expect("source");
    assert_eq!(cam.kind, SourceKind::Frames);
    assert_eq!(cam.at_end, Some(AtEnd::Stop));
    assert!(!cam.looped());
    assert_eq!(
        cam.path.as_deref(),
        Some(dir.path().join("frames").to_str().expect("utf-8"))
    );
    let mic = s.streams()[1].source.as_ref().expect("source");
    assert!(mic.looped(), "loop is the default");
    assert!(
        mic.path
            .as_deref()
            .is_some_and(|p| p.ends_with("speech.wav"))
    );
    // Loaded from a file, relative paths start at the file's folder.
    let file = dir.path().join("site.toml");
    std::fs::write(&file, &text).expect("write");
    let loaded = Scenario::load(file.to_str().expect("utf-8")).expect("loads");
    assert_eq!(loaded.streams()[0].source, s.streams()[0].source);
    // Generated stays the default.
    let plain = Scenario::from_toml(&doc("camera", "fps = 1"), "t.toml").expect("valid");
    assert_eq!(plain.streams()[0].source, None);
}

#[test]
fn a_missing_file_or_folder_names_the_path_and_the_fix() {
    let dir = tempfile::tempdir().expect("tempdir");
    let e = error(
        &doc(
            "camera",
            "fps = 1\nsource = { kind = \"frames\", path = \"shots\" }",
        ),
        Some(dir.path()),
    );
    assert!(
        e.starts_with("t.toml:9: streams[0].source.path = \"shots\""),
        "{e}"
    );
    assert!(
        e.contains(&dir.path().join("shots").display().to_string()),
        "{e}"
    );
    assert!(
        e.contains("point path at a folder of PNG or JPEG frames"),
        "{e}"
    );
    let e = error(
        &doc(
            "audio",
            "packet_ms = 20\nsource = { kind = \"wav\", path = \"/nonexistent/a.wav\" }",
        ),
        None,
    );
    assert!(
        e.contains("file /nonexistent/a.wav does not exist: point path at a WAV file"),
        "{e}"
    );
    let e = error(
        &doc("camera", "fps = 1\nsource = { kind = \"video\" }"),
        None,
    );
    assert!(
        e.contains("source.path = (missing): is required for source kind video"),
        "{e}"
    );
}

#[test]
fn kinds_fields_and_values_are_checked() {
    let cases: &[(&str, &str, &[&str])] = &[
        (
            "audio",
            "packet_ms = 20\nsource = { kind = \"frames\", path = \".\" }",
            &[
                "source.kind = \"frames\"",
                "not a source of audio streams",
                "generated, wav, rtp",
            ],
        ),
        (
            "camera",
            "fps = 1\nsource = { kind = \"framez\" }",
            &["unknown variant `framez`", "frames", "video", "v4l2"],
        ),
        (
            "camera",
            "fps = 1\nsource = { kind = \"v4l2\", at_end = \"stop\" }",
            &[
                "source.at_end = stop",
                "does not apply to source kind v4l2 (it takes: path)",
            ],
        ),
        (
            "audio",
            "packet_ms = 20\nsource = { kind = \"rtp\", payload_type = 96 }",
            &["source.port = (missing)", "port = 5004"],
        ),
        (
            "audio",
            "packet_ms = 20\nsource = { kind = \"rtp\", port = 5004, payload_type = 0 }",
            &["source.payload_type = 0", "10, 11 or 96–127"],
        ),
        (
            "audio",
            "packet_ms = 20\nsource = { kind = \"rtp\", port = 5004, payload_type = 11, channels = 2 }",
            &["source.channels", "payload type 11 fixes it"],
        ),
        (
            "audio",
            "packet_ms = 20\nsource = { kind = \"rtp\", port = 5004, payload_type = 96, bind = \"localhost\" }",
            &["source.bind = \"localhost\"", "IP address"],
        ),
        (
            "audio",
            "packet_ms = 20\nsource = { kind = \"rtp\", port = 5004, payload_type = 96, sample_rate_hz = 11025 }",
            &[
                "source.sample_rate_hz = 11025",
                "whole samples",
                "packet_ms",
            ],
        ),
        (
            "audio",
            "packet_ms = 20\nloss_pct = 5\nsource = { kind = \"rtp\", port = 5004, payload_type = 96 }",
            &["streams[0].loss_pct = 5", "its losses are real"],
        ),
        (
            "audio",
            "packet_ms = 20\nsource = { kind = \"rtp\", port = 5004, payload_type = 96, path = \"x\" }",
            &["source.path", "does not apply to source kind rtp"],
        ),
    ];
    for (kind, body, fragments) in cases {
        let e = error(&doc(kind, body), None);
        for f in *fragments {
            assert!(e.contains(f), "{body}: `{f}` not in: {e}");
        }
        assert!(e.starts_with("t.toml:"), "{e}");
    }
    let ok = doc(
        "audio",
        "packet_ms = 20\nsource = { kind = \"rtp\", port = 5004, payload_type = 97, sample_rate_hz = 48000, channels = 2 }",
    );
    let s = Scenario::from_toml(&ok, "t.toml").expect("valid");
    assert_eq!(
        s.streams()[0].source.as_ref().map(|x| x.kind),
        Some(SourceKind::Rtp)
    );
    let v4l2 = doc("camera", "fps = 5\nsource = { kind = \"v4l2\" }");
    let s = Scenario::from_toml(&v4l2, "t.toml").expect("valid");
    assert_eq!(
        s.streams()[0]
            .source
            .as_ref()
            .and_then(|x| x.path.as_deref()),
        Some("/dev/video0"),
        "the default device"
    );
}

#[test]
fn a_simulation_replaces_live_sources_by_generated_sensors_and_says_so() {
    let text = doc(
        "audio",
        "packet_ms = 20\nsource = { kind = \"rtp\", port = 5004, payload_type = 96 }",
    );
    let s = Scenario::from_toml(&text, "t.toml").expect("valid");
    let (simulated, notes) = s.without_live_sources();
    assert!(simulated.streams().iter().all(|st| st.source.is_none()));
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].contains("rtp") && notes[0].contains("generated"),
        "{notes:?}"
    );
    // Nothing live: nothing replaced.
    let (again, none) = simulated.without_live_sources();
    assert_eq!(again, simulated);
    assert!(none.is_empty());
}
