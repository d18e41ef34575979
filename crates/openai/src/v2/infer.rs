//! `POST /v2/models/{name}/infer`: the request's tensors read ([`super::tensor`]), turned
//! into the one runtime request the OpenAI endpoints would make for the same input (an
//! image, a recording, a prompt), run with the same deadline, importance and class cap,
//! and the answer written back as the model's output tensors, JSON or binary.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use mmsched_backends::RgbFrame;
use mmsched_backends::audio::SAMPLE_RATE_HZ;
use mmsched_pipeline::request::{Answer, Input, Reply, Update};
use mmsched_pipeline::stats::Kind;
use serde_json::{Map, Value, json};

use super::models::{Builtin, VERSION};
use super::tensor::{Data, DataType, InferRequest, OutData, Output, Tensor, parse_request};
use crate::answer::{failed, invalid, mark_deadline, shed, too_large};
use crate::bounds::{MAX_AUDIO_SECONDS, MAX_IMAGE_PIXELS};
use crate::media::{audio_upload, image_upload, reserve, run_one};
use crate::{OpenAi, Slot, Terms, deadline_in_range};

/// Memory a JSON header may take while parsed, per byte of it: serde_json's value of a
/// one-digit number (`0,`) is 32 bytes for 2 bytes of text, plus its place in the
/// flattened list and its bytes once converted.
const JSON_EXPANSION: u64 = 24;

/// The header that says where the JSON of a binary request or answer ends.
pub const HEADER_LENGTH: &str = "inference-header-content-length";

/// Runs one inference request on `model` and answers it.
pub async fn infer(api: Arc<OpenAi>, model: Builtin, headers: HeaderMap, body: Bytes) -> Response {
    let body = match inflated(&api, &headers, body).await {
        Ok(b) => b,
        Err(r) => return r,
    };
    let req = match read(&api, model.kind(), &headers, body).await {
        Ok(r) => r,
        Err(r) => return r,
    };
    if let Err(r) = check_outputs(model, &api.v2_id(model), &req) {
        return r;
    }
    let given_ms = match deadline_param(&req) {
        Ok(ms) => ms,
        Err(r) => return r,
    };
    match model {
        Builtin::Ocr => ocr(&api, &headers, req, given_ms).await,
        Builtin::Asr => asr(&api, &headers, req, given_ms).await,
        Builtin::Llm => text(&api, &headers, req, given_ms).await,
    }
}

/// The body as sent, or inflated off the async threads when it is compressed (at most
/// the upload limit: 413 past it; 400 for an unknown encoding or corrupt data).
pub(super) async fn inflated(
    api: &OpenAi,
    headers: &HeaderMap,
    body: Bytes,
) -> Result<Bytes, Response> {
    let Some(encoding) = headers.get(header::CONTENT_ENCODING) else {
        return Ok(body);
    };
    let encoding = encoding.to_str().unwrap_or("(not text)").to_string();
    let limit = api.upload_limit_bytes;
    let done = tokio::task::spawn_blocking(move || {
        super::compress::inflate(Some(&encoding), &body, limit).map(|b| b.map_or(body, Bytes::from))
    })
    .await;
    match done {
        Ok(Ok(b)) => Ok(b),
        Ok(Err(e @ super::compress::InflateError::TooLarge { .. })) => {
            Err(too_large(mmsched_runtime::chain::chain(&e), None))
        }
        Ok(Err(e)) => Err(invalid(mmsched_runtime::chain::chain(&e), None)),
        Err(e) => Err(failed(&mmsched_runtime::sched::WorkError::Panicked {
            message: e.to_string(),
        })),
    }
}

