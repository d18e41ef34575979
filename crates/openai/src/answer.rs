//! Answers in OpenAI's shapes: errors (`{"error": {"message", "type", "param", "code"}}`)
//! with the status of their class — 4xx for the client's input, 503 with `Retry-After` for
//! load, 500 only for the device's own faults — JSON bodies, server-sent event streams, and
//! the `X-Deadline-Missed` mark.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use mmsched_pipeline::request::ShedReason;
use mmsched_pipeline::stats::Kind;
use mmsched_runtime::sched::WorkError;

/// An OpenAI-shaped error answer whose `code` is its `type`.
pub fn api_error(status: StatusCode, kind: &str, message: String, param: Option<&str>) -> Response {
    coded_error(status, kind, kind, message, param)
}

/// An OpenAI-shaped error answer of `type` `kind` with its own `code`.
pub fn coded_error(
    status: StatusCode,
    kind: &str,
    code: &str,
    message: String,
    param: Option<&str>,
) -> Response {
    let body = serde_json::json!({
        "error": { "message": message, "type": kind, "param": param, "code": code }
    });
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body.to_string(),
    )
        .into_response()
}

/// 400: the request is malformed; the message says what to send instead.
pub fn invalid(message: String, param: Option<&str>) -> Response {
    api_error(
        StatusCode::BAD_REQUEST,
        "invalid_request_error",
        message,
        param,
    )
}

/// 413: the body, or what it decodes to (image pixels, seconds of audio), is larger than
/// the server takes; the message says the limit and how to fit it.
pub fn too_large(message: String, param: Option<&str>) -> Response {
    coded_error(
        StatusCode::PAYLOAD_TOO_LARGE,
        "invalid_request_error",
        "request_too_large",
        message,
        param,
    )
}

/// 415: the upload is not in a format the endpoint reads (an image that is no PNG or
/// JPEG, audio neither WAV nor anything ffmpeg decodes).
pub fn unsupported_media(message: String, param: Option<&str>) -> Response {
    coded_error(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "invalid_request_error",
        "unsupported_media_type",
        message,
        param,
    )
}

/// 422: the upload is in a format the endpoint reads but cannot be used (a sample rate
/// outside 8 to 192 kHz, corrupt data after a valid header, an empty image).
pub fn unprocessable(message: String, param: Option<&str>) -> Response {
    coded_error(
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_request_error",
        "unprocessable_input",
        message,
        param,
    )
}

/// Any error answer not made here (the HTTP layer's own: a body over its limit, which
/// axum answers in plain text) in OpenAI's shape, with its status kept; `limit` is the
/// route's body limit in bytes, named in a 413's message.
pub async fn reshape(limit: usize, r: Response) -> Response {
    let status = r.status();
    let is_json = r
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return r;
    }
    let text = match axum::body::to_bytes(r.into_body(), 4096).await {
        Ok(b) => String::from_utf8_lossy(&b).trim().to_string(),
        Err(_) => String::new(),
    };
    if status == StatusCode::PAYLOAD_TOO_LARGE {
        return too_large(
            format!(
                "the request body is larger than this endpoint's limit of {} ({text}); send a smaller file, or start the server with a larger --upload-limit-mib",
                mib(limit)
            ),
            None,
        );
    }
    let (kind, code) = if status.is_server_error() {
        ("server_error", "server_error")
    } else {
        ("invalid_request_error", "invalid_request_error")
    };
    let message = if text.is_empty() {
        status.canonical_reason().unwrap_or("error").to_string()
    } else {
        text
    };
    coded_error(status, kind, code, message, None)
}

/// `bytes` as MiB or KiB, as a person reads a limit.
fn mib(bytes: usize) -> String {
    if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{} KiB", bytes.div_ceil(1024))
    }
}

/// 404: the model asked for is not served here.
pub fn model_not_found(message: String) -> Response {
    api_error(
        StatusCode::NOT_FOUND,
        "model_not_found",
        message,
        Some("model"),
    )
}

/// 401 asking for a bearer key.
pub fn unauthorized(why: &str) -> Response {
    let mut r = api_error(
        StatusCode::UNAUTHORIZED,
        "invalid_api_key",
        why.to_string(),
        None,
    );
    r.headers_mut()
        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    r
}

/// 503 with `Retry-After`: the device is busy; the request did not run.
pub fn overloaded(message: String) -> Response {
    let mut r = api_error(StatusCode::SERVICE_UNAVAILABLE, "overloaded", message, None);
    r.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    r
}

/// The answer to a request the scheduler shed.
pub fn shed(kind: Kind, deadline_ms: u64, why: &ShedReason) -> Response {
    overloaded(match why {
        ShedReason::Overload => format!(
            "the scheduler shed this {} request: it could not finish within its {deadline_ms} ms deadline without making more important work late; retry later or give a longer X-Deadline-Ms",
            kind.as_str()
        ),
        ShedReason::BatterySaver => format!(
            "the battery saver has switched {} requests off (the policy's heavy classes below its battery level); retry when the device is charged",
            kind.as_str()
        ),
        ShedReason::Stopping => "the server is stopping; retry on another instance or later".into(),
    })
}

/// The answer to a failed request, by whose fault it was: the input's (400), the runtime
/// stopping or out of memory (503, retry), a missing model (404), the device's (500).
pub fn failed(e: &WorkError) -> Response {
    let message = e.chain();
    match e {
        WorkError::Input { .. } => invalid(message, None),
        WorkError::NoModel { .. } => model_not_found(message),
        WorkError::Cancelled { .. } | WorkError::OutOfMemory { .. } => overloaded(message),
        _ => api_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "server_error",
            message,
            None,
        ),
    }
}

/// Marks a response late or on time.
pub fn mark_deadline(mut r: Response, on_time: bool) -> Response {
    r.headers_mut().insert(
        "x-deadline-missed",
        HeaderValue::from_static(if on_time { "false" } else { "true" }),
    );
    r
}

/// 200 with a JSON body.
pub fn json_ok(body: serde_json::Value) -> Response {
    (
        StatusCode::OK,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body.to_string(),
    )
        .into_response()
}

/// A server-sent-events answer with `body` as its stream.
pub fn event_stream(body: axum::body::Body) -> Response {
    let mut r = body.into_response();
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    r
}

/// Seconds since the Unix epoch, for `created`.
pub fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
