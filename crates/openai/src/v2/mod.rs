//! The Open Inference Protocol (KServe v2) over HTTP, for the built-in models, on the same
//! runtime, deadlines, importance, class caps and API keys as the OpenAI endpoints:
//!
//! - `GET /v2` (server metadata), `GET /v2/health/live`, `GET /v2/health/ready`;
//! - `GET /v2/models/{name}[/versions/1]` (a model's inputs and outputs) and `…/ready`;
//! - `POST /v2/models/{name}[/versions/1]/infer`: JSON tensors, or the binary tensor data
//!   extension (`Inference-Header-Content-Length`), as `tritonclient` sends them; the
//!   body plain or gzip/deflate compressed.
//!
//! A request's deadline is its `X-Deadline-Ms` header, else its `deadline_ms` parameter,
//! else its class's default; the answer's `parameters` say `deadline_ms` and
//! `deadline_missed` (and a late answer carries `X-Deadline-Missed: true`). Errors have the
//! protocol's shape, `{"error": "…"}`: 400 for anything wrong in the request (an image or
//! recording that does not decode included), 401 without a listed key, 404 for a model not
//! served, 413 past a size limit, 503 with `Retry-After` when shed or over a class's cap.
//! The health endpoints need no key (probes carry none; they tell nothing about models).

mod compress;
mod infer;
mod models;
pub mod tensor;
mod user;

use std::sync::Arc;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::middleware::map_response;
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post};
use serde_json::{Value, json};

use crate::OpenAi;
use crate::answer::{json_ok, model_not_found};
pub use models::Builtin;
pub use user::UserModel;

/// A model the v2 endpoints serve: built in, or of the user's own.
#[derive(Debug, Clone)]
enum Served {
    /// A built-in model and the name it is served as.
    Builtin(Builtin, String),
    User(UserModel),
}

impl OpenAi {
    /// The name the built-in `model` is served as over the v2 protocol: the text and
    /// speech models' are the ones the OpenAI endpoints serve them as (a model of your own
    /// under the name given to it).
    pub(crate) fn v2_id(&self, model: Builtin) -> String {
        match model {
            Builtin::Llm => self.text_model_id(),
            Builtin::Asr => self.speech_model_id(),
            m => m.id().to_string(),
        }
    }
}

impl Served {
    fn metadata(&self) -> Value {
        match self {
            Served::Builtin(m, name) => m.metadata(name),
            Served::User(m) => m.metadata(),
        }
    }

    async fn infer(self, api: Arc<OpenAi>, headers: HeaderMap, body: Bytes) -> Response {
        match self {
            Served::Builtin(m, _) => infer::infer(api, m, headers, body).await,
            Served::User(m) => user::infer(api, m, headers, body).await,
        }
    }
}

/// The v2 routes: the health endpoints open, the rest behind the API keys when there are
/// any; request bodies up to the upload limit. Every error leaves in the protocol's shape.
pub fn routes(api: Arc<OpenAi>) -> Router {
    let upload = api.upload_limit_bytes;
    let models = Router::new()
        .route("/v2", get(server_metadata))
        .route("/v2/models/{name}", get(model_metadata))
        .route(
            "/v2/models/{name}/versions/{version}",
            get(version_metadata),
        )
        .route("/v2/models/{name}/ready", get(model_ready))
        .route(
            "/v2/models/{name}/versions/{version}/ready",
            get(version_ready),
        )
        .route("/v2/models/{name}/infer", post(infer))
        .route(
            "/v2/models/{name}/versions/{version}/infer",
            post(version_infer),
        )
        .layer(DefaultBodyLimit::max(upload))
        .layer(axum::middleware::from_fn_with_state(
            api.clone(),
            crate::require_key,
        ));
    Router::new()
        .route("/v2/health/live", get(live))
        .route("/v2/health/ready", get(ready))
        .route("/v2/{*rest}", any(not_here))
        .merge(models)
        .layer(map_response(move |r| protocol_error(upload, r)))
        .with_state(api)
}

/// `GET /v2`.
async fn server_metadata() -> Response {
    json_ok(json!({
        "name": "mmsched",
        "version": env!("CARGO_PKG_VERSION"),
        "extensions": ["binary_tensor_data"],
    }))
}

/// `GET /v2/health/live`: the server answers.
async fn live() -> StatusCode {
    StatusCode::OK
}

/// `GET /v2/health/ready`: the runtime is up with at least one built-in model (the routes
/// are only served while it runs).
async fn ready(State(api): State<Arc<OpenAi>>) -> Response {
    if Builtin::ALL.iter().any(|m| api.client.has(m.kind())) || !api.user_models.is_empty() {
        StatusCode::OK.into_response()
    } else {
        unavailable("no built-in model is loaded: start the server with --models")
    }
}

fn unavailable(message: &str) -> Response {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        json!({ "error": message }).to_string(),
    )
        .into_response()
}

/// Any other path under `/v2` (Triton's own extensions, such as `…/config` or
/// `/v2/repository/index`): 404 listing the endpoints there are.
async fn not_here(uri: Uri) -> Response {
    let body = json!({
        "error": format!(
            "{} is not an endpoint here; mmsched serves GET /v2, /v2/health/live, /v2/health/ready, /v2/models/NAME[/versions/1][/ready] and POST /v2/models/NAME[/versions/1]/infer",
            uri.path()
        )
    });
    (
        StatusCode::NOT_FOUND,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body.to_string(),
    )
        .into_response()
}

