//! Audio input: reading WAV files as 16 kHz mono `f32` samples in `[-1, 1]`.
//!
//! Other sample rates are converted with a windowed-sinc low-pass interpolator (no
//! aliasing when downsampling, e.g. espeak-ng's 22.05 kHz output). Several channels are
//! averaged into one. Every speech model (VAD, Whisper) reads its audio through here.
//!
//! The header is checked before any sample is decoded: a rate outside
//! [`MIN_RATE_HZ`]..=[`MAX_RATE_HZ`] is refused (a 1 Hz file would be resampled into
//! 16 000 times its length), and no more than [`MAX_SECONDS`] of audio is decoded.

use std::path::Path;

use crate::backend::BackendError;

/// The largest WAV file read.
pub const WAV_FILE_CAP: u64 = 256 << 20;

/// The sample rate every speech model here expects.
pub const SAMPLE_RATE_HZ: u32 = 16_000;

/// The lowest sample rate read: telephone audio. Below it speech is not intelligible, and
/// resampling to 16 kHz would multiply the samples without adding anything.
pub const MIN_RATE_HZ: u32 = 8_000;

/// The highest sample rate read: studio audio.
pub const MAX_RATE_HZ: u32 = 192_000;

/// The longest audio decoded from one file or upload, seconds (two hours: what
/// [`WAV_FILE_CAP`] holds at 16 kHz, 16-bit).
pub const MAX_SECONDS: u64 = 2 * 3_600;

/// Refuses a sample rate no speech model here can use, naming the fix.
pub fn check_rate(rate_hz: u32, shown: &str) -> Result<(), BackendError> {
    if (MIN_RATE_HZ..=MAX_RATE_HZ).contains(&rate_hz) {
        return Ok(());
    }
    Err(BackendError::InvalidInput(format!(
        "{shown} declares a sample rate of {rate_hz} Hz; mmsched reads {MIN_RATE_HZ} to \
         {MAX_RATE_HZ} Hz: re-encode it, e.g. `ffmpeg -i IN -ar 16000 -ac 1 out.wav`"
    )))
}

/// Decoded audio with the rate it was recorded at.
#[derive(Debug, Clone, PartialEq)]
pub struct Audio {
    /// Mono samples in `[-1, 1]`.
    pub samples: Vec<f32>,
    /// Sample rate of `samples`, Hz.
    pub sample_rate_hz: u32,
    /// Sample rate of the file before any conversion, Hz.
    pub source_rate_hz: u32,
}

impl Audio {
    /// Duration in milliseconds.
    pub fn duration_ms(&self) -> u64 {
        self.samples.len() as u64 * 1000 / u64::from(self.sample_rate_hz.max(1))
    }
}

/// Mono audio samples in [-1, 1] at a known rate.
#[derive(Debug, Clone, PartialEq)]
pub struct AudioClip {
    /// Samples, mono.
    pub samples: Vec<f32>,
    /// Sample rate in hertz.
    pub sample_rate_hz: u32,
}

impl AudioClip {
    /// Duration in milliseconds.
    pub fn duration_ms(&self) -> u64 {
        if self.sample_rate_hz == 0 {
            return 0;
        }
        self.samples.len() as u64 * 1000 / u64::from(self.sample_rate_hz)
    }
}

/// Reads a PCM (8/16/24/32-bit integer) or 32-bit float WAV file; several channels are
/// averaged to mono.
pub fn read_wav(path: &Path) -> Result<AudioClip, BackendError> {
    let shown = path.display().to_string();
    let file = std::fs::File::open(path)
        .map_err(|e| BackendError::InvalidInput(format!("cannot read {shown}: {e}")))?;
    if file
        .metadata()
        .is_ok_and(|m| m.is_file() && m.len() > WAV_FILE_CAP)
    {
        return Err(BackendError::InvalidInput(format!(
            "{shown} is larger than {} MiB (about two hours of 16 kHz audio): cut it into shorter files",
            WAV_FILE_CAP >> 20
        )));
    }
    // Not a regular file (a pipe, a device): read no more than the cap.
    decode_wav(
        std::io::BufReader::new(std::io::Read::take(file, WAV_FILE_CAP)),
        &shown,
    )
}

/// Decodes WAV bytes from `input` (`shown` names it in errors); several channels are
/// averaged to mono.
pub fn decode_wav(input: impl std::io::Read, shown: &str) -> Result<AudioClip, BackendError> {
    decode_wav_within(input, shown, MAX_SECONDS)
}

