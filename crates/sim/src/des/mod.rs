//! The discrete-event simulator: a scenario's streams produce jobs in virtual time, the
//! **real** [`mmsched_core::scheduler::Scheduler`] decides (admit / shed / prune / start on
//! a lane in reserved slots), laid out by the runtime's own [`Layout`](mmsched_core::layout::Layout) (general lanes plus
//! the VAD-only audio lane, the camera's standing reservation), and the **real** health
//! controller ([`crate::health_loop`]) evaluates at the policy's rate and switches the
//! runtime's remedies. The simulator *models* execution: a started job finishes after a
//! cost drawn from the device latency profile. That modelled execution (and the sensors
//! and links) is the only thing simulated; every decision is the core's.
//!
//! Jobs per stream, as `mmsched run` makes them:
//! - camera: one `vision` job per frame; frames inside a `dark` or `blur` episode are
//!   skipped by the image gate with the episode's `fraction`; lost frames never arrive;
//! - audio: one `vad` job per 32 ms chunk of received audio (lost packets are concealed,
//!   the chunk still runs), and one `asr` job per utterance: the run's microphone plays a
//!   10 s recorded utterance and 4 s of silence in a loop, and the speech gate closes the
//!   utterance 0.8 s into the silence;
//! - text: one `llm` request of `tokens_per_request` steps, a token each, booked as the
//!   runtime's book of jobs books it, as a [`Chain`](mmsched_core::steps::Chain): the next
//!   step competes when the previous finishes, due when the steps after it still fit
//!   before the request's deadline, committed once a step has run (admission never sheds
//!   it); the request keeps its place: its first step, when shed, competes again every
//!   [`RETRY_NANOS`](mmsched_core::steps::RETRY_NANOS) until the deadline (once the
//!   inputs stop, a shed step ends the request); counted once per request;
//! - imu: no model job (its samples only feed alignment).
//!
//! A request waits in arrival order for a place of its model
//! ([`Places`](mmsched_core::places::Places), as the runtime's book of jobs keeps them) as
//! `mmsched run` loads the models: an OCR pipeline per worker, one VAD, one Whisper and one
//! text session; it holds its place until it ends.
//!
//! Deadline of a job: its release (arrival on the device after pipeline latency and
//! jitter) plus the stream's `sla_ms`; for `asr`, plus the utterance's length as well.
//!
//! Remedies (when the health loop acts): *camera scaled* drops every second frame;
//! *retransmit* re-requests audio packets lost on the link (not those lost in a Wi-Fi
//! outage), a copy arriving one round trip (twice the stream latency) later with the link's
//! loss probability; *breaker open* skips the heaviest branch's jobs (answered from cache,
//! marked stale, with *use cache*).
//!
//! Files, one job each: `setup.rs` a run's state and set-up; `events.rs` the timeline and
//! the loop over its events (and the health loop's evaluations); `streams.rs` the
//! scenario's streams and what a sample becomes on a tick; `requests.rs` booked requests
//! and their steps; `decide.rs` the core's decisions carried out; `report.rs` the report.

mod decide;
mod events;
mod report;
mod requests;
mod setup;
mod streams;

pub use report::{ClassReport, DesReport};

use mmsched_core::policy::Policy;
use mmsched_core::time::Nanos;
use mmsched_scenario::{ModelKind, Scenario, StreamKind};

use crate::health_loop::HealthLoop;
use mmsched_world::load::LoadProfile;
use mmsched_world::mic::SpeechLoop;
use mmsched_world::profile::{ModelLatency, Profile, ProfileError};
use setup::SimRun;

/// Conditions of one simulated run (the soak changes them window by window).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Conditions {
    /// Multiplies every drawn job cost (throttling, background load, low power, wear).
    pub cost_multiplier: f64,
    /// Extra loss on every networked stream during link outages, percent (not
    /// recoverable: a retransmission request sent into an outage is lost too).
    pub outage_loss_pct: f64,
    /// Extra random loss on every networked stream, percent (recoverable).
    pub random_loss_pct: f64,
    /// Battery fraction 0 … 1.
    pub battery_fraction: f64,
    /// Scenario time at the start of the run, seconds (which episodes are active).
    pub start_s: f64,
}

impl Default for Conditions {
    fn default() -> Self {
        Self {
            cost_multiplier: 1.0,
            outage_loss_pct: 0.0,
            random_loss_pct: 0.0,
            battery_fraction: 1.0,
            start_s: 0.0,
        }
    }
}

/// Everything a run needs besides its conditions.
pub struct Simulator<'a> {
    scenario: &'a Scenario,
    classes: Vec<(String, ModelLatency)>,
    policy: Policy,
    /// The scenario's background load, sharing the cores with the workers.
    load: LoadProfile,
    /// The microphone's talk spurts.
    speech: SpeechLoop,
}

