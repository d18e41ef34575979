//! What one run is: the scenario, the policy, the scheduler and how long.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::Receiver;

use mmsched_backends::BackendError;
use mmsched_core::policy::Policy;
use mmsched_core::time::Nanos;
use mmsched_runtime::sched::SchedulerKind;
use mmsched_scenario::Scenario;

/// Everything one run needs.
#[derive(Debug)]
pub struct RunConfig {
    /// The scenario (streams, rates, SLAs, episodes).
    pub scenario: Scenario,
    /// The scheduling policy at the start (hot reloads arrive on `policy_updates`).
    pub policy: Policy,
    /// Which scheduler runs the jobs.
    pub scheduler: SchedulerKind,
    /// How long to feed inputs, in nanoseconds (jobs in flight then finish).
    pub duration_nanos: Nanos,
    /// Seed of every random choice (jitter, loss).
    pub seed: u64,
    /// Ask the OS for resource groups, real-time priority and pinning (mmsched only;
    /// refused requests are noted once and the run goes on without them).
    pub platform: bool,
    /// Write an mmtrace file of the run here.
    pub trace_path: Option<PathBuf>,
    /// Keep every decision of the mmsched scheduler for replay in the simulator.
    pub record_steps: bool,
    /// New policies to apply between decisions (from the HTTP API or a policy URL).
    pub policy_updates: Option<Receiver<PolicyUpdate>>,
    /// Set to stop early (Ctrl-C): the run ends as if its duration had passed.
    pub stop: Arc<AtomicBool>,
    /// Send every text request's own prompt. Off (the default), every other request asks
    /// about the latest transcript, which depends on the scheduler: a comparison
    /// (`bench e2e`) sets this so every scheduler sees the same prompts.
    pub fixed_prompts: bool,
    /// mmsched's own mechanisms, each of which can be switched off to measure what it is
    /// worth (`bench e2e --ablate`). The baselines have none of them.
    pub mechanisms: Mechanisms,
    /// The device latency profile the cost priors come from (see
    /// [`RunConfig::resolve_profile`]).
    pub profile: Option<PathBuf>,
    /// Requests from outside clients (the HTTP endpoints of `serve --models`, the
    /// library), booked beside the scenario's streams by the same book on the same
    /// executor.
    pub external: Option<External>,
    /// Models already loaded (shared with a server): the run loads none itself.
    pub engines: Option<crate::engines::Engines>,
    /// Every job at this rung whatever the scheduler (`bench e2e`'s degraded baseline);
    /// `None`: mmsched chooses per job (unless its rungs are ablated), a baseline runs the
    /// richest rung.
    pub rung_mode: Option<crate::book::RungMode>,
    /// Record the RTP microphone's packet arrivals into this file (`--record-rtp`), in the
    /// trace format `mmsched sim jitter --trace` replays.
    pub record_rtp: Option<PathBuf>,
    /// Keep a record of every job that ended ([`crate::RunOutcome::jobs`], what
    /// `bench e2e --bound` reads). Off by default: a process that runs for weeks keeps
    /// nothing per job once it is counted.
    pub job_records: bool,
    /// How the trace file rotates (by size, age and count of files kept).
    pub trace_rotation: crate::trace_out::Rotation,
    /// Hand the observer the report so far this often ([`crate::run::Observer::report`]):
    /// `--report-every SECS` of a long `run` and of `serve`. `None`: only at the end.
    pub report_every_nanos: Option<Nanos>,
    /// Set (by SIGHUP) to hand the observer the report so far at the next pass of the loop;
    /// the loop clears it.
    pub report_now: Arc<AtomicBool>,
    /// The span of the summary's `window` (the last minutes), nanoseconds.
    pub window_nanos: Nanos,
    /// A simulated run ([`crate::simulate`]): the scenario's background load acts through
    /// the step costs instead of a thread burning CPU beside the workers, and the
    /// machine's own figures (CPU pressure) are not read, being no figures of the
    /// simulated device.
    pub simulated: bool,
    /// The device's conditions over the run's time (a simulated soak's environment: cost
    /// multiplier, link loss, battery; see [`crate::conditions`]). `None`: the scenario's
    /// own, unchanging.
    pub conditions: Option<crate::conditions::ConditionSchedule>,
    /// A device profile already read (a soak reads it once for its many runs): it is the
    /// run's profile, before [`RunConfig::profile`] and the rest of the choice.
    pub device_profile: Option<mmsched_world::profile::Profile>,
}

