//! What can go wrong talking to the policy API.

use mmsched_core::policy::FieldError;

/// An error from the policy API or the way to it. Each names the URL or the status and what
/// to do about it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ClientError {
    /// The URL cannot be used.
    #[error("invalid policy URL {url}: {reason}")]
    Url {
        /// The URL as given.
        url: String,
        /// What is wrong.
        reason: String,
    },
    /// The server could not be reached or the exchange broke off (server down, timeout…).
    #[error("cannot reach the policy server at {url}: {message}")]
    Transport {
        /// The URL.
        url: String,
        /// The underlying error.
        message: String,
    },
    /// The server answered with an unexpected status.
    #[error("the policy server at {url} answered {status}: {message}")]
    Http {
        /// The URL.
        url: String,
        /// HTTP status code.
        status: u16,
        /// The server's `error` message, or the body.
        message: String,
    },
    /// The server sent a policy this build cannot accept; it was not applied.
    #[error("the policy with ETag {etag} was not applied: {message}")]
    Invalid {
        /// Its ETag.
        etag: String,
        /// Why (parse error or field errors).
        message: String,
    },
    /// A `put` lost a race or used an old ETag (412); re-read and retry.
    #[error(
        "the policy changed since it was read (current ETag {current_etag}); fetch it again and retry"
    )]
    Stale {
        /// The ETag of the current policy.
        current_etag: String,
    },
    /// A `put` was refused because the document is invalid (422).
    #[error("the server rejected the policy: {}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Rejected(Vec<FieldError>),
}
