//! What an upload decodes to, read from its header before anything is decoded: an image's
//! pixels (PNG or JPEG header) and an audio file's seconds (WAV header, at its declared
//! rate), each held to a cap, and the memory the decoding will take, held to a budget
//! shared by every upload being decoded. A 290 KB PNG can declare 10000×10000 pixels (300 MB
//! as RGB); a 1 KB WAV can declare 1 Hz (16 000 times its length once resampled): neither
//! is decoded.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::response::Response;
use image::ImageDecoder;
use mmsched_backends::audio::{MAX_RATE_HZ, MIN_RATE_HZ, SAMPLE_RATE_HZ};

use crate::answer::{too_large, unprocessable, unsupported_media};

/// Most pixels an uploaded image may have: 16 megapixels (4096×4096; a 4K frame is 8.3).
pub const MAX_IMAGE_PIXELS: u64 = 16 << 20;

/// Most seconds an uploaded recording may hold: ten minutes (twenty of Whisper's 30 s
/// windows).
pub const MAX_AUDIO_SECONDS: u64 = 600;

/// Memory all uploads being decoded at once may take, by default: 256 MiB.
pub const DECODE_BUDGET_BYTES: usize = 256 << 20;

/// An image's size from its header, and the memory decoding it takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImageSize {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Bytes decoding takes: the pixels as stored, then as RGB.
    pub decoded_bytes: u64,
}

/// The size `bytes` declare as a PNG or JPEG image, read from the header only: 415 if it
/// is no PNG or JPEG, 413 past [`MAX_IMAGE_PIXELS`], 422 for an empty image.
pub fn image_size(bytes: &[u8]) -> Result<ImageSize, Response> {
    let fix = "send a PNG or JPEG image as the body, e.g. curl --data-binary @sign.png";
    let reader = image::ImageReader::new(std::io::Cursor::new(bytes))
        .with_guessed_format()
        .map_err(|e| unsupported_media(format!("the body cannot be read: {e}; {fix}"), None))?;
    match reader.format() {
        Some(image::ImageFormat::Png | image::ImageFormat::Jpeg) => {}
        Some(other) => {
            return Err(unsupported_media(
                format!("the body is a {other:?} image, which is not read here; {fix}"),
                None,
            ));
        }
        None => {
            return Err(unsupported_media(
                format!("the body is not a PNG or JPEG image; {fix}"),
                None,
            ));
        }
    }
    let decoder = reader.into_decoder().map_err(|e| {
        unprocessable(
            format!("the image's header cannot be read ({e}); {fix}"),
            None,
        )
    })?;
    let (width, height) = decoder.dimensions();
    let pixels = u64::from(width) * u64::from(height);
    if pixels == 0 {
        return Err(unprocessable(
            format!("the image is {width}×{height} pixels: it has nothing to read"),
            None,
        ));
    }
    if pixels > MAX_IMAGE_PIXELS {
        return Err(too_large(
            format!(
                "the image declares {width}×{height} pixels ({:.1} megapixels); at most {} megapixels are read: scale it down, e.g. ffmpeg -i IN -vf scale=1920:-1 out.png",
                pixels as f64 / f64::from(1 << 20),
                MAX_IMAGE_PIXELS >> 20
            ),
            None,
        ));
    }
    let stored = u64::from(decoder.color_type().bytes_per_pixel());
    Ok(ImageSize {
        width,
        height,
        decoded_bytes: pixels * (stored + 3),
    })
}

/// A WAV recording's length from its header, and the memory decoding it takes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AudioLength {
    /// Seconds at the declared rate: the least of what the header declares and what the
    /// bytes present can hold.
    pub seconds: f64,
    /// Bytes decoding takes: the samples as floats, mixed to mono, resampled to 16 kHz.
    pub decoded_bytes: u64,
}

/// The length `bytes` hold as a WAV file, read from the header only: 415 if it is no WAV
/// file, 422 for a rate outside 8 to 192 kHz, 413 past [`MAX_AUDIO_SECONDS`].
pub fn wav_length(bytes: &[u8], shown: &str) -> Result<AudioLength, Response> {
    let reader = hound::WavReader::new(std::io::Cursor::new(bytes)).map_err(|e| {
        unsupported_media(
            format!(
                "{shown} is not a readable WAV file ({e}); send 16 kHz mono PCM WAV, e.g. ffmpeg -i IN -ar 16000 -ac 1 out.wav"
            ),
            Some("file"),
        )
    })?;
    let spec = reader.spec();
    if !(MIN_RATE_HZ..=MAX_RATE_HZ).contains(&spec.sample_rate) {
        return Err(unprocessable(
            format!(
                "{shown} declares a sample rate of {} Hz; mmsched reads {MIN_RATE_HZ} to {MAX_RATE_HZ} Hz: re-encode it, e.g. ffmpeg -i IN -ar 16000 -ac 1 out.wav",
                spec.sample_rate
            ),
            Some("file"),
        ));
    }
    let channels = u64::from(spec.channels.max(1));
    let width = u64::from(spec.bits_per_sample.div_ceil(8).max(1));
    // A streamed WAV declares 4 GiB: the bytes present bound it too.
    let present = bytes.len() as u64 / (channels * width);
    let frames = u64::from(reader.duration()).min(present);
    let rate = u64::from(spec.sample_rate);
    let seconds = frames as f64 / rate as f64;
    if frames > MAX_AUDIO_SECONDS * rate {
        return Err(too_large(
            format!(
                "{shown} holds {seconds:.0} s of audio at {rate} Hz; at most {MAX_AUDIO_SECONDS} s are transcribed at once: cut it, e.g. ffmpeg -i IN -f segment -segment_time {MAX_AUDIO_SECONDS} part%02d.wav"
            ),
            Some("file"),
        ));
    }
    let resampled = frames * u64::from(SAMPLE_RATE_HZ) / rate + 1;
    Ok(AudioLength {
        seconds,
        decoded_bytes: 4 * (frames * channels + frames + resampled),
    })
}

