//! Audio for speech recognition: the shared WAV reading and resampling (re-exported from
//! [`crate::audio`]) and the Slaney-style mel filterbank Whisper's log-mel spectrogram uses.

pub use crate::audio::{AudioClip, SAMPLE_RATE_HZ, read_wav, resample};

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
