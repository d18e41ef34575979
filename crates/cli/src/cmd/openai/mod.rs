//! The OpenAI-compatible model endpoints of `mmsched serve --models`, with deadlines.
//!
//! Every request becomes a scheduled job on the one executor the service drives
//! ([`mmsched_pipeline::service`]): a chat or completion request is one job of the `text`
//! class stepped token by token (so a due frame or transcription can run between two
//! tokens), a transcription one `asr` job, an OCR request one `vision` job. Each gets a
//! deadline — the `X-Deadline-Ms` header, else the class default (`--deadline-ms`) — and
//! an importance: its API key's (`--api-keys`, see [`keys`]), else the class's from the
//! policy. A job the scheduler sheds answers `503` with
//! `Retry-After`; a late answer is still returned, with `X-Deadline-Missed: true`.
//!
//! Limits protect the device: a cap on concurrent requests per class (beyond it `503`
//! naming the cap), an upload size cap, and `max_tokens` bounded by the model's context.
//! Errors on `/v1/…` have OpenAI's shape, `{"error": {"message", "type", "param", "code"}}`.

// The request checks return the error answer itself; it is built once per request, so its
// size does not matter.
#![allow(clippy::result_large_err)]

mod chat;
pub mod keys;
mod media;
pub mod results;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use mmsched_core::time::Nanos;
use mmsched_pipeline::engines::Engines;
use mmsched_pipeline::service::{JobEvent, JobRequest, Service, Submitter};

/// Model ids as `/v1/models` lists them.
pub const LLM_ID: &str = "gemma-3-270m";
pub const ASR_ID: &str = "whisper-tiny.en";
pub const OCR_ID: &str = "pp-ocrv4";

/// Longest deadline a request may ask for.
const MAX_DEADLINE_MS: u64 = 600_000;

/// The classes a request can be, with their defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ApiClass {
    /// Chat and completions.
    Text,
    /// Transcriptions.
    Asr,
    /// OCR.
    Vision,
}

impl ApiClass {
    /// The scheduling class name (the policy's importance key).
    pub fn as_str(self) -> &'static str {
        match self {
            ApiClass::Text => "text",
            ApiClass::Asr => "asr",
            ApiClass::Vision => "vision",
        }
    }

    fn modality(self) -> mmsched_core::Modality {
        match self {
            ApiClass::Text => mmsched_core::Modality::Text,
            ApiClass::Asr => mmsched_core::Modality::Audio,
            ApiClass::Vision => mmsched_core::Modality::Image,
        }
    }

    /// Parses `text`, `asr` or `vision`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "text" => Some(ApiClass::Text),
            "asr" => Some(ApiClass::Asr),
            "vision" => Some(ApiClass::Vision),
            _ => None,
        }
    }
}

/// Per-class settings.
#[derive(Debug, Clone)]
pub struct ClassSettings {
    /// Deadline when the request gives none, milliseconds.
    pub deadline_ms: u64,
    /// Requests of the class at once (running or waiting); more get 503.
    pub max_concurrent: usize,
    /// Importance from the policy.
    pub importance: f64,
    /// Cost of one step to assume until measured, nanoseconds.
    pub prior_cost_nanos: Nanos,
}

/// Everything the handlers share.
pub struct ModelApi {
    /// Where the jobs go: a service of the server's own, or a run's loop.
    pub service: Submitter,
    /// The service thread, when the server has its own (kept alive with the API).
    _own: Option<Service>,
    pub engines: Engines,
    pub classes: BTreeMap<ApiClass, ClassSettings>,
    /// Largest accepted upload (audio file, image), bytes.
    pub upload_limit_bytes: usize,
    /// Requests in flight per class.
    active: BTreeMap<ApiClass, AtomicUsize>,
    /// The LLM session holds one request's KV cache at a time.
    llm_turn: Arc<tokio::sync::Mutex<()>>,
    /// Round-robin over the OCR pipelines.
    next_ocr: AtomicUsize,
    /// Every result, for `GET /api/v1/results`.
    pub results: tokio::sync::broadcast::Sender<String>,
    /// The accepted API keys and their importance (none: open endpoints).
    keys: Option<keys::ApiKeys>,
}

