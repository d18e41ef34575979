//! What the loop takes in from the sources each pass: camera frames through the image gate,
//! microphone packets through the playout buffer (with retransmission requests) into VAD
//! chunks, IMU samples and text requests.

use mmsched_backends::{RgbFrame, gate};
use mmsched_core::time::{Clock, Nanos};
use mmsched_runtime::router::SkipReason;
use mmsched_runtime::router::image::ImageMeasures;

use super::{JobRec, Run, ThreadCpu, arrived};
use crate::jobs;
use crate::stats::{DropAction, Kind};

impl Run<'_> {
    pub(super) fn poll_camera(&mut self, now: Nanos) {
        let sla = self.sla_nanos(Kind::Vision);
        let (name, arrivals) = arrived(&mut self.inputs.camera);
        for a in arrivals {
            let capture = self.place(&name, &a);
            self.stats.offered(Kind::Vision);
            if self.remedies().camera_scaled && a.event.seq % 2 == 1 {
                // Degraded: half the frame rate (the frequency scaling this device can do).
                self.drop_input(Kind::Vision, now, DropAction::CameraRateHalved);
                continue;
            }
            let f = a.event.payload;
            let Ok(frame) = RgbFrame::new(f.width, f.height, f.rgb) else {
                self.stats.failed_input(Kind::Vision);
                continue;
            };
            let cpu = ThreadCpu::now();
            let t0 = self.clock.now_nanos();
            let m = gate::measure(&frame);
            let gate_nanos = self.clock.now_nanos().saturating_sub(t0);
            let route = self.router.route(
                capture,
                ImageMeasures {
                    mean_luma: m.mean_luma,
                    laplacian_var: m.laplacian_var,
                },
                gate_nanos,
            );
            // The gate is the runtime's own work: it counts as scheduler overhead.
            self.overhead_nanos += cpu.elapsed_nanos();
            if let Some(reason) = route.skipped {
                let why = match reason {
                    SkipReason::Dark { .. } => "dark",
                    SkipReason::Blurred { .. } => "blurred",
                    SkipReason::Silence { .. } => "silence",
                };
                self.skip(Kind::Vision, now, why);
                continue;
            }
            if self.remedies().breaker_open && self.heaviest_branch() == Kind::Vision {
                self.answer_from_cache(Kind::Vision, now);
                continue;
            }
            let tag = self.new_tag();
            let work = jobs::vision(
                self.engines.ocr.clone(),
                frame,
                tag,
                self.outputs_tx.clone(),
            );
            self.stats.job(Kind::Vision);
            let release = a.arrival_nanos.min(now);
            self.submit(
                now,
                tag,
                JobRec {
                    kind: Kind::Vision,
                    capture,
                    release,
                    deadline: release + sla,
                    chunk: 0,
                },
                work,
            );
        }
    }

    pub(super) fn answer_from_cache(&mut self, kind: Kind, now: Nanos) {
        let cached = match kind {
            Kind::Vision => self.last_ocr.is_some(),
            _ => self.last_transcript.is_some(),
        };
        if self.remedies().use_cache && cached {
            self.stale_answers += 1;
            self.report_stale(kind, now);
        }
        self.drop_input(kind, now, DropAction::CircuitBreaker);
    }

    pub(super) fn poll_mic(&mut self, now: Nanos) {
        let sla = self.sla_nanos(Kind::Vad);
        let (name, arrivals) = arrived(&mut self.inputs.mic);
        for a in arrivals {
            self.place(&name, &a);
            let seq = a.event.seq;
            let Some(audio) = &mut self.audio else {
                continue;
            };
            let late_before = audio.counts().late_packets;
            let copy = self.nacks.arrived(seq, a.arrival_nanos);
            let gap = audio.on_packet(seq, a.arrival_nanos, a.event.payload.samples, copy);
            if copy && audio.counts().late_packets == late_before {
                self.nacks.recovered();
            }
            if self.remedies().retransmit
                && let Some((mic, _)) = &mut self.inputs.mic
            {
                for missing in gap {
                    let sent = mic.retransmit(missing);
                    self.nacks.request(missing, now, sent);
                }
            }
        }
        // While requests are on, hold frames long enough for a copy to come back.
        let retransmit = self.remedies().retransmit;
        if let Some(audio) = &mut self.audio {
            let floor = if retransmit {
                self.nacks.playout_floor_nanos(audio.frame_nanos())
            } else {
                0
            };
            audio.set_delay_floor_nanos(floor);
        }
        let chunks = match &mut self.audio {
            Some(audio) => audio.poll(now),
            None => Vec::new(),
        };
        for c in chunks {
            let Some(vad) = self.engines.vad.clone() else {
                continue;
            };
            let tag = self.new_tag();
            self.stats.offered(Kind::Vad);
            self.stats.job(Kind::Vad);
            let work = jobs::vad(vad, c.samples, tag, self.outputs_tx.clone());
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

    pub(super) fn poll_imu_and_text(&mut self, now: Nanos) {
        let (name, arrivals) = arrived(&mut self.inputs.imu);
        for a in arrivals {
            self.place(&name, &a);
        }
        let (name, arrivals) = arrived(&mut self.inputs.text);
        for a in arrivals {
            self.place(&name, &a);
            if self.engines.llm.is_none() {
                continue;
            }
            self.stats.offered(Kind::Llm);
            // Every other request asks about what was just heard, when there is a
            // transcript (not in a comparison: the transcript depends on the scheduler).
            let prompt = match &self.last_transcript {
                Some(t)
                    if a.event.seq % 2 == 0
                        && !self.config.fixed_prompts
                        && !a.event.payload.as_written =>
                {
                    format!("In one sentence, what is this about: {t}")
                }
                _ => a.event.payload.prompt,
            };
            self.llm_queue.push_back((
                a.arrival_nanos.min(now),
                prompt,
                a.event.payload.max_tokens,
            ));
        }
    }
}
