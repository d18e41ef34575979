//! Modalities: recorded for arbitration and tracing, never branched on by timing logic.

use serde::{Deserialize, Serialize};

/// The kind of data a job or trace record carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum Modality {
    /// Camera frames and other images.
    Image,
    /// Microphone audio.
    Audio,
    /// Text: prompts and generated tokens.
    Text,
    /// Inertial measurement unit samples.
    Imu,
    /// Inference logs and other annotations.
    Log,
}

impl Modality {
    /// Every modality, in a fixed order (useful for per-modality tables).
    pub const ALL: [Modality; 5] = [
        Modality::Image,
        Modality::Audio,
        Modality::Text,
        Modality::Imu,
        Modality::Log,
    ];

    /// The lowercase name used in traces, policies and JSON output.
    pub fn as_str(self) -> &'static str {
        match self {
            Modality::Image => "image",
            Modality::Audio => "audio",
            Modality::Text => "text",
            Modality::Imu => "imu",
            Modality::Log => "log",
        }
    }
}

impl core::fmt::Display for Modality {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.as_str())
    }
}