/// The model `name` at `version` (any version when `None`), if served here: 404 naming
/// the models that are.
fn served(api: &OpenAi, name: &str, version: Option<&str>) -> Result<Served, Response> {
    let loaded: Vec<String> = Builtin::ALL
        .into_iter()
        .filter(|m| api.client.has(m.kind()))
        .map(|m| api.v2_id(m))
        .chain(api.user_models.iter().map(|m| m.id().to_string()))
        .collect();
    let check_version = |v: Option<&str>| match v {
        Some(v) if v != models::VERSION => Err(model_not_found(format!(
            "model {name:?} has no version {v:?}; its one version is \"{}\" (or leave /versions/… out)",
            models::VERSION
        ))),
        _ => Ok(()),
    };
    if let Some(user) = api.user_models.iter().find(|m| m.id() == name) {
        check_version(version)?;
        return Ok(Served::User(user.clone()));
    }
    let Some(model) = Builtin::ALL.into_iter().find(|&m| api.v2_id(m) == name) else {
        return Err(model_not_found(format!(
            "model {name:?} is not served here; the models are: {} (GET /v2/models/NAME describes one)",
            loaded.join(", ")
        )));
    };
    if !api.client.has(model.kind()) {
        return Err(model_not_found(format!(
            "model {name:?} is not loaded: start the server with --models (and its model files fetched: mmsched models fetch)"
        )));
    }
    check_version(version)?;
    Ok(Served::Builtin(model, name.to_string()))
}

/// `GET /v2/models/{name}`.
async fn model_metadata(State(api): State<Arc<OpenAi>>, Path(name): Path<String>) -> Response {
    match served(&api, &name, None) {
        Ok(m) => json_ok(m.metadata()),
        Err(r) => r,
    }
}

/// `GET /v2/models/{name}/versions/{version}`.
async fn version_metadata(
    State(api): State<Arc<OpenAi>>,
    Path((name, version)): Path<(String, String)>,
) -> Response {
    match served(&api, &name, Some(&version)) {
        Ok(m) => json_ok(m.metadata()),
        Err(r) => r,
    }
}

/// `GET /v2/models/{name}/ready`: 200 when loaded.
async fn model_ready(State(api): State<Arc<OpenAi>>, Path(name): Path<String>) -> Response {
    match served(&api, &name, None) {
        Ok(_) => StatusCode::OK.into_response(),
        Err(r) => r,
    }
}

/// `GET /v2/models/{name}/versions/{version}/ready`.
async fn version_ready(
    State(api): State<Arc<OpenAi>>,
    Path((name, version)): Path<(String, String)>,
) -> Response {
    match served(&api, &name, Some(&version)) {
        Ok(_) => StatusCode::OK.into_response(),
        Err(r) => r,
    }
}

/// `POST /v2/models/{name}/infer`.
async fn infer(
    State(api): State<Arc<OpenAi>>,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    match served(&api, &name, None) {
        Ok(m) => m.infer(api, headers, body).await,
        Err(r) => r,
    }
}

/// `POST /v2/models/{name}/versions/{version}/infer`.
async fn version_infer(
    State(api): State<Arc<OpenAi>>,
    Path((name, version)): Path<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    match served(&api, &name, Some(&version)) {
        Ok(m) => m.infer(api, headers, body).await,
        Err(r) => r,
    }
}

/// Any error answer in the protocol's shape, `{"error": "…"}`, its status and headers
/// (`Retry-After`, `WWW-Authenticate`) kept. The answers shared with the OpenAI endpoints
/// (the key check, the class cap, shedding, the upload checks) are made in OpenAI's shape
/// and the HTTP layer's own (a body over `limit`) in plain text: their message is kept.
/// The protocol has one status for a bad request, so an image or recording that does not
/// decode (415 or 422 on the OpenAI side) is a 400 here.
async fn protocol_error(limit: usize, r: Response) -> Response {
    if !(r.status().is_client_error() || r.status().is_server_error()) {
        return r;
    }
    // A plain-text 413 gets the OpenAI side's message naming the limit and the flag.
    let r = crate::answer::reshape(limit, r).await;
    let (mut parts, body) = r.into_parts();
    let bytes = axum::body::to_bytes(body, 64 * 1024)
        .await
        .unwrap_or_default();
    let message = match serde_json::from_slice::<Value>(&bytes) {
        Ok(v) => match &v["error"] {
            Value::String(s) => s.clone(),
            e => e["message"]
                .as_str()
                .map_or_else(|| v.to_string(), str::to_string),
        },
        Err(_) => String::from_utf8_lossy(&bytes).trim().to_string(),
    };
    if matches!(
        parts.status,
        StatusCode::UNSUPPORTED_MEDIA_TYPE | StatusCode::UNPROCESSABLE_ENTITY
    ) {
        parts.status = StatusCode::BAD_REQUEST;
    }
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    Response::from_parts(parts, Body::from(json!({ "error": message }).to_string()))
}
