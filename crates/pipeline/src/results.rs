//! What a run produces, one record per result, while it runs: a frame's OCR lines, a
//! speech segment the voice-activity gate closed, an utterance's transcript, a text
//! request's answer. The run hands each to its observer ([`crate::run::Observer::result`]);
//! `mmsched run --results FILE|-` writes them as NDJSON, one line each.
//!
//! Times are milliseconds on the device timeline since the run's sensors started, so
//! records of one run compare directly; `latency_ms` is `done_ms − release_ms`, the same
//! latency the summary's percentiles and the deadline are measured on.

use serde::Serialize;

use crate::stats::Kind;

/// One result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResultRecord {
    /// The trace id of the job that produced it (its spans in the run's trace file), as 32
    /// hex digits.
    pub trace_id: String,
    /// The stream the input came from (a client's label, e.g. `http`, for an outside
    /// request).
    pub stream: String,
    /// `streams` (the scenario's sensors) or `api` (an HTTP or library client).
    pub origin: &'static str,
    /// `vision`, `vad`, `asr` or `llm`.
    pub kind: &'static str,
    /// When the input was captured (for a text request: when it arrived), ms.
    pub capture_ms: f64,
    /// When the job was released to the scheduler (the start of its deadline), ms.
    pub release_ms: f64,
    /// When the result was ready, ms.
    pub done_ms: f64,
    /// `done_ms − release_ms`.
    pub latency_ms: f64,
    /// The job's deadline, ms.
    pub deadline_ms: f64,
    /// Ready by its deadline.
    pub on_time: bool,
    /// Answered from the result cache while the circuit breaker was open: an earlier
    /// input's result, not this input's.
    pub stale: bool,
    /// The text: OCR lines joined by ` | `, the transcript, the generated answer; for a
    /// speech segment, empty.
    pub text: String,
    /// Vision: the OCR lines, top to bottom.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lines: Option<Vec<String>>,
    /// VAD: the speech segment, start and end, ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub segment_ms: Option<[f64; 2]>,
    /// LLM: tokens generated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u32>,
    /// The quality rung the job ran at (OCR, speech recognition).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rung: Option<String>,
    /// Whether the result is right, where its truth is known (see `mmsched_pipeline::truth`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub correct: Option<bool>,
    /// How much of it is right, 0..=1 (share of true lines read, or 1 − WER), where its
    /// truth is known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accuracy: Option<f64>,
    /// Why there is no result: the input could not be read (a frame file gone, truncated
    /// or stuck) or its model failed. The input counts as `failed` in the summary, under
    /// this reason; `on_time` is false and `text` empty.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The times of a result on the device timeline, in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Times {
    /// Start of the run's sensors.
    pub start: u64,
    /// Capture of the input.
    pub capture: u64,
    /// Release of the job.
    pub release: u64,
    /// Result ready.
    pub done: u64,
    /// Deadline.
    pub deadline: u64,
}

impl ResultRecord {
    /// A record of `kind` from `stream` with `text`; the kind-specific fields start empty.
    pub fn new(trace_id: String, stream: &str, kind: Kind, t: Times, text: String) -> Self {
        let ms = |at: u64| (at as f64 - t.start as f64) / 1e6;
        Self {
            trace_id,
            stream: stream.to_string(),
            origin: "streams",
            kind: kind.as_str(),
            capture_ms: ms(t.capture),
            release_ms: ms(t.release),
            done_ms: ms(t.done),
            latency_ms: t.done.saturating_sub(t.release) as f64 / 1e6,
            deadline_ms: ms(t.deadline),
            on_time: t.done <= t.deadline,
            stale: false,
            text,
            lines: None,
            segment_ms: None,
            tokens: None,
            rung: None,
            correct: None,
            accuracy: None,
            error: None,
        }
    }

    /// A record saying an input of `kind` got no result, and why.
    pub fn failed(trace_id: String, stream: &str, kind: Kind, t: Times, error: String) -> Self {
        let mut r = Self::new(trace_id, stream, kind, t, String::new());
        r.on_time = false;
        r.error = Some(error);
        r
    }

    /// The record as one NDJSON line (no trailing newline).
    pub fn to_json_line(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_is_one_json_line_with_times_since_the_start() {
        let t = Times {
            start: 60_000_000_000,
            capture: 60_100_000_000,
            release: 60_150_000_000,
            done: 60_450_500_000,
            deadline: 60_350_000_000,
        };
        let mut r = ResultRecord::new(
            "0af7651916cd43dd8448eb211c80319c".into(),
            "camera",
            Kind::Vision,
            t,
            "EXIT 12 | North Station".into(),
        );
        r.lines = Some(vec!["EXIT 12".into(), "North Station".into()]);
        let line = r.to_json_line();
        assert!(!line.contains('\n'));
        let v: serde_json::Value = serde_json::from_str(&line).expect("json");
        assert_eq!(v["kind"], "vision");
        assert_eq!(v["capture_ms"], 100.0);
        assert_eq!(v["release_ms"], 150.0);
        assert_eq!(v["done_ms"], 450.5);
        assert_eq!(v["latency_ms"], 300.5);
        assert_eq!(v["on_time"], false, "done after the deadline");
        assert_eq!(v["stale"], false);
        assert_eq!(v["lines"][1], "North Station");
        assert!(v.get("segment_ms").is_none() && v.get("tokens").is_none());
        assert!(v.get("error").is_none(), "a result has no error");
    }

    #[test]
    fn a_failed_input_has_its_reason_and_is_not_on_time() {
        let t = Times {
            start: 0,
            capture: 1_000_000,
            release: 1_000_000,
            done: 1_000_000,
            deadline: 2_000_000,
        };
        let r = ResultRecord::failed(
            String::new(),
            "camera",
            Kind::Vision,
            t,
            "frames/0003.png is not a readable PNG or JPEG image".into(),
        );
        let v: serde_json::Value = serde_json::from_str(&r.to_json_line()).expect("json");
        assert_eq!(v["on_time"], false);
        assert_eq!(v["text"], "");
        assert!(v["error"].as_str().is_some_and(|e| e.contains("0003.png")));
    }
}