/// Memory for decoding uploads, shared by every request: each takes its share before it
/// decodes and gives it back when done.
#[derive(Debug)]
pub struct DecodeBudget {
    limit: usize,
    used: AtomicUsize,
}

/// A share of a [`DecodeBudget`], given back when dropped.
#[derive(Debug)]
pub struct Reserved {
    budget: Arc<DecodeBudget>,
    bytes: usize,
}

impl Drop for Reserved {
    fn drop(&mut self) {
        self.budget.used.fetch_sub(self.bytes, Ordering::SeqCst);
    }
}

/// Why a share was not given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// More than the whole budget: it can never be decoded here.
    Never,
    /// Not now: other uploads are being decoded.
    Busy,
}

impl DecodeBudget {
    /// A budget of `limit` bytes.
    pub fn new(limit: usize) -> Arc<Self> {
        Arc::new(Self {
            limit,
            used: AtomicUsize::new(0),
        })
    }

    /// The budget in bytes.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Takes `bytes` of the budget, or says why not.
    pub fn reserve(self: &Arc<Self>, bytes: u64) -> Result<Reserved, Refused> {
        let bytes = usize::try_from(bytes).unwrap_or(usize::MAX);
        if bytes > self.limit {
            return Err(Refused::Never);
        }
        self.used
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |used| {
                used.checked_add(bytes).filter(|&n| n <= self.limit)
            })
            .map_err(|_| Refused::Busy)?;
        Ok(Reserved {
            budget: Arc::clone(self),
            bytes,
        })
    }
}

#[cfg(test)]
#[path = "../tests/support/png.rs"]
mod test_png;

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::StatusCode;

    use super::test_png::png_header;

    /// A WAV header declaring `rate` Hz mono 16-bit and `frames` frames, with `present`
    /// frames of silence after it.
    fn wav(rate: u32, frames: u32, present: usize) -> Vec<u8> {
        let data = frames * 2;
        let mut out = b"RIFF".to_vec();
        out.extend_from_slice(&(36 + data).to_le_bytes());
        out.extend_from_slice(b"WAVEfmt ");
        out.extend_from_slice(&16u32.to_le_bytes());
        out.extend_from_slice(&1u16.to_le_bytes());
        out.extend_from_slice(&1u16.to_le_bytes());
        out.extend_from_slice(&rate.to_le_bytes());
        out.extend_from_slice(&(rate * 2).to_le_bytes());
        out.extend_from_slice(&2u16.to_le_bytes());
        out.extend_from_slice(&16u16.to_le_bytes());
        out.extend_from_slice(b"data");
        out.extend_from_slice(&data.to_le_bytes());
        out.resize(out.len() + present * 2, 0);
        out
    }

    #[test]
    fn an_image_is_sized_from_its_header_and_held_to_the_pixel_cap() {
        let ok = image_size(&png_header(640, 360)).expect("a small image");
        assert_eq!((ok.width, ok.height), (640, 360));
        assert_eq!(ok.decoded_bytes, 640 * 360 * 6, "RGB as stored, then RGB");
        let big = image_size(&png_header(10_000, 10_000)).expect_err("100 megapixels");
        assert_eq!(big.status(), StatusCode::PAYLOAD_TOO_LARGE);
        assert_eq!(
            image_size(&png_header(0, 5)).expect_err("empty").status(),
            StatusCode::UNPROCESSABLE_ENTITY
        );
        for junk in [&b"GIF89a......"[..], b"hello", b""] {
            assert_eq!(
                image_size(junk).expect_err("no PNG or JPEG").status(),
                StatusCode::UNSUPPORTED_MEDIA_TYPE
            );
        }
    }

    #[test]
    fn a_wav_is_timed_from_its_header_at_its_declared_rate() {
        let ok = wav_length(&wav(16_000, 32_000, 32_000), "a.wav").expect("2 s");
        assert!((ok.seconds - 2.0).abs() < 1e-9, "{ok:?}");
        // A streamed header declaring far more than is present: the bytes bound it.
        let streamed = wav_length(&wav(16_000, u32::MAX / 4, 16_000), "s.wav").expect("1 s");
        assert!((streamed.seconds - 1.0).abs() < 0.01, "{streamed:?}");
        let one_hz = wav_length(&wav(1, 500, 500), "one.wav").expect_err("1 Hz");
        assert_eq!(one_hz.status(), StatusCode::UNPROCESSABLE_ENTITY);
        // 786 s at 8 kHz: refused before a sample is decoded.
        let long = wav_length(&wav(8_000, 786 * 8_000, 786 * 8_000), "l.wav").expect_err("786 s");
        assert_eq!(long.status(), StatusCode::PAYLOAD_TOO_LARGE);
        assert_eq!(
            wav_length(b"not a wav", "x").expect_err("junk").status(),
            StatusCode::UNSUPPORTED_MEDIA_TYPE
        );
    }

    #[test]
    fn the_budget_gives_shares_until_full_and_takes_them_back() {
        let b = DecodeBudget::new(100);
        let first = b.reserve(60).expect("room");
        assert_eq!(b.reserve(50).expect_err("full"), Refused::Busy);
        assert_eq!(b.reserve(101).expect_err("too big"), Refused::Never);
        let second = b.reserve(40).expect("exactly the rest");
        drop(first);
        let third = b.reserve(50).expect("room again");
        drop((second, third));
        assert_eq!(b.used.load(Ordering::SeqCst), 0);
    }
}
