//! WAV files of silence for the HTTP tests.

/// A mono PCM WAV file of `frames` frames of silence at `rate` Hz and `bits` (8 or 16)
/// bits a sample.
pub fn silence(rate: u32, bits: u16, frames: u32) -> Vec<u8> {
    let block = u32::from(bits / 8);
    let data = frames * block;
    let mut out = b"RIFF".to_vec();
    out.extend_from_slice(&(36 + data).to_le_bytes());
    out.extend_from_slice(b"WAVEfmt ");
    out.extend_from_slice(&16u32.to_le_bytes());
    out.extend_from_slice(&1u16.to_le_bytes()); // PCM
    out.extend_from_slice(&1u16.to_le_bytes()); // mono
    out.extend_from_slice(&rate.to_le_bytes());
    out.extend_from_slice(&(rate * block).to_le_bytes()); // bytes per second
    out.extend_from_slice(&(block as u16).to_le_bytes()); // block align
    out.extend_from_slice(&bits.to_le_bytes());
    out.extend_from_slice(b"data");
    out.extend_from_slice(&data.to_le_bytes());
    // Unsigned 8-bit samples are silent at 128, signed 16-bit ones at 0.
    let zero = if bits == 8 { 128 } else { 0 };
    out.resize(out.len() + data as usize, zero);
    out
}