/// The request's tensors, parsed off the async threads with the memory the JSON takes
/// held from the decode budget while it is parsed.
pub(super) async fn read(
    api: &Arc<OpenAi>,
    kind: Kind,
    headers: &HeaderMap,
    body: Bytes,
) -> Result<InferRequest, Response> {
    let header_len = match headers.get(HEADER_LENGTH) {
        None => None,
        Some(v) => Some(
            v.to_str()
                .map_err(|_| {
                    invalid(
                        "the Inference-Header-Content-Length header is not text: send the JSON header's length in bytes".into(),
                        None,
                    )
                })?
                .to_string(),
        ),
    };
    let json_len = header_len
        .as_deref()
        .and_then(|h| h.trim().parse::<usize>().ok())
        .map_or(body.len(), |n| n.min(body.len()));
    let parsing = json_len as u64 * JSON_EXPANSION;
    if parsing > api.budget.limit() as u64 {
        return Err(too_large(
            format!(
                "parsing this request's {} KiB of JSON takes about {} MiB, more than the server's decode budget of {} MiB: send the tensors as binary data (binary_data_size; tritonclient's default), or start the server with a larger --decode-budget-mib",
                json_len.div_ceil(1024),
                parsing.div_ceil(1 << 20),
                api.budget.limit() >> 20
            ),
            None,
        ));
    }
    let share = reserve(api, kind, parsing)?;
    let parsed = tokio::task::spawn_blocking(move || {
        let _share = share;
        parse_request(&body, header_len.as_deref())
    })
    .await;
    match parsed {
        Ok(Ok(r)) => Ok(r),
        Ok(Err(e)) => Err(invalid(mmsched_runtime::chain::chain(&e), None)),
        Err(e) => Err(failed(&mmsched_runtime::sched::WorkError::Panicked {
            message: e.to_string(),
        })),
    }
}

/// 400 unless every output asked for is one of the model's.
fn check_outputs(model: Builtin, name: &str, req: &InferRequest) -> Result<(), Response> {
    for w in &req.outputs {
        if !model.outputs().iter().any(|s| s.name == w.name) {
            return Err(invalid(
                format!(
                    "{} has no output {:?}; its outputs are {} (or leave `outputs` out for all of them)",
                    name,
                    w.name,
                    Builtin::names(model.outputs())
                ),
                None,
            ));
        }
    }
    Ok(())
}

/// The `deadline_ms` parameter, if given: 1 ms to [`crate::MAX_DEADLINE_MS`].
pub(super) fn deadline_param(req: &InferRequest) -> Result<Option<u64>, Response> {
    match req.parameters.get("deadline_ms") {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .filter(|&ms| deadline_in_range(ms))
            .map(Some)
            .ok_or_else(|| {
                invalid(
                    format!(
                        "parameters.deadline_ms must be a whole number of milliseconds from 1 to {}, not {v}",
                        crate::MAX_DEADLINE_MS
                    ),
                    None,
                )
            }),
    }
}

/// The one input the request gives the model, taken out of it (its data is not copied):
/// 400 for an input the model does not have, or none of those it has.
fn take_input(model: Builtin, name: &str, req: &mut InferRequest) -> Result<Tensor, Response> {
    let list = Builtin::names(model.inputs());
    if let Some(other) = req
        .inputs
        .iter()
        .find(|t| !model.inputs().iter().any(|s| s.name == t.name))
    {
        return Err(invalid(
            format!("{} has no input {:?}; give one of {list}", name, other.name),
            None,
        ));
    }
    match req.inputs.len() {
        1 => Ok(req.inputs.remove(0)),
        0 => Err(invalid(
            format!("the request has no input; {} wants one of {list}", name),
            None,
        )),
        _ => Err(invalid(
            format!(
                "the request gives {} inputs; {} wants exactly one of {list}",
                req.inputs.len(),
                name
            ),
            None,
        )),
    }
}

/// The single element of a `BYTES` tensor of one element (an encoded file, a prompt),
/// or the tensor back when it is not one.
fn one_element(t: Tensor) -> Result<Vec<u8>, Tensor> {
    match t.data {
        Data::Bytes(mut items) if items.len() == 1 => Ok(items.swap_remove(0)),
        data => Err(Tensor { data, ..t }),
    }
}

/// 400: `t` should have been `BYTES` `[1]` holding `what`.
fn not_one_element(t: &Tensor, what: &str) -> Response {
    invalid(
        format!(
            "input {:?} must be BYTES of shape [1] holding {what}; it is {} {:?}",
            t.name,
            t.datatype.as_str(),
            t.shape
        ),
        None,
    )
}