/// Where a run takes outside clients' requests from, and the clock their deadlines are on
/// (the run's device clock: the [`crate::client::Client`] of the inbox reads the same one).
#[derive(Debug)]
pub struct External {
    /// What the clients send.
    pub inbox: Receiver<crate::client::Inbound>,
    /// The run's device clock.
    pub clock: crate::inputs::Device,
}

/// A policy to apply between two decisions, with its ETag when it came from the policy
/// API (the run reports it as applied: `/api/v1/status`'s `policy.applied_etag`).
#[derive(Debug, Clone)]
pub struct PolicyUpdate {
    /// The policy.
    pub policy: Policy,
    /// Its ETag in the policy store, if any.
    pub etag: Option<String>,
}

impl From<Policy> for PolicyUpdate {
    fn from(policy: Policy) -> Self {
        Self { policy, etag: None }
    }
}

/// mmsched's mechanisms beyond what a baseline does (all on by default).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mechanisms {
    /// Admission by score with shedding under overload.
    pub admission: bool,
    /// The camera's standing reservation on its worker.
    pub standing_reservations: bool,
    /// The health loop's actions (camera rate, retransmission, circuit breaker).
    pub health_actions: bool,
    /// Text generation yields to the scheduler at every token (off: a request holds its
    /// worker from its first step to its last).
    pub token_preemption: bool,
    /// The router's information gates (dark and blurred frames skipped).
    pub routing: bool,
    /// A step at risk of missing its deadline runs with its worker's resource group at a
    /// raised CPU weight (with resource groups only).
    pub risk_boost: bool,
    /// A lone step may be granted every core while nothing else is queued or booked
    /// (`mmsched_runtime::sched::exec::thread_grant`; `MMSCHED_THREAD_GRANT=1` turns it off
    /// for every run of the process).
    pub thread_grants: bool,
    /// Each OCR and speech job runs at a quality rung the scheduler chooses (off: every
    /// job at the richest rung, as the baselines run).
    pub rungs: bool,
    /// The health remedies that keep work from the models (the camera's halved rate, the
    /// circuit breaker) act only while the run's own work exceeds its lanes
    /// ([`mmsched_core::health::OwnLoad`]), not when a neighbour's load slows its steps
    /// (off: they act on the index alone; `MMSCHED_OWN_OVERLOAD=0` turns it off for every
    /// run of the process).
    pub own_overload: bool,
    /// Rungs and admission chosen by expected correct results on time, less what a job's
    /// time costs the work behind it (off: the richest rung whose P95 cost fits, the rule
    /// before).
    pub expected_value: bool,
    /// A job no rung is worth running still runs when its cost has not been measured on
    /// this device and the device has room (off: the verdict of the priors stands).
    pub exploration: bool,
    /// How many lines an OCR job reads is decided after its detection (off: the rung's
    /// line limit, set at admission).
    pub lines_after_detection: bool,
    /// Cheaper rungs are compared with the richest on a bounded share of jobs while the
    /// device is idle, and their chance to be right estimated from the comparisons (off:
    /// the profile's scores, or one in two).
    pub shadows: bool,
    /// Admission counts the steps running now, which cannot be preempted, in a job's
    /// start, and decides again by expected value when the scheduling core's
    /// high-percentile admission sheds a job's first step as it comes to run (off: the
    /// core's verdict stands).
    pub running_steps: bool,
    /// The expected value of a rung counts what its time costs the inputs still to come
    /// from the device's own streams, not only the admitted work (off: the admitted work
    /// alone).
    pub inputs_to_come: bool,
    /// A step of a job in steps other than text (a transcription's, OCR's unfused) is due
    /// when the rest of the job after it still fits before the job's deadline (off: every
    /// step carries the job's deadline).
    pub step_deadlines: bool,
}

impl Default for Mechanisms {
    fn default() -> Self {
        Self {
            admission: true,
            standing_reservations: true,
            health_actions: true,
            token_preemption: true,
            routing: true,
            risk_boost: true,
            thread_grants: true,
            rungs: true,
            own_overload: true,
            expected_value: true,
            exploration: true,
            lines_after_detection: true,
            shadows: true,
            running_steps: true,
            inputs_to_come: true,
            step_deadlines: true,
        }
    }
}

