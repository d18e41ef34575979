//! The loop's timed work: the health evaluation and its actions (camera rate, frequency
//! hints), the report's samples, and CPU pressure.

use std::collections::VecDeque;

use mmsched_core::time::{Clock, Nanos};
use mmsched_report::{AlignmentPoint, HealthActionRecord, PlayoutPoint, RunSeries};
use mmsched_trace::record::stage;

use super::signals::Signals;
use super::{HEALTH_WINDOW_NANOS, PROGRESS_NANOS, Progress, Run, SAMPLE_NANOS};
use crate::health::{HealthInputs, HealthMonitor};
use crate::stats::Kind;

/// Health actions the summary lists at most (the latest; a flapping week would otherwise
/// list millions).
const MAX_ACTIONS: usize = 1_000;

/// The health loop, what it did, and the report's samples.
pub(super) struct Monitor<C: Clock> {
    pub(super) health: HealthMonitor,
    /// The health actions taken (mmsched with actions on).
    pub(super) actions: Vec<HealthActionRecord>,
    pub(super) series: RunSeries,
    next_sample: Nanos,
    next_progress: Nanos,
    /// Jobs done in the last second, for the rates.
    pub(super) recent_done: VecDeque<(Nanos, Kind)>,
    last_health: Nanos,
    /// How often each kind's latency goes into the report's CDF.
    pub(super) latency_stride: mmsched_report::LatencyStride,
    /// CPU pressure samples, percent: how many, their sum and the largest.
    pub(super) pressure_pct: (u64, f64, f64),
    /// When the observer is next handed the report so far (`--report-every`).
    pub(super) next_report: Nanos,
    /// Answers from the cache while the breaker was open.
    pub(super) stale_answers: u64,
    pub(super) breaker_opened: u64,
    pub(super) camera_scaled_nanos: u64,
    #[cfg(target_os = "linux")]
    pub(super) power: Option<mmsched_runtime::platform::power::LinuxPower<C>>,
    #[cfg(not(target_os = "linux"))]
    pub(super) power: Option<std::marker::PhantomData<C>>,
    pub(super) power_calls: u64,
    pub(super) power_over_budget: u64,
    /// The platform's signals (the neighbours' CPU share, own run-queue wait).
    pub(super) signals: Signals,
}

impl<C: Clock> Monitor<C> {
    /// A monitor from `start`, with the platform's frequency control where there is one.
    pub(super) fn new(
        health: HealthMonitor,
        start: Nanos,
        signals: Signals,
        #[cfg(target_os = "linux")] power: Option<mmsched_runtime::platform::power::LinuxPower<C>>,
    ) -> Self {
        Self {
            health,
            actions: Vec::new(),
            series: RunSeries::default(),
            next_sample: start,
            next_progress: start + PROGRESS_NANOS,
            recent_done: VecDeque::new(),
            last_health: start,
            latency_stride: Default::default(),
            pressure_pct: (0, 0.0, 0.0),
            next_report: start,
            stale_answers: 0,
            breaker_opened: 0,
            camera_scaled_nanos: 0,
            #[cfg(target_os = "linux")]
            power,
            #[cfg(not(target_os = "linux"))]
            power: None,
            power_calls: 0,
            power_over_budget: 0,
            signals,
        }
    }
}