/// What the answer says besides its outputs: the request's id, the model, and whether the
/// deadline was met.
fn head(name: &str, req: &InferRequest, terms: &Terms, on_time: bool) -> Map<String, Value> {
    head_of(name, req, terms, on_time)
}

/// [`head`] for the model called `name`.
pub(super) fn head_of(
    name: &str,
    req: &InferRequest,
    terms: &Terms,
    on_time: bool,
) -> Map<String, Value> {
    let mut head = Map::new();
    head.insert("model_name".into(), name.into());
    head.insert("model_version".into(), VERSION.into());
    if let Some(id) = &req.id {
        head.insert("id".into(), id.clone().into());
    }
    head.insert(
        "parameters".into(),
        json!({"deadline_ms": terms.deadline_ms, "deadline_missed": !on_time}),
    );
    head
}

/// The answer: the outputs the request asks for (all when it names none), each JSON or
/// binary as it asks; binary answers carry `Inference-Header-Content-Length`.
pub(super) fn respond(req: &InferRequest, head: Map<String, Value>, all: Vec<Output>) -> Response {
    let chosen: Vec<(Output, bool)> = all
        .into_iter()
        .filter(|o| req.outputs.is_empty() || req.outputs.iter().any(|w| w.name == o.name))
        .map(|o| {
            let binary = req.binary(&o.name);
            (o, binary)
        })
        .collect();
    let (body, json_len) = super::tensor::encode_answer(head, &chosen);
    let mut r = (StatusCode::OK, Body::from(body)).into_response();
    let h = r.headers_mut();
    match json_len {
        Some(n) => {
            h.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/octet-stream"),
            );
            h.insert(HEADER_LENGTH, HeaderValue::from(n));
        }
        None => {
            h.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
        }
    }
    r
}

pub(super) fn bytes_out(name: &'static str, items: Vec<String>) -> Output {
    Output {
        name: name.into(),
        shape: vec![items.len() as u64],
        data: OutData::Bytes(items),
    }
}

/// OCR: RGB pixels `[H, W, 3]` as they are, or a PNG or JPEG file decoded as
/// `POST /api/v1/ocr` decodes one.
async fn ocr(
    api: &Arc<OpenAi>,
    headers: &HeaderMap,
    mut req: InferRequest,
    given_ms: Option<u64>,
) -> Response {
    let model = Builtin::Ocr;
    let name = api.v2_id(model);
    let t = match take_input(model, &name, &mut req) {
        Ok(t) => t,
        Err(r) => return r,
    };
    let terms = match api.terms_or(Kind::Vision, headers, given_ms) {
        Ok(t) => t,
        Err(r) => return r,
    };
    let slot = match api.admit(Kind::Vision) {
        Ok(s) => s,
        Err(r) => return r,
    };
    let frame = match (t.datatype, t.data) {
        (DataType::Bytes, Data::Bytes(mut items)) if items.len() == 1 => {
            let file = items.swap_remove(0);
            image_upload(api, file, "the image_file tensor").await
        }
        (DataType::U8, Data::Fixed(pixels)) => pixels_frame(&t.name, &t.shape, pixels),
        (datatype, _) => Err(invalid(
            format!(
                "input {:?} is {} {:?}; pp-ocrv4 reads UINT8 [H, W, 3] (RGB pixels, row-major) or BYTES [1] (a PNG or JPEG file)",
                t.name,
                datatype.as_str(),
                t.shape
            ),
            None,
        )),
    };
    let frame = match frame {
        Ok(f) => f,
        Err(r) => return r,
    };
    run_one(api, Kind::Vision, slot, terms, Input::Frame(frame), |a| {
        let head = head(&name, &req, &terms, a.on_time);
        respond(&req, head, ocr_outputs(a))
    })
    .await
}

