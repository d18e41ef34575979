//! The loop's timed work: the health evaluation and its actions (camera rate, frequency
//! hints), the report's samples, and CPU pressure.

use mmsched_core::Modality;
use mmsched_core::time::Nanos;
use mmsched_report::HealthActionRecord;
use mmsched_trace::record::stage;

use super::{PROGRESS_NANOS, Progress, Run, SAMPLE_NANOS};
use crate::health::HealthInputs;
use crate::stats::Kind;

impl Run<'_> {
    pub(super) fn health_tick(&mut self, now: Nanos) {
        if !self.health.due(now) {
            return;
        }
        self.stats.trim(now);
        let drift_ppm = self
            .ingest
            .iter()
            .filter_map(|(_, i)| i.estimate())
            .map(|e| e.drift_ppm.abs())
            .fold(0.0, f64::max);
        let was_scaled = self.remedies().camera_scaled;
        let was_open = self.remedies().breaker_open;
        let changes = self.health.evaluate(
            now,
            &HealthInputs {
                worst_p99_ratio: self.stats.worst_p99_ratio(),
                drift_ppm,
                served_fraction: self.stats.served_fraction(),
            },
        );
        if was_scaled {
            self.camera_scaled_nanos += now.saturating_sub(self.last_health);
        }
        self.last_health = now;
        let r = self.remedies();
        if r.breaker_open && !was_open {
            self.breaker_opened += 1;
        }
        if r.camera_scaled != was_scaled {
            self.rebook_camera(now, r.camera_scaled);
            // Under pressure the cores run at full speed; back to the scenario's power
            // mode once healthy.
            let percent = if r.camera_scaled || !self.config.scenario.battery().low_power {
                100
            } else {
                60
            };
            self.power_hint(now, percent);
        }
        let (value, level) = self.health.current();
        self.series
            .record_ldti(self.t_s(now), value, level.as_str());
        self.trace.counter(stage::LDTI, now, value);
        self.observer.ldti(value, level);
        let acting = self.mmsched_has(|m| m.health_actions);
        for c in changes.into_iter().filter(|_| acting) {
            self.trace
                .instant("health_action", "health", c.at_nanos, None, &c.what);
            self.actions.push(HealthActionRecord {
                t_s: self.t_s(c.at_nanos),
                level: c.level.as_str().to_string(),
                action: c.what,
            });
        }
    }

    /// Books the camera's standing reservation for its (possibly halved) frame rate.
    pub(super) fn rebook_camera(&mut self, now: Nanos, halved: bool) {
        let Some((_, s)) = &self.inputs.camera else {
            return;
        };
        if !self.config.mechanisms.standing_reservations {
            return;
        }
        let fps = s.fps.unwrap_or(5.0).max(0.1);
        let period = (1e9 / fps) as Nanos * if halved { 2 } else { 1 };
        let latency = (s.latency_ms * 1e6) as Nanos;
        let class = self.classes.vision;
        let cost = self.cost.predict(class, now);
        // The next frame's arrival: frames are captured on the camera's cadence from the
        // start of the inputs, and arrive after the stream's latency.
        let k = now.saturating_sub(self.start) / period + 1;
        let first = self.start + k * period + latency;
        let Some(m) = self.exec.mmsched() else {
            return;
        };
        m.cancel_stream(class);
        m.reserve_stream(class, Modality::Image, first, period, cost);
        self.camera_booking = Some((cost, halved));
    }

    /// Keeps the camera's occurrences as long as a frame really takes: rebooked when the
    /// predicted cost moved by more than a tenth since the last booking.
    pub(super) fn follow_camera_cost(&mut self, now: Nanos) {
        let Some((booked, halved)) = self.camera_booking else {
            return;
        };
        let cost = self.cost.predict(self.classes.vision, now);
        if cost.abs_diff(booked) * 10 > booked {
            self.rebook_camera(now, halved);
        }
    }

    pub(super) fn sample(&mut self, now: Nanos) {
        if now < self.next_sample {
            return;
        }
        self.next_sample = now + SAMPLE_NANOS;
        let occupancy = self.exec.occupancy(now);
        let mean = if occupancy.is_empty() {
            0.0
        } else {
            occupancy.iter().sum::<f64>() / occupancy.len() as f64
        };
        self.trace.counter(stage::SLOT_OCCUPANCY, now, mean);
        self.series
            .slot_occupancy
            .push(mmsched_report::OccupancyPoint {
                t_s: self.t_s(now),
                per_worker_pct: occupancy.iter().map(|o| o * 100.0).collect(),
            });
        while self
            .recent_done
            .front()
            .is_some_and(|(t, _)| *t + 1_000_000_000 < now)
        {
            self.recent_done.pop_front();
        }
        let rates = self.rates();
        self.series.rates.push(mmsched_report::RatePoint {
            t_s: self.t_s(now),
            per_modality_hz: Kind::ALL
                .iter()
                .zip(rates)
                .map(|(k, r)| (k.as_str().to_string(), r))
                .collect(),
        });
        if now >= self.next_progress {
            self.next_progress = now + PROGRESS_NANOS;
            self.sample_pressure(now);
            self.follow_camera_cost(now);
            let counts = Kind::ALL.map(|k| {
                let s = self.stats.kind(k);
                (s.completed, s.deadline_misses, s.skipped, s.shed)
            });
            let (ldti, level) = self.health.current();
            let p = Progress {
                t_s: self.t_s(now).min(self.config.duration_nanos as f64 / 1e9),
                duration_s: self.config.duration_nanos as f64 / 1e9,
                counts,
                rates_hz: rates,
                ldti,
                level,
            };
            self.observer.progress(&p);
        }
    }

    /// Asks the platform for a CPU frequency (mmsched with platform integration only),
    /// timing the call against its S11 budget; every call goes into the trace.
    pub(super) fn power_hint(&mut self, now: Nanos, percent: u8) {
        #[cfg(target_os = "linux")]
        if let Some(p) = &mut self.power {
            use mmsched_runtime::platform::power::{FrequencyLevel, PowerControl};
            let e = p.request_frequency(FrequencyLevel::percent(percent));
            self.power_calls += 1;
            if e.over_budget() {
                self.power_over_budget += 1;
            }
            let what = format!(
                "frequency {percent} %: {:?}, {} µs",
                e.effect,
                e.timing.elapsed_nanos / 1000
            );
            self.trace.instant("power", "health", now, None, &what);
        }
        #[cfg(not(target_os = "linux"))]
        let _ = (now, percent);
    }

    /// CPU pressure (PSI `some avg10`) as a saturation signal, once a second, into the
    /// trace; its mean and maximum go into the summary's platform notes.
    pub(super) fn sample_pressure(&mut self, now: Nanos) {
        #[cfg(target_os = "linux")]
        {
            use mmsched_runtime::platform::psi;
            if let Ok(p) = psi::read(std::path::Path::new(psi::CPU_PRESSURE_PATH)) {
                let pct = 100.0 * p.saturation();
                self.trace.counter(stage::PSI_CPU, now, pct);
                self.pressure_pct.push(pct);
            }
        }
        #[cfg(not(target_os = "linux"))]
        let _ = now;
    }
}
