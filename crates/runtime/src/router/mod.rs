//! Dynamic modality routing (S4): cheap information gates that skip a model branch whose
//! input carries little information, every skip counted and emitted as an event.
//!
//! - [`image`]: a blurred or dark camera frame skips vision inference (the frame takes the
//!   text-only path); the measures come from the image gate of the vision backend
//!   (mean luma and variance of the Laplacian), the thresholds from `Policy::routing()`.
//! - [`speech`]: voice activity gates speech recognition; per-packet speech probabilities
//!   (from the VAD backend) are turned into utterances, and packets outside any utterance
//!   never reach the recogniser.
//!
//! Both keep their policy thresholds replaceable at run time ([`image::ImageRouter::set_policy`],
//! [`speech::SpeechGate::set_policy`]) so a policy hot reload applies to the next input.

pub mod image;
pub mod speech;

use mmsched_core::time::Nanos;

/// Why a branch was skipped.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
#[serde(tag = "reason", rename_all = "kebab-case")]
pub enum SkipReason {
    /// The frame is too dark: mean luma below the policy's `dark_max_mean_luma`.
    Dark {
        /// Measured mean luma (0–255).
        mean_luma: f64,
    },
    /// The frame is blurred: variance of the Laplacian below `blur_min_laplacian_var`.
    Blurred {
        /// Measured variance of the Laplacian.
        laplacian_var: f64,
    },
    /// No speech: the audio lies outside every utterance.
    Silence {
        /// Speech probability of the packet.
        speech_prob: f64,
    },
}

/// One routing decision, for the trace.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct RouteEvent {
    /// The branch decided on: `vision` or `asr`.
    pub branch: &'static str,
    /// Device time of the input (its capture time on the device timeline).
    pub at_nanos: Nanos,
    /// `None`: the branch runs; otherwise why it was skipped.
    pub skipped: Option<SkipReason>,
    /// What the gate itself cost, in nanoseconds.
    pub gate_nanos: Nanos,
}

/// Counts of one branch's gate.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct GateCounts {
    /// Inputs seen.
    pub seen: u64,
    /// Inputs passed on to the model.
    pub passed: u64,
    /// Skipped as dark.
    pub skipped_dark: u64,
    /// Skipped as blurred.
    pub skipped_blurred: u64,
    /// Skipped as silence.
    pub skipped_silence: u64,
    /// Total time spent in the gate, in nanoseconds.
    pub gate_nanos: u64,
}

impl GateCounts {
    /// All skips.
    pub fn skipped(&self) -> u64 {
        self.skipped_dark + self.skipped_blurred + self.skipped_silence
    }

    fn count(&mut self, event: &RouteEvent) {
        self.seen += 1;
        self.gate_nanos += event.gate_nanos;
        match event.skipped {
            None => self.passed += 1,
            Some(SkipReason::Dark { .. }) => self.skipped_dark += 1,
            Some(SkipReason::Blurred { .. }) => self.skipped_blurred += 1,
            Some(SkipReason::Silence { .. }) => self.skipped_silence += 1,
        }
    }
}
