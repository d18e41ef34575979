//! `GET` / `PUT /api/v1/policy` and `GET /api/v1/policy/changes`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{ConnectInfo, FromRequest, RawQuery, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use super::{AppState, error, json_response};
use crate::etag;
use crate::store::{PolicySnapshot, Precondition, SwapError};

fn header_str(headers: &HeaderMap, name: header::HeaderName) -> Option<&str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

fn etag_header(s: &PolicySnapshot) -> HeaderValue {
    HeaderValue::from_str(&s.etag).unwrap_or_else(|_| unreachable!("ETags are quoted hex"))
}

fn revision_header(s: &PolicySnapshot) -> HeaderValue {
    HeaderValue::from(s.revision)
}

fn ok(s: &PolicySnapshot) -> Response {
    (
        StatusCode::OK,
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            ),
            (header::ETAG, etag_header(s)),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
            (
                header::HeaderName::from_static("x-policy-revision"),
                revision_header(s),
            ),
        ],
        s.json.clone(),
    )
        .into_response()
}

fn not_modified(s: &PolicySnapshot) -> Response {
    (
        StatusCode::NOT_MODIFIED,
        [
            (header::ETAG, etag_header(s)),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
            (
                header::HeaderName::from_static("x-policy-revision"),
                revision_header(s),
            ),
        ],
    )
        .into_response()
}

/// A `?wait=` that is not a whole number of seconds within the server's limit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("wait={value} is not allowed: give a whole number of seconds from 0 to {max}")]
struct BadWait {
    /// The value given.
    value: String,
    /// The longest wait the server allows.
    max: u64,
}

/// Parses `?wait=SECS` (whole seconds, at most `max`); other parameters are ignored.
fn parse_wait(query: Option<&str>, max: u64) -> Result<Duration, BadWait> {
    let Some(q) = query else {
        return Ok(Duration::ZERO);
    };
    for pair in q.split('&') {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        if k == "wait" {
            return match v.parse::<u64>() {
                Ok(secs) if secs <= max => Ok(Duration::from_secs(secs)),
                _ => Err(BadWait {
                    value: v.to_string(),
                    max,
                }),
            };
        }
    }
    Ok(Duration::ZERO)
}

/// `GET /api/v1/policy`: the document with its `ETag`; `304` when `If-None-Match` names the
/// current version; with `?wait=SECS` a matching request is held until the policy changes
/// (then `200`) or the wait ends (then `304`).
pub(crate) async fn get_policy(
    State(st): State<AppState>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let wait = match parse_wait(query.as_deref(), st.config.max_wait_secs) {
        Ok(w) => w,
        Err(e) => return error(StatusCode::BAD_REQUEST, e.to_string()),
    };
    // Subscribe before reading so that a change between the read and the wait is not missed.
    let mut sub = st.shared.store.subscribe();
    let mut snap = sub.latest();
    let Some(inm) = header_str(&headers, header::IF_NONE_MATCH) else {
        return ok(&snap);
    };
    if !etag::list_matches(inm, &snap.etag) {
        return ok(&snap);
    }
    if wait.is_zero() {
        return not_modified(&snap);
    }
    let deadline = tokio::time::Instant::now() + wait;
    let mut stopping = st.stopping.clone();
    loop {
        tokio::select! {
            changed = sub.changed() => match changed {
                Some(s) => {
                    snap = s;
                    if !etag::list_matches(inm, &snap.etag) {
                        return ok(&snap);
                    }
                }
                None => return not_modified(&snap),
            },
            () = tokio::time::sleep_until(deadline) => return not_modified(&snap),
            _ = stopping.wait_for(|s| *s) => {
                return (
                    StatusCode::SERVICE_UNAVAILABLE,
                    [(header::RETRY_AFTER, HeaderValue::from_static("1"))],
                    "the server is shutting down; retry shortly",
                )
                    .into_response();
            }
        }
    }
}

/// `GET /api/v1/policy/changes`: the recent change log (revision, etag, name, at_nanos, source).
pub(crate) async fn changes(State(st): State<AppState>) -> Response {
    let body = serde_json::json!({ "changes": st.shared.store.changes() }).to_string();
    json_response(StatusCode::OK, body)
}

#[derive(Serialize)]
struct FieldErrorDoc<'a> {
    field: &'a str,
    value: &'a str,
    reason: &'a str,
}

