//! Entity tags: computing a strong ETag from content and matching `If-Match` /
//! `If-None-Match` header values (RFC 9110 §8.8.3, §13.1.1–13.1.2).

use sha2::{Digest, Sha256};

/// The strong ETag of `content`: the first 128 bits of its SHA-256, hex, quoted.
/// Derived from the content only, so a restarted server serving the same policy hands out
/// the same ETag and clients holding it are not sent the document again.
pub fn of(content: &[u8]) -> String {
    let digest = Sha256::digest(content);
    let mut s = String::with_capacity(34);
    s.push('"');
    for b in &digest[..16] {
        s.push_str(&format!("{b:02x}"));
    }
    s.push('"');
    s
}

/// Whether a header value holding `*` or a comma-separated list of entity tags names
/// `current`. Weak tags (`W/"…"`) compare by their opaque part (the weak comparison used by
/// `If-None-Match`); a bare unquoted token is accepted as its quoted form for lenient clients.
pub fn list_matches(header: &str, current: &str) -> bool {
    header.split(',').map(str::trim).any(|tag| {
        if tag == "*" {
            return true;
        }
        let tag = tag.strip_prefix("W/").unwrap_or(tag);
        if tag.starts_with('"') {
            tag == current
        } else {
            current.len() == tag.len() + 2 && current[1..current.len() - 1] == *tag
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn etag_is_quoted_hex_and_content_derived() {
        let e = of(b"{}");
        assert_eq!(e.len(), 34);
        assert!(e.starts_with('"') && e.ends_with('"'));
        assert!(e[1..33].chars().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(e, of(b"{}"));
        assert_ne!(e, of(b"{ }"));
    }

    #[test]
    fn matching_follows_the_header_grammar() {
        let cur = "\"abc\"";
        assert!(list_matches("\"abc\"", cur));
        assert!(list_matches("*", cur));
        assert!(list_matches("\"x\", W/\"abc\"", cur));
        assert!(list_matches("abc", cur));
        assert!(!list_matches("\"abcd\"", cur));
        assert!(!list_matches("", cur));
        assert!(!list_matches("\"\"", cur));
    }
}
