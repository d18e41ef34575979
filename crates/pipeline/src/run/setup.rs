//! Building a run and writing its summary: [`run`] for the real thing (the OS clock,
//! worker threads, the loaded engines, resource groups), [`run_with`] for a run on parts
//! given from outside (a virtual clock, an executor on virtual lanes, fake models).

use std::sync::Arc;

use mmsched_core::align::AlignConfig;
use mmsched_core::time::{Clock, Nanos};
use mmsched_runtime::ingest::StreamIngest;
use mmsched_runtime::platform::signals::SignalSource;
use mmsched_runtime::router::image::ImageRouter;
use mmsched_runtime::sched::{Executor, SchedulerKind};

use super::{
    HEALTH_WINDOW_NANOS, Monitor, Observer, Run, RunOutcome, START_LEAD_NANOS, SpeechBranch,
    VisionBranch,
};
use crate::audio::AudioPath;
use crate::book::Book;
use crate::config::{RunConfig, RunError};
use crate::engines::Engines;
use crate::health::HealthMonitor;
use crate::inputs::{Device, Inputs};
use crate::load::{LoadGenerator, LoadProfile};
use crate::models::Models;
use crate::platform;
use crate::rtp_record::RtpRecorder;
use crate::stats::{Kind, RunStats};
use crate::summary::{self, Totals};
use crate::trace_out::TraceOut;
use mmsched_report::RunSummary;

/// What a run runs on: the device clock, the executor and the models.
pub struct RunParts<C: Clock> {
    /// The device clock every source, deadline and measurement reads.
    pub clock: C,
    /// The scheduler, with its lanes.
    pub exec: Box<dyn Executor>,
    /// The models the jobs call (shared with the outside clients' [`crate::client::Client`]).
    pub models: Arc<dyn Models>,
    /// What setting these up did (pinning, resource groups), for the summary's notes.
    pub notes: Vec<String>,
    /// Where the platform's signals come from (the neighbours' CPU share, mmsched's own
    /// run-queue wait): the kernel's figures in a real run, a test's own, or none.
    pub signals: Option<Box<dyn SignalSource>>,
}

impl<C: Clock> std::fmt::Debug for RunParts<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunParts")
            .field("scheduler", &self.exec.kind())
            .field("notes", &self.notes)
            .finish_non_exhaustive()
    }
}

/// Runs `config` to the end on the OS clock, worker threads and the scenario's models
/// (loaded here unless `config.engines` brings them), telling `observer` as it goes.
pub fn run(mut config: RunConfig, observer: &mut dyn Observer) -> Result<RunOutcome, RunError> {
    let scenario = config.scenario.clone();
    let workers = scenario.device().workers.unwrap_or(2).max(1) as usize;
    let engines = match config.engines.take() {
        Some(shared) => shared,
        None => {
            let mut engines = Engines::load(&scenario, workers, |m| {
                observer.status(&format!("loading {m}"))
            })?;
            observer.status("warming up the models");
            engines.warm_up()?;
            engines
        }
    };
    let mut notes = Vec::new();
    #[cfg(target_os = "linux")]
    let cgroup_set = if config.platform {
        platform::resource_groups(&mut notes, observer)
    } else {
        None
    };
    let clock = config
        .external
        .as_ref()
        .map_or_else(Device::new, |e| e.clock);
    let mut exec = platform::executor(
        config.scheduler,
        &config.policy,
        workers,
        clock,
        config.platform,
        config.record_steps,
        !config.mechanisms.admission,
        #[cfg(target_os = "linux")]
        cgroup_set.as_ref().map(|s| s.handle()),
    )?;
    if let Some(m) = exec.mmsched() {
        m.set_risk_boost(config.mechanisms.risk_boost);
        m.set_thread_grants(config.mechanisms.thread_grants);
    }
    notes.extend(exec.notes());
    #[cfg(target_os = "linux")]
    if let Some(load) = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_string))
    {
        // Other work on the machine disturbs every figure: say how busy it was.
        notes.push(format!("machine load average (1 min) at the start: {load}"));
    }
    let parts = RunParts {
        clock,
        exec,
        models: Arc::new(engines),
        notes,
        #[cfg(target_os = "linux")]
        signals: Some(platform::signal_source(cgroup_set.as_ref())),
        #[cfg(not(target_os = "linux"))]
        signals: Some(platform::signal_source()),
    };
    let outcome = run_with(config, parts, observer);
    // The executor's threads have left their groups: remove the groups.
    #[cfg(target_os = "linux")]
    if let Some(set) = cgroup_set {
        set.cleanup();
    }
    outcome
}