impl Mechanisms {
    /// The mechanisms on in both `self` and `other`.
    pub fn and(self, other: &Mechanisms) -> Mechanisms {
        Mechanisms {
            admission: self.admission && other.admission,
            standing_reservations: self.standing_reservations && other.standing_reservations,
            health_actions: self.health_actions && other.health_actions,
            token_preemption: self.token_preemption && other.token_preemption,
            routing: self.routing && other.routing,
            risk_boost: self.risk_boost && other.risk_boost,
            thread_grants: self.thread_grants && other.thread_grants,
            rungs: self.rungs && other.rungs,
            own_overload: self.own_overload && other.own_overload,
            expected_value: self.expected_value && other.expected_value,
            exploration: self.exploration && other.exploration,
            lines_after_detection: self.lines_after_detection && other.lines_after_detection,
            shadows: self.shadows && other.shadows,
            running_steps: self.running_steps && other.running_steps,
            inputs_to_come: self.inputs_to_come && other.inputs_to_come,
            step_deadlines: self.step_deadlines && other.step_deadlines,
        }
    }

    /// The names of `bench e2e --ablate`, in order, each with the set that has only that
    /// mechanism off.
    pub fn ablations() -> [(&'static str, Mechanisms); 16] {
        let all = Mechanisms::default();
        [
            (
                "no-admission",
                Mechanisms {
                    admission: false,
                    ..all
                },
            ),
            (
                "no-reservations",
                Mechanisms {
                    standing_reservations: false,
                    ..all
                },
            ),
            (
                "no-health-actions",
                Mechanisms {
                    health_actions: false,
                    ..all
                },
            ),
            (
                "no-token-preemption",
                Mechanisms {
                    token_preemption: false,
                    ..all
                },
            ),
            (
                "no-routing",
                Mechanisms {
                    routing: false,
                    ..all
                },
            ),
            (
                "no-risk-boost",
                Mechanisms {
                    risk_boost: false,
                    ..all
                },
            ),
            (
                "no-thread-grants",
                Mechanisms {
                    thread_grants: false,
                    ..all
                },
            ),
            (
                "no-rungs",
                Mechanisms {
                    rungs: false,
                    ..all
                },
            ),
            (
                "no-own-overload",
                Mechanisms {
                    own_overload: false,
                    ..all
                },
            ),
            (
                "no-expected-value",
                Mechanisms {
                    expected_value: false,
                    ..all
                },
            ),
            (
                "no-exploration",
                Mechanisms {
                    exploration: false,
                    ..all
                },
            ),
            (
                "no-lines-after-detection",
                Mechanisms {
                    lines_after_detection: false,
                    ..all
                },
            ),
            (
                "no-shadows",
                Mechanisms {
                    shadows: false,
                    ..all
                },
            ),
            (
                "no-running-steps",
                Mechanisms {
                    running_steps: false,
                    ..all
                },
            ),
            (
                "no-inputs-to-come",
                Mechanisms {
                    inputs_to_come: false,
                    ..all
                },
            ),
            (
                "no-step-deadlines",
                Mechanisms {
                    step_deadlines: false,
                    ..all
                },
            ),
        ]
    }
}

impl RunConfig {
    /// A run of `scenario` for its own duration and seed under `scheduler` with `policy`.
    pub fn new(scenario: Scenario, policy: Policy, scheduler: SchedulerKind) -> Self {
        let duration_nanos = (scenario.duration_s().max(0.0) * 1e9) as Nanos;
        let seed = scenario.seed();
        Self {
            scenario,
            policy,
            scheduler,
            duration_nanos,
            seed,
            platform: true,
            trace_path: None,
            record_steps: false,
            policy_updates: None,
            stop: Arc::new(AtomicBool::new(false)),
            fixed_prompts: false,
            mechanisms: Mechanisms::default(),
            profile: None,
            external: None,
            engines: None,
            rung_mode: None,
            record_rtp: None,
            job_records: false,
            trace_rotation: crate::trace_out::Rotation::default(),
            report_every_nanos: None,
            report_now: Arc::new(AtomicBool::new(false)),
            window_nanos: crate::window::DEFAULT_WINDOW_NANOS,
            simulated: false,
            conditions: None,
            device_profile: None,
        }
    }

    /// How the run's jobs get their quality rungs.
    pub fn effective_rung_mode(&self) -> crate::book::RungMode {
        use crate::book::RungMode;
        match self.rung_mode {
            Some(m) => m,
            None if self.scheduler == SchedulerKind::Mmsched && self.mechanisms.rungs => {
                if self.mechanisms.expected_value {
                    RungMode::Adaptive
                } else {
                    RungMode::Fitting
                }
            }
            None => RungMode::Richest,
        }
    }

