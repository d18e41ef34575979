//! An error and its causes on one line, for notes and trace fields that keep text.

/// `error: cause: cause …`, as `anyhow`'s `{:#}` prints it.
pub fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut out = error.to_string();
    let mut next = error.source();
    while let Some(e) = next {
        out.push_str(": ");
        out.push_str(&e.to_string());
        next = e.source();
    }
    out
}

/// The cause an error keeps of a platform call whose error type exists only on some
/// platforms (a resource group's is Linux's).
pub type Cause = Box<dyn std::error::Error + Send + Sync + 'static>;

#[cfg(test)]
mod tests {
    #[derive(Debug, thiserror::Error)]
    #[error("outer")]
    struct Outer(#[source] std::io::Error);

    #[test]
    fn every_cause_is_joined_once() {
        let e = Outer(std::io::Error::other("inner"));
        assert_eq!(super::chain(&e), "outer: inner");
    }
}
