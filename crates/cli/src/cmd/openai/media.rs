//! `POST /v1/audio/transcriptions` (OpenAI's multipart shape: a `file` and a `model`) and
//! `POST /api/v1/ocr` (an image body): one scheduled job each.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use mmsched_backends::audio::{AudioClip, decode_wav};
use mmsched_backends::{RgbFrame, run_timed};
use mmsched_core::time::MonotonicClock;
use mmsched_pipeline::engines::lock;
use mmsched_pipeline::jobs::work_error;
use mmsched_pipeline::service::JobEvent;
use mmsched_runtime::sched::StepOutcome;
use mmsched_server::multipart;
use serde_json::json;

use super::{
    ASR_ID, ApiClass, ModelApi, api_error, failed_answer, invalid, json_ok, mark_deadline, publish,
    shed_answer,
};

/// `POST /v1/audio/transcriptions`.
pub async fn transcriptions(
    State(api): State<Arc<ModelApi>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let started = std::time::Instant::now();
    let Some(asr) = api.engines.asr.clone() else {
        return api_error(
            StatusCode::NOT_FOUND,
            "model_not_found",
            "no speech model is loaded: start the server with --models".into(),
            Some("model"),
        );
    };
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let parts = match multipart::boundary(content_type).and_then(|b| multipart::parse(&body, &b)) {
        Ok(p) => p,
        Err(e) => return invalid(e.to_string(), None),
    };
    let field = |name: &str| parts.iter().find(|p| p.name == name);
    let Some(file) = field("file") else {
        return invalid(
            "the form has no `file` field: send the audio as `file` (e.g. curl -F file=@clip.wav -F model=whisper-tiny.en)".into(),
            Some("file"),
        );
    };
    let model = field("model")
        .map(|p| String::from_utf8_lossy(&p.data).trim().to_string())
        .unwrap_or_default();
    if !(model.is_empty() || model == ASR_ID || model == "whisper-1") {
        return api_error(
            StatusCode::NOT_FOUND,
            "model_not_found",
            format!(
                "model {model:?} is not served here; use \"{ASR_ID}\" (GET /v1/models lists the models)"
            ),
            Some("model"),
        );
    }
    if let Some(lang) = field("language").map(|p| String::from_utf8_lossy(&p.data).to_string())
        && !lang.trim().is_empty()
        && lang.trim() != "en"
    {
        return invalid(
            format!("language {lang:?} is not supported: {ASR_ID} transcribes English only"),
            Some("language"),
        );
    }
    let format = field("response_format")
        .map(|p| String::from_utf8_lossy(&p.data).trim().to_string())
        .unwrap_or_else(|| "json".into());
    if !matches!(format.as_str(), "json" | "text" | "verbose_json") {
        return invalid(
            format!("response_format {format:?} is not supported; use json, text or verbose_json"),
            Some("response_format"),
        );
    }
    let name = file.filename.clone().unwrap_or_else(|| "upload".into());
    let data = file.data.clone();
    let clip = match tokio::task::spawn_blocking(move || decode_audio(&data, &name)).await {
        Ok(Ok(c)) => c,
        Ok(Err(why)) => return invalid(why, Some("file")),
        Err(e) => return failed_answer(e.to_string()),
    };
    let _slot = match api.admit(ApiClass::Asr) {
        Ok(s) => s,
        Err(r) => return r,
    };
    let terms = match api.terms(ApiClass::Asr, &headers) {
        Ok(t) => t,
        Err(r) => return r,
    };
    let deadline_ms = terms.deadline_ms;
    let (tx, rx) = std::sync::mpsc::channel();
    let work = Box::new(move || {
        let clock = MonotonicClock::new();
        let text = run_timed(&mut *lock(&asr), &clip, &clock)
            .map_err(|e| work_error("speech recognition", e))?
            .0;
        let _ = tx.send(text);
        Ok(StepOutcome::Finished)
    });
    match api.run_once(api.job(ApiClass::Asr, terms, work)).await {
        JobEvent::Done { on_time, .. } => {
            let text = rx.try_recv().unwrap_or_default();
            let text = text.trim().to_string();
            publish(
                &api.results,
                "transcription",
                deadline_ms,
                started,
                on_time,
                &text,
            );
            let r = match format.as_str() {
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
                    "mmsched": {"deadline_ms": deadline_ms, "deadline_missed": !on_time},
                })),
            };
            mark_deadline(r, on_time)
        }
        JobEvent::Shed => shed_answer(ApiClass::Asr, deadline_ms),
        JobEvent::Failed(why) => failed_answer(why),
        JobEvent::Step { .. } => failed_answer("the transcription ended early".into()),
    }
}

