//! Results out while running that only the loop knows of: each speech segment the gate
//! closes and each stale answer from the cache, as a [`ResultRecord`] to the observer (the
//! book reports every finished OCR, transcript and answer of every origin).

use mmsched_core::time::{Clock, Nanos};
use mmsched_runtime::router::speech::Utterance;
use mmsched_trace::ids::TraceId;

use super::Run;
use crate::results::{ResultRecord, Times};
use crate::stats::Kind;

impl<C: Clock + Clone + Send + 'static> Run<'_, C> {
    fn stream_name(&self, kind: Kind) -> String {
        self.inputs
            .stream(kind)
            .map(|s| s.name.clone())
            .unwrap_or_default()
    }

    fn times(&self, capture: Nanos, release: Nanos, done: Nanos, deadline: Nanos) -> Times {
        Times {
            start: self.start,
            capture,
            release,
            done,
            deadline,
        }
    }

    /// Speech segments closed by a VAD chunk released at `release`, due at `deadline`,
    /// done at `end` (`trace_id` none when the chunk was shed and its silence assumed).
    pub(super) fn report_segments(
        &mut self,
        release: Nanos,
        deadline: Nanos,
        end: Nanos,
        trace_id: Option<TraceId>,
        segments: &[Utterance],
    ) {
        for u in segments {
            let t = self.times(u.start_nanos, release, end, deadline);
            let mut r = ResultRecord::new(
                trace_id.map(TraceId::to_hex).unwrap_or_default(),
                &self.stream_name(Kind::Vad),
                Kind::Vad,
                t,
                String::new(),
            );
            let ms = |at: Nanos| (at as f64 - self.start as f64) / 1e6;
            r.segment_ms = Some([ms(u.start_nanos), ms(u.end_nanos)]);
            self.observer.result(&r);
        }
    }

    /// An input answered from the cache while the circuit breaker is open: the last result
    /// of its kind, marked stale.
    pub(super) fn report_stale(&mut self, kind: Kind, now: Nanos) {
        let cached = match kind {
            Kind::Vision => self.vision.last_ocr.clone(),
            _ => self.speech.last_transcript.clone(),
        };
        let Some(text) = cached else { return };
        let t = self.times(now, now, now, now + self.sla_nanos(kind));
        let mut r = ResultRecord::new(String::new(), &self.stream_name(kind), kind, t, text);
        r.stale = true;
        self.observer.result(&r);
    }
}
