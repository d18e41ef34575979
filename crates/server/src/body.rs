//! The body of `PUT /api/v1/policy`: a JSON object, parsed and validated.

use mmsched_core::policy::{Policy, PolicyErrors, PolicySpec};

/// Why a body is not an acceptable policy.
#[derive(Debug, thiserror::Error)]
pub enum PolicyBodyError {
    /// Not JSON, or JSON of the wrong shape.
    #[error("the body is not a policy document: line {line} column {column}: {message}")]
    Syntax {
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What serde found.
        message: String,
    },
    /// Valid JSON, but not an object (serde would read an array as the fields in order).
    #[error("the body is not a policy document: it must be a JSON object {{…}}, not {found}")]
    NotAnObject {
        /// What the document starts with.
        found: &'static str,
    },
    /// Fields out of range (answered 422 with each field).
    #[error("invalid policy: {0}")]
    Invalid(PolicyErrors),
}

/// Parses and validates a policy body.
pub fn parse_policy_body(body: &[u8]) -> Result<Policy, PolicyBodyError> {
    let first = body.iter().find(|b| !b.is_ascii_whitespace());
    let found = match first {
        Some(b'{') => None,
        Some(b'[') => Some("an array"),
        Some(b'"') => Some("a string"),
        Some(b'0'..=b'9' | b'-') => Some("a number"),
        Some(b't' | b'f') => Some("a boolean"),
        Some(b'n') => Some("null"),
        None => Some("an empty body"),
        Some(_) => None,
    };
    if let Some(found) = found {
        return Err(PolicyBodyError::NotAnObject { found });
    }
    let spec: PolicySpec = serde_json::from_slice(body).map_err(|e| PolicyBodyError::Syntax {
        line: e.line(),
        column: e.column(),
        message: mmsched_core::text::shorten(&e.to_string(), 200).into_owned(),
    })?;
    Policy::try_from(spec).map_err(PolicyBodyError::Invalid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_object_is_a_policy() {
        let p = parse_policy_body(br#" {"name":"x"}"#).map(|p| p.name().to_string());
        assert_eq!(p.ok().as_deref(), Some("x"));
    }

    #[test]
    fn a_top_level_array_is_refused_though_serde_would_take_it() {
        let e = parse_policy_body(br#"["x"]"#).err().map(|e| e.to_string());
        assert_eq!(
            e.as_deref(),
            Some("the body is not a policy document: it must be a JSON object {…}, not an array")
        );
        assert!(matches!(
            parse_policy_body(b"  "),
            Err(PolicyBodyError::NotAnObject {
                found: "an empty body"
            })
        ));
    }

    #[test]
    fn bad_fields_are_field_errors() {
        assert!(matches!(
            parse_policy_body(br#"{"arbiter":{"weight_deadline":7}}"#),
            Err(PolicyBodyError::Invalid(_))
        ));
        assert!(matches!(
            parse_policy_body(b"{oops"),
            Err(PolicyBodyError::Syntax { line: 1, .. })
        ));
    }
}