impl<C: Clock + Clone + Send + 'static> Run<'_, C> {
    pub(super) fn health_tick(&mut self, now: Nanos) {
        if !self.monitor.health.due(now) {
            return;
        }
        self.book.stats.trim(now);
        if let Some(conditions) = &self.config.conditions {
            // The charge as the device's environment has it now (battery saver prunes by it).
            let battery = conditions
                .at(now.saturating_sub(self.start))
                .battery_fraction;
            if let Some(m) = self.exec.mmsched() {
                m.set_battery(battery);
            }
        }
        let drift_ppm = self
            .ingest
            .iter()
            .filter_map(|(_, i)| i.estimate())
            .map(|e| e.drift_ppm.abs())
            .fold(0.0, f64::max);
        let was_scaled = self.remedies().camera_scaled;
        let was_open = self.remedies().breaker_open;
        let own_overload = self.own_overload(now);
        let changes = self.monitor.health.evaluate(
            now,
            &HealthInputs {
                worst_p99_ratio: self.book.stats.worst_p99_ratio(),
                drift_ppm,
                served_fraction: self.book.stats.served_fraction(),
                own_overload,
            },
        );
        let m = &mut self.monitor;
        if was_scaled {
            m.camera_scaled_nanos += now.saturating_sub(m.last_health);
        }
        m.last_health = now;
        let r = self.remedies();
        if r.breaker_open && !was_open {
            self.monitor.breaker_opened += 1;
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
        let (value, level) = self.monitor.health.current();
        let t = self.t_s(now);
        self.monitor.series.record_ldti(t, value, level.as_str());
        self.book.trace.counter(stage::LDTI, now, value);
        self.observer.ldti(value, level);
        let lost = |d: Option<u64>| d.unwrap_or(0);
        self.observer.evaluation(&super::Evaluation {
            t_s: t,
            ldti: value,
            level,
            remedies_in_force: r != Default::default(),
            lost_in_transport: lost(self.inputs.camera.as_ref().map(|(d, _)| d.lost()))
                + lost(self.inputs.mic.as_ref().map(|(d, _)| d.lost())),
            recovered: self.speech.nacks.recovered_count(),
        });
        let acting = self.mmsched_has(|m| m.health_actions);
        for c in changes.into_iter().filter(|_| acting) {
            self.book
                .trace
                .instant("health_action", "health", c.at_nanos, None, &c.what);
            let t_s = self.t_s(c.at_nanos);
            let actions = &mut self.monitor.actions;
            if actions.len() >= MAX_ACTIONS {
                // A long run keeps the latest actions; the trace has every one.
                actions.drain(..MAX_ACTIONS / 2);
            }
            actions.push(HealthActionRecord {
                t_s,
                level: c.level.as_str().to_string(),
                action: c.what,
            });
        }
    }

    /// Whether the run's own work exceeds its general lanes over the health window, as
    /// the measured step costs say (mmsched with the mechanism on; `None` otherwise, and
    /// the remedies act on the index alone).
    fn own_overload(&mut self, now: Nanos) -> Option<bool> {
        if !self.mmsched_has(|m| m.own_overload) || !crate::platform::own_overload_on() {
            return None;
        }
        let over = self.book.own_load(now, HEALTH_WINDOW_NANOS).overloaded();
        let s = &mut self.monitor.signals;
        s.own_evaluations += 1;
        s.own_overloaded += u64::from(over);
        Some(over)
    }

    pub(super) fn sample(&mut self, now: Nanos) {
        if now < self.monitor.next_sample {
            return;
        }
        self.monitor.next_sample = now + SAMPLE_NANOS;
        let occupancy = self.exec.occupancy(now);
        let mean = if occupancy.is_empty() {
            0.0
        } else {
            occupancy.iter().sum::<f64>() / occupancy.len() as f64
        };
        self.book.trace.counter(stage::SLOT_OCCUPANCY, now, mean);
        let t_s = self.t_s(now);
        let m = &mut self.monitor;
        m.series
            .slot_occupancy
            .push(mmsched_report::OccupancyPoint {
                t_s,
                per_worker_pct: occupancy.iter().map(|o| o * 100.0).collect(),
            });
        while m
            .recent_done
            .front()
            .is_some_and(|(t, _)| *t + 1_000_000_000 < now)
        {
            m.recent_done.pop_front();
        }
        let rates = Kind::ALL.map(|k| m.recent_done.iter().filter(|(_, d)| *d == k).count() as f64);
        m.series.rates.push(mmsched_report::RatePoint {
            t_s,
            per_modality_hz: Kind::ALL
                .iter()
                .zip(rates)
                .map(|(k, r)| (k.as_str().to_string(), r))
                .collect(),
        });
        self.sample_playout(t_s);
        if now >= self.monitor.next_progress {
            self.monitor.next_progress = now + PROGRESS_NANOS;
            self.sample_alignment(t_s);
            // A long run's series stay within their caps (thinned, not cut).
            self.monitor.series.bound();
            self.sample_pressure(now);
            self.sample_signals(now);
            self.follow_camera_cost(now);
            let counts = Kind::ALL.map(|k| {
                let s = self.book.stats.kind(k);
                (s.completed, s.deadline_misses, s.skipped, s.shed)
            });
            let (ldti, level) = self.monitor.health.current();
            let p = Progress {
                t_s: t_s.min(self.config.duration_nanos as f64 / 1e9),
                duration_s: self.config.duration_nanos as f64 / 1e9,
                counts,
                rates_hz: rates,
                ldti,
                level,
            };
            self.observer.progress(&p);
        }
    }

    /// The speech jitter buffer since the last sample, for the report's plots.
    fn sample_playout(&mut self, t_s: f64) {
        if let Some(audio) = &mut self.speech.audio {
            let i = audio.take_interval();
            self.monitor.series.playout.push(PlayoutPoint {
                t_s,
                delay_ms: i.delay_ms,
                target_ms: i.target_ms,
                late: i.late,
                concealed: i.concealed,
            });
        }
    }

    /// Each pair of streams' alignment error since the last sample (the streams whose
    /// events carry their true capture time, and that had one checked since), for the
    /// report's plot.
    fn sample_alignment(&mut self, t_s: f64) {
        let means: Vec<(&str, f64)> = self
            .ingest
            .iter_mut()
            .filter_map(|(name, i)| i.take_mean_error_nanos().map(|e| (name.as_str(), e)))
            .collect();
        for (k, (a, ea)) in means.iter().enumerate() {
            for (b, eb) in &means[k + 1..] {
                self.monitor.series.alignment.push(AlignmentPoint {
                    t_s,
                    pair: format!("{a}-{b}"),
                    error_ms: (ea - eb) / 1e6,
                });
            }
        }
    }

    /// Asks the platform for a CPU frequency (mmsched with platform integration only),
    /// timing the call against its S11 budget; every call goes into the trace.
    pub(super) fn power_hint(&mut self, now: Nanos, percent: u8) {
        #[cfg(target_os = "linux")]
        if let Some(p) = &mut self.monitor.power {
            use mmsched_runtime::platform::power::{FrequencyLevel, PowerControl};
            let e = p.request_frequency(FrequencyLevel::percent(percent));
            self.monitor.power_calls += 1;
            if e.over_budget() {
                self.monitor.power_over_budget += 1;
            }
            let what = format!(
                "frequency {percent} %: {:?}, {} µs",
                e.effect,
                e.timing.elapsed_nanos / 1000
            );
            self.book.trace.instant("power", "health", now, None, &what);
        }
        #[cfg(not(target_os = "linux"))]
        let _ = (now, percent);
    }

    /// CPU pressure (PSI `some avg10`) as a saturation signal, once a second, into the
    /// trace; its mean and maximum go into the summary's platform notes.
    pub(super) fn sample_pressure(&mut self, now: Nanos) {
        #[cfg(target_os = "linux")]
        if !self.config.simulated {
            use mmsched_runtime::platform::psi;
            if let Ok(p) = psi::read(std::path::Path::new(psi::CPU_PRESSURE_PATH)) {
                let pct = 100.0 * p.saturation();
                self.book.trace.counter(stage::PSI_CPU, now, pct);
                let p = &mut self.monitor.pressure_pct;
                *p = (p.0 + 1, p.1 + pct, p.2.max(pct));
            }
        }
        #[cfg(not(target_os = "linux"))]
        let _ = now;
    }
}
