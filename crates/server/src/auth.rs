//! The bearer token that guards policy writes.

use std::path::Path;

/// The largest token file read (a token is one short line).
pub const TOKEN_FILE_CAP: u64 = 4096;

/// Name of the environment variable read by [`ApiToken::from_env`].
pub const TOKEN_ENV: &str = "MMSCHED_API_TOKEN";

/// What is wrong with a configured token.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// The token file could not be read, or is far larger than a token.
    #[error(transparent)]
    Read(#[from] mmsched_core::bounded::ReadCapError),
    /// The token is empty or contains characters a bearer token cannot carry.
    #[error(
        "the API token from {origin} {problem}; put one line of 16 or more printable ASCII characters (no spaces) there, e.g. the output of `openssl rand -hex 32`"
    )]
    Invalid {
        /// `file …` or the variable name.
        origin: String,
        /// What is wrong.
        problem: &'static str,
    },
}

/// A bearer token. Its `Debug` never shows the secret.
#[derive(Clone)]
pub struct ApiToken(String);

impl std::fmt::Debug for ApiToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiToken(…)")
    }
}

impl ApiToken {
    /// A token from a string (surrounding whitespace, e.g. a final newline, is ignored).
    pub fn new(token: &str, origin: &str) -> Result<Self, TokenError> {
        let t = token.trim();
        let invalid = |problem| TokenError::Invalid {
            origin: origin.to_string(),
            problem,
        };
        if t.is_empty() {
            return Err(invalid("is empty"));
        }
        if !t.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(invalid("contains spaces or non-ASCII characters"));
        }
        if t.len() < 16 {
            return Err(invalid("is shorter than 16 characters"));
        }
        Ok(Self(t.to_string()))
    }

    /// The token stored in `path` (first line).
    pub fn from_file(path: &Path) -> Result<Self, TokenError> {
        let text = mmsched_core::bounded::read_capped_text(path, TOKEN_FILE_CAP, "API token file")?;
        let first = text.lines().next().unwrap_or("");
        Self::new(first, &format!("file {}", path.display()))
    }

    /// The token in `MMSCHED_API_TOKEN`, or `None` when the variable is unset.
    pub fn from_env() -> Result<Option<Self>, TokenError> {
        match std::env::var(TOKEN_ENV) {
            Ok(v) => Self::new(&v, TOKEN_ENV).map(Some),
            Err(_) => Ok(None),
        }
    }

    /// Whether an `Authorization` header value carries this token, compared in time
    /// independent of where the first difference is.
    pub fn authorizes(&self, header: Option<&str>) -> bool {
        let Some(h) = header else { return false };
        let mut parts = h.trim().splitn(2, ' ');
        let scheme = parts.next().unwrap_or("");
        let given = parts.next().unwrap_or("").trim();
        if !scheme.eq_ignore_ascii_case("bearer") || given.len() != self.0.len() {
            return false;
        }
        given
            .bytes()
            .zip(self.0.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_rules() {
        assert!(ApiToken::new("  \n", "x").is_err());
        assert!(ApiToken::new("short", "x").is_err());
        assert!(ApiToken::new("has a space in it ok", "x").is_err());
        let t = ApiToken::new("0123456789abcdef\n", "x").unwrap();
        assert!(t.authorizes(Some("Bearer 0123456789abcdef")));
        assert!(t.authorizes(Some("bearer 0123456789abcdef")));
        assert!(!t.authorizes(Some("Bearer 0123456789abcdeg")));
        assert!(!t.authorizes(Some("Basic 0123456789abcdef")));
        assert!(!t.authorizes(Some("Bearer")));
        assert!(!t.authorizes(None));
        assert_eq!(format!("{t:?}"), "ApiToken(…)");
    }

    #[test]
    fn token_file_first_line() {
        let dir = std::env::temp_dir().join(format!("mmsched-token-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("token");
        std::fs::write(&p, "abcdefghijklmnopqrstuvwxyz\nsecond line\n").unwrap();
        let t = ApiToken::from_file(&p).unwrap();
        assert!(t.authorizes(Some("Bearer abcdefghijklmnopqrstuvwxyz")));
        let err = ApiToken::from_file(&dir.join("missing")).unwrap_err();
        assert!(err.to_string().contains("cannot read"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
