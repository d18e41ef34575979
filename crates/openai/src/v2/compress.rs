//! Compressed request bodies: `Content-Encoding: gzip` or `deflate` (the zlib format, as
//! HTTP's `deflate` is), which `tritonclient` sends with `request_compression_algorithm`.
//! The body is inflated up to a limit and no further, so a small compressed body cannot
//! become an unbounded one.

use std::io::Read;

/// Why a body could not be inflated.
#[derive(Debug, thiserror::Error)]
pub enum InflateError {
    /// An encoding other than gzip, deflate or identity.
    #[error(
        "Content-Encoding {0:?} is not read here: send the body uncompressed, or as gzip or deflate"
    )]
    Unknown(String),
    /// The compressed data is corrupt.
    #[error(
        "the {encoding} body cannot be inflated; send valid {encoding} data or no Content-Encoding"
    )]
    Corrupt {
        /// The encoding.
        encoding: &'static str,
        /// What the decoder said.
        #[source]
        source: std::io::Error,
    },
    /// The inflated body would pass the limit.
    #[error(
        "the {encoding} body inflates to more than the upload limit of {limit} bytes: send a smaller request, or start the server with a larger --upload-limit-mib"
    )]
    TooLarge {
        /// The encoding.
        encoding: &'static str,
        /// The limit in bytes.
        limit: usize,
    },
}

/// `body` as sent with `encoding` (the Content-Encoding header, if any), inflated to at
/// most `limit` bytes; `None` when it was not compressed.
pub fn inflate(
    encoding: Option<&str>,
    body: &[u8],
    limit: usize,
) -> Result<Option<Vec<u8>>, InflateError> {
    let Some(encoding) = encoding.map(str::trim) else {
        return Ok(None);
    };
    let (name, reader): (&'static str, Box<dyn Read + '_>) = match encoding {
        "" | "identity" => return Ok(None),
        "gzip" | "x-gzip" => ("gzip", Box::new(flate2::read::GzDecoder::new(body))),
        "deflate" => ("deflate", Box::new(flate2::read::ZlibDecoder::new(body))),
        other => return Err(InflateError::Unknown(other.to_string())),
    };
    let mut out = Vec::new();
    // One byte past the limit tells a body at the limit from one beyond it.
    let most = u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1);
    reader
        .take(most)
        .read_to_end(&mut out)
        .map_err(|source| InflateError::Corrupt {
            encoding: name,
            source,
        })?;
    if out.len() > limit {
        return Err(InflateError::TooLarge {
            encoding: name,
            limit,
        });
    }
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).expect("in memory");
        e.finish().expect("in memory")
    }

    #[test]
    fn gzip_and_deflate_bodies_are_inflated_within_the_limit() {
        let body = br#"{"inputs": []}"#;
        assert_eq!(
            inflate(Some("gzip"), &gzip(body), 100).expect("valid"),
            Some(body.to_vec())
        );
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        z.write_all(body).expect("in memory");
        let z = z.finish().expect("in memory");
        assert_eq!(
            inflate(Some("deflate"), &z, 100).expect("valid"),
            Some(body.to_vec())
        );
        assert_eq!(inflate(None, body, 100).expect("plain"), None);
        assert_eq!(inflate(Some("identity"), body, 100).expect("plain"), None);
    }

    #[test]
    fn a_bomb_corrupt_data_and_unknown_encodings_are_refused() {
        // 10 MB of zeros compress to about 10 KB: inflated no further than the limit.
        let bomb = gzip(&vec![0; 10 << 20]);
        assert!(matches!(
            inflate(Some("gzip"), &bomb, 1 << 20),
            Err(InflateError::TooLarge { .. })
        ));
        assert!(matches!(
            inflate(Some("gzip"), b"not gzip", 100),
            Err(InflateError::Corrupt { .. })
        ));
        let whole = gzip(b"hello world");
        assert!(matches!(
            inflate(Some("gzip"), &whole[..whole.len() / 2], 100),
            Err(InflateError::Corrupt { .. })
        ));
        assert!(matches!(
            inflate(Some("br"), b"x", 100),
            Err(InflateError::Unknown(_))
        ));
    }
}
