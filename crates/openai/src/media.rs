//! `POST /v1/audio/transcriptions` (OpenAI's multipart shape: a `file` and a `model`) and
//! `POST /api/v1/ocr` (an image body): one request to the runtime each.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use mmsched_backends::RgbFrame;
use mmsched_backends::audio::{AudioClip, SAMPLE_RATE_HZ, decode_wav, resample};
use mmsched_pipeline::request::{Answer, Input, Reply, Update};
use mmsched_pipeline::stats::Kind;
use mmsched_server::multipart;
use serde_json::json;

use crate::answer::{
    failed, invalid, json_ok, mark_deadline, model_not_found, overloaded, shed, too_large,
    unprocessable, unsupported_media,
};
use crate::bounds::{MAX_AUDIO_SECONDS, Refused, Reserved, image_size, wav_length};
use crate::{OpenAi, Slot, Terms};

/// Runs `input` of `kind` on `terms` in its place among the class's requests (`_slot`,
/// taken before the upload was decoded), and answers with `ok` made from its result.
pub(crate) async fn run_one(
    api: &Arc<OpenAi>,
    kind: Kind,
    _slot: Slot,
    terms: Terms,
    input: Input,
    ok: impl FnOnce(Answer) -> Response,
) -> Response {
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
    let served = api.speech_model_id();
    if !(model.is_empty() || model == served || model == "whisper-1") {
        return model_not_found(format!(
            "model {model:?} is not served here; use \"{served}\" (GET /v1/models lists the models)"
        ));
    }
    if let Some(lang) = text_of("language")
        && !lang.is_empty()
        && lang != "en"
    {
        return invalid(
            format!("language {lang:?} is not supported: {served} transcribes English only here"),
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
    // Decoding takes a place among the class's requests, and memory from the budget.
    let slot = match api.admit(Kind::Asr) {
        Ok(s) => s,
        Err(r) => return r,
    };
    let name = file.filename.clone().unwrap_or_else(|| "upload".into());
    let clip = match audio_upload(&api, file.data.clone(), name).await {
        Ok(c) => c,
        Err(r) => return r,
    };
    let deadline_ms = terms.deadline_ms;
    run_one(
        &api,
        Kind::Asr,
        slot,
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

/// An uploaded recording (`name` as its errors show it) decoded off the async threads
/// with [`decode_audio`].
pub(crate) async fn audio_upload(
    api: &Arc<OpenAi>,
    data: impl AsRef<[u8]> + Send + 'static,
    name: String,
) -> Result<AudioClip, Response> {
    let decoding = Arc::clone(api);
    match tokio::task::spawn_blocking(move || decode_audio(&decoding, data.as_ref(), &name)).await {
        Ok(decoded) => decoded,
        Err(e) => Err(failed(&mmsched_runtime::sched::WorkError::Panicked {
            message: e.to_string(),
        })),
    }
}

/// WAV directly (8 to 192 kHz, resampled to 16 kHz mono); any other format through the
/// `ffmpeg` command (16 kHz mono WAV out, at most [`MAX_AUDIO_SECONDS`] and one more).
/// Its length is read from the WAV header and its memory taken from the budget before a
/// sample is decoded.
fn decode_audio(api: &Arc<OpenAi>, data: &[u8], name: &str) -> Result<AudioClip, Response> {
    let converted;
    let (wav, _converting) = if data.starts_with(b"RIFF") {
        (data, None)
    } else {
        // ffmpeg's output is bounded by its -t: take its memory before it runs.
        let most = (MAX_AUDIO_SECONDS + 1) * u64::from(SAMPLE_RATE_HZ) * 2;
        let share = reserve(api, Kind::Asr, most)?;
        converted = ffmpeg_to_wav(data, name)?;
        (converted.as_slice(), Some(share))
    };
    let length = wav_length(wav, name)?;
    let _share = reserve(api, Kind::Asr, length.decoded_bytes)?;
    let clip = decode_wav(std::io::Cursor::new(wav), name)
        .map_err(|e| unprocessable(e.chain(), Some("file")))?;
    Ok(AudioClip {
        samples: resample(&clip.samples, clip.sample_rate_hz, SAMPLE_RATE_HZ),
        sample_rate_hz: SAMPLE_RATE_HZ,
    })
}

/// `bytes` of the decode budget for an upload of `kind`: 413 if it can never fit, 503 with
/// `Retry-After` (counted as shed) while other uploads hold it.
pub(crate) fn reserve(api: &Arc<OpenAi>, kind: Kind, bytes: u64) -> Result<Reserved, Response> {
    let mib = |b: u64| b.div_ceil(1 << 20);
    api.budget.reserve(bytes).map_err(|why| match why {
        Refused::Never => too_large(
            format!(
                "decoding this upload takes {} MiB, more than the server's decode budget of {} MiB: send a smaller file",
                mib(bytes),
                mib(api.budget.limit() as u64)
            ),
            None,
        ),
        Refused::Busy => {
            let _ = api.client.refused(kind);
            overloaded(format!(
                "other uploads being decoded hold the server's decode budget of {} MiB (this one needs {} MiB); retry later",
                mib(api.budget.limit() as u64),
                mib(bytes)
            ))
        }
    })
}

/// Any audio ffmpeg reads, as 16 kHz mono WAV bytes.
fn ffmpeg_to_wav(data: &[u8], name: &str) -> Result<Vec<u8>, Response> {
    ffmpeg_output(data, name)
        .map_err(|why| unsupported_media(mmsched_runtime::chain::chain(&why), Some("file")))
}

/// Why ffmpeg did not turn an upload into WAV.
#[derive(Debug, thiserror::Error)]
enum FfmpegError {
    /// ffmpeg could not be started.
    #[error(
        "{name} is not a WAV file, and ffmpeg, which decodes other formats, cannot run: send 16 kHz mono WAV, or install ffmpeg"
    )]
    Spawn {
        name: String,
        #[source]
        source: std::io::Error,
    },
    /// ffmpeg started without a pipe for its input.
    #[error("ffmpeg has no input")]
    NoInput,
    /// Waiting for ffmpeg failed.
    #[error("ffmpeg failed on {name}")]
    Wait {
        name: String,
        #[source]
        source: std::io::Error,
    },
    /// ffmpeg ran and refused the upload.
    #[error("{name} is not audio ffmpeg can decode: {stderr}")]
    Decode { name: String, stderr: String },
}

fn ffmpeg_output(data: &[u8], name: &str) -> Result<Vec<u8>, FfmpegError> {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let mut child = Command::new("ffmpeg")
        .args(["-hide_banner", "-loglevel", "error", "-i", "pipe:0"])
        .args(["-t", &(MAX_AUDIO_SECONDS + 1).to_string()])
        .args(["-ar", "16000", "-ac", "1", "-f", "wav", "pipe:1"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| FfmpegError::Spawn {
            name: name.to_string(),
            source,
        })?;
    let mut stdin = child.stdin.take().ok_or(FfmpegError::NoInput)?;
    let input = data.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child
        .wait_with_output()
        .map_err(|source| FfmpegError::Wait {
            name: name.to_string(),
            source,
        })?;
    let _ = writer.join();
    if !out.status.success() {
        return Err(FfmpegError::Decode {
            name: name.to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(out.stdout)
}

/// A PNG or JPEG upload (`shown` in its errors) decoded off the async threads: sized from
/// its header and held to the pixel cap first, its memory taken from the decode budget.
pub(crate) async fn image_upload(
    api: &Arc<OpenAi>,
    bytes: impl AsRef<[u8]> + Send + 'static,
    shown: &'static str,
) -> Result<RgbFrame, Response> {
    let size = image_size(bytes.as_ref())?;
    let share = reserve(api, Kind::Vision, size.decoded_bytes)?;
    match tokio::task::spawn_blocking(move || {
        let _share = share;
        RgbFrame::decode(bytes.as_ref(), shown)
    })
    .await
    {
        Ok(Ok(f)) => Ok(f),
        Ok(Err(e)) => Err(unprocessable(e.chain(), None)),
        Err(e) => Err(failed(&mmsched_runtime::sched::WorkError::Panicked {
            message: e.to_string(),
        })),
    }
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
    // Decoding takes a place among the class's requests, and memory from the budget.
    let slot = match api.admit(Kind::Vision) {
        Ok(s) => s,
        Err(r) => return r,
    };
    let frame = match image_upload(&api, body, "the request body").await {
        Ok(f) => f,
        Err(r) => return r,
    };
    let deadline_ms = terms.deadline_ms;
    run_one(&api, Kind::Vision, slot, terms, Input::Frame(frame), |a| {
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
