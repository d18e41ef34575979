//! The S5 clock-drift model of one stream.
//!
//! Every stream `j` samples events at true device times `t` (its period). Its own clock
//! stamps them `s_j(t) = offset_j + t + ∫₀ᵗ α_j(u) du`: a constant offset plus the crystal
//! drift α_j (1.2 ppm = 1.2e-6 s/s is the S5 reference), which temperature episodes change
//! while they last. The event reaches the device after a fixed pipeline latency `d_j` plus a
//! one-sided random transport delay `J_j ~ Gamma(k, θ_j)` (S5's `β·w(t)` term; θ = 8 ms for a
//! network audio path is the S6 reference).
//!
//! Each source stamps with noise: the stamp is taken a little before or after the event
//! (exposure mid-point, interrupt latency, buffer granularity), Gaussian with the stream's
//! `stamp_noise_ms` (a scenario setting; by default camera 2 ms, audio 1 ms, IMU 0.2 ms).
//!
//! The simulator's alignment experiment (`mmsched_sim::drift`) places events from these
//! streams three ways and compares them.

use crate::jitter::GammaJitter;

/// One stream of the drift model.
#[derive(Debug, Clone)]
pub struct StreamModel {
    /// Name (`vision`, `audio`, `imu`).
    pub name: String,
    /// Event period, in nanoseconds.
    pub period_nanos: u64,
    /// Constant clock offset of the stream against the device, in ms.
    pub offset_ms: f64,
    /// Crystal drift α, in ppm (1 ppm = 1e-6 s/s).
    pub drift_ppm: f64,
    /// Fixed pipeline latency d_j, in ms (known calibration).
    pub latency_ms: f64,
    /// One-sided random transport delay J_j (`None`: none).
    pub jitter: Option<GammaJitter>,
    /// Standard deviation of the source's stamping error, ms.
    pub stamp_noise_ms: f64,
}

/// A temperature episode: the stream's drift moves by `drift_ppm_delta`, ramping linearly
/// over `ramp_s` seconds at both ends.
#[derive(Debug, Clone)]
pub struct TemperatureEpisode {
    /// The stream affected.
    pub stream: String,
    /// Start, in seconds of simulated time.
    pub start_s: f64,
    /// End, in seconds of simulated time.
    pub end_s: f64,
    /// Drift change at full strength, in ppm.
    pub drift_ppm_delta: f64,
    /// Ramp length, in seconds.
    pub ramp_s: f64,
}

impl TemperatureEpisode {
    /// The drift change at time `t_s`, in ppm.
    pub fn delta_at(&self, t_s: f64) -> f64 {
        if t_s <= self.start_s || t_s >= self.end_s {
            return 0.0;
        }
        let ramp = self.ramp_s.max(1e-9);
        let up = ((t_s - self.start_s) / ramp).min(1.0);
        let down = ((self.end_s - t_s) / ramp).min(1.0);
        self.drift_ppm_delta * up.min(down)
    }
}
