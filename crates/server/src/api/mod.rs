//! The HTTP routes. Every error answer is JSON `{"error": "…"}` naming the problem and the
//! fix (422 carries `{"errors": [{field, value, reason}]}` instead).

mod assets;
mod metrics;
mod policy;
mod status;

use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use tokio::sync::watch;
use tower_http::timeout::RequestBodyTimeoutLayer;

use crate::server::{ServerConfig, Shared};

/// What every handler can reach.
#[derive(Clone)]
pub(crate) struct AppState(Arc<Inner>);

pub(crate) struct Inner {
    pub shared: Shared,
    pub config: ServerConfig,
    /// Becomes `true` when the server is stopping: long-polls end at once.
    pub stopping: watch::Receiver<bool>,
}

impl std::ops::Deref for AppState {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        &self.0
    }
}

/// All routes of the server.
pub(crate) fn router(
    shared: Shared,
    config: ServerConfig,
    stopping: watch::Receiver<bool>,
) -> Router {
    let limit = config.body_limit_bytes;
    let body_timeout = std::time::Duration::from_millis(config.body_timeout_millis);
    let state = AppState(Arc::new(Inner {
        shared,
        config,
        stopping,
    }));
    let hosts = state.config.hosts.clone();
    let bound = state.config.addr;
    let extra = state.config.extra.clone();
    let routes = Router::new()
        .route("/", get(assets::index))
        .route("/assets/{*path}", get(assets::asset))
        .route(
            "/api/v1/policy",
            get(policy::get_policy).put(policy::put_policy),
        )
        .route("/api/v1/policy/changes", get(policy::changes))
        .route("/api/v1/status", get(status::status))
        .route("/api/v1/trace", get(assets::trace))
        .route("/metrics", get(metrics::metrics))
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(limit))
        .layer(RequestBodyTimeoutLayer::new(body_timeout))
        .with_state(state);
    // The extra routes keep their own body limits (uploads are larger than policies).
    let routes = match extra {
        Some(extra) => routes.merge(extra.layer(RequestBodyTimeoutLayer::new(body_timeout))),
        None => routes,
    };
    crate::host::guard(routes, hosts, bound)
}

async fn not_found(uri: axum::http::Uri) -> Response {
    error(
        StatusCode::NOT_FOUND,
        format!(
            "no such endpoint: {}; the server has /api/v1/policy, /api/v1/policy/changes, /api/v1/status, /api/v1/trace, /metrics and the viewer at /",
            uri.path()
        ),
    )
}

/// A JSON error answer.
pub(crate) fn error(status: StatusCode, message: impl Into<String>) -> Response {
    json_response(
        status,
        serde_json::json!({ "error": message.into() }).to_string(),
    )
}

/// A JSON answer from an already serialised body.
pub(crate) fn json_response(status: StatusCode, body: String) -> Response {
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body,
    )
        .into_response()
}
