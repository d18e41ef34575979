//! # mmsched-openai
//!
//! The OpenAI-compatible endpoints of mmsched, with deadlines, as a library over the one
//! runtime every client uses ([`mmsched_pipeline::client::Client`]): `POST
//! /v1/chat/completions` and `/v1/completions` (whole or streamed as server-sent events),
//! `POST /v1/audio/transcriptions`, `POST /api/v1/ocr`, `GET /v1/models` and `GET
//! /api/v1/results`; and the Open Inference Protocol (KServe v2) for the same models
//! ([`v2`]): `GET /v2`, `/v2/health/live`, `/v2/health/ready`, `/v2/models/{name}` and
//! `…/ready`, `POST /v2/models/{name}/infer` with JSON or binary tensors.
//!
//! Every request becomes one request to the runtime, booked, scheduled, traced and counted
//! like a scenario stream's (`origin: api` in the summary): a chat is stepped token by token
//! (so a due frame or transcription runs between two tokens) in a text session of its own.
//! Each gets a deadline — the `X-Deadline-Ms` header, else its class's default — and an
//! importance: its API key's ([`keys`]), else the policy's for its class at every step (so
//! a policy `PUT` applies at once). A request the scheduler sheds, or one beyond its class's
//! cap of concurrent requests, answers `503` with `Retry-After` (and is counted as shed); a
//! late answer is still returned, marked `X-Deadline-Missed: true`. A client that goes away
//! frees its work at the next step. Errors have OpenAI's shape and the status of their class
//! ([`answer`]).
//!
//! The crate holds no engine: the runtime it is given is real (`mmsched serve --models`)
//! or fake in virtual time (its tests, with `mmsched-pipeline`'s `fakes`).

// The request checks return the error answer itself; it is built once per request, so its
// size does not matter.
#![allow(clippy::result_large_err)]
#![deny(missing_docs)]

pub mod answer;
pub mod bounds;
mod chat;
mod generate;
pub mod keys;
mod media;
pub mod results;
pub mod v2;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request as HttpRequest, State};
use axum::http::HeaderMap;
use axum::middleware::{Next, map_response};
use axum::response::Response;
use axum::routing::{get, post};
use mmsched_core::time::Nanos;
use mmsched_pipeline::client::Client;
use mmsched_pipeline::request::{Cancel, Input, Origin, Request, Update};
use mmsched_pipeline::stats::Kind;
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

use answer::{invalid, overloaded, unauthorized};

/// Model ids as `/v1/models` lists them.
pub const LLM_ID: &str = "gemma-3-270m";
/// The speech model's id (`whisper-1` is accepted too).
pub const ASR_ID: &str = "whisper-tiny.en";
/// The OCR model's id.
pub const OCR_ID: &str = "pp-ocrv4";

/// Longest deadline a request may ask for.
pub const MAX_DEADLINE_MS: u64 = 600_000;

/// Whether `ms` is a deadline a request may ask for: 1 ms to [`MAX_DEADLINE_MS`].
pub fn deadline_in_range(ms: u64) -> bool {
    (1..=MAX_DEADLINE_MS).contains(&ms)
}

/// The client label of every HTTP request (the `stream` of its results and traces).
pub const STREAM: &str = "http";

/// A class's settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClassSettings {
    /// Deadline when the request gives none, milliseconds.
    pub deadline_ms: u64,
    /// Requests of the class at once (running or waiting); more get 503.
    pub max_concurrent: usize,
}

impl ClassSettings {
    /// The defaults of `kind`: text 30 s and 4 at once, speech 10 s and 2, OCR 2 s and 4.
    pub fn default_for(kind: Kind) -> Self {
        let (deadline_ms, max_concurrent) = match kind {
            Kind::Llm => (30_000, 4),
            Kind::Asr => (10_000, 2),
            Kind::Vision | Kind::Vad | Kind::Model(_) => (2_000, 4),
        };
        Self {
            deadline_ms,
            max_concurrent,
        }
    }
}

/// Everything the handlers share.
pub struct OpenAi {
    client: Client,
    classes: BTreeMap<Kind, ClassSettings>,
    /// Largest accepted upload (audio file, image), bytes.
    upload_limit_bytes: usize,
    /// Requests in flight per class.
    active: BTreeMap<Kind, AtomicUsize>,
    /// Every result, for `GET /api/v1/results`.
    results: tokio::sync::broadcast::Sender<String>,
    /// The accepted API keys and their importance (none: open endpoints).
    keys: Option<keys::ApiKeys>,
    /// Memory for decoding uploads, shared by every request.
    budget: Arc<bounds::DecodeBudget>,
    /// The user's own models (served over the v2 protocol).
    user_models: Vec<v2::UserModel>,
}