/// A frame from `[H, W, 3]` pixels, held to the pixel cap of uploads.
pub(super) fn pixels_frame(
    name: &str,
    shape: &[u64],
    pixels: Vec<u8>,
) -> Result<RgbFrame, Response> {
    let [h, w, 3] = shape else {
        return Err(invalid(
            format!(
                "input {name:?} is UINT8 of shape {shape:?}; RGB pixels are [H, W, 3] (height, width, channels)"
            ),
            None,
        ));
    };
    if h.saturating_mul(*w) > MAX_IMAGE_PIXELS {
        return Err(too_large(
            format!(
                "input {name:?} is {w}×{h} pixels; at most {} megapixels are read: scale it down",
                MAX_IMAGE_PIXELS >> 20
            ),
            None,
        ));
    }
    // Both fit in u32: their product is at most 16 Mi and neither is 0 past this point
    // (RgbFrame::new refuses 0).
    let (w, h) = (
        u32::try_from(*w).unwrap_or(u32::MAX),
        u32::try_from(*h).unwrap_or(u32::MAX),
    );
    RgbFrame::new(w, h, pixels).map_err(|e| invalid(format!("input {name:?}: {e}"), None))
}

fn ocr_outputs(a: Answer) -> Vec<Output> {
    let lines = match a.reply {
        Reply::Lines(l) => l,
        _ => Vec::new(),
    };
    let n = lines.len() as u64;
    vec![
        bytes_out("text", lines.iter().map(|l| l.text.clone()).collect()),
        Output {
            name: "scores".into(),
            shape: vec![n],
            data: OutData::F32(lines.iter().map(|l| l.score).collect()),
        },
        Output {
            name: "boxes".into(),
            shape: vec![n, 4, 2],
            data: OutData::F32(lines.iter().flat_map(|l| l.corners.concat()).collect()),
        },
        Output {
            name: "box_scores".into(),
            shape: vec![n],
            data: OutData::F32(lines.iter().map(|l| l.box_score).collect()),
        },
    ]
}

/// Speech: mono 16 kHz samples `[N]` or `[1, N]`, or a WAV file decoded as
/// `POST /v1/audio/transcriptions` decodes one.
async fn asr(
    api: &Arc<OpenAi>,
    headers: &HeaderMap,
    mut req: InferRequest,
    given_ms: Option<u64>,
) -> Response {
    let model = Builtin::Asr;
    let name = api.v2_id(model);
    let t = match take_input(model, &name, &mut req) {
        Ok(t) => t,
        Err(r) => return r,
    };
    let terms = match api.terms_or(Kind::Asr, headers, given_ms) {
        Ok(t) => t,
        Err(r) => return r,
    };
    let slot = match api.admit(Kind::Asr) {
        Ok(s) => s,
        Err(r) => return r,
    };
    let samples = match t.datatype {
        DataType::Bytes => match one_element(t) {
            Ok(file) => audio_upload(api, file, "the audio_file tensor".into())
                .await
                .map(|c| c.samples),
            Err(t) => Err(not_one_element(&t, "a WAV file")),
        },
        DataType::F32 => samples(&t),
        other => Err(invalid(
            format!(
                "input {:?} is {} {:?}; whisper-tiny.en reads FP32 [N] or [1, N] (mono 16 kHz samples) or BYTES [1] (a WAV file)",
                t.name,
                other.as_str(),
                t.shape
            ),
            None,
        )),
    };
    let samples = match samples {
        Ok(s) => s,
        Err(r) => return r,
    };
    run_one(
        api,
        Kind::Asr,
        slot,
        terms,
        Input::Utterance(samples),
        |a| {
            let head = head(&name, &req, &terms, a.on_time);
            let text = match a.reply {
                Reply::Transcript(t) => t,
                other => other.text(),
            };
            respond(&req, head, vec![bytes_out("text", vec![text])])
        },
    )
    .await
}

