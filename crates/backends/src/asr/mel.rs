//! Whisper's log-mel spectrogram: the same framing, window, padding and normalisation as
//! candle's `whisper::audio::pcm_to_mel`, computed with a real FFT library, and without
//! transforming the silent padding.
//!
//! Why not candle's own: it transforms every 400-sample frame with a recursive FFT that
//! ends in 25-point DFTs evaluating a sine and a cosine per term, and it pads a 10 s clip to
//! 30 s of frames and transforms those zeros too. That made the log-mel about a tenth of a
//! whole recognition. A frame lying wholly in the zero padding has zero power, so its value
//! (`log10(1e-10)`, before normalisation) is known without transforming it.

use candle_transformers::models::whisper::{CHUNK_LENGTH, HOP_LENGTH, N_FFT};
use rustfft::FftPlanner;
use rustfft::num_complex::Complex;

/// Power floor before the logarithm, as in Whisper.
const POWER_FLOOR: f32 = 1e-10;

/// Frames the spectrogram of `n_samples` samples has: the audio is padded with zeros to a
/// whole number of half-windows (15 s), plus one more half-window, as candle does.
pub fn frame_count(n_samples: usize) -> usize {
    let half_window_frames = 100 * CHUNK_LENGTH / 2;
    (n_samples / HOP_LENGTH).div_ceil(half_window_frames) * half_window_frames + half_window_frames
}

/// Log-mel spectrogram of 16 kHz `samples`, row-major `n_mels × frame_count(len)`, with
/// Whisper's normalisation (floor at the maximum − 8, then `x / 4 + 1`). `filters` is the
/// `n_mels × (N_FFT / 2 + 1)` filterbank.
pub fn log_mel_spectrogram(samples: &[f32], filters: &[f32], n_mels: usize) -> Vec<f32> {
    let n_freq = N_FFT / 2 + 1;
    let n_len = frame_count(samples.len());
    let silent = POWER_FLOOR.log10();
    let mut mel = vec![silent; n_mels * n_len];
    let two_pi = std::f32::consts::PI + std::f32::consts::PI;
    let hann: Vec<f32> = (0..N_FFT)
        .map(|i| 0.5 * (1.0 - ((two_pi * i as f32) / N_FFT as f32).cos()))
        .collect();
    let fft = FftPlanner::<f32>::new().plan_fft_forward(N_FFT);
    let mut buf = vec![Complex::new(0.0f32, 0.0); N_FFT];
    let mut scratch = vec![Complex::new(0.0f32, 0.0); fft.get_inplace_scratch_len()];
    let mut power = vec![0f32; n_freq];
    // Each mel filter is a triangle over a few frequency bins: summing only the bins where
    // it is non-zero gives the same sums (the other terms add exactly 0) at a fraction of
    // the dense row's cost, which was most of the spectrogram's time.
    let bands: Vec<(usize, &[f32])> = filters
        .chunks_exact(n_freq)
        .take(n_mels)
        .map(|row| {
            let start = row.iter().position(|&f| f != 0.0).unwrap_or(0);
            let end = row.iter().rposition(|&f| f != 0.0).map_or(start, |e| e + 1);
            (start, &row[start..end])
        })
        .collect();
    // Frames starting at or after the last sample see only padding: they keep `silent`.
    let audible = n_len.min(samples.len().div_ceil(HOP_LENGTH));
    for i in 0..audible {
        let offset = i * HOP_LENGTH;
        for (j, b) in buf.iter_mut().enumerate() {
            let s = samples.get(offset + j).copied().unwrap_or(0.0);
            *b = Complex::new(hann[j] * s, 0.0);
        }
        fft.process_with_scratch(&mut buf, &mut scratch);
        // One-sided power: bins 1..N/2 also carry their mirror image, as in Whisper.
        for (k, p) in power.iter_mut().enumerate() {
            *p = buf[k].norm_sqr();
            if k > 0 && k < N_FFT / 2 {
                *p += buf[N_FFT - k].norm_sqr();
            }
        }
        for (m, (start, band)) in bands.iter().enumerate() {
            let sum: f32 = band.iter().zip(&power[*start..]).map(|(f, p)| f * p).sum();
            mel[m * n_len + i] = sum.max(POWER_FLOOR).log10();
        }
    }
    let floor = mel.iter().copied().fold(f32::NEG_INFINITY, f32::max) - 8.0;
    for m in &mut mel {
        *m = m.max(floor) / 4.0 + 1.0;
    }
    mel
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::asr::audio::{SAMPLE_RATE_HZ, mel_filterbank};
    use candle_transformers::models::whisper::audio::log_mel_spectrogram_;

    /// 7.3 s of a rising tone with harmonics and a little deterministic noise.
    fn signal() -> Vec<f32> {
        let n = 16_000 * 73 / 10;
        let mut seed = 0x2545_f491u32;
        (0..n)
            .map(|i| {
                let t = i as f32 / 16_000.0;
                let f = 200.0 + 300.0 * t;
                seed ^= seed << 13;
                seed ^= seed >> 17;
                seed ^= seed << 5;
                let noise = (seed as f32 / u32::MAX as f32 - 0.5) * 0.02;
                0.3 * (std::f32::consts::TAU * f * t).sin()
                    + 0.1 * (std::f32::consts::TAU * 3.0 * f * t).sin()
                    + noise
            })
            .collect()
    }

    #[test]
    fn matches_candles_log_mel() {
        let filters = mel_filterbank(SAMPLE_RATE_HZ, N_FFT, 80);
        let x = signal();
        let ours = log_mel_spectrogram(&x, &filters, 80);
        let theirs = log_mel_spectrogram_(&x, &filters, N_FFT, HOP_LENGTH, 80, false);
        assert_eq!(ours.len(), theirs.len());
        assert_eq!(ours.len(), 80 * frame_count(x.len()));
        let worst = ours
            .iter()
            .zip(&theirs)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max);
        // Values span about 2 units; the two FFTs round differently in float32 (candle's
        // evaluates a sine and cosine per DFT term): 2e-4 measured.
        assert!(worst < 1e-3, "largest difference {worst}");
    }

    #[test]
    fn frame_count_pads_like_candle() {
        assert_eq!(frame_count(0), 1500);
        assert_eq!(frame_count(160 * 1500), 3000);
        assert_eq!(frame_count(160 * 1000), 3000);
        assert_eq!(frame_count(160 * 1501), 4500);
    }
}