impl std::fmt::Debug for OpenAi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAi")
            .field("classes", &self.classes)
            .field("upload_limit_bytes", &self.upload_limit_bytes)
            .finish_non_exhaustive()
    }
}

/// What a request is scheduled with: its deadline and importance.
#[derive(Debug, Clone, Copy)]
struct Terms {
    /// Due time on the device clock.
    deadline_nanos: Nanos,
    /// The deadline as given, ms from arrival.
    deadline_ms: u64,
    /// The API key's importance (`None`: the policy's for the class).
    importance: Option<f64>,
}

impl OpenAi {
    /// The id the text model is served under: the name the user gave a GGUF of their own,
    /// else [`LLM_ID`].
    pub fn text_model_id(&self) -> String {
        self.client
            .text_model_name()
            .unwrap_or_else(|| LLM_ID.to_string())
    }

    /// The id the speech model is served under: the name the user gave a Whisper of their
    /// own, else [`ASR_ID`].
    pub fn speech_model_id(&self) -> String {
        self.client
            .speech_model_name()
            .unwrap_or_else(|| ASR_ID.to_string())
    }

    /// The endpoints over `client`'s runtime: text, speech and OCR classes with
    /// `classes`' settings (the defaults where absent), uploads up to `upload_limit_bytes`,
    /// every result published on `results`, and `keys` when the endpoints want one.
    pub fn new(
        client: Client,
        classes: BTreeMap<Kind, ClassSettings>,
        upload_limit_bytes: usize,
        results: tokio::sync::broadcast::Sender<String>,
        keys: Option<keys::ApiKeys>,
    ) -> Self {
        let classes: BTreeMap<Kind, ClassSettings> = [Kind::Llm, Kind::Asr, Kind::Vision]
            .into_iter()
            .map(|k| {
                let s = classes
                    .get(&k)
                    .copied()
                    .unwrap_or_else(|| ClassSettings::default_for(k));
                (k, s)
            })
            .collect();
        let active = classes.keys().map(|&c| (c, AtomicUsize::new(0))).collect();
        Self {
            client,
            classes,
            upload_limit_bytes,
            active,
            results,
            keys,
            budget: bounds::DecodeBudget::new(bounds::DECODE_BUDGET_BYTES),
            user_models: Vec::new(),
        }
    }

    /// The same, also serving `models` of the user's own over the v2 protocol, each class
    /// with `settings` where given, else the defaults of a vision class.
    pub fn with_user_models(
        mut self,
        models: Vec<v2::UserModel>,
        settings: &BTreeMap<Kind, ClassSettings>,
    ) -> Self {
        for m in &models {
            let s = settings
                .get(&m.kind)
                .copied()
                .unwrap_or_else(|| ClassSettings::default_for(m.kind));
            self.classes.insert(m.kind, s);
            self.active.insert(m.kind, AtomicUsize::new(0));
        }
        self.user_models = models;
        self
    }

    /// The same with `bytes` of memory for decoding uploads at once (default
    /// [`bounds::DECODE_BUDGET_BYTES`]): an upload that would take more answers 413, one
    /// that would take more than is left while others decode answers 503.
    pub fn with_decode_budget(mut self, bytes: usize) -> Self {
        self.budget = bounds::DecodeBudget::new(bytes);
        self
    }

    fn settings(&self, kind: Kind) -> ClassSettings {
        self.classes
            .get(&kind)
            .copied()
            .unwrap_or_else(|| ClassSettings::default_for(kind))
    }

    /// Takes a place among the class's concurrent requests, or the 503 that says which
    /// limit was hit (counted by the runtime as a shed request of the API).
    fn admit(self: &Arc<Self>, kind: Kind) -> Result<Slot, Response> {
        let max = self.settings(kind).max_concurrent;
        let Some(counter) = self.active.get(&kind) else {
            return Err(invalid(format!("no {} class here", kind.as_str()), None));
        };
        let now = counter.fetch_add(1, Ordering::SeqCst);
        if now >= max {
            counter.fetch_sub(1, Ordering::SeqCst);
            let _ = self.client.refused(kind);
            return Err(overloaded(format!(
                "{max} {} request(s) are already in progress, the limit (--max-concurrent {}={max}); retry later",
                kind.as_str(),
                kind.as_str()
            )));
        }
        Ok(Slot {
            api: self.clone(),
            kind,
        })
    }