impl std::fmt::Debug for Simulator<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Simulator")
            .field("scenario", &self.scenario.name())
            .field("classes", &self.classes)
            .finish()
    }
}

impl<'a> Simulator<'a> {
    /// A simulator for `scenario`, with job costs from `profile` (models with a `cost_ms`
    /// in the scenario use that as their median instead).
    pub fn new(
        scenario: &'a Scenario,
        profile: &Profile,
        policy: Policy,
    ) -> Result<Self, ProfileError> {
        let mut classes = Vec::new();
        for kind in [
            ModelKind::Vision,
            ModelKind::Vad,
            ModelKind::Asr,
            ModelKind::Llm,
        ] {
            if !scenario.models().iter().any(|m| m.kind == kind) {
                continue;
            }
            let override_ms = scenario
                .models()
                .iter()
                .find(|m| m.kind == kind && m.cost_ms.is_some())
                .and_then(|m| m.cost_ms);
            let lat = match override_ms {
                Some(ms) => ModelLatency::from_median_ms(ms),
                None => profile.latency(kind.as_str())?,
            };
            classes.push((kind.as_str().to_string(), lat));
        }
        // Each model of your own is a class of its own, named as the model: its `cost_ms`,
        // else its job cost in the profile (`mmsched profile --model` writes it).
        for m in scenario
            .models()
            .iter()
            .filter(|m| m.kind == ModelKind::Onnx)
        {
            let lat = match m.cost_ms {
                Some(ms) => ModelLatency::from_median_ms(ms),
                None => profile.latency(&m.name)?,
            };
            classes.push((m.name.clone(), lat));
        }
        Ok(Self {
            scenario,
            classes,
            policy,
            // Spikes without an end last as long as any run.
            load: LoadProfile::of(scenario, Nanos::MAX),
            speech: SpeechLoop::default(),
        })
    }

    /// The microphone's talk spurts (the generated ones by default; give the recording's
    /// when the run's microphone plays a recording).
    pub fn with_speech(mut self, speech: SpeechLoop) -> Self {
        self.speech = speech;
        self
    }

    /// The job classes and their latencies, in class order.
    pub fn classes(&self) -> &[(String, ModelLatency)] {
        &self.classes
    }

    fn class_of(&self, kind: ModelKind) -> Option<usize> {
        self.classes.iter().position(|(n, _)| n == kind.as_str())
    }

    /// The class of the scenario's model `m` (a model of your own's is named as it).
    fn class_of_model(&self, m: &mmsched_scenario::Model) -> Option<usize> {
        match m.kind {
            ModelKind::Onnx => self.classes.iter().position(|(n, _)| *n == m.name),
            kind => self.class_of(kind),
        }
    }

    /// Runs `duration_nanos` of simulated time. With `health`, the health loop evaluates
    /// at its rate and, when it acts, its remedies apply. With `trace`, every event and
    /// decision is appended as one line (the golden-trace format).
    pub fn run(
        &self,
        seed: u64,
        duration_nanos: Nanos,
        cond: &Conditions,
        health: Option<&mut HealthLoop>,
        trace: Option<&mut Vec<String>>,
    ) -> DesReport {
        let Some(mut run) = SimRun::new(self, seed, duration_nanos, cond, health, trace) else {
            return DesReport::default();
        };
        run.run_to_end();
        run.into_report()
    }

    /// An empty report per class, with the class's nominal cost and its stream's SLA.
    fn empty_reports(&self) -> Vec<ClassReport> {
        let sla_of = |kind: StreamKind| {
            self.scenario
                .streams()
                .iter()
                .find(|s| s.kind == kind)
                .map_or(f64::NAN, |s| s.sla_ms)
        };
        self.classes
            .iter()
            .map(|(n, l)| ClassReport {
                nominal_ms: l.p50_ms,
                sla_ms: match n.as_str() {
                    "vision" => sla_of(StreamKind::Camera),
                    "vad" | "asr" => sla_of(StreamKind::Audio),
                    _ => sla_of(StreamKind::Text),
                },
                ..ClassReport::default()
            })
            .collect()
    }

