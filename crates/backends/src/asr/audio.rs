//! Audio input for speech recognition: WAV reading, resampling to 16 kHz, and the
//! Slaney-style mel filterbank Whisper's log-mel spectrogram uses.

use std::path::Path;

use crate::backend::BackendError;

/// Whisper's sample rate.
pub const SAMPLE_RATE_HZ: u32 = 16_000;

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
    let shown = path.display();
    let reader = hound::WavReader::open(path).map_err(|e| match e {
        hound::Error::IoError(io) => {
            BackendError::InvalidInput(format!("cannot read {shown}: {io}"))
        }
        other => BackendError::InvalidInput(format!(
            "{shown} is not a readable WAV file ({other}); convert it to 16 kHz mono PCM WAV, \
             e.g. `ffmpeg -i IN -ar 16000 -ac 1 out.wav`"
        )),
    })?;
    let spec = reader.spec();
    let channels = usize::from(spec.channels.max(1));
    let bad =
        |e: hound::Error| BackendError::InvalidInput(format!("{shown}: corrupt WAV data: {e}"));
    let interleaved: Vec<f32> = match spec.sample_format {
        hound::SampleFormat::Float => reader
            .into_samples::<f32>()
            .collect::<Result<_, _>>()
            .map_err(bad)?,
        hound::SampleFormat::Int => {
            let scale = 1.0 / (1u64 << (spec.bits_per_sample.clamp(1, 32) - 1)) as f32;
            reader
                .into_samples::<i32>()
                .map(|s| s.map(|v| v as f32 * scale))
                .collect::<Result<_, _>>()
                .map_err(bad)?
        }
    };
    let samples = interleaved
        .chunks(channels)
        .map(|frame| frame.iter().sum::<f32>() / frame.len() as f32)
        .collect();
    Ok(AudioClip {
        samples,
        sample_rate_hz: spec.sample_rate,
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

fn hz_to_mel_slaney(hz: f64) -> f64 {
    let f_sp = 200.0 / 3.0;
    let min_log_hz = 1000.0;
    let min_log_mel = min_log_hz / f_sp;
    let logstep = 6.4f64.ln() / 27.0;
    if hz >= min_log_hz {
        min_log_mel + (hz / min_log_hz).ln() / logstep
    } else {
        hz / f_sp
    }
}

fn mel_to_hz_slaney(mel: f64) -> f64 {
    let f_sp = 200.0 / 3.0;
    let min_log_hz = 1000.0;
    let min_log_mel = min_log_hz / f_sp;
    let logstep = 6.4f64.ln() / 27.0;
    if mel >= min_log_mel {
        min_log_hz * (logstep * (mel - min_log_mel)).exp()
    } else {
        mel * f_sp
    }
}

/// The mel filterbank Whisper uses (librosa's `filters.mel(sr, n_fft, n_mels)` with
/// Slaney's mel scale and Slaney area normalisation, 0 Hz to Nyquist), row-major
/// `n_mels × (n_fft / 2 + 1)`.
pub fn mel_filterbank(sample_rate_hz: u32, n_fft: usize, n_mels: usize) -> Vec<f32> {
    let n_freq = n_fft / 2 + 1;
    let sr = f64::from(sample_rate_hz);
    let fft_freqs: Vec<f64> = (0..n_freq).map(|i| i as f64 * sr / n_fft as f64).collect();
    let (mel_lo, mel_hi) = (hz_to_mel_slaney(0.0), hz_to_mel_slaney(sr / 2.0));
    let mel_points: Vec<f64> = (0..n_mels + 2)
        .map(|i| mel_to_hz_slaney(mel_lo + (mel_hi - mel_lo) * i as f64 / (n_mels + 1) as f64))
        .collect();
    let mut out = vec![0f32; n_mels * n_freq];
    for m in 0..n_mels {
        let (left, centre, right) = (mel_points[m], mel_points[m + 1], mel_points[m + 2]);
        let enorm = 2.0 / (right - left);
        for (k, &f) in fft_freqs.iter().enumerate() {
            let lower = (f - left) / (centre - left);
            let upper = (right - f) / (right - centre);
            let w = lower.min(upper).max(0.0);
            out[m * n_freq + k] = (w * enorm) as f32;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filterbank_matches_librosa_reference_values() {
        // librosa.filters.mel(sr=16000, n_fft=400, n_mels=80) (Whisper's mel_filters.npz):
        // filter 0 peaks at bin 1 with 0.024862 … ; filter 79 ends at bin 200.
        let fb = mel_filterbank(16_000, 400, 80);
        assert_eq!(fb.len(), 80 * 201);
        assert!((fb[1] - 0.024_862).abs() < 2e-5, "{}", fb[1]);
        assert_eq!(fb[0], 0.0);
        // Each filter is a triangle: non-zero on a contiguous run of bins.
        for m in 0..80 {
            let row = &fb[m * 201..(m + 1) * 201];
            let nz: Vec<usize> = (0..201).filter(|&k| row[k] > 0.0).collect();
            assert!(!nz.is_empty(), "filter {m} is empty");
            assert_eq!(
                nz.len(),
                nz[nz.len() - 1] - nz[0] + 1,
                "filter {m} has gaps"
            );
        }
    }

    #[test]
    fn slaney_scale_round_trips() {
        for hz in [0.0, 200.0, 999.0, 1000.0, 4000.0, 8000.0] {
            assert!((mel_to_hz_slaney(hz_to_mel_slaney(hz)) - hz).abs() < 1e-6);
        }
        assert!((hz_to_mel_slaney(1000.0) - 15.0).abs() < 1e-12);
    }

    #[test]
    fn resampling_keeps_a_low_tone_and_length() {
        let from = 22_050;
        let tone: Vec<f32> = (0..from)
            .map(|i| (2.0 * std::f32::consts::PI * 440.0 * i as f32 / from as f32).sin())
            .collect();
        let out = resample(&tone, from, 16_000);
        assert_eq!(out.len(), 16_000);
        let max_err = out
            .iter()
            .enumerate()
            .skip(100)
            .take(15_800)
            .map(|(i, &v)| {
                (v - (2.0 * std::f32::consts::PI * 440.0 * i as f32 / 16_000.0).sin()).abs()
            })
            .fold(0.0f32, f32::max);
        assert!(max_err < 0.01, "max error {max_err}");
    }

    #[test]
    fn resampling_removes_tones_above_the_new_nyquist() {
        let from = 22_050;
        let tone: Vec<f32> = (0..from)
            .map(|i| (2.0 * std::f32::consts::PI * 10_000.0 * i as f32 / from as f32).sin())
            .collect();
        let out = resample(&tone, from, 16_000);
        let rms = (out[200..15_800].iter().map(|v| v * v).sum::<f32>() / 15_600.0).sqrt();
        assert!(rms < 0.02, "rms {rms}");
    }

    #[test]
    fn not_a_wav_is_a_clear_error() {
        let dir = std::env::temp_dir().join(format!("mmsched-wav-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let p = dir.join("x.wav");
        std::fs::write(&p, b"this is text").expect("write");
        let err = read_wav(&p).expect_err("not a wav");
        assert!(err.to_string().contains("not a readable WAV"), "{err}");
        std::fs::remove_dir_all(&dir).ok();
    }
}