/// Runs `config` to the end on `parts`, telling `observer` as it goes. The loop waits only
/// through the executor, so on a virtual clock whose lanes move it (see
/// `mmsched_runtime::sched::virtual_time`) a run takes no real time. Background load,
/// when the scenario asks for it, burns real CPU on a thread.
pub fn run_with<C: Clock + Clone + Send + 'static>(
    mut config: RunConfig,
    parts: RunParts<C>,
    observer: &mut dyn Observer,
) -> Result<RunOutcome, RunError> {
    if !config.mechanisms.routing {
        // The router's gates off: every frame goes to the model.
        let mut spec = config.policy.to_spec();
        spec.routing.enabled = Some(false);
        config.policy = mmsched_core::policy::Policy::try_from(spec)
            .map_err(|source| RunError::RoutingOff { source })?;
    }
    let RunParts {
        clock,
        mut exec,
        models,
        notes: mut platform_notes,
        signals,
    } = parts;
    let scenario = config.scenario.clone();
    let inbox = config.external.take().map(|e| e.inbox);
    let battery = scenario.battery().charge_pct_at(0.0) / 100.0;
    if let Some(m) = exec.mmsched() {
        m.set_battery(battery);
    }
    let start = clock.now_nanos() + START_LEAD_NANOS;
    let mut inputs = Inputs::build_on(&scenario, &clock, start, config.seed, config.simulated)?;
    if let Some(conditions) = &config.conditions {
        inputs.apply_conditions(conditions, start);
    }
    platform_notes.extend(inputs.notes.iter().cloned());
    for n in &platform_notes {
        observer.status(n);
    }
    let sla_ms = Kind::ALL.map(|k| inputs.stream(k).map_or(f64::NAN, |s| s.sla_ms));
    // Cost priors from the device profile (measured, or the labelled reference) until
    // the run has measured its own costs.
    let profile = config.resolve_profile()?;
    platform_notes.push(format!("cost priors from {}", profile.source));

    let ingest = ingest_of(&scenario);
    let mut audio = inputs.mic.as_ref().map(|(_, s)| {
        AudioPath::new(
            &config.policy,
            s.packet_ms.unwrap_or(20.0).round().clamp(10.0, 60.0) as u32,
        )
    });
    if let Some(path) = &config.record_rtp {
        record_rtp(path, &scenario, &inputs, &mut audio)?;
    }
    let trace = trace_of(&config, &clock)?;
    let load = LoadGenerator::start(
        match config.simulated {
            true => LoadProfile::default(),
            false => LoadProfile::of(&scenario, config.duration_nanos),
        },
        clock.clone(),
    );
    #[cfg(target_os = "linux")]
    let power = (config.platform && config.scheduler == SchedulerKind::Mmsched).then(|| {
        use mmsched_runtime::platform::power::{CPU_SYSFS_ROOT, LinuxPower};
        let (p, status) = LinuxPower::new(clock.clone(), std::path::Path::new(CPU_SYSFS_ROOT));
        platform_notes.push(format!("power: {status}"));
        p
    });
    let general = scenario.device().workers.unwrap_or(2).max(1) as usize;
    let mut book = Book::new(
        &mut *exec,
        &*models,
        profile,
        &config.policy,
        config.mechanisms,
        config.effective_rung_mode(),
        general,
        start,
        own_slas(
            RunStats::new(HEALTH_WINDOW_NANOS, sla_ms).with_summary_window(config.window_nanos),
            &inputs,
        ),
        trace,
    );
    // A camera's standing reservation is booked for whole frames: OCR runs a frame's steps
    // in one dispatch there (for every scheduler alike).
    book.fuse_vision(inputs.camera.is_some());
    book.keep_records(config.job_records);
    let mut r = Run {
        end: start.saturating_add(config.duration_nanos),
        start,
        clock,
        models,
        exec,
        inputs,
        book,
        ingest,
        vision: VisionBranch::new(ImageRouter::new(&config.policy)),
        speech: SpeechBranch::new(audio),
        monitor: Monitor::new(
            HealthMonitor::new(&config.policy),
            start,
            super::signals::Signals::new(signals),
            #[cfg(target_os = "linux")]
            power,
        ),
        overhead_nanos: 0,
        meter: super::overhead::OverheadMeter::new(config.simulated),
        observer,
        inbox,
        config,
        notes: platform_notes,
    };
    r.monitor.next_report = start.saturating_add(r.config.report_every_nanos.unwrap_or(0));
    r.rebook_camera(start, false);
    r.main_loop();
    r.finish(load)
}