/// `PUT /api/v1/policy`: bearer token, then `If-Match`, then a JSON `PolicySpec` that must
/// validate; installed by compare-and-swap on the ETag.
pub(crate) async fn put_policy(
    State(st): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    request: Request,
) -> Response {
    let headers = request.headers().clone();
    let Some(token) = &st.config.token else {
        return error(
            StatusCode::FORBIDDEN,
            "policy writes are disabled because this server has no API token; start it with \
             --token-file FILE (a file holding one token line) or set MMSCHED_API_TOKEN, then \
             send `Authorization: Bearer TOKEN`",
        );
    };
    let auth = header_str(&headers, header::AUTHORIZATION);
    if !token.authorizes(auth) {
        let (challenge, msg) = if auth.is_some() {
            (
                "Bearer realm=\"mmsched\", error=\"invalid_token\"",
                "the bearer token is wrong; send `Authorization: Bearer TOKEN` with the server's token",
            )
        } else {
            (
                "Bearer realm=\"mmsched\"",
                "policy writes need `Authorization: Bearer TOKEN`",
            )
        };
        let mut resp = error(StatusCode::UNAUTHORIZED, msg);
        resp.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static(challenge),
        );
        return resp;
    }
    let Some(if_match) = header_str(&headers, header::IF_MATCH).map(str::to_string) else {
        return error(
            StatusCode::PRECONDITION_REQUIRED,
            "PUT needs an If-Match header with the ETag from GET /api/v1/policy (or `If-Match: *` to overwrite whatever is current)",
        );
    };
    if let Some(ct) = header_str(&headers, header::CONTENT_TYPE)
        && !ct
            .trim_start()
            .to_ascii_lowercase()
            .starts_with("application/json")
    {
        return error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!("the policy must be sent as JSON (Content-Type: application/json), not {ct}"),
        );
    }
    let body = match Bytes::from_request(request, &st).await {
        Ok(b) => b,
        Err(rejection) if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            return error(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!(
                    "the policy document is larger than the limit of {} bytes",
                    st.config.body_limit_bytes
                ),
            );
        }
        Err(rejection) => return error(rejection.status(), rejection.body_text()),
    };
    let policy = match crate::body::parse_policy_body(&body) {
        Ok(p) => p,
        Err(crate::body::PolicyBodyError::Invalid(errs)) => {
            let docs: Vec<_> = errs
                .0
                .iter()
                .map(|e| FieldErrorDoc {
                    field: &e.field,
                    value: &e.value,
                    reason: &e.reason,
                })
                .collect();
            let body = serde_json::json!({ "errors": docs }).to_string();
            return json_response(StatusCode::UNPROCESSABLE_ENTITY, body);
        }
        Err(e) => return error(StatusCode::BAD_REQUEST, e.to_string()),
    };
    let precondition = if if_match.trim() == "*" {
        Precondition::Any
    } else {
        Precondition::ETag(&if_match)
    };
    match st
        .shared
        .store
        .replace(policy, precondition, &format!("api {peer}"))
    {
        Ok(r) => {
            let s: Arc<PolicySnapshot> = r.snapshot;
            let body = serde_json::json!({
                "etag": s.etag,
                "revision": s.revision,
                "changed": r.changed,
            })
            .to_string();
            let mut resp = json_response(StatusCode::OK, body);
            resp.headers_mut().insert(header::ETAG, etag_header(&s));
            resp
        }
        Err(SwapError::Stale { expected, current }) => {
            let body = serde_json::json!({
                "error": format!(
                    "the policy changed since you read it (If-Match {expected}, current {current}); GET it again, re-apply your change and retry with the new ETag"
                ),
                "current_etag": current,
            })
            .to_string();
            let mut resp = json_response(StatusCode::PRECONDITION_FAILED, body);
            if let Ok(v) = HeaderValue::from_str(&current) {
                resp.headers_mut().insert(header::ETAG, v);
            }
            resp
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wait_parameter() {
        assert_eq!(parse_wait(None, 60), Ok(Duration::ZERO));
        assert_eq!(parse_wait(Some("x=1"), 60), Ok(Duration::ZERO));
        assert_eq!(parse_wait(Some("wait=30"), 60), Ok(Duration::from_secs(30)));
        assert!(
            parse_wait(Some("wait=61"), 60)
                .unwrap_err()
                .to_string()
                .contains("0 to 60")
        );
        assert!(parse_wait(Some("wait=-1"), 60).is_err());
        assert!(parse_wait(Some("wait=1.5"), 60).is_err());
    }
}
