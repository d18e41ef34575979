//! `multipart/form-data` bodies (RFC 7578), as OpenAI clients send file uploads: the
//! boundary from the `Content-Type` header, then each part's `Content-Disposition` name and
//! file name and its bytes. The whole body is in memory (the server caps its size first).

/// One part of a form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    /// The field name (`name="…"`).
    pub name: String,
    /// The file name, for file fields (`filename="…"`).
    pub filename: Option<String>,
    /// The part's own `Content-Type`, if given.
    pub content_type: Option<String>,
    /// The bytes.
    pub data: Vec<u8>,
}

/// Why a body is not a form this parser reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MultipartError {
    /// The request's `Content-Type` is not `multipart/form-data` with a boundary.
    #[error(
        "the request is not multipart/form-data with a boundary (Content-Type: {0:?}); send the file as a form field, e.g. curl -F file=@clip.wav"
    )]
    NotMultipart(String),
    /// The body does not follow the boundary structure.
    #[error("the multipart body is malformed: {0}")]
    Malformed(&'static str),
}

/// The boundary of a `multipart/form-data` content type.
pub fn boundary(content_type: &str) -> Result<String, MultipartError> {
    let not = || MultipartError::NotMultipart(content_type.to_string());
    let mut params = content_type.split(';');
    let kind = params.next().unwrap_or_default().trim();
    if !kind.eq_ignore_ascii_case("multipart/form-data") {
        return Err(not());
    }
    params
        .filter_map(|p| p.split_once('='))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("boundary"))
        .map(|(_, v)| v.trim().trim_matches('"').to_string())
        .filter(|b| !b.is_empty() && b.len() <= 70)
        .ok_or_else(not)
}

fn find(haystack: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    if needle.is_empty() || from > haystack.len() {
        return None;
    }
    haystack[from..]
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|i| i + from)
}

/// A `key="value"` (or `key=value`) parameter of a header value.
fn param(value: &str, key: &str) -> Option<String> {
    value.split(';').skip(1).find_map(|p| {
        let (k, v) = p.split_once('=')?;
        k.trim()
            .eq_ignore_ascii_case(key)
            .then(|| v.trim().trim_matches('"').to_string())
    })
}

/// Splits `body` into its parts.
pub fn parse(body: &[u8], boundary: &str) -> Result<Vec<Part>, MultipartError> {
    let delimiter = format!("--{boundary}").into_bytes();
    let mut at = find(body, &delimiter, 0).ok_or(MultipartError::Malformed("no boundary line"))?
        + delimiter.len();
    let mut parts = Vec::new();
    loop {
        if body[at..].starts_with(b"--") {
            return Ok(parts);
        }
        // Past the boundary line's end.
        let line_end = find(body, b"\r\n", at)
            .ok_or(MultipartError::Malformed("a boundary line has no end"))?;
        let headers_end = find(body, b"\r\n\r\n", line_end)
            .ok_or(MultipartError::Malformed("a part's headers have no end"))?;
        let head = std::str::from_utf8(&body[line_end + 2..headers_end])
            .map_err(|_| MultipartError::Malformed("a part's headers are not UTF-8"))?;
        let data_start = headers_end + 4;
        let mut next_delim = b"\r\n".to_vec();
        next_delim.extend_from_slice(&delimiter);
        let data_end = find(body, &next_delim, data_start).ok_or(MultipartError::Malformed(
            "the last part has no closing boundary",
        ))?;
        let mut name = None;
        let mut filename = None;
        let mut content_type = None;
        for line in head.split("\r\n") {
            let Some((k, v)) = line.split_once(':') else {
                continue;
            };
            if k.trim().eq_ignore_ascii_case("content-disposition") {
                name = param(v, "name");
                filename = param(v, "filename");
            } else if k.trim().eq_ignore_ascii_case("content-type") {
                content_type = Some(v.trim().to_string());
            }
        }
        let name = name.ok_or(MultipartError::Malformed("a part has no name"))?;
        parts.push(Part {
            name,
            filename,
            content_type,
            data: body[data_start..data_end].to_vec(),
        });
        at = data_end + next_delim.len();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form() -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(
            b"--XyZ\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nwhisper-1\r\n",
        );
        b.extend_from_slice(b"--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.wav\"\r\nContent-Type: audio/wav\r\n\r\n");
        b.extend_from_slice(&[0, 1, 2, b'\r', b'\n', 3]);
        b.extend_from_slice(b"\r\n--XyZ--\r\n");
        b
    }

    #[test]
    fn fields_and_files_come_out_with_their_bytes() {
        let parts = parse(&form(), "XyZ").expect("parses");
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0].name, "model");
        assert_eq!(parts[0].data, b"whisper-1");
        assert_eq!(parts[1].filename.as_deref(), Some("a.wav"));
        assert_eq!(parts[1].content_type.as_deref(), Some("audio/wav"));
        assert_eq!(parts[1].data, vec![0, 1, 2, b'\r', b'\n', 3]);
    }

    #[test]
    fn the_boundary_comes_from_the_content_type() {
        assert_eq!(
            boundary("multipart/form-data; boundary=\"abc\"").as_deref(),
            Ok("abc")
        );
        assert!(matches!(
            boundary("application/json"),
            Err(MultipartError::NotMultipart(_))
        ));
        assert!(boundary("multipart/form-data").is_err());
    }

    #[test]
    fn a_truncated_body_is_an_error() {
        let body = form();
        for cut in [0, 5, 40, body.len() - 8] {
            assert!(parse(&body[..cut], "XyZ").is_err(), "cut at {cut}");
        }
    }

    proptest::proptest! {
        #[test]
        fn any_bytes_parse_or_fail_without_panicking(
            body in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300),
        ) {
            let _ = parse(&body, "XyZ");
        }
    }
}
