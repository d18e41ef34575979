//! API keys (`serve --models --api-keys FILE`): each key carries the importance its
//! requests are scheduled with, so one app's requests can outrank another's. With keys,
//! every model endpoint wants `Authorization: Bearer KEY` (what OpenAI clients send as
//! their `api_key`); without, the endpoints are open and each class has the policy's
//! importance.
//!
//! The file has one `KEY=IMPORTANCE` per line (importance in [0, 1]); blank lines and lines
//! starting with `#` are ignored. Keys live in a file, not on the command line, so that
//! they do not show in the process list.

use std::path::Path;

use axum::http::{HeaderMap, header};

/// Why the keys file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum KeysError {
    /// The file cannot be read.
    #[error(
        "cannot read the API keys file {path}: pass --api-keys with a readable file of KEY=IMPORTANCE lines"
    )]
    Read {
        /// The file.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A line is wrong (the cause names it and the fix).
    #[error("{path}")]
    Line {
        /// The file.
        path: String,
        /// Which line, what is wrong and the fix.
        #[source]
        reason: KeyLineError,
    },
}

/// What is wrong in the text of a keys file: the line and the fix.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum KeyLineError {
    /// A line without `=`.
    #[error("line {line}: write KEY=IMPORTANCE, e.g. sk-dashcam=0.9")]
    NoEquals {
        /// The line number, from 1.
        line: usize,
    },
    /// An empty key, or one with spaces or control characters.
    #[error("line {line}: the key must be non-empty, without spaces or control characters")]
    BadKey {
        /// The line number, from 1.
        line: usize,
    },
    /// An importance that is not a number in [0, 1].
    #[error("line {line}: the importance must be a number from 0 to 1, not {value:?}")]
    BadImportance {
        /// The line number, from 1.
        line: usize,
        /// The value given.
        value: String,
    },
    /// A key listed twice.
    #[error("line {line}: this key is already listed above")]
    Duplicate {
        /// The line number, from 1.
        line: usize,
    },
    /// No key at all.
    #[error("no keys: add at least one KEY=IMPORTANCE line")]
    NoKeys,
}

/// A key and the importance of its requests.
#[derive(Debug, Clone, PartialEq)]
struct Key {
    key: String,
    importance: f64,
}

/// The keys a server accepts.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ApiKeys(Vec<Key>);

impl ApiKeys {
    /// Reads the keys file at `path` (at most 1 MiB).
    pub fn load(path: &Path) -> Result<Self, KeysError> {
        let shown = path.display().to_string();
        let text = read_capped(path).map_err(|source| KeysError::Read {
            path: shown.clone(),
            source,
        })?;
        Self::parse(&text).map_err(|reason| KeysError::Line {
            path: shown,
            reason,
        })
    }

    /// Parses `KEY=IMPORTANCE` lines; the error names the line and the fix.
    pub fn parse(text: &str) -> Result<Self, KeyLineError> {
        let mut keys: Vec<Key> = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let n = i + 1;
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let Some((key, importance)) = line.rsplit_once('=') else {
                return Err(KeyLineError::NoEquals { line: n });
            };
            let key = key.trim();
            if key.is_empty() || key.chars().any(|c| c.is_whitespace() || c.is_control()) {
                return Err(KeyLineError::BadKey { line: n });
            }
            let Some(importance) = importance
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|v| (0.0..=1.0).contains(v))
            else {
                return Err(KeyLineError::BadImportance {
                    line: n,
                    value: importance.trim().to_string(),
                });
            };
            if keys.iter().any(|k| k.key == key) {
                return Err(KeyLineError::Duplicate { line: n });
            }
            keys.push(Key {
                key: key.to_string(),
                importance,
            });
        }
        if keys.is_empty() {
            return Err(KeyLineError::NoKeys);
        }
        Ok(Self(keys))
    }

    /// The importance of a request with `headers`, or why it is refused.
    pub fn importance(&self, headers: &HeaderMap) -> Result<f64, &'static str> {
        let Some(value) = headers.get(header::AUTHORIZATION) else {
            return Err(
                "this server wants an API key: send Authorization: Bearer KEY (the api_key of an OpenAI client)",
            );
        };
        let presented = value
            .to_str()
            .ok()
            .and_then(|v| {
                v.strip_prefix("Bearer ")
                    .or_else(|| v.strip_prefix("bearer "))
            })
            .map(str::trim)
            .ok_or("the Authorization header must be \"Bearer KEY\"")?;
        // Every key is compared in full, so the time taken says nothing about a near miss.
        let mut found = None;
        for k in &self.0 {
            if same_bytes(k.key.as_bytes(), presented.as_bytes()) {
                found = Some(k.importance);
            }
        }
        found.ok_or("this API key is not one of the server's (--api-keys)")
    }
}

/// The file's text, refusing one over 1 MiB (`/dev/zero` or a wrong file).
fn read_capped(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    const MAX: u64 = 1 << 20;
    let mut text = String::new();
    std::fs::File::open(path)?
        .take(MAX + 1)
        .read_to_string(&mut text)?;
    if text.len() as u64 > MAX {
        return Err(std::io::Error::other("the file is over 1 MiB"));
    }
    Ok(text)
}

/// Whether `a` and `b` are equal, in time that depends only on their lengths.
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn bearer(key: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_str(&format!("Bearer {key}")).expect("header"),
        );
        h
    }

    #[test]
    fn a_listed_key_gives_its_importance_and_others_are_refused() {
        let keys = ApiKeys::parse("# apps\nsk-cam=0.9\n\nsk-chat = 0.2\n").expect("keys");
        assert_eq!(keys.importance(&bearer("sk-cam")), Ok(0.9));
        assert_eq!(keys.importance(&bearer("sk-chat")), Ok(0.2));
        assert!(keys.importance(&bearer("sk-ca")).is_err());
        assert!(keys.importance(&HeaderMap::new()).is_err());
    }

    #[test]
    fn bad_lines_are_named_with_their_fix() {
        for (text, says) in [
            ("sk-cam", "line 1: write KEY=IMPORTANCE"),
            (
                "sk-cam=1.5",
                "line 1: the importance must be a number from 0 to 1",
            ),
            ("ok=0.5\n=0.5", "line 2: the key must be non-empty"),
            ("a=0.1\na=0.2", "line 2: this key is already listed"),
            ("# nothing\n", "no keys"),
        ] {
            let e = ApiKeys::parse(text).expect_err(text).to_string();
            assert!(e.starts_with(says), "{text:?}: {e}");
        }
    }
}
