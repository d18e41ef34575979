//! One-shot calls: fetch the policy (optionally conditional, optionally long-polling) and
//! replace it.

use std::time::Duration;

use mmsched_core::policy::{FieldError, Policy, PolicySpec};
use ureq::Agent;

use crate::error::ClientError;

/// The path of the policy resource on an mmsched server.
pub const POLICY_PATH: &str = "/api/v1/policy";

/// A validated policy as served, with its ETag.
#[derive(Debug, Clone, PartialEq)]
pub struct Fetched {
    /// The policy.
    pub policy: Policy,
    /// Its ETag (quoted, as sent by the server).
    pub etag: String,
}

/// The result of a conditional fetch.
#[derive(Debug, Clone, PartialEq)]
// Returned once per request and consumed at once: boxing would only add an allocation.
#[allow(clippy::large_enum_variant)]
pub enum Conditional {
    /// 304: the policy is still one of the ETags sent.
    NotModified,
    /// 200: a different policy. `policy` is the validation result: an invalid document is
    /// reported, not applied.
    Modified {
        /// Its ETag.
        etag: String,
        /// The validated policy, or why it cannot be used.
        policy: Result<Policy, ClientError>,
    },
}

/// What a successful `put` returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PutOutcome {
    /// The ETag now current.
    pub etag: String,
    /// The revision now current.
    pub revision: u64,
    /// False when the document equalled the current one.
    pub changed: bool,
}

/// A blocking client for the policy resource. Cheap to clone (connections are pooled).
#[derive(Debug, Clone)]
pub struct PolicyClient {
    pub(crate) url: String,
    agent: Agent,
}

/// Normalises a policy URL: `http://host:port` (no path) means the policy resource on it.
pub(crate) fn policy_url(url: &str) -> Result<String, ClientError> {
    let bad = |reason: &str| ClientError::Url {
        url: url.to_string(),
        reason: reason.to_string(),
    };
    let rest = if let Some(r) = url.strip_prefix("http://") {
        r
    } else if let Some(r) = url.strip_prefix("https://") {
        if !cfg!(feature = "tls") {
            return Err(bad(
                "https needs the `tls` feature of mmsched-client; use http:// or build with it",
            ));
        }
        r
    } else {
        return Err(bad(
            "it must start with http:// (e.g. http://127.0.0.1:9100)",
        ));
    };
    if rest.is_empty() || rest.starts_with('/') {
        return Err(bad("it has no host (e.g. http://127.0.0.1:9100)"));
    }
    if rest.contains('/') {
        Ok(url.to_string())
    } else {
        Ok(format!("{url}{POLICY_PATH}"))
    }
}

fn transport(url: &str, e: ureq::Error) -> ClientError {
    ClientError::Transport {
        url: url.to_string(),
        message: e.to_string(),
    }
}

fn header(r: &ureq::http::Response<ureq::Body>, name: &str) -> Option<String> {
    r.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// The `error` field of a JSON error body, or the body itself.
fn error_message(body: &str) -> String {
    serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v.get("error").and_then(|e| e.as_str()).map(str::to_string))
        .unwrap_or_else(|| body.trim().chars().take(300).collect())
}

