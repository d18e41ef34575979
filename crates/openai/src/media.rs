//! `POST /v1/audio/transcriptions` (OpenAI's multipart shape: a `file` and a `model`) and
//! `POST /api/v1/ocr` (an image body): one request to the runtime each.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use mmsched_backends::RgbFrame;
use mmsched_backends::audio::{AudioClip, decode_wav, resample};
use mmsched_pipeline::request::{Answer, Input, Reply, Update};
use mmsched_pipeline::stats::Kind;
use mmsched_server::multipart;
use serde_json::json;

use crate::answer::{failed, invalid, json_ok, mark_deadline, model_not_found, shed};
use crate::{ASR_ID, OpenAi, Terms};

/// Runs `input` of `kind` within its class's cap on `terms`, and answers with `ok` made
/// from its result.
async fn run_one(
    api: &Arc<OpenAi>,
    kind: Kind,
    terms: Terms,
    input: Input,
    ok: impl FnOnce(Answer) -> Response,
) -> Response {
    let _slot = match api.admit(kind) {
        Ok(s) => s,
        Err(r) => return r,
    };
    let mut submitted = match api.submit(input, terms) {
        Ok(s) => s,
        Err(r) => return r,
    };
    let last = loop {
        match submitted.updates.recv().await {
            Some(Update::Token(_)) => continue,
            other => break other,
        }
    };
    submitted.guard.disarm();
    match last {
        Some(Update::Finished(a)) => {
            let on_time = a.on_time;
            mark_deadline(ok(a), on_time)
        }
        Some(Update::Shed(why)) => shed(kind, terms.deadline_ms, &why),
        Some(Update::Failed(e)) => failed(&e),
        Some(Update::Token(_)) | None => failed(&mmsched_runtime::sched::WorkError::Cancelled {
            why: "the runtime stopped before the request ended",
        }),
    }
}

/// `POST /v1/audio/transcriptions`.
pub async fn transcriptions(
    State(api): State<Arc<OpenAi>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if !api.client.has(Kind::Asr) {
        return model_not_found("no speech model is loaded: start the server with --models".into());
    }
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let parts = match multipart::boundary(content_type).and_then(|b| multipart::parse(&body, &b)) {
        Ok(p) => p,
        Err(e) => return invalid(e.to_string(), None),
    };
    let field = |name: &str| parts.iter().find(|p| p.name == name);
    let text_of =
        |name: &str| field(name).map(|p| String::from_utf8_lossy(&p.data).trim().to_string());
    let Some(file) = field("file") else {
        return invalid(
            "the form has no `file` field: send the audio as `file` (e.g. curl -F file=@clip.wav -F model=whisper-tiny.en)".into(),
            Some("file"),
        );
    };
    let model = text_of("model").unwrap_or_default();
    if !(model.is_empty() || model == ASR_ID || model == "whisper-1") {
        return model_not_found(format!(
            "model {model:?} is not served here; use \"{ASR_ID}\" (GET /v1/models lists the models)"
        ));
    }
    if let Some(lang) = text_of("language")
        && !lang.is_empty()
        && lang != "en"
    {
        return invalid(
            format!("language {lang:?} is not supported: {ASR_ID} transcribes English only"),
            Some("language"),
        );
    }
    let format = text_of("response_format").unwrap_or_else(|| "json".into());
    if !matches!(format.as_str(), "json" | "text" | "verbose_json") {
        return invalid(
            format!("response_format {format:?} is not supported; use json, text or verbose_json"),
            Some("response_format"),
        );
    }
    let terms = match api.terms(Kind::Asr, &headers) {
        Ok(t) => t,
        Err(r) => return r,
    };
    let name = file.filename.clone().unwrap_or_else(|| "upload".into());
    let data = file.data.clone();
    let clip = match tokio::task::spawn_blocking(move || decode_audio(&data, &name)).await {
        Ok(Ok(c)) => c,
        Ok(Err(why)) => return invalid(why, Some("file")),
        Err(e) => {
            return failed(&mmsched_runtime::sched::WorkError::Panicked {
                message: e.to_string(),
            });
        }
    };
    let deadline_ms = terms.deadline_ms;
    run_one(
        &api,
        Kind::Asr,
        terms,
        Input::Utterance(clip.samples),
        |a| {
            let text = match a.reply {
                Reply::Transcript(t) => t,
                other => other.text(),
            };
            match format.as_str() {
                "text" => (
                    StatusCode::OK,
                    [(
                        header::CONTENT_TYPE,
                        HeaderValue::from_static("text/plain; charset=utf-8"),
                    )],
                    format!("{text}\n"),
                )
                    .into_response(),
                _ => json_ok(json!({
                    "text": text,
                    "mmsched": {"deadline_ms": deadline_ms, "deadline_missed": !a.on_time},
                })),
            }
        },
    )
    .await
}

