//! What an ended job does in the loop: every job's latency goes into the report's samples
//! and the rates; a stream's job also goes back to its branch — a frame's text becomes the
//! cached answer and counts in the camera's recent losses, a chunk's speech probability
//! feeds the speech gate (a lost chunk counts as silence), a transcript becomes the cached
//! answer and what prompts ask about.

use mmsched_core::time::{Clock, Nanos};

use super::Run;
use crate::book::{EndResult, Ended};
use crate::jobs::Output;
use crate::request::Origin;
use crate::stats::Kind;

impl<C: Clock + Clone + Send + 'static> Run<'_, C> {
    pub(super) fn on_ended(&mut self, now: Nanos, e: Ended) {
        let missed = e.missed();
        if let EndResult::Finished(..) = &e.result {
            let latency_ms = e.end.saturating_sub(e.release) as f64 / 1e6;
            let m = &mut self.monitor;
            m.series
                .record_latency_bounded(&mut m.latency_stride, e.kind.as_str(), latency_ms);
            if missed {
                let t = self.t_s(e.end);
                self.monitor
                    .series
                    .record_miss(t, e.kind.as_str(), latency_ms);
            }
            self.monitor.recent_done.push_back((e.end, e.kind));
        }
        if e.origin != Origin::Streams {
            return;
        }
        let (output, trace_id) = match e.result {
            EndResult::Finished(output, trace_id) => (output, Some(trace_id)),
            EndResult::Shed | EndResult::Failed => (None, None),
        };
        match e.kind {
            Kind::Vision => {
                self.vision.losses.record(missed);
                self.on_ocr(output);
            }
            Kind::Vad => {
                let prob = match output {
                    Some(Output::Vad { prob, .. }) => prob,
                    _ => 0.0,
                };
                self.on_vad(e.chunk, e.release, e.deadline, now, e.end, prob, trace_id);
            }
            Kind::Asr => self.on_transcript(output),
            Kind::Llm | Kind::Model(_) => {}
        }
    }
}