/// Why a served document is not a policy this build can apply.
#[derive(Debug, thiserror::Error)]
pub(crate) enum InvalidPolicy {
    #[error("not a policy document")]
    Json(#[source] serde_json::Error),
    #[error("{}", .0.to_string().replace('\n', "; "))]
    Fields(#[source] mmsched_core::policy::PolicyErrors),
}

impl InvalidPolicy {
    /// The error and its cause on one line (for [`ClientError::Invalid`]).
    fn message(&self) -> String {
        match self {
            Self::Json(e) => format!("{self}: {e}"),
            Self::Fields(_) => self.to_string(),
        }
    }
}

/// Parses and validates a served document.
pub(crate) fn validate(body: &str) -> Result<Policy, InvalidPolicy> {
    let spec: PolicySpec = serde_json::from_str(body).map_err(InvalidPolicy::Json)?;
    Policy::try_from(spec).map_err(InvalidPolicy::Fields)
}

impl PolicyClient {
    /// A client for `url` (the policy resource, or a bare `http://host:port`), with
    /// `timeout` for each call beyond any long-poll wait.
    pub fn new(url: &str, timeout: Duration) -> Result<Self, ClientError> {
        let url = policy_url(url)?;
        let agent: Agent = Agent::config_builder()
            .http_status_as_error(false)
            .timeout_connect(Some(timeout.min(Duration::from_secs(5))))
            .timeout_global(Some(timeout))
            .build()
            .into();
        Ok(Self { url, agent })
    }

    /// The policy resource's URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Fetches and validates the current policy.
    pub fn fetch(&self) -> Result<Fetched, ClientError> {
        match self.fetch_if_none_match(&[], None)? {
            Conditional::Modified { etag, policy } => Ok(Fetched {
                policy: policy?,
                etag,
            }),
            Conditional::NotModified => Err(ClientError::Http {
                url: self.url.clone(),
                status: 304,
                message: "Not Modified without a condition".into(),
            }),
        }
    }

    /// Fetches the policy unless it is one of `etags` (sent as `If-None-Match`). With
    /// `wait`, the server holds the request until the policy changes or the wait ends.
    pub fn fetch_if_none_match(
        &self,
        etags: &[&str],
        wait: Option<Duration>,
    ) -> Result<Conditional, ClientError> {
        let url = match wait {
            Some(w) if !etags.is_empty() => format!("{}?wait={}", self.url, w.as_secs()),
            _ => self.url.clone(),
        };
        let mut req = self.agent.get(&url);
        if !etags.is_empty() {
            req = req.header("If-None-Match", etags.join(", "));
        }
        if let Some(w) = wait {
            // The server may hold the request for the whole wait: allow for it.
            req = req
                .config()
                .timeout_global(Some(w + Duration::from_secs(10)))
                .build();
        }
        let mut resp = req.call().map_err(|e| transport(&self.url, e))?;
        let status = resp.status().as_u16();
        match status {
            304 => Ok(Conditional::NotModified),
            200 => {
                let etag = header(&resp, "etag").unwrap_or_default();
                let body = resp
                    .body_mut()
                    .read_to_string()
                    .map_err(|e| transport(&self.url, e))?;
                let policy = if etag.is_empty() {
                    Err(ClientError::Invalid {
                        etag: String::new(),
                        message: "the server sent no ETag; is this an mmsched policy URL?".into(),
                    })
                } else {
                    validate(&body).map_err(|e| ClientError::Invalid {
                        etag: etag.clone(),
                        message: e.message(),
                    })
                };
                Ok(Conditional::Modified { etag, policy })
            }
            _ => {
                let body = resp.body_mut().read_to_string().unwrap_or_default();
                Err(ClientError::Http {
                    url: self.url.clone(),
                    status,
                    message: error_message(&body),
                })
            }
        }
    }

    /// Replaces the policy with `spec` if the current one is `if_match` (an ETag, or `*`),
    /// authenticating with the bearer `token`.
    pub fn put(
        &self,
        spec: &PolicySpec,
        if_match: &str,
        token: &str,
    ) -> Result<PutOutcome, ClientError> {
        let body = serde_json::to_string(spec)
            .unwrap_or_else(|e| unreachable!("a policy spec always serialises: {e}"));
        let mut resp = self
            .agent
            .put(&self.url)
            .header("Content-Type", "application/json")
            .header("If-Match", if_match)
            .header("Authorization", format!("Bearer {token}"))
            .send(&body)
            .map_err(|e| transport(&self.url, e))?;
        let status = resp.status().as_u16();
        let etag = header(&resp, "etag").unwrap_or_default();
        let text = resp.body_mut().read_to_string().unwrap_or_default();
        let json: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
        match status {
            200 => Ok(PutOutcome {
                etag,
                revision: json["revision"].as_u64().unwrap_or(0),
                changed: json["changed"].as_bool().unwrap_or(true),
            }),
            412 => Err(ClientError::Stale { current_etag: etag }),
            422 => Err(ClientError::Rejected(
                json["errors"]
                    .as_array()
                    .map(|errs| {
                        errs.iter()
                            .map(|e| FieldError {
                                field: e["field"].as_str().unwrap_or("").to_string(),
                                value: e["value"].as_str().unwrap_or("").to_string(),
                                reason: e["reason"].as_str().unwrap_or("").to_string(),
                            })
                            .collect()
                    })
                    .unwrap_or_default(),
            )),
            _ => Err(ClientError::Http {
                url: self.url.clone(),
                status,
                message: error_message(&text),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        assert_eq!(
            policy_url("http://127.0.0.1:9100").unwrap(),
            "http://127.0.0.1:9100/api/v1/policy"
        );
        assert_eq!(
            policy_url("http://h:1/custom/policy").unwrap(),
            "http://h:1/custom/policy"
        );
        assert!(policy_url("127.0.0.1:9100").is_err());
        assert!(policy_url("http://").is_err());
        assert!(
            policy_url("ftp://x")
                .unwrap_err()
                .to_string()
                .contains("http://")
        );
    }

    #[test]
    fn error_messages_prefer_the_json_error_field() {
        assert_eq!(error_message(r#"{"error":"nope"}"#), "nope");
        assert_eq!(error_message("plain\n"), "plain");
    }

    #[test]
    fn validation_reports_field_errors_on_one_line() {
        let e = validate(r#"{"ldti":{"evaluate_hz":0},"slots":{"slot_len_micros":1}}"#)
            .unwrap_err()
            .message();
        assert!(e.contains("ldti.evaluate_hz") && e.contains("; "), "{e}");
        assert!(validate("{}").is_ok());
        let e = validate("[").unwrap_err().message();
        assert!(e.starts_with("not a policy document: "), "{e}");
    }
}