/// Clock alignment per stream of `scenario`, by stream name.
fn ingest_of(scenario: &mmsched_scenario::Scenario) -> Vec<(String, StreamIngest)> {
    scenario
        .streams()
        .iter()
        .map(|s| {
            let latency = (s.latency_ms.max(0.0) * 1e6) as Nanos;
            let config = AlignConfig {
                stamp_noise_nanos: s.stamp_noise() * 1e6,
                ..AlignConfig::default()
            };
            (s.name.clone(), StreamIngest::new(latency, config))
        })
        .collect()
}

/// `--record-rtp`: the microphone's packet arrivals into `path`; an error unless the
/// microphone is an RTP source.
fn record_rtp<C: Clock>(
    path: &std::path::Path,
    scenario: &mmsched_scenario::Scenario,
    inputs: &Inputs<C>,
    audio: &mut Option<AudioPath>,
) -> Result<(), RunError> {
    let rtp_mic = inputs.mic.as_ref().is_some_and(|(_, s)| {
        s.source
            .as_ref()
            .is_some_and(|src| src.kind == mmsched_scenario::SourceKind::Rtp)
    });
    match audio {
        Some(a) if rtp_mic => {
            a.record_arrivals(RtpRecorder::create(path, a.frame_nanos())?);
            Ok(())
        }
        _ => Err(RunError::NoRtpSource {
            scenario: scenario.name().to_string(),
        }),
    }
}

/// The run's trace file (none when `config` asks for none), dated by the wall clock.
fn trace_of<C: Clock>(config: &RunConfig, clock: &C) -> Result<TraceOut, RunError> {
    let mut metadata = std::collections::BTreeMap::new();
    metadata.insert("program".into(), serde_json::json!("mmsched run"));
    metadata.insert("scenario".into(), serde_json::json!(config.scenario.name()));
    metadata.insert(
        "scheduler".into(),
        serde_json::json!(config.scheduler.as_str()),
    );
    // The wall-clock time of the device clock's zero, so exported spans carry real dates.
    let start_unix_nanos = crate::trace_out::unix_nanos_now().saturating_sub(clock.now_nanos());
    TraceOut::create(
        config.trace_path.as_deref(),
        config.seed,
        start_unix_nanos,
        metadata,
        config.trace_rotation,
    )
}

impl<C: Clock + Clone + Send + 'static> Run<'_, C> {
    /// After the inputs stop: the drain, the last figures, the summary and the trace.
    fn finish(mut self, load: LoadGenerator) -> Result<RunOutcome, RunError> {
        let mut platform_notes = std::mem::take(&mut self.notes);
        let inputs_end = self.clock.now_nanos();
        if let Some(spent) = load.finish() {
            platform_notes.push(format!(
                "background load: {:.0} ms CPU demanded, {:.0} ms burnt",
                spent.demanded_nanos as f64 / 1e6,
                spent.burnt_nanos as f64 / 1e6
            ));
        }
        // Speech still open at the end is not transcribed: the inputs have stopped.
        if let Some(a) = &mut self.speech.audio {
            a.flush();
        }
        self.drain();
        self.book.close();
        if self.monitor.power_calls > 0 {
            // Leave the cores as they were found.
            let now = self.clock.now_nanos();
            self.power_hint(now, 100);
        }
        let elapsed = inputs_end.saturating_sub(self.start);
        platform_notes.extend(self.finish_notes());
        if let Some(recording) = self
            .speech
            .audio
            .as_mut()
            .and_then(AudioPath::finish_recording)
        {
            let (packets, path) = recording?;
            platform_notes.push(format!(
                "record-rtp: {packets} packet arrival(s) in {}",
                path.display()
            ));
        }
        let step_log = self
            .exec
            .mmsched()
            .map(|m| m.take_step_log())
            .unwrap_or_default();
        let jobs = std::mem::take(&mut self.book.records);
        let now = self.clock.now_nanos();
        let summary = self.summary_now(elapsed, now, platform_notes);
        let mut series = std::mem::take(&mut self.monitor.series);
        series.thin_ldti(20_000);
        let Run { book, exec, .. } = self;
        drop(exec);
        let trace_file = book.trace.finish();
        Ok(RunOutcome {
            summary,
            series,
            step_log,
            jobs,
            trace_file,
        })
    }
}

