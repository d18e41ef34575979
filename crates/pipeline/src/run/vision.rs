//! The vision branch: camera frames through the image gate (dark and blurred frames skip
//! OCR) to OCR jobs, and the camera's standing reservation on mmsched's slot tables.

use mmsched_backends::onnx::OnnxInput;
use mmsched_backends::{RgbFrame, gate};
use mmsched_core::Modality;
use mmsched_core::health::{RecentLosses, camera_drops};
use mmsched_core::time::{Clock, Nanos};
use mmsched_runtime::router::SkipReason;
use mmsched_runtime::router::image::{ImageMeasures, ImageRouter};
use mmsched_trace::record::stage;

use super::{Run, arrived};
use crate::book::{Reply, Standing};
use crate::jobs::Output;
use crate::request::{Input, Origin};
use crate::results::{ResultRecord, Times};
use crate::stats::{DropAction, Kind};

/// The vision branch's state.
pub(super) struct VisionBranch {
    /// The image gate.
    pub(super) router: ImageRouter,
    /// The last text read (the circuit breaker's cached answer).
    pub(super) last_ocr: Option<String>,
    /// The camera's standing reservation: predicted frame cost it was booked with, and
    /// whether at the halved rate.
    booking: Option<(Nanos, bool)>,
    /// Which of the last frames that ended were shed or late (see `frame_behind`).
    pub(super) losses: RecentLosses,
    /// How many bookings of the standing reservation the scheduler refused, and the last
    /// reason (a run note: until the next booking the camera has no reserved slots).
    pub(super) refused: Option<(u32, String)>,
}

impl VisionBranch {
    pub(super) fn new(router: ImageRouter) -> Self {
        Self {
            router,
            last_ocr: None,
            booking: None,
            losses: RecentLosses::default(),
            refused: None,
        }
    }
}

