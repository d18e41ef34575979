//! The `window` of `summary.json`: what a long-running process did over its last minutes,
//! beside the since-start figures of the rest of the summary (whose keys keep their
//! meaning). A service that has run for weeks answers "how is it doing now" from here.

use serde::{Deserialize, Serialize};

use crate::num::de_f64;

/// The outcomes of the last minutes, per modality.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct WindowSummary {
    /// The window asked for, in minutes (`--summary-window-min`, 10 by default).
    #[serde(deserialize_with = "de_f64")]
    pub minutes: f64,
    /// Seconds the window covers: the run so far while it is shorter than the window;
    /// after that between `minutes` and `minutes` plus one step (the window moves in
    /// steps of a tenth of it, at most a minute).
    #[serde(deserialize_with = "de_f64")]
    pub seconds: f64,
    /// Vision (OCR) inputs.
    pub vision: WindowModality,
    /// Voice-activity chunks.
    pub vad: WindowModality,
    /// Speech-recognition utterances.
    pub asr: WindowModality,
    /// Text requests.
    pub llm: WindowModality,
}

impl WindowSummary {
    /// The four modalities in report order, with their key names.
    pub fn modalities(&self) -> [(&'static str, &WindowModality); 4] {
        [
            ("vision", &self.vision),
            ("vad", &self.vad),
            ("asr", &self.asr),
            ("llm", &self.llm),
        ]
    }
}

/// One modality's outcomes in the window, with the meaning of the since-start keys of the
/// same names (an input counts in the window its outcome fell in).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct WindowModality {
    /// Inputs that arrived.
    pub offered: u64,
    /// Results within their deadline.
    pub on_time: u64,
    /// Results after their deadline.
    pub late: u64,
    /// Shed by admission.
    pub shed: u64,
    /// Kept from the model by the router.
    pub skipped: u64,
    /// Dropped by a health action.
    pub dropped: u64,
    /// Failed in the model, or could not be decoded.
    pub failed: u64,
    /// Abandoned by their client (or still open when the process stopped).
    pub unfinished: u64,
    /// `on_time / offered`; `null` when nothing was offered.
    #[serde(deserialize_with = "de_f64")]
    pub on_time_share: f64,
    /// Median latency of the results (ms, within 5 %); `null` without results.
    #[serde(deserialize_with = "de_f64")]
    pub p50_ms: f64,
    /// 99th percentile latency (ms, within 5 %); `null` without results.
    #[serde(deserialize_with = "de_f64")]
    pub p99_ms: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_window_reads_back_with_nulls() {
        let w = WindowSummary {
            minutes: 10.0,
            seconds: 42.0,
            vision: WindowModality {
                offered: 3,
                on_time: 2,
                on_time_share: 2.0 / 3.0,
                p50_ms: f64::NAN,
                p99_ms: f64::NAN,
                ..WindowModality::default()
            },
            ..WindowSummary::default()
        };
        let text = serde_json::to_string(&w).expect("serialises");
        assert!(text.contains("\"p50_ms\":null"), "{text}");
        let back: WindowSummary = serde_json::from_str(&text).expect("parses");
        assert_eq!(back.vision.offered, 3);
        assert!(back.vision.p99_ms.is_nan());
        assert_eq!(back.modalities()[0].0, "vision");
    }
}