/// What a request is scheduled with: its deadline and importance.
#[derive(Debug, Clone, Copy)]
struct Terms {
    /// Due time on the device clock.
    deadline_nanos: Nanos,
    /// The deadline as given, ms from arrival.
    deadline_ms: u64,
    importance: f64,
}

impl ModelApi {
    pub fn new(
        service: Submitter,
        own: Option<Service>,
        engines: Engines,
        classes: BTreeMap<ApiClass, ClassSettings>,
        upload_limit_bytes: usize,
        results: tokio::sync::broadcast::Sender<String>,
        keys: Option<keys::ApiKeys>,
    ) -> Self {
        let active = classes.keys().map(|&c| (c, AtomicUsize::new(0))).collect();
        Self {
            service,
            _own: own,
            engines,
            classes,
            upload_limit_bytes,
            active,
            llm_turn: Arc::new(tokio::sync::Mutex::new(())),
            next_ocr: AtomicUsize::new(0),
            results,
            keys,
        }
    }

    fn settings(&self, class: ApiClass) -> &ClassSettings {
        &self.classes[&class]
    }

    /// Takes a place among the class's concurrent requests, or the 503 that says which
    /// limit was hit.
    fn admit(self: &Arc<Self>, class: ApiClass) -> Result<Slot, Response> {
        let max = self.settings(class).max_concurrent;
        let counter = &self.active[&class];
        let now = counter.fetch_add(1, Ordering::SeqCst);
        if now >= max {
            counter.fetch_sub(1, Ordering::SeqCst);
            return Err(overloaded(format!(
                "{max} {} request(s) are already in progress, the limit (--max-concurrent {}={max}); retry later",
                class.as_str(),
                class.as_str()
            )));
        }
        Ok(Slot {
            api: self.clone(),
            class,
        })
    }

    /// The request's deadline (`X-Deadline-Ms` or the class default) and importance (its
    /// API key's, else the class's).
    fn terms(&self, class: ApiClass, headers: &HeaderMap) -> Result<Terms, Response> {
        let importance = match &self.keys {
            // The router's key check already let the request in.
            Some(keys) => keys.importance(headers).map_err(unauthorized)?,
            None => self.settings(class).importance,
        };
        let ms = match headers.get("x-deadline-ms") {
            None => self.settings(class).deadline_ms,
            Some(v) => v
                .to_str()
                .ok()
                .and_then(|s| s.trim().parse::<u64>().ok())
                .filter(|&ms| (1..=MAX_DEADLINE_MS).contains(&ms))
                .ok_or_else(|| {
                    invalid(
                        format!(
                            "X-Deadline-Ms must be a whole number of milliseconds from 1 to {MAX_DEADLINE_MS}, not {v:?}"
                        ),
                        Some("X-Deadline-Ms"),
                    )
                })?,
        };
        Ok(Terms {
            deadline_nanos: self.service.now_nanos() + ms * 1_000_000,
            deadline_ms: ms,
            importance,
        })
    }

    /// A job of `class` on `terms`.
    fn job(
        &self,
        class: ApiClass,
        terms: Terms,
        work: Box<dyn mmsched_runtime::sched::Work>,
    ) -> JobRequest {
        JobRequest {
            class: class.as_str().into(),
            modality: class.modality(),
            deadline_nanos: terms.deadline_nanos,
            prior_cost_nanos: self.settings(class).prior_cost_nanos,
            importance: terms.importance,
            work,
        }
    }

    /// Runs a one-step job and waits for its end.
    async fn run_once(&self, job: JobRequest) -> JobEvent {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let mut tx = Some(tx);
        let sink = Box::new(move |e: JobEvent| {
            if !matches!(e, JobEvent::Step { .. })
                && let Some(tx) = tx.take()
            {
                let _ = tx.send(e);
            }
        });
        if self.service.submit_to(job, sink).is_err() {
            return JobEvent::Failed("the scheduler has stopped".into());
        }
        rx.await
            .unwrap_or_else(|_| JobEvent::Failed("the scheduler dropped the job".into()))
    }
}