impl<C: Clock + Clone + Send + 'static> Run<'_, C> {
    /// Every frame the camera delivered by `now`: dropped (halved camera rate), skipped by
    /// the gate, answered from the cache (breaker open) or submitted to OCR.
    pub(super) fn poll_camera(&mut self, now: Nanos) {
        let sla = self.sla_nanos(Kind::Vision);
        self.take_unread_frames(sla);
        let own = self.camera_models();
        let ocr = self.inputs.camera_ocr;
        // Every class a frame goes to, the OCR first.
        let feeds: Vec<Kind> = ocr
            .then_some(Kind::Vision)
            .into_iter()
            .chain(own.iter().copied())
            .collect();
        let (name, arrivals) = arrived(&mut self.inputs.camera);
        for a in arrivals {
            let capture = self.place(&name, &a);
            for &kind in &feeds {
                self.book.offer(kind, Origin::Streams);
            }
            let remedies = self.remedies();
            if camera_drops(&remedies, a.event.seq, || self.frame_behind()) {
                // Degraded: half the frame rate (the frequency scaling this device can do)
                // while the branch is behind: the frame is lost to every model it feeds.
                for &kind in &feeds {
                    self.drop_input(kind, now, DropAction::CameraRateHalved, false);
                }
                continue;
            }
            let f = a.event.payload;
            // Generated scenes and labelled folders know what the frame shows.
            let truth = crate::truth::Truth::of_frame_text(&f.text);
            let frame = match RgbFrame::new(f.width, f.height, f.rgb) {
                Ok(frame) => frame,
                Err(e) => {
                    for &kind in &own {
                        self.book.stats.failed_input(kind, &e.to_string());
                    }
                    if ocr {
                        self.frame_failed(capture, now, sla, e.to_string());
                    }
                    continue;
                }
            };
            // The user's own models on the camera see every frame it delivers: the gate
            // and the breaker below are OCR's.
            let release = a.arrival_nanos.min(now);
            for &kind in &own {
                let input = Input::Model {
                    kind,
                    input: OnnxInput::Image(frame.clone()),
                };
                let due = release + self.sla_nanos(kind);
                let req = self.stream_request(input, capture, release, due);
                self.submit(now, req, Reply::Loop);
            }
            if !ocr {
                continue;
            }
            let cpu = self.meter.start();
            let t0 = self.clock.now_nanos();
            let m = gate::measure(&frame);
            let gate_nanos = self.clock.now_nanos().saturating_sub(t0);
            let route = self.vision.router.route(
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
            let release = a.arrival_nanos.min(now);
            let mut req = self.stream_request(Input::Frame(frame), capture, release, release + sla);
            req.truth = truth;
            self.submit(now, req, Reply::Loop);
        }
    }

    /// The user's own models the camera feeds (those its stream lists and the run loaded).
    fn camera_models(&self) -> Vec<Kind> {
        crate::classes::registered()
            .into_iter()
            .filter(|&k| self.inputs.stream(k).is_some() && self.models.has(k))
            .collect()
    }

    /// Frames the camera could not read (a file gone, truncated or stuck): each is offered
    /// and failed, with its reason in the results and the summary.
    fn take_unread_frames(&mut self, sla: Nanos) {
        let own = self.camera_models();
        let Some((camera, _)) = &mut self.inputs.camera else {
            return;
        };
        let ocr = self.inputs.camera_ocr;
        for u in camera.take_unread() {
            for &kind in &own {
                self.book.offer(kind, Origin::Streams);
                self.book.stats.failed_input(kind, &u.reason);
            }
            if ocr {
                self.book.offer(Kind::Vision, Origin::Streams);
                let at = u.capture_device_nanos;
                self.frame_failed(at, at, sla, u.reason);
            }
        }
    }

    /// A frame captured at `capture` that cannot go to OCR, for `reason`.
    fn frame_failed(&mut self, capture: Nanos, now: Nanos, sla: Nanos, reason: String) {
        self.book.stats.failed_input(Kind::Vision, &reason);
        self.book.trace.instant(
            stage::FAIL,
            Kind::Vision.as_str(),
            now,
            Some(Modality::Image),
            &reason,
        );
        let t = Times {
            start: self.start,
            capture,
            release: now,
            done: now,
            deadline: now + sla,
        };
        let stream = self
            .inputs
            .stream(Kind::Vision)
            .map(|s| s.name.clone())
            .unwrap_or_default();
        let r = ResultRecord::failed(String::new(), &stream, Kind::Vision, t, reason);
        self.observer.result(&r);
    }

    /// Whether the vision branch is behind: losing about half its frames anyway
    /// ([`RecentLosses::behind`]; mmsched only: the baselines take no health actions).
    fn frame_behind(&mut self) -> bool {
        self.exec.mmsched().is_some() && self.vision.losses.behind()
    }

    /// A frame's OCR ended: its text becomes the cached answer.
    pub(super) fn on_ocr(&mut self, output: Option<Output>) {
        if let Some(Output::Vision { lines, .. }) = output
            && !lines.is_empty()
        {
            let text: Vec<&str> = lines.iter().map(|l| l.text.as_str()).collect();
            self.vision.last_ocr = Some(text.join(" | "));
        }
    }

    /// Books the camera's standing reservation for its (possibly halved) frame rate: the
    /// OCR's frames (a camera that feeds only models of the user's own books none).
    pub(super) fn rebook_camera(&mut self, now: Nanos, halved: bool) {
        let Some(s) = self.inputs.stream(Kind::Vision) else {
            return;
        };
        if !self.config.mechanisms.standing_reservations {
            return;
        }
        let fps = s.fps.unwrap_or(5.0).max(0.1);
        let period = (1e9 / fps) as Nanos * if halved { 2 } else { 1 };
        let latency = (s.latency_ms * 1e6) as Nanos;
        let class = self.book.class(Kind::Vision);
        let cost = self.book.predict_job(Kind::Vision, now);
        // The next frame's arrival: frames are captured on the camera's cadence from the
        // start of the inputs, and arrive after the stream's latency.
        let k = now.saturating_sub(self.start) / period + 1;
        let first = self.start + k * period + latency;
        // A frame arrives as its occurrence starts and is due its SLA after arriving.
        let due_after = (s.sla_ms * 1e6) as Nanos;
        let Some(m) = self.exec.mmsched() else {
            return;
        };
        m.cancel_stream(class);
        let booked = m.reserve_stream(class, Modality::Image, first, period, cost, Some(due_after));
        let standing = Standing {
            first,
            period,
            cost,
        };
        self.book.set_standing(booked.is_ok().then_some(standing));
        if let Err(e) = booked {
            let n = self.vision.refused.as_ref().map_or(0, |r| r.0);
            self.vision.refused = Some((n + 1, e.to_string()));
        }
        // Kept even when refused, so the next change of cost books again.
        self.vision.booking = Some((cost, halved));
    }

    /// Keeps the camera's occurrences as long as a frame really takes: rebooked when the
    /// predicted cost moved by more than a tenth since the last booking.
    pub(super) fn follow_camera_cost(&mut self, now: Nanos) {
        let Some((booked, halved)) = self.vision.booking else {
            return;
        };
        let cost = self.book.predict_job(Kind::Vision, now);
        if cost.abs_diff(booked) * 10 > booked {
            self.rebook_camera(now, halved);
        }
    }
}
