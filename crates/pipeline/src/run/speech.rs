//! The speech branch: microphone packets through the playout buffer (with retransmission
//! requests for missing ones) into 32 ms VAD chunks; the speech gate closes utterances,
//! which queue for Whisper one at a time.

use std::collections::VecDeque;

use mmsched_core::time::{Clock, Nanos};
use mmsched_runtime::router::speech::Utterance;
use mmsched_trace::ids::TraceId;

use super::{JobRec, Run, arrived, transcript_budget_nanos};
use crate::audio::AudioPath;
use crate::jobs::Output;
use crate::nack::Nacks;
use crate::stats::Kind;

/// An utterance waiting for speech recognition.
pub(super) struct Waiting {
    release: Nanos,
    deadline: Nanos,
    /// When its speech started.
    capture: Nanos,
    samples: Vec<f32>,
}

/// The speech branch's state.
pub(super) struct SpeechBranch {
    /// Packets → playout → chunks → utterances (none without a microphone).
    pub(super) audio: Option<AudioPath>,
    pub(super) nacks: Nacks,
    pub(super) asr_queue: VecDeque<Waiting>,
    /// Whether an utterance is being transcribed (one at a time: Whisper holds state).
    pub(super) asr_busy: bool,
    /// The last transcript (the circuit breaker's cached answer, and what prompts ask
    /// about).
    pub(super) last_transcript: Option<String>,
}

impl SpeechBranch {
    pub(super) fn new(audio: Option<AudioPath>) -> Self {
        Self {
            audio,
            nacks: Nacks::default(),
            asr_queue: VecDeque::new(),
            asr_busy: false,
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
            let tag = self.book.new_tag();
            self.stats.offered(Kind::Vad);
            self.stats.job(Kind::Vad);
            let work = self.models.vad(c.samples, tag, self.book.tx.clone());
            self.submit(
                now,
                tag,
                JobRec {
                    kind: Kind::Vad,
                    capture: c.ready_nanos,
                    release: c.ready_nanos,
                    deadline: c.ready_nanos + sla,
                    chunk: c.index,
                },
                work,
            );
        }
    }

    /// A VAD chunk's speech probability (0 for a chunk lost to shedding or failure) into
    /// the speech gate; the segments it closes are reported and queued for Whisper.
    pub(super) fn on_vad(
        &mut self,
        rec: &JobRec,
        now: Nanos,
        end: Nanos,
        prob: f32,
        trace_id: Option<TraceId>,
    ) {
        let Some(a) = &mut self.speech.audio else {
            return;
        };
        let utterances = a.on_vad(rec.chunk, prob);
        self.report_segments(rec, end, trace_id, &utterances);
        self.queue_utterances(now, utterances);
    }

    fn queue_utterances(&mut self, now: Nanos, utterances: Vec<Utterance>) {
        if !self.models.has(Kind::Asr) {
            return;
        }
        let sla = self.sla_nanos(Kind::Asr);
        for u in utterances {
            self.stats.offered(Kind::Asr);
            let budget = transcript_budget_nanos(u.end_nanos.saturating_sub(u.start_nanos));
            self.speech.asr_queue.push_back(Waiting {
                release: now,
                deadline: now + sla + budget,
                capture: u.start_nanos,
                samples: u.samples,
            });
        }
    }

    /// The next utterance to Whisper when none is being transcribed (or to the cache
    /// while the circuit breaker cuts speech).
    pub(super) fn start_asr(&mut self, now: Nanos) {
        if self.speech.asr_busy {
            return;
        }
        let Some(u) = self.speech.asr_queue.pop_front() else {
            return;
        };
        if self.remedies().breaker_open && self.heaviest_branch() == Kind::Asr {
            self.answer_from_cache(Kind::Asr, now);
            return;
        }
        let tag = self.book.new_tag();
        self.stats.job(Kind::Asr);
        let work = self.models.asr(u.samples, tag, self.book.tx.clone());
        self.speech.asr_busy = true;
        self.submit(
            now,
            tag,
            JobRec {
                kind: Kind::Asr,
                capture: u.capture,
                release: u.release,
                deadline: u.deadline,
                chunk: 0,
            },
            work,
        );
    }

    /// An utterance's transcription ended: the branch is free, and its text becomes the
    /// cached answer.
    pub(super) fn on_transcript(&mut self, output: Option<Output>) {
        self.speech.asr_busy = false;
        if let Some(Output::Asr { text, .. }) = output
            && !text.is_empty()
        {
            self.speech.last_transcript = Some(text);
        }
    }
}