    /// The device latency profile of this run: [`RunConfig::profile`], else the scenario's
    /// `[device] profile`, else `$MMSCHED_HOME/profile.json` if measured, else the shipped
    /// reference — the same choice `mmsched sim` makes.
    pub fn resolve_profile(&self) -> Result<mmsched_world::profile::Profile, RunError> {
        if let Some(p) = &self.device_profile {
            return Ok(p.clone());
        }
        let scenario_file = self.scenario.device().profile.as_deref().map(PathBuf::from);
        let explicit = self.profile.clone().or(scenario_file);
        mmsched_world::profile::Profile::resolve(
            explicit.as_deref(),
            Some(&mmsched_backends::paths::mmsched_home()),
        )
        .map_err(|source| RunError::Profile { source })
    }
}

/// Why a run could not start or finish.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// A model could not be loaded (missing files say which command fetches them).
    #[error("cannot load the {model} model")]
    Model {
        /// Which model.
        model: &'static str,
        /// Why.
        source: BackendError,
    },
    /// A model of the user's own cannot have a class of its own (its name).
    #[error("model `{name}` of yours cannot run")]
    OwnModelClass {
        /// The name it was declared with.
        name: String,
        /// Why.
        source: crate::classes::ClassError,
    },
    /// One rung of a model of the user's own cannot run (its file or size does not fit).
    #[error(
        "model `{name}`, rung `{rung}` cannot run: its `file` and `size` must fit the model's inputs (see docs/own-models.md)"
    )]
    OwnModelRung {
        /// The model.
        name: String,
        /// The rung.
        rung: String,
        /// Why (boxed: a rare error keeps `RunError` small).
        source: Box<BackendError>,
    },
    /// A scenario's `image` or `classes` table of a model of the user's own is not one.
    #[error(
        "model `{name}`: its `{field}` table is not understood (see docs/own-models.md for its keys)"
    )]
    OwnModelSpec {
        /// The model.
        name: String,
        /// `image`, `classes` or `detections`.
        field: &'static str,
        /// What is wrong in it.
        source: serde_json::Error,
    },
    /// The scenario asks for something the runtime cannot build.
    #[error("scenario {scenario}: {reason}")]
    Scenario {
        /// Its name.
        scenario: String,
        /// What is wrong and how to fix it.
        reason: String,
    },
    /// A stream's source could not be opened.
    #[error("scenario {scenario}: stream {stream}")]
    Source {
        /// The scenario's name.
        scenario: String,
        /// The stream's name.
        stream: String,
        /// What could not be opened, and why (boxed: the sources' errors are large).
        #[source]
        source: Box<crate::source_error::SourceError>,
    },
    /// The scheduler could not be set up.
    #[error("cannot set up the scheduler")]
    Scheduler {
        /// What the scheduling core refused.
        #[source]
        source: mmsched_core::scheduler::SchedulerError,
    },
    /// The policy with the router's gates off (`--no-routing`) does not validate.
    #[error("cannot turn the router's gates off in the policy")]
    RoutingOff {
        /// The policy's fields that do not validate.
        #[source]
        source: mmsched_core::policy::PolicyErrors,
    },
    /// The runtime's own thread could not be started.
    #[error("cannot start the runtime's thread: free some memory or raise the thread limit")]
    Thread {
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The runtime's thread panicked: its run has no outcome.
    #[error("the runtime's thread stopped with a panic: its message is on stderr")]
    Panicked,
    /// The runtime was stopped before.
    #[error("the runtime was already stopped")]
    Stopped,
    /// A scheduler the simulator cannot run.
    #[error(
        "the {scheduler} scheduler is not simulated (its threads share the cores by the OS's time slicing, which the simulator's lanes do not model): simulate mmsched, fifo or static-priority, or measure it with `mmsched run` / `bench e2e`"
    )]
    NotSimulated {
        /// The scheduler.
        scheduler: &'static str,
    },
    /// The device latency profile could not be read.
    #[error("cannot use the device latency profile")]
    Profile {
        /// Why.
        #[source]
        source: mmsched_world::profile::ProfileError,
    },
    /// Writing the trace failed.
    #[error("cannot write the trace file {}", path.display())]
    Trace {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Writing the RTP packet trace failed.
    #[error(
        "cannot write the RTP packet trace {}: choose a writable path for --record-rtp",
        path.display()
    )]
    RecordRtp {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// `--record-rtp` without an RTP microphone.
    #[error(
        "--record-rtp records an RTP microphone, and scenario {scenario} has none: give its audio stream source = {{ kind = \"rtp\", port = … }}"
    )]
    NoRtpSource {
        /// The scenario.
        scenario: String,
    },
}