/// WAV directly (any rate, resampled to 16 kHz mono); any other format through the
/// `ffmpeg` command (16 kHz mono WAV out).
fn decode_audio(data: &[u8], name: &str) -> Result<AudioClip, String> {
    let wav = if data.starts_with(b"RIFF") {
        decode_wav(std::io::Cursor::new(data), name).map_err(|e| e.chain())?
    } else {
        decode_wav(std::io::Cursor::new(ffmpeg_to_wav(data, name)?), name).map_err(|e| e.chain())?
    };
    Ok(AudioClip {
        samples: resample(&wav.samples, wav.sample_rate_hz, 16_000),
        sample_rate_hz: 16_000,
    })
}

/// Any audio ffmpeg reads, as 16 kHz mono WAV bytes.
fn ffmpeg_to_wav(data: &[u8], name: &str) -> Result<Vec<u8>, String> {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let mut child = Command::new("ffmpeg")
        .args(["-hide_banner", "-loglevel", "error", "-i", "pipe:0"])
        .args(["-ar", "16000", "-ac", "1", "-f", "wav", "pipe:1"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            format!("{name} is not a WAV file, and ffmpeg, which decodes other formats, cannot run ({e}): send 16 kHz mono WAV, or install ffmpeg")
        })?;
    let mut stdin = child.stdin.take().ok_or("ffmpeg has no input")?;
    let input = data.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child
        .wait_with_output()
        .map_err(|e| format!("ffmpeg failed on {name}: {e}"))?;
    let _ = writer.join();
    if !out.status.success() {
        return Err(format!(
            "{name} is not audio ffmpeg can decode: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(out.stdout)
}

/// `POST /api/v1/ocr`: the body is a PNG or JPEG image.
pub async fn ocr(State(api): State<Arc<OpenAi>>, headers: HeaderMap, body: Bytes) -> Response {
    if !api.client.has(Kind::Vision) {
        return model_not_found("no OCR model is loaded: start the server with --models".into());
    }
    let terms = match api.terms(Kind::Vision, &headers) {
        Ok(t) => t,
        Err(r) => return r,
    };
    let bytes = body.to_vec();
    let frame =
        match tokio::task::spawn_blocking(move || RgbFrame::decode(&bytes, "the request body"))
            .await
        {
            Ok(Ok(f)) => f,
            Ok(Err(e)) => {
                return invalid(
                    format!(
                        "{}; send the image bytes as the body, e.g. curl --data-binary @sign.png",
                        e.chain()
                    ),
                    None,
                );
            }
            Err(e) => {
                return failed(&mmsched_runtime::sched::WorkError::Panicked {
                    message: e.to_string(),
                });
            }
        };
    let deadline_ms = terms.deadline_ms;
    run_one(&api, Kind::Vision, terms, Input::Frame(frame), |a| {
        let lines = match a.reply {
            Reply::Lines(l) => l,
            _ => Vec::new(),
        };
        let ms = |n: u64| n as f64 / 1e6;
        let t = a.timing.unwrap_or_default();
        json_ok(json!({
            "lines": lines,
            "timing_ms": {"pre": ms(t.pre_nanos), "exec": ms(t.exec_nanos), "post": ms(t.post_nanos)},
            "deadline_ms": deadline_ms,
            "on_time": a.on_time,
        }))
    })
    .await
}