/// An FP32 tensor's samples: `[N]` or `[1, N]`, at most [`MAX_AUDIO_SECONDS`], all finite.
fn samples(t: &Tensor) -> Result<Vec<f32>, Response> {
    let n = match t.shape.as_slice() {
        [n] | [1, n] => *n,
        _ => {
            return Err(invalid(
                format!(
                    "input {:?} has shape {:?}; mono samples are [N] or [1, N]",
                    t.name, t.shape
                ),
                None,
            ));
        }
    };
    if n == 0 {
        return Err(invalid(
            format!("input {:?} holds no samples: send at least one", t.name),
            None,
        ));
    }
    let most = MAX_AUDIO_SECONDS * u64::from(SAMPLE_RATE_HZ);
    if n > most {
        return Err(too_large(
            format!(
                "input {:?} holds {n} samples ({} s at 16 kHz); at most {MAX_AUDIO_SECONDS} s are transcribed at once: cut it",
                t.name,
                n / u64::from(SAMPLE_RATE_HZ)
            ),
            None,
        ));
    }
    let s = t.f32s().unwrap_or_default();
    if let Some(i) = s.iter().position(|x| !x.is_finite()) {
        return Err(invalid(
            format!(
                "input {:?} sample {i} is {}: samples must be finite (-1 to 1)",
                t.name, s[i]
            ),
            None,
        ));
    }
    Ok(s)
}

/// Text: the prompt, continued with the parameters `max_tokens`, `temperature`, `seed`
/// and `stop` as the completions endpoint reads them.
async fn text(
    api: &Arc<OpenAi>,
    headers: &HeaderMap,
    mut req: InferRequest,
    given_ms: Option<u64>,
) -> Response {
    let model = Builtin::Llm;
    let name = api.v2_id(model);
    let prompt = match take_input(model, &name, &mut req).and_then(|t| {
        let bytes = one_element(t).map_err(|t| not_one_element(&t, "the prompt"))?;
        String::from_utf8(bytes)
            .ok()
            .filter(|s| !s.trim().is_empty())
            .ok_or_else(|| {
                invalid(
                    "input \"text_input\" must be a non-empty UTF-8 prompt".into(),
                    None,
                )
            })
    }) {
        Ok(p) => p,
        Err(r) => return r,
    };
    let fields = Value::Object(req.parameters.clone());
    let read = crate::chat::stops(&fields)
        .and_then(|stops| crate::chat::prompt_for(api, &fields, prompt, stops));
    let (prompt, _) = match read {
        Ok(p) => p,
        Err(r) => return r,
    };
    let slot = match api.admit(Kind::Llm) {
        Ok(s) => s,
        Err(r) => return r,
    };
    let terms = match api.terms_or(Kind::Llm, headers, given_ms) {
        Ok(t) => t,
        Err(r) => return r,
    };
    let (answer, on_time) = match generate(api, slot, terms, Input::Prompt(prompt)).await {
        Ok(a) => a,
        Err(r) => return r,
    };
    let head = head(&name, &req, &terms, on_time);
    let r = respond(&req, head, vec![bytes_out("text_output", vec![answer])]);
    mark_deadline(r, on_time)
}

/// Runs a prompt to its end: its text and whether it was on time. Shed or stopped after
/// its first token, what was generated is the answer, late (as the completions endpoint
/// answers); before it, 503.
async fn generate(
    api: &Arc<OpenAi>,
    _slot: Slot,
    terms: Terms,
    input: Input,
) -> Result<(String, bool), Response> {
    let mut submitted = api.submit(input, terms)?;
    let mut text = String::new();
    let mut tokens = 0u32;
    let end = loop {
        match submitted.updates.recv().await {
            Some(Update::Token(t)) => {
                tokens += 1;
                text.push_str(&t);
            }
            other => break other,
        }
    };
    submitted.guard.disarm();
    match end {
        // The whole answer comes with the end, stop sequences removed.
        Some(Update::Finished(a)) => match a.reply {
            Reply::Text { text: whole, .. } => Ok((whole, a.on_time)),
            _ => Ok((text, a.on_time)),
        },
        Some(Update::Shed(_)) | Some(Update::Failed(_)) | None if tokens > 0 => Ok((text, false)),
        Some(Update::Shed(why)) => Err(shed(Kind::Llm, terms.deadline_ms, &why)),
        Some(Update::Failed(e)) => Err(failed(&e)),
        Some(Update::Token(_)) | None => {
            Err(failed(&mmsched_runtime::sched::WorkError::Cancelled {
                why: "the generation ended without an answer",
            }))
        }
    }
}