    /// The request's deadline (`X-Deadline-Ms` or the class default) and importance (its
    /// API key's, else the policy's for the class).
    fn terms(&self, kind: Kind, headers: &HeaderMap) -> Result<Terms, Response> {
        self.terms_or(kind, headers, None)
    }

    /// The same, with `given_ms` — a deadline the request carries in its body (the v2
    /// protocol's `deadline_ms` parameter), already held to [`deadline_in_range`] — in
    /// place of the class default when there is no `X-Deadline-Ms` header.
    fn terms_or(
        &self,
        kind: Kind,
        headers: &HeaderMap,
        given_ms: Option<u64>,
    ) -> Result<Terms, Response> {
        let importance = match &self.keys {
            // The router's key check already let the request in.
            Some(keys) => Some(keys.importance(headers).map_err(unauthorized)?),
            None => None,
        };
        let ms = match headers.get("x-deadline-ms") {
            None => given_ms.unwrap_or(self.settings(kind).deadline_ms),
            Some(v) => v
                .to_str()
                .ok()
                .and_then(|s| s.trim().parse::<u64>().ok())
                .filter(|&ms| deadline_in_range(ms))
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
            deadline_nanos: self.client.now_nanos() + ms * 1_000_000,
            deadline_ms: ms,
            importance,
        })
    }

    /// Submits `input` on `terms`; its updates come on the returned channel, and the
    /// request is cancelled when the returned guard is dropped unfinished (the client went
    /// away).
    fn submit(&self, input: Input, terms: Terms) -> Result<Submitted, Response> {
        let now = self.client.now_nanos();
        let mut req = Request::new(input, Origin::Api, STREAM, now, terms.deadline_nanos);
        req.importance = terms.importance;
        let cancel = req.cancel.clone();
        let (tx, rx) = unbounded_channel();
        let sink = Box::new(move |u: Update| {
            let _ = tx.send(u);
        });
        if self.client.submit_to(req, sink).is_err() {
            return Err(overloaded(
                "the scheduler has stopped: the server is shutting down".into(),
            ));
        }
        Ok(Submitted {
            updates: rx,
            guard: CancelOnDrop(Some(cancel)),
        })
    }
}

/// A submitted request: its updates and the guard that cancels it if the answer is dropped.
struct Submitted {
    updates: UnboundedReceiver<Update>,
    guard: CancelOnDrop,
}

/// Cancels a request when dropped before [`CancelOnDrop::disarm`]: a client that went away
/// frees the device at the job's next step.
struct CancelOnDrop(Option<Cancel>);

impl CancelOnDrop {
    fn disarm(&mut self) {
        self.0 = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(c) = self.0.take() {
            c.cancel();
        }
    }
}

/// A place among a class's concurrent requests, given back when dropped.
struct Slot {
    api: Arc<OpenAi>,
    kind: Kind,
}

impl Drop for Slot {
    fn drop(&mut self) {
        if let Some(c) = self.api.active.get(&self.kind) {
            c.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// The routes (for `mmsched_server::ServerConfig::extra`).
pub fn router(api: Arc<OpenAi>) -> Router {
    let upload = api.upload_limit_bytes;
    Router::new()
        .route("/v1/models", get(chat::models))
        .route("/api/v1/results", get(results::feed))
        .route("/v1/chat/completions", post(chat::chat_completions))
        .route("/v1/completions", post(chat::completions))
        .route(
            "/v1/audio/transcriptions",
            post(media::transcriptions)
                .layer(DefaultBodyLimit::max(upload))
                .layer(map_response(move |r| answer::reshape(upload, r))),
        )
        .route(
            "/api/v1/ocr",
            post(media::ocr)
                .layer(DefaultBodyLimit::max(upload))
                .layer(map_response(move |r| answer::reshape(upload, r))),
        )
        .layer(DefaultBodyLimit::max(chat::CHAT_BODY_LIMIT))
        .layer(map_response(|r| answer::reshape(chat::CHAT_BODY_LIMIT, r)))
        .layer(axum::middleware::from_fn_with_state(
            api.clone(),
            require_key,
        ))
        .with_state(api.clone())
        // After the layers above: the v2 routes have their own limits and error shape.
        .merge(v2::routes(api))
}

/// With API keys, refuses a request without a listed key before anything is read.
pub(crate) async fn require_key(
    State(api): State<Arc<OpenAi>>,
    req: HttpRequest,
    next: Next,
) -> Response {
    if let Some(keys) = &api.keys
        && let Err(why) = keys.importance(req.headers())
    {
        return unauthorized(why);
    }
    next.run(req).await
}
