//! `GET /metrics`: OpenMetrics when asked for (`Accept: application/openmetrics-text`, as
//! Prometheus sends), the classic text format 0.0.4 otherwise.

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::AppState;
use crate::metrics::{OPENMETRICS_CONTENT_TYPE, PROMETHEUS_TEXT_CONTENT_TYPE, wants_openmetrics};

pub(crate) async fn metrics(State(st): State<AppState>, headers: HeaderMap) -> Response {
    let m = &st.shared.metrics;
    m.set_policy_revision(st.shared.store.current().revision);
    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok());
    let (body, ctype) = if wants_openmetrics(accept) {
        (m.encode_openmetrics(), OPENMETRICS_CONTENT_TYPE)
    } else {
        (m.encode_prometheus_text(), PROMETHEUS_TEXT_CONTENT_TYPE)
    };
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, HeaderValue::from_static(ctype))],
        body,
    )
        .into_response()
}
