//! The viewer's static assets (`/`, `/assets/…`) and the trace feed (`/api/v1/trace`), both
//! provided by the embedding program through [`ServerConfig`](crate::ServerConfig).

use axum::extract::{Path, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::{AppState, error};

/// Shown at `/` when no viewer assets are configured.
const NO_VIEWER: &str = "mmsched server\n\n\
GET  /api/v1/policy   live policy (ETag; If-None-Match; ?wait=SECS long-poll)\n\
PUT  /api/v1/policy   replace it (Authorization: Bearer TOKEN, If-Match: ETAG)\n\
GET  /api/v1/policy/changes   recent policy changes\n\
GET  /api/v1/status   LDTI, level, per-modality rates\n\
GET  /api/v1/trace    recorded trace (NDJSON)\n\
GET  /metrics         Prometheus / OpenMetrics\n\n\
This build serves no trace viewer.\n";

fn serve_asset(st: &AppState, path: &str) -> Response {
    let Some(lookup) = st.config.assets else {
        return error(
            StatusCode::NOT_FOUND,
            "this server has no viewer assets built in",
        );
    };
    match lookup(path) {
        Some((mime, bytes)) => (
            StatusCode::OK,
            [
                (
                    header::CONTENT_TYPE,
                    HeaderValue::from_str(mime)
                        .unwrap_or(HeaderValue::from_static("application/octet-stream")),
                ),
                (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
            ],
            bytes,
        )
            .into_response(),
        None => error(
            StatusCode::NOT_FOUND,
            format!("no viewer asset named {path}"),
        ),
    }
}

/// `GET /`: the viewer's `index.html`, or a plain list of endpoints.
pub(crate) async fn index(State(st): State<AppState>) -> Response {
    if st.config.assets.is_none() {
        return (
            StatusCode::OK,
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/plain; charset=utf-8"),
            )],
            NO_VIEWER,
        )
            .into_response();
    }
    serve_asset(&st, "index.html")
}

/// `GET /assets/{path}`: looked up as `assets/{path}`.
pub(crate) async fn asset(State(st): State<AppState>, Path(path): Path<String>) -> Response {
    if path.split('/').any(|seg| seg == "..") {
        return error(StatusCode::BAD_REQUEST, "asset paths cannot contain ..");
    }
    serve_asset(&st, &format!("assets/{path}"))
}

/// `GET /api/v1/trace`: NDJSON from the configured trace source.
pub(crate) async fn trace(State(st): State<AppState>) -> Response {
    let Some(source) = st.config.trace.clone() else {
        return error(
            StatusCode::NOT_FOUND,
            "no trace is being recorded: this server was started without a running scheduler (use `mmsched run --serve ADDR`)",
        );
    };
    // The source may copy a large ring: keep it off the async workers.
    match tokio::task::spawn_blocking(move || source()).await {
        Ok(bytes) => (
            StatusCode::OK,
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/x-ndjson"),
            )],
            bytes,
        )
            .into_response(),
        Err(e) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("the trace source failed: {e}"),
        ),
    }
}
