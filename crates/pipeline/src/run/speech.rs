//! The speech branch: microphone packets through the playout buffer (with retransmission
//! requests for missing ones) into 32 ms VAD chunks; the speech gate closes utterances,
//! which go to Whisper (the book runs them one at a time: Whisper holds state).

use mmsched_core::time::{Clock, Nanos};
use mmsched_runtime::router::speech::Utterance;
use mmsched_trace::ids::TraceId;

use super::{Run, arrived, transcript_budget_nanos};
use crate::audio::AudioPath;
use crate::book::Reply;
use crate::jobs::Output;
use crate::nack::Nacks;
use crate::request::{Input, Origin};
use crate::stats::Kind;

/// The speech branch's state.
pub(super) struct SpeechBranch {
    /// Packets → playout → chunks → utterances (none without a microphone).
    pub(super) audio: Option<AudioPath>,
    pub(super) nacks: Nacks,
    /// The last transcript (the circuit breaker's cached answer, and what prompts ask
    /// about).
    pub(super) last_transcript: Option<String>,
}

impl SpeechBranch {
    pub(super) fn new(audio: Option<AudioPath>) -> Self {
        Self {
            audio,
            nacks: Nacks::default(),
            last_transcript: None,
        }
    }

    /// When the playout buffer next has a frame to play.
    pub(super) fn next_play_nanos(&self) -> Option<Nanos> {
        self.audio.as_ref().and_then(AudioPath::next_play_nanos)
    }
}

impl<C: Clock + Clone + Send + 'static> Run<'_, C> {
    /// Every packet the microphone delivered by `now` into the playout buffer (asking for
    /// missing ones again while retransmission is on), and a VAD job per chunk played.
    pub(super) fn poll_mic(&mut self, now: Nanos) {
        let sla = self.sla_nanos(Kind::Vad);
        let (name, arrivals) = arrived(&mut self.inputs.mic);
        for a in arrivals {
            self.place(&name, &a);
            let seq = a.event.seq;
            let Some(audio) = &mut self.speech.audio else {
                continue;
            };
            let late_before = audio.counts().late_packets;
            let copy = self.speech.nacks.arrived(seq, a.arrival_nanos);
            let gap = audio.on_packet(seq, a.arrival_nanos, a.event.payload.samples, copy);
            if copy && audio.counts().late_packets == late_before {
                self.speech.nacks.recovered();
            }
            if self.remedies().retransmit
                && let Some((mic, _)) = &mut self.inputs.mic
            {
                for missing in gap {
                    let sent = mic.retransmit(missing);
                    self.speech.nacks.request(missing, now, sent);
                }
            }
        }
        // While requests are on, hold frames long enough for a copy to come back.
        let retransmit = self.remedies().retransmit;
        let speech = &mut self.speech;
        if let Some(audio) = &mut speech.audio {
            let floor = if retransmit {
                speech.nacks.playout_floor_nanos(audio.frame_nanos())
            } else {
                0
            };
            audio.set_delay_floor_nanos(floor);
        }
        let chunks = match &mut self.speech.audio {
            Some(audio) => audio.poll(now),
            None => Vec::new(),
        };
        if !self.models.has(Kind::Vad) {
            return;
        }
        for c in chunks {
            self.book.offer(Kind::Vad, Origin::Streams);
            let input = Input::Chunk {
                samples: c.samples,
                index: c.index,
            };
            let req = self.stream_request(input, c.ready_nanos, c.ready_nanos, c.ready_nanos + sla);
            self.submit(now, req, Reply::Loop);
        }
    }

    /// A VAD chunk's speech probability (0 for a chunk lost to shedding or failure) into
    /// the speech gate; the segments it closes are reported and go to Whisper.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn on_vad(
        &mut self,
        chunk: u64,
        release: Nanos,
        deadline: Nanos,
        now: Nanos,
        end: Nanos,
        prob: f32,
        trace_id: Option<TraceId>,
    ) {
        let Some(a) = &mut self.speech.audio else {
            return;
        };
        let utterances = a.on_vad(chunk, prob);
        self.report_segments(release, deadline, end, trace_id, &utterances);
        self.transcribe(now, utterances);
    }

    /// Each closed utterance to Whisper, or to the cache while the circuit breaker cuts
    /// speech.
    fn transcribe(&mut self, now: Nanos, utterances: Vec<Utterance>) {
        if !self.models.has(Kind::Asr) {
            return;
        }
        let sla = self.sla_nanos(Kind::Asr);
        for u in utterances {
            self.book.offer(Kind::Asr, Origin::Streams);
            if self.remedies().breaker_open && self.heaviest_branch() == Kind::Asr {
                self.answer_from_cache(Kind::Asr, now);
                continue;
            }
            let budget = transcript_budget_nanos(u.end_nanos.saturating_sub(u.start_nanos));
            // A known recording: the words of the passes the utterance holds (none when it
            // holds part of one).
            let truth = match (&self.inputs.speech_script, &self.speech.audio) {
                (Some(script), Some(a)) => a.sample_span(&u).and_then(|(s, e)| script.truth(s, e)),
                _ => None,
            };
            let input = Input::Utterance(u.samples);
            let mut req = self.stream_request(input, u.start_nanos, now, now + sla + budget);
            req.truth = truth;
            self.submit(now, req, Reply::Loop);
        }
    }

    /// An utterance's transcription ended: its text becomes the cached answer.
    pub(super) fn on_transcript(&mut self, output: Option<Output>) {
        if let Some(Output::Asr { text, .. }) = output
            && !text.is_empty()
        {
            self.speech.last_transcript = Some(text);
        }
    }
}