    /// The cost the scheduler is told a job of class `c` will take: the P95 of its cost
    /// distribution under `cond`, which is what the runtime's cost model converges to.
    fn predicted_nanos(&self, c: usize, cond: &Conditions) -> Nanos {
        (self.classes[c].1.p95_nanos() as f64 * cond.cost_multiplier) as Nanos
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn sim_for(name: &str) -> (Scenario, Profile) {
        (Scenario::load(name).expect("shipped"), Profile::reference())
    }

    #[test]
    fn a_model_of_your_own_on_the_camera_is_a_class_that_sees_every_frame() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../scenarios/documents.toml"
        );
        let (sc, p) = sim_for(path);
        let sim = Simulator::new(&sc, &p, Policy::default()).expect("cost_ms covers it");
        let r = sim.run(5, 10_000_000_000, &Conditions::default(), None, None);
        let (own, vision) = (&r.classes["orientation"], &r.classes["vision"]);
        // 3 fps for 10 s; OCR's gate skips none of the generated frames here.
        assert_eq!(own.offered, vision.offered, "{r:?}");
        assert!(own.offered >= 28, "{own:?}");
        // Its median is the scenario's `cost_ms` (3.2 ms), far under OCR's.
        assert!(own.p50_ms < vision.p50_ms, "{own:?}");
        // Without `cost_ms` nor a job cost in the profile, the simulator says what is missing.
        let text = std::fs::read_to_string(path)
            .expect("scenario")
            .replace("cost_ms = 3.2\n", "");
        let bare = Scenario::from_toml(&text, "documents.toml").expect("scenario");
        let err = Simulator::new(&bare, &p, Policy::default()).expect_err("no cost");
        assert!(err.to_string().contains("`orientation`"), "{err}");
    }

    #[test]
    fn runs_the_default_scenario_deterministically() {
        let (sc, p) = sim_for("ar-glasses");
        let sim = Simulator::new(&sc, &p, Policy::default()).expect("profile covers it");
        let a = sim.run(7, 20_000_000_000, &Conditions::default(), None, None);
        let b = sim.run(7, 20_000_000_000, &Conditions::default(), None, None);
        assert_eq!(a, b);
        assert!(a.simulated);
        let v = &a.classes["vision"];
        assert!(v.completed > 50, "{a:?}");
        assert!(v.p99_ms >= v.p50_ms && v.p50_ms > 50.0, "{v:?}");
        assert!(a.on_time_ratio() > 0.8, "{a:?}");
        // 32 ms chunks: about 31 VAD jobs a second.
        let vad = a.classes["vad"].jobs as f64 / 20.0;
        assert!((vad - 31.25).abs() < 1.0, "{vad}");
    }

    #[test]
    fn heavier_costs_raise_latency() {
        let (sc, p) = sim_for("car");
        let sim = Simulator::new(&sc, &p, Policy::default()).expect("profile covers it");
        let light = sim.run(3, 30_000_000_000, &Conditions::default(), None, None);
        let heavy = sim.run(
            3,
            30_000_000_000,
            &Conditions {
                cost_multiplier: 1.6,
                ..Conditions::default()
            },
            None,
            None,
        );
        assert!(heavy.classes["vision"].p99_ms > light.classes["vision"].p99_ms);
    }

    #[test]
    fn an_overloaded_device_triggers_the_remedies_and_they_act() {
        let (sc, p) = sim_for("ar-glasses");
        let policy = Policy::default();
        let sim = Simulator::new(&sc, &p, policy.clone()).expect("profile covers it");
        let cond = Conditions {
            cost_multiplier: 4.0,
            ..Conditions::default()
        };
        let mut watching = HealthLoop::new(policy.ldti(), false);
        let mut acting = HealthLoop::new(policy.ldti(), true);
        let off = sim.run(5, 20_000_000_000, &cond, Some(&mut watching), None);
        let on = sim.run(5, 20_000_000_000, &cond, Some(&mut acting), None);
        assert!(watching.ldti_max >= 0.25, "{}", watching.ldti_max);
        assert!(
            watching.changes.is_empty(),
            "a watching loop records no actions"
        );
        assert!(!acting.changes.is_empty());
        assert_eq!(off.classes["vision"].decimated, 0);
        assert!(on.classes["vision"].decimated > 0, "{on:?}");
        // Every input is accounted for, as in a real run's summary.
        for report in [&off, &on] {
            for (k, r) in &report.classes {
                assert_eq!(
                    r.offered,
                    r.on_time + r.late + r.shed + r.skipped + r.dropped + r.unfinished + r.failed,
                    "{k}: {r:?}"
                );
            }
        }
        assert_eq!(
            on.classes["vision"].dropped,
            on.classes["vision"].decimated + on.classes["vision"].broken
        );
    }

    /// How long the crowded run lasts, µs (the trace's unit).
    const CROWDED_RUN_US: u64 = 30_000_000;

    /// Two workers, a camera that needs more than both, and short text requests that
    /// matter less: admission sheds some of their first steps.
    fn crowded_text_trace() -> (DesReport, Vec<String>) {
        let sc = Scenario::from_toml(
            r#"
            name = "crowded"
            [device]
            workers = 2
            [[models]]
            name = "ocr"
            kind = "vision"
            cost_ms = 120
            [[models]]
            name = "llm"
            kind = "llm"
            cost_ms = 40
            [[streams]]
            name = "camera"
            kind = "camera"
            models = ["ocr"]
            fps = 20
            sla_ms = 400
            importance = 0.9
            [[streams]]
            name = "prompts"
            kind = "text"
            models = ["llm"]
            requests_per_min = 120
            tokens_per_request = 2
            sla_ms = 400
            importance = 0.1
            "#,
            "crowded.toml",
        )
        .expect("valid scenario");
        let sim = Simulator::new(&sc, &Profile::reference(), Policy::default()).expect("costs");
        let mut trace = Vec::new();
        let r = sim.run(
            11,
            CROWDED_RUN_US * 1000,
            &Conditions::default(),
            None,
            Some(&mut trace),
        );
        (r, trace)
    }

    #[test]
    fn a_shed_text_step_competes_again_every_20_ms_until_its_deadline() {
        let (report, trace) = crowded_text_trace();
        let fields =
            |l: &str| -> Vec<String> { l.split_whitespace().map(str::to_string).collect() };
        let value = |f: &[String], key: &str| -> u64 {
            f.iter()
                .find_map(|x| x.strip_prefix(key))
                .and_then(|v| v.parse().ok())
                .expect("field")
        };
        // Each step's class and request deadline, from its arrival.
        let mut arrivals = BTreeMap::new();
        for f in trace.iter().map(|l| fields(l)).filter(|f| f[1] == "arrive") {
            let due = value(&f, "deadline_us=");
            arrivals.insert(value(&f, "job="), (f[3].clone(), due));
        }
        let (mut retried, mut shed_at_deadline) = (0, 0);
        for (i, f) in trace.iter().map(|l| fields(l)).enumerate() {
            if f[1] != "defer" {
                continue;
            }
            let (at, job, retry) = (
                f[0].parse::<u64>().expect("time"),
                value(&f, "job="),
                value(&f, "retry_us="),
            );
            let (class, due) = arrivals[&job].clone();
            assert_eq!(class, "class=llm", "only text requests retry: {f:?}");
            assert_eq!(retry, at + 20_000, "a retry 20 ms later: {f:?}");
            if retry >= CROWDED_RUN_US {
                // The inputs have stopped: the request stays unfinished.
                continue;
            }
            // What became of it: a new step of the same request at its retry, or shed at
            // its deadline when that came first.
            let want = if retry < due {
                retried += 1;
                format!("arrive at {retry} due {due}")
            } else {
                shed_at_deadline += 1;
                format!("shed job={job} at {due}")
            };
            let found = trace[i + 1..].iter().map(|l| fields(l)).any(|g| {
                let t = g[0].parse::<u64>().expect("time");
                match g[1].as_str() {
                    "arrive" => want == format!("arrive at {t} due {}", value(&g, "deadline_us=")),
                    "shed" => want == format!("{} at {t}", g[1..].join(" ")),
                    _ => false,
                }
            });
            assert!(found, "line {i}: {f:?}: expected {want}");
        }
        assert!(
            retried > 0 && shed_at_deadline > 0,
            "the scenario sheds text steps that retry ({retried}) and that run out of time ({shed_at_deadline})"
        );
        let llm = &report.classes["llm"];
        assert_eq!(
            llm.offered,
            llm.on_time + llm.late + llm.shed + llm.unfinished,
            "{llm:?}"
        );
    }

    #[test]
    fn requests_beyond_a_models_places_wait_for_one() {
        // `mmsched run`'s models on two workers: two OCR pipelines, one text session.
        let (report, trace) = crowded_text_trace();
        let mut class = BTreeMap::new();
        let mut frames_in = 0;
        let mut text_steps: BTreeMap<String, (u32, bool)> = BTreeMap::new();
        for l in &trace {
            let f: Vec<&str> = l.split_whitespace().collect();
            let job = f[2];
            match f[1] {
                "arrive" => {
                    class.insert(job.to_string(), (f[3], f[4].to_string()));
                    if f[3] == "class=vision" {
                        frames_in += 1;
                        assert!(frames_in <= 2, "a third frame in the scheduler: {l}");
                    } else if !text_steps.contains_key(f[4]) {
                        // A new request: every earlier one made its 2 tokens or was shed.
                        for (due, (made, shed)) in &text_steps {
                            assert!(*made == 2 || *shed, "{l} before {due} ended");
                        }
                        text_steps.insert(f[4].to_string(), (0, false));
                    }
                }
                "finish" | "shed" => {
                    let (c, due) = &class[job];
                    if *c == "class=vision" {
                        frames_in -= 1;
                    } else if let Some(t) = text_steps.get_mut(due) {
                        t.0 += u32::from(f[1] == "finish");
                        t.1 |= f[1] == "shed";
                    }
                }
                _ => {}
            }
        }
        // Frames waited for a pipeline: more were offered than could ever be in flight.
        assert!(report.classes["vision"].offered > 500, "{report:?}");
        assert!(text_steps.len() > 50, "{}", text_steps.len());
    }
}