/// WAV directly; any other format through the `ffmpeg` command (16 kHz mono WAV out).
fn decode_audio(data: &[u8], name: &str) -> Result<AudioClip, String> {
    if data.starts_with(b"RIFF") {
        return decode_wav(std::io::Cursor::new(data), name).map_err(|e| e.to_string());
    }
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
    decode_wav(std::io::Cursor::new(out.stdout), name).map_err(|e| e.to_string())
}

/// `POST /api/v1/ocr`: the body is a PNG or JPEG image.
pub async fn ocr(State(api): State<Arc<ModelApi>>, headers: HeaderMap, body: Bytes) -> Response {
    let started = std::time::Instant::now();
    if api.engines.ocr.is_empty() {
        return api_error(
            StatusCode::NOT_FOUND,
            "model_not_found",
            "no OCR model is loaded: start the server with --models".into(),
            None,
        );
    }
    let bytes = body.to_vec();
    let frame =
        match tokio::task::spawn_blocking(move || RgbFrame::decode(&bytes, "the request body"))
            .await
        {
            Ok(Ok(f)) => f,
            Ok(Err(e)) => {
                return invalid(
                    format!(
                        "{e}; send the image bytes as the body, e.g. curl --data-binary @sign.png"
                    ),
                    None,
                );
            }
            Err(e) => return failed_answer(e.to_string()),
        };
    let _slot = match api.admit(ApiClass::Vision) {
        Ok(s) => s,
        Err(r) => return r,
    };
    let terms = match api.terms(ApiClass::Vision, &headers) {
        Ok(t) => t,
        Err(r) => return r,
    };
    let deadline_ms = terms.deadline_ms;
    let n = api.engines.ocr.len();
    let pipeline = api.engines.ocr[api
        .next_ocr
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        % n]
        .clone();
    let (tx, rx) = std::sync::mpsc::channel();
    let work = Box::new(move || {
        let clock = MonotonicClock::new();
        let out =
            run_timed(&mut *lock(&pipeline), &frame, &clock).map_err(|e| work_error("OCR", e))?;
        let _ = tx.send(out);
        Ok(StepOutcome::Finished)
    });
    match api.run_once(api.job(ApiClass::Vision, terms, work)).await {
        JobEvent::Done { on_time, .. } => {
            let Ok((lines, timing)) = rx.try_recv() else {
                return failed_answer("the OCR job gave no output".into());
            };
            let text: Vec<&str> = lines.iter().map(|l| l.text.as_str()).collect();
            publish(
                &api.results,
                "ocr",
                deadline_ms,
                started,
                on_time,
                &text.join(" | "),
            );
            let ms = |n: u64| n as f64 / 1e6;
            let r = json_ok(json!({
                "lines": lines,
                "timing_ms": {"pre": ms(timing.pre_nanos), "exec": ms(timing.exec_nanos), "post": ms(timing.post_nanos)},
                "deadline_ms": deadline_ms,
                "on_time": on_time,
            }));
            mark_deadline(r, on_time)
        }
        JobEvent::Shed => shed_answer(ApiClass::Vision, deadline_ms),
        JobEvent::Failed(why) => failed_answer(why),
        JobEvent::Step { .. } => failed_answer("the OCR job ended early".into()),
    }
}