impl<C: Clock + Clone + Send + 'static> Run<'_, C> {
    /// The summary of the run so far: `elapsed` of inputs, its window at `now`, with
    /// `notes` on the platform.
    fn summary_now(&mut self, elapsed: Nanos, now: Nanos, notes: Vec<String>) -> RunSummary {
        let text = &self.book.text;
        let totals = Totals {
            elapsed_nanos: elapsed,
            importance: Kind::all()
                .into_iter()
                .map(|k| self.importance(k))
                .collect(),
            llm_tokens: text.tokens,
            llm_request_nanos: text.request_nanos,
            llm_ttft_ms: text.ttft_ms.clone(),
            llm_tpot_ms: text.tpot_ms.clone(),
            overhead_nanos: self.overhead_nanos,
            stale_answers: self.monitor.stale_answers,
            breaker_opened: self.monitor.breaker_opened,
            camera_scaled_nanos: self.monitor.camera_scaled_nanos,
            retransmit_requests: self.speech.nacks.requests(),
            recovered: self.speech.nacks.recovered_count(),
            platform: notes,
        };
        let mut summary = summary::build(
            &self.config,
            &self.book.stats,
            &self.monitor.health,
            &self.vision.router,
            self.speech.audio.as_ref(),
            &self.ingest,
            self.monitor.actions.clone(),
            &totals,
        );
        for kind in Kind::all() {
            let m = match kind {
                Kind::Vision => &mut summary.vision,
                Kind::Vad => &mut summary.vad,
                Kind::Asr => &mut summary.asr,
                Kind::Llm => &mut summary.llm.modality,
                Kind::Model(_) => match summary.models.get_mut(kind.as_str()) {
                    Some(m) => m,
                    None => continue,
                },
            };
            m.rung_counts = self.book.rung_counts[kind].clone();
        }
        summary.window = self.book.stats.window(now);
        summary.platform_signals = self.monitor.signals.summary();
        summary.decisions = self.book.decisions_summary(now);
        summary
    }

    /// Hands the observer the report so far when `--report-every` says it is due or a
    /// SIGHUP asked for it (the trace is flushed with it, so the files on disk agree).
    pub(super) fn report_if_due(&mut self, now: Nanos) {
        let asked = self
            .config
            .report_now
            .swap(false, std::sync::atomic::Ordering::Relaxed);
        let due = self
            .config
            .report_every_nanos
            .is_some_and(|_| now >= self.monitor.next_report);
        if !(asked || due) {
            return;
        }
        if let Some(every) = self.config.report_every_nanos {
            self.monitor.next_report = now + every.max(1_000_000_000);
        }
        self.book.trace.flush();
        let elapsed = now.min(self.end).saturating_sub(self.start);
        let summary = self.summary_now(elapsed, now, self.notes.clone());
        self.observer.report(&summary, &self.monitor.series);
    }

    /// What the run's end says about the scheduler's own cost, the platform's frequency
    /// requests and CPU pressure.
    fn finish_notes(&mut self) -> Vec<String> {
        let mut notes = Vec::new();
        if self.exec.worker_side_decisions() {
            notes.push(format!(
                "scheduler: {:.1} ms CPU submitting, collecting, gating, aligning and evaluating health, plus {:.1} ms wall on the workers choosing jobs",
                self.overhead_nanos as f64 / 1e6,
                self.exec.decision_nanos() as f64 / 1e6,
            ));
            self.overhead_nanos += self.exec.decision_nanos();
        } else {
            notes.push(format!(
                "scheduler: {:.1} ms CPU submitting, deciding, collecting, gating, aligning and evaluating health, of which {:.1} ms wall in decisions",
                self.overhead_nanos as f64 / 1e6,
                self.exec.decision_nanos() as f64 / 1e6,
            ));
        }
        if let Some(m) = self.exec.mmsched() {
            notes.extend(m.risk_boost_note());
            notes.extend(m.thread_grant_note());
        }
        notes.extend(self.monitor.signals.notes.iter().cloned());
        if let Some((n, why)) = &self.vision.refused {
            notes.push(format!(
                "camera: the scheduler refused its standing reservation {n} time(s), last: {why}"
            ));
        }
        let m = &self.monitor;
        if m.power_calls > 0 {
            notes.push(format!(
                "power: {} frequency request(s), {} over the S11 budget",
                m.power_calls, m.power_over_budget
            ));
        }
        let (n, sum, max) = m.pressure_pct;
        if n > 0 {
            notes.push(format!(
                "CPU pressure (PSI some avg10): mean {:.1} %, max {:.1} %",
                sum / n as f64,
                max
            ));
        }
        notes
    }
}

/// `stats` with the SLA of each model of the user's own that a stream feeds.
fn own_slas<C: Clock + Clone + Send + 'static>(
    stats: RunStats,
    inputs: &crate::inputs::Inputs<C>,
) -> RunStats {
    crate::classes::registered()
        .into_iter()
        .filter_map(|k| inputs.stream(k).map(|s| (k, s.sla_ms)))
        .fold(stats, |stats, (k, sla)| stats.with_sla(k, sla))
}
