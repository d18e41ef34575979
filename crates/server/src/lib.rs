//! # mmsched-server
//!
//! The HTTP face of a running scheduler (S12, S13):
//!
//! - `GET /api/v1/policy` — the live policy with a strong `ETag`; `If-None-Match` → 304;
//!   `?wait=SECS` long-polls until the policy changes.
//! - `PUT /api/v1/policy` — `Authorization: Bearer TOKEN` and `If-Match` required; the body
//!   is validated (422 with field errors) and installed by compare-and-swap on the ETag.
//! - `GET /api/v1/policy/changes` — the recent change log (for trace annotations).
//! - `GET /api/v1/status` — LDTI, level, live policy, per-modality rates, uptime.
//! - `GET /metrics` — OpenMetrics with trace-id exemplars (or the classic text format).
//! - `GET /`, `/assets/…`, `/api/v1/trace` — the viewer and the trace feed, when configured.
//!
//! The runtime and the server share a [`Shared`]: the [`PolicyStore`] the scheduler reads
//! between decisions (without ever waiting on a request), and the [`Metrics`] and
//! [`StatusBoard`] it feeds. Start with [`spawn`] (own thread) or [`spawn_on`] (an existing
//! tokio runtime); both return a [`ServerHandle`] with the bound address.
//!
//! Every connection is bounded ([`ConnectionLimits`]: a deadline for the request head, an
//! idle deadline, a cap on open connections, a shutdown deadline) and every request's `Host`
//! is checked against the bound address ([`HostCheck`]), so a page elsewhere cannot reach
//! the API through a DNS name that points at this machine.
#![deny(missing_docs)]

mod api;
pub mod auth;
pub mod body;
pub mod etag;
pub mod host;
pub mod listen;
pub mod metrics;
pub mod multipart;
mod server;
pub mod status;
pub mod store;

pub use auth::{ApiToken, TokenError};
pub use host::HostCheck;
pub use listen::{ConnectionLimits, serve_router};
pub use metrics::Metrics;
pub use server::{
    AssetFn, DEFAULT_ADDR, DEFAULT_BODY_LIMIT_BYTES, DEFAULT_BODY_TIMEOUT_MILLIS,
    DEFAULT_MAX_WAIT_SECS, ServerConfig, ServerError, ServerHandle, Shared, TraceSource, spawn,
    spawn_on,
};
pub use status::{ModalityStatus, StatusBoard, StatusDoc};
pub use store::{PolicyChange, PolicySnapshot, PolicyStore, PolicySubscription, Precondition};
