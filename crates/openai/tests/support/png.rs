//! PNG bytes for the upload-bound tests, shared by the crate's unit tests (`bounds.rs`)
//! and its HTTP tests.

/// A PNG signature, an IHDR chunk declaring `w`×`h` pixels of 8-bit RGB and a first
/// IDAT chunk of junk: how a PNG that decodes to `w`×`h` starts, without its pixels.
pub fn png_header(w: u32, h: u32) -> Vec<u8> {
    let mut ihdr = w.to_be_bytes().to_vec();
    ihdr.extend_from_slice(&h.to_be_bytes());
    ihdr.extend_from_slice(&[8, 2, 0, 0, 0]);
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    for (name, data) in [(&b"IHDR"[..], ihdr), (b"IDAT", vec![0x78, 0x9c, 1, 2, 3])] {
        out.extend_from_slice(&(data.len() as u32).to_be_bytes());
        let start = out.len();
        out.extend_from_slice(name);
        out.extend_from_slice(&data);
        let crc = crc32(&out[start..]);
        out.extend_from_slice(&crc.to_be_bytes());
    }
    out
}

/// CRC-32 (IEEE), as PNG chunks carry it.
fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}
