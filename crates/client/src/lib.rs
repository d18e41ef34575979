//! # mmsched-client
//!
//! The hot-reload SDK (S12): keeps a program's scheduling policy in step with the policy
//! API of an mmsched server, blocking and without an async runtime.
//!
//! ```no_run
//! use std::time::Duration;
//! use mmsched_client::PolicyClient;
//!
//! let watcher = PolicyClient::builder("http://127.0.0.1:9100")
//!     .poll_interval(Duration::from_secs(5))
//!     .long_poll(Some(30))
//!     .backoff(Duration::from_millis(500), Duration::from_secs(30))
//!     .on_update(|policy, etag| println!("policy {} ({etag})", policy.name()))
//!     .on_error(|e| eprintln!("policy watch: {e}"))
//!     .spawn()?;
//! // … run; the callback switches the scheduler's policy between two decisions …
//! watcher.stop();
//! # Ok::<(), mmsched_client::ClientError>(())
//! ```
//!
//! - ETag caching: every request sends `If-None-Match`, so an unchanged policy costs a 304
//!   with no body, and the callback never fires for a policy it has already delivered.
//! - Long-poll (`?wait=SECS`): the server answers as soon as the policy changes.
//! - Errors (server down, 5xx) are retried with exponential backoff and jitter; a document
//!   that fails validation is reported once through `on_error` and never applied.
//! - [`PolicyClient::fetch`] and [`PolicyClient::put`] are the one-shot calls.
#![deny(missing_docs)]

mod backoff;
mod error;
mod http;
mod watch;

pub use backoff::Backoff;
pub use error::ClientError;
pub use http::{Conditional, Fetched, POLICY_PATH, PolicyClient, PutOutcome};
pub use watch::{
    DEFAULT_BACKOFF_INITIAL, DEFAULT_BACKOFF_MAX, DEFAULT_POLL_INTERVAL, DEFAULT_TIMEOUT,
    MAX_LONG_POLL_SECS, WatchBuilder, Watcher,
};
