//! Audio input: reading WAV files as 16 kHz mono `f32` samples in `[-1, 1]`.
//!
//! Other sample rates are converted by linear interpolation between neighbouring samples.
//! That is simple and deterministic; it lets through some aliasing above 8 kHz when
//! downsampling, which neither the VAD nor speech recognition at 16 kHz is sensitive to.
//! Several channels are averaged into one.

use std::path::Path;

use crate::backend::BackendError;

/// The sample rate every speech model here expects.
pub const SAMPLE_RATE_HZ: u32 = 16_000;

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

/// Reads a WAV file (PCM 8/16/24/32-bit or float), mixes it to mono and resamples it to
/// 16 kHz.
pub fn read_wav_16k(path: &Path) -> Result<Audio, BackendError> {
    let shown = path.display();
    let mut reader = hound::WavReader::open(path).map_err(|e| {
        BackendError::InvalidInput(format!("{shown} is not a readable WAV file: {e}"))
    })?;
    let spec = reader.spec();
    if spec.channels == 0 || spec.sample_rate == 0 {
        return Err(BackendError::InvalidInput(format!(
            "{shown}: WAV header declares {} channels at {} Hz",
            spec.channels, spec.sample_rate
        )));
    }
    let bad =
        |e: hound::Error| BackendError::InvalidInput(format!("{shown}: corrupt WAV data: {e}"));
    let interleaved: Vec<f32> = match spec.sample_format {
        hound::SampleFormat::Float => reader
            .samples::<f32>()
            .collect::<Result<_, _>>()
            .map_err(bad)?,
        hound::SampleFormat::Int => {
            let scale = 1.0 / (1u64 << (spec.bits_per_sample.clamp(1, 32) - 1)) as f32;
            reader
                .samples::<i32>()
                .map(|s| s.map(|v| v as f32 * scale))
                .collect::<Result<_, _>>()
                .map_err(bad)?
        }
    };
    let channels = usize::from(spec.channels);
    let mono: Vec<f32> = interleaved
        .chunks_exact(channels)
        .map(|frame| frame.iter().sum::<f32>() / channels as f32)
        .collect();
    Ok(Audio {
        samples: resample_linear(&mono, spec.sample_rate, SAMPLE_RATE_HZ),
        sample_rate_hz: SAMPLE_RATE_HZ,
        source_rate_hz: spec.sample_rate,
    })
}

/// Resamples `samples` from `from_hz` to `to_hz` by linear interpolation.
pub fn resample_linear(samples: &[f32], from_hz: u32, to_hz: u32) -> Vec<f32> {
    if from_hz == to_hz || samples.is_empty() {
        return samples.to_vec();
    }
    let out_len = (samples.len() as u64 * u64::from(to_hz) / u64::from(from_hz)) as usize;
    let step = f64::from(from_hz) / f64::from(to_hz);
    (0..out_len)
        .map(|i| {
            let pos = i as f64 * step;
            let i0 = pos.floor() as usize;
            let frac = (pos - i0 as f64) as f32;
            let a = samples[i0.min(samples.len() - 1)];
            let b = samples[(i0 + 1).min(samples.len() - 1)];
            a + (b - a) * frac
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resampling_keeps_duration_and_a_slow_ramp() {
        let ramp: Vec<f32> = (0..22_050).map(|i| i as f32 / 22_050.0).collect();
        let out = resample_linear(&ramp, 22_050, 16_000);
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

    #[test]
    fn not_a_wav_is_a_clear_error() {
        let path = std::env::temp_dir().join(format!("mmsched-notwav-{}.wav", std::process::id()));
        std::fs::write(&path, b"RIFF nonsense").expect("write");
        let err = read_wav_16k(&path).expect_err("must fail");
        assert!(err.to_string().contains("not a readable WAV"), "{err}");
        let _ = std::fs::remove_file(&path);
    }
}
