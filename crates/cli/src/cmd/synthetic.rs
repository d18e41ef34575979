//! Deterministic synthetic inputs for profiling and benchmarks: frames with dark text-like
//! strokes on a light background, and a noise-plus-tone audio chunk. Real inference runs on
//! them; only the input is synthetic, so that `profile` and `bench` need no data files.

use mmsched_backends::RgbFrame;

/// A `width × height` light frame with rows of dark glyph-like blocks (one "text line" per
/// 48 pixels).
pub fn text_like_frame(width: u32, height: u32) -> anyhow::Result<RgbFrame> {
    let mut data = vec![235u8; width as usize * height as usize * 3];
    let line_h = 48u32.min(height);
    for y in 0..height {
        let in_line = y % line_h;
        if !(12..36).contains(&in_line) {
            continue;
        }
        for x in 16..width.saturating_sub(16) {
            // Glyphs 10 px wide with 4 px gaps, words of 5 glyphs, 3 strokes per glyph.
            let gx = x % 70;
            let glyph = gx % 14;
            let stroke = glyph < 10 && (glyph % 4 < 2 || in_line % 11 < 2) && gx < 68;
            if stroke {
                let i = (y as usize * width as usize + x as usize) * 3;
                data[i..i + 3].copy_from_slice(&[25, 25, 30]);
            }
        }
    }
    Ok(RgbFrame::new(width, height, data)?)
}

/// 512 samples of a quiet 220 Hz tone plus deterministic noise, 16 kHz.
pub fn audio_chunk() -> Vec<f32> {
    let mut state = 0x2545_f491_u32;
    (0..512)
        .map(|i| {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            let noise = (state as f32 / u32::MAX as f32 - 0.5) * 0.02;
            0.1 * (i as f32 * 2.0 * std::f32::consts::PI * 220.0 / 16_000.0).sin() + noise
        })
        .collect()
}
