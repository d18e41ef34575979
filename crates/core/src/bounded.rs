//! Reading a user's file with a size cap (`std` only). A path can name `/dev/zero`, a FIFO
//! or a multi-gigabyte file by mistake; reading it whole would take all memory. Every file
//! the project reads from a user goes through [`read_capped`], which stops one byte past the
//! cap and says which file, how large it may be, and how to raise the cap where one exists.

use std::io::Read;
use std::path::{Path, PathBuf};

/// Why a capped read failed.
#[derive(Debug, thiserror::Error)]
pub enum ReadCapError {
    /// The file could not be opened or read.
    #[error("cannot read {what} {}", path.display())]
    Io {
        /// What the file is (`policy file`, `scenario file`…).
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The file is larger than the cap.
    #[error(
        "{what} {} is larger than {} (the most a {what} may be): is it the right file?",
        path.display(),
        human_bytes(*cap)
    )]
    TooLarge {
        /// What the file is.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The cap in bytes.
        cap: u64,
    },
}

/// The whole of `path` if it has at most `cap` bytes. Reads at most `cap + 1` bytes, so
/// `/dev/zero` fails at once.
pub fn read_capped(path: &Path, cap: u64, what: &'static str) -> Result<Vec<u8>, ReadCapError> {
    let io = |source| ReadCapError::Io {
        what,
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::File::open(path).map_err(io)?;
    let mut bytes = Vec::new();
    file.take(cap.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > cap {
        return Err(ReadCapError::TooLarge {
            what,
            path: path.to_path_buf(),
            cap,
        });
    }
    Ok(bytes)
}

/// [`read_capped`] as UTF-8 text.
pub fn read_capped_text(path: &Path, cap: u64, what: &'static str) -> Result<String, ReadCapError> {
    let bytes = read_capped(path, cap, what)?;
    String::from_utf8(bytes).map_err(|_| ReadCapError::Io {
        what,
        path: path.to_path_buf(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidData, "it is not UTF-8 text"),
    })
}

/// `cap` as the largest whole unit: `64 KiB`, `16 MiB`, `100 bytes`.
pub fn human_bytes(cap: u64) -> String {
    const KIB: u64 = 1024;
    const MIB: u64 = 1024 * KIB;
    const GIB: u64 = 1024 * MIB;
    match cap {
        c if c >= GIB && c % GIB == 0 => format!("{} GiB", c / GIB),
        c if c >= MIB && c % MIB == 0 => format!("{} MiB", c / MIB),
        c if c >= KIB && c % KIB == 0 => format!("{} KiB", c / KIB),
        c => format!("{c} bytes"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_within_the_cap_is_read_whole() {
        let dir = std::env::temp_dir().join(format!("mmsched-bounded-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap_or_default();
        let f = dir.join("ok");
        std::fs::write(&f, b"12345").unwrap_or_default();
        assert_eq!(
            read_capped(&f, 5, "test file").ok(),
            Some(b"12345".to_vec())
        );
        let err = read_capped(&f, 4, "test file").err().map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some(
                format!(
                    "test file {} is larger than 4 bytes (the most a test file may be): is it the right file?",
                    f.display()
                )
                .as_str()
            )
        );
        std::fs::remove_dir_all(&dir).unwrap_or_default();
    }

    #[test]
    fn dev_zero_fails_at_once() {
        let e = read_capped(Path::new("/dev/zero"), 1024, "policy file");
        assert!(matches!(e, Err(ReadCapError::TooLarge { cap: 1024, .. })));
    }

    #[test]
    fn a_missing_file_names_the_file_once_and_chains_the_os_error() {
        let e = read_capped(Path::new("/nonexistent/x"), 10, "policy file")
            .err()
            .map(|e| (e.to_string(), std::error::Error::source(&e).is_some()));
        assert_eq!(
            e,
            Some(("cannot read policy file /nonexistent/x".to_string(), true))
        );
    }

    #[test]
    fn caps_print_in_whole_units() {
        assert_eq!(human_bytes(64 * 1024), "64 KiB");
        assert_eq!(human_bytes(16 << 20), "16 MiB");
        assert_eq!(human_bytes(1000), "1000 bytes");
    }
}