/// [`decode_wav`] with at most `max_seconds` of audio.
fn decode_wav_within(
    input: impl std::io::Read,
    shown: &str,
    max_seconds: u64,
) -> Result<AudioClip, BackendError> {
    let reader = hound::WavReader::new(input).map_err(|e| match e {
        hound::Error::IoError(io) => {
            BackendError::InvalidInput(format!("cannot read {shown}: {io}"))
        }
        other => BackendError::InvalidInput(format!(
            "{shown} is not a readable WAV file ({other}); convert it to 16 kHz mono PCM WAV, \
             e.g. `ffmpeg -i IN -ar 16000 -ac 1 out.wav`"
        )),
    })?;
    let spec = reader.spec();
    check_rate(spec.sample_rate, shown)?;
    let channels = usize::from(spec.channels.max(1));
    // One sample past the cap tells a file that is too long from one exactly at it (a
    // header's declared length cannot be trusted: a stream's says 4 GiB).
    let cap = usize::try_from(max_seconds * u64::from(spec.sample_rate) * channels as u64)
        .unwrap_or(usize::MAX);
    let bad =
        |e: hound::Error| BackendError::InvalidInput(format!("{shown}: corrupt WAV data: {e}"));
    let interleaved: Vec<f32> = match spec.sample_format {
        hound::SampleFormat::Float => reader
            .into_samples::<f32>()
            .take(cap.saturating_add(1))
            .collect::<Result<_, _>>()
            .map_err(bad)?,
        hound::SampleFormat::Int => {
            let scale = 1.0 / (1u64 << (spec.bits_per_sample.clamp(1, 32) - 1)) as f32;
            reader
                .into_samples::<i32>()
                .take(cap.saturating_add(1))
                .map(|s| s.map(|v| v as f32 * scale))
                .collect::<Result<_, _>>()
                .map_err(bad)?
        }
    };
    if interleaved.len() > cap {
        return Err(BackendError::InvalidInput(format!(
            "{shown} holds more than {} of audio: cut it into shorter files",
            spoken_length(max_seconds)
        )));
    }
    let samples = interleaved
        .chunks(channels)
        .map(|frame| frame.iter().sum::<f32>() / frame.len() as f32)
        .collect();
    Ok(AudioClip {
        samples,
        sample_rate_hz: spec.sample_rate,
    })
}

/// `seconds` as a person says it: `2 hours`, `90 seconds`.
fn spoken_length(seconds: u64) -> String {
    match seconds {
        s if s % 3_600 == 0 => format!("{} hours", s / 3_600),
        s if s % 60 == 0 => format!("{} minutes", s / 60),
        s => format!("{s} seconds"),
    }
}

/// Reads a WAV file (PCM 8/16/24/32-bit or float), mixes it to mono and resamples it to
/// 16 kHz.
pub fn read_wav_16k(path: &Path) -> Result<Audio, BackendError> {
    let clip = read_wav(path)?;
    Ok(Audio {
        samples: resample(&clip.samples, clip.sample_rate_hz, SAMPLE_RATE_HZ),
        sample_rate_hz: SAMPLE_RATE_HZ,
        source_rate_hz: clip.sample_rate_hz,
    })
}

