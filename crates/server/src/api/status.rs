//! `GET /api/v1/status`.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;

use super::{AppState, error, json_response};

pub(crate) async fn status(State(st): State<AppState>) -> Response {
    let doc = st.shared.status.document(&st.shared.store);
    match serde_json::to_string(&doc) {
        Ok(body) => json_response(StatusCode::OK, body),
        // Only a non-finite float could fail; report it rather than panic.
        Err(e) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("status cannot be encoded: {e}"),
        ),
    }
}
