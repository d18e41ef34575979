//! Reading a policy document from disk: TOML or JSON, by extension (TOML otherwise).

use std::path::Path;

use anyhow::{Result, bail};
use mmsched_core::policy::{Policy, PolicySpec};

/// The largest policy file read (a policy document is a few KiB).
pub const POLICY_FILE_CAP: u64 = 1 << 20;

/// The policy in `path`, or the built-in defaults when no file is given.
pub fn load_or_default(path: Option<&Path>) -> Result<Policy> {
    path.map_or_else(|| Ok(Policy::default()), load)
}

/// Parses and validates a policy file. Errors carry the path, the line and column for
/// syntax or unknown-field problems, and every invalid field with its allowed range.
pub fn load(path: &Path) -> Result<Policy> {
    let text = mmsched_core::bounded::read_capped_text(path, POLICY_FILE_CAP, "policy file")?;
    let spec = parse(path, &text)?;
    match Policy::try_from(spec) {
        Ok(p) => Ok(p),
        Err(errors) => bail!(
            "{}: invalid policy ({} problem{}):\n{}",
            path.display(),
            errors.0.len(),
            if errors.0.len() == 1 { "" } else { "s" },
            errors
                .0
                .iter()
                .map(|e| format!("  - {e}"))
                .collect::<Vec<_>>()
                .join("\n")
        ),
    }
}

/// Parses the text of a policy document (TOML unless the file name ends in `.json`).
pub fn parse(path: &Path, text: &str) -> Result<PolicySpec> {
    let is_json = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("json"));
    if is_json {
        if !text.trim_start().starts_with('{') {
            bail!(
                "{}: a policy document is a JSON object {{…}}; this file holds another kind of JSON value",
                path.display()
            );
        }
        serde_json::from_str(text)
            .map_err(|e| anyhow::anyhow!("{}:{}:{}: {}", path.display(), e.line(), e.column(), e))
    } else {
        toml::from_str(text).map_err(|e| {
            let (line, col) = e.span().map(|s| line_col(text, s.start)).unwrap_or((0, 0));
            anyhow::anyhow!("{}:{line}:{col}: {}", path.display(), e.message())
        })
    }
}

/// 1-based line and column of a byte offset.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before
        .rfind('\n')
        .map_or(before.len(), |nl| before.len() - nl - 1)
        + 1;
    (line, col)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_errors_name_the_line_and_the_allowed_fields() {
        let text = "version = 1\n[arbiter]\nweigth_deadline = 0.4\n";
        let err = parse(Path::new("p.toml"), text).unwrap_err().to_string();
        assert!(err.starts_with("p.toml:3:1:"), "{err}");
        assert!(err.contains("weight_deadline"), "{err}");
    }

    #[test]
    fn a_top_level_json_array_is_not_a_policy() {
        let err = parse(Path::new("p.json"), r#"["x"]"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("a policy document is a JSON object"), "{err}");
    }

    #[test]
    fn dev_zero_is_refused_at_the_cap() {
        let err = format!("{:#}", load(Path::new("/dev/zero")).unwrap_err());
        assert!(err.contains("is larger than 1 MiB"), "{err}");
    }

    #[test]
    fn json_by_extension() {
        let spec = parse(Path::new("p.JSON"), r#"{"name":"j"}"#).unwrap();
        assert_eq!(spec.name.as_deref(), Some("j"));
    }

    #[test]
    fn line_col_counts_from_one() {
        assert_eq!(line_col("ab\ncd", 0), (1, 1));
        assert_eq!(line_col("ab\ncd", 4), (2, 2));
    }
}