/// Publishes one answered request to the results feed (`kind`: chat, completion,
/// transcription, ocr).
fn publish(
    feed: &tokio::sync::broadcast::Sender<String>,
    kind: &str,
    deadline_ms: u64,
    started: std::time::Instant,
    on_time: bool,
    text: &str,
) {
    let line = serde_json::json!({
        "stream": "http",
        "kind": kind,
        "latency_ms": started.elapsed().as_secs_f64() * 1e3,
        "deadline_ms": deadline_ms,
        "on_time": on_time,
        "text": text,
    });
    // No subscriber is not an error: the feed is for whoever listens.
    let _ = feed.send(line.to_string());
}

/// A place among a class's concurrent requests, given back when dropped.
struct Slot {
    api: Arc<ModelApi>,
    class: ApiClass,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.api.active[&self.class].fetch_sub(1, Ordering::SeqCst);
    }
}

/// The routes, for [`mmsched_server::ServerConfig::extra`].
pub fn router(api: Arc<ModelApi>) -> Router {
    let upload = api.upload_limit_bytes;
    Router::new()
        .route("/v1/models", get(chat::models))
        .route("/api/v1/results", get(results::feed))
        .route("/v1/chat/completions", post(chat::chat_completions))
        .route("/v1/completions", post(chat::completions))
        .route(
            "/v1/audio/transcriptions",
            post(media::transcriptions).layer(DefaultBodyLimit::max(upload)),
        )
        .route(
            "/api/v1/ocr",
            post(media::ocr).layer(DefaultBodyLimit::max(upload)),
        )
        .layer(DefaultBodyLimit::max(chat::CHAT_BODY_LIMIT))
        .layer(axum::middleware::from_fn_with_state(
            api.clone(),
            require_key,
        ))
        .with_state(api)
}

/// With `--api-keys`, refuses a request without a listed key before anything is read.
async fn require_key(State(api): State<Arc<ModelApi>>, req: Request, next: Next) -> Response {
    if let Some(keys) = &api.keys
        && let Err(why) = keys.importance(req.headers())
    {
        return unauthorized(why);
    }
    next.run(req).await
}

/// 401 in OpenAI's shape, asking for a bearer key.
fn unauthorized(why: &str) -> Response {
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

/// An OpenAI-shaped error answer.
fn api_error(status: StatusCode, kind: &str, message: String, param: Option<&str>) -> Response {
    let body = serde_json::json!({
        "error": { "message": message, "type": kind, "param": param, "code": kind }
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

fn invalid(message: String, param: Option<&str>) -> Response {
    api_error(
        StatusCode::BAD_REQUEST,
        "invalid_request_error",
        message,
        param,
    )
}

/// 503 with `Retry-After`: the device is busy; the request did not run.
fn overloaded(message: String) -> Response {
    let mut r = api_error(StatusCode::SERVICE_UNAVAILABLE, "overloaded", message, None);
    r.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    r
}

fn shed_answer(class: ApiClass, deadline_ms: u64) -> Response {
    overloaded(format!(
        "the scheduler shed this {} request: it could not finish within its {deadline_ms} ms deadline without making more important work late; retry later or give a longer X-Deadline-Ms",
        class.as_str()
    ))
}

fn failed_answer(why: String) -> Response {
    api_error(
        StatusCode::INTERNAL_SERVER_ERROR,
        "server_error",
        format!("the model failed: {why}"),
        None,
    )
}

/// Marks a response late or on time.
fn mark_deadline(mut r: Response, on_time: bool) -> Response {
    r.headers_mut().insert(
        "x-deadline-missed",
        HeaderValue::from_static(if on_time { "false" } else { "true" }),
    );
    r
}

fn json_ok(body: serde_json::Value) -> Response {
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
fn event_stream(body: axum::body::Body) -> Response {
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
fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