/// Resamples `input` from `from_hz` to `to_hz` with a windowed-sinc (Blackman) low-pass
/// interpolator, 32 taps per side; the cut-off follows the lower of the two Nyquist
/// frequencies, so downsampling does not alias.
pub fn resample(input: &[f32], from_hz: u32, to_hz: u32) -> Vec<f32> {
    if from_hz == to_hz || input.is_empty() || from_hz == 0 || to_hz == 0 {
        return input.to_vec();
    }
    const HALF_TAPS: i64 = 32;
    let ratio = f64::from(from_hz) / f64::from(to_hz);
    let cutoff = (1.0 / ratio).min(1.0) * 0.97;
    let out_len = (input.len() as u64 * u64::from(to_hz) / u64::from(from_hz)) as usize;
    let support = HALF_TAPS as f64 / cutoff;
    let mut out = Vec::with_capacity(out_len);
    for n in 0..out_len {
        let t = n as f64 * ratio;
        let centre = t.floor() as i64;
        let lo = (centre - support.ceil() as i64).max(0);
        let hi = (centre + support.ceil() as i64 + 1).min(input.len() as i64 - 1);
        let mut acc = 0.0f64;
        let mut norm = 0.0f64;
        for k in lo..=hi {
            let x = t - k as f64;
            if x.abs() > support {
                continue;
            }
            let arg = x * cutoff;
            let sinc = if arg.abs() < 1e-9 {
                1.0
            } else {
                (std::f64::consts::PI * arg).sin() / (std::f64::consts::PI * arg)
            };
            let w = 0.42
                + 0.5 * (std::f64::consts::PI * x / support).cos()
                + 0.08 * (2.0 * std::f64::consts::PI * x / support).cos();
            let h = sinc * w;
            acc += h * f64::from(input[k as usize]);
            norm += h;
        }
        out.push(if norm.abs() > 1e-12 {
            (acc / norm) as f32
        } else {
            0.0
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resampling_keeps_duration_and_a_slow_ramp() {
        let ramp: Vec<f32> = (0..22_050).map(|i| i as f32 / 22_050.0).collect();
        let out = resample(&ramp, 22_050, 16_000);
        assert_eq!(out.len(), 16_000);
        for (i, v) in out.iter().enumerate().step_by(997) {
            assert!((v - i as f32 / 16_000.0).abs() < 1e-3, "{i}: {v}");
        }
    }

    #[test]
    fn reads_stereo_8k_and_converts() {
        let path = std::env::temp_dir().join(format!("mmsched-audio-{}.wav", std::process::id()));
        let spec = hound::WavSpec {
            channels: 2,
            sample_rate: 8_000,
            bits_per_sample: 16,
            sample_format: hound::SampleFormat::Int,
        };
        let mut w = hound::WavWriter::create(&path, spec).expect("create wav");
        for _ in 0..8_000 {
            w.write_sample(16_384i16).expect("write");
            w.write_sample(0i16).expect("write");
        }
        w.finalize().expect("finalize");
        let audio = read_wav_16k(&path).expect("read");
        assert_eq!(audio.source_rate_hz, 8_000);
        assert_eq!(audio.samples.len(), 16_000);
        assert!((audio.samples[100] - 0.25).abs() < 1e-4);
        let _ = std::fs::remove_file(&path);
    }

    /// `samples` of 16-bit silence at `rate_hz` as WAV bytes.
    fn wav_bytes(rate_hz: u32, samples: usize) -> Vec<u8> {
        let spec = hound::WavSpec {
            channels: 1,
            sample_rate: rate_hz,
            bits_per_sample: 16,
            sample_format: hound::SampleFormat::Int,
        };
        let mut out = std::io::Cursor::new(Vec::new());
        let mut w = hound::WavWriter::new(&mut out, spec).expect("writer");
        for _ in 0..samples {
            w.write_sample(0i16).expect("write");
        }
        w.finalize().expect("finalize");
        out.into_inner()
    }

    #[test]
    fn rates_outside_8_to_192_khz_are_refused_before_decoding() {
        for rate in [1, 7_999, 192_001, 1_000_000] {
            let e = decode_wav(wav_bytes(rate, 500).as_slice(), "x.wav").expect_err("refused");
            let msg = e.to_string();
            assert!(msg.contains(&format!("{rate} Hz")), "{msg}");
            assert!(msg.contains("8000 to 192000 Hz"), "{msg}");
            assert!(msg.contains("ffmpeg -i IN -ar 16000"), "{msg}");
        }
        for rate in [MIN_RATE_HZ, MAX_RATE_HZ] {
            let clip = decode_wav(wav_bytes(rate, 500).as_slice(), "x.wav").expect("read");
            assert_eq!((clip.sample_rate_hz, clip.samples.len()), (rate, 500));
        }
    }

    #[test]
    fn audio_longer_than_the_cap_is_refused() {
        let e = decode_wav_within(wav_bytes(8_000, 16_001).as_slice(), "long.wav", 2)
            .expect_err("one sample too long");
        assert!(
            e.to_string().contains("more than 2 seconds of audio"),
            "{e}"
        );
        let clip = decode_wav_within(wav_bytes(8_000, 16_000).as_slice(), "long.wav", 2)
            .expect("at the cap");
        assert_eq!(clip.samples.len(), 16_000);
        assert_eq!(spoken_length(MAX_SECONDS), "2 hours");
    }

    #[test]
    fn not_a_wav_is_a_clear_error() {
        let path = std::env::temp_dir().join(format!("mmsched-notwav-{}.wav", std::process::id()));
        std::fs::write(&path, b"RIFF nonsense").expect("write");
        let err = read_wav_16k(&path).expect_err("must fail");
        assert!(err.to_string().contains("not a readable WAV"), "{err}");
        let _ = std::fs::remove_file(&path);
    }
}
