//! The run loop in virtual time: generated sensors, fake models that answer at once, and
//! mmsched's executor on virtual lanes where each step takes a set number of milliseconds.
//! No model is loaded and nothing sleeps; a 20 s run takes well under a second of
//! decisions, and the same seed gives the same run.

use mmsched_core::policy::Policy;
use mmsched_core::time::Nanos;
use mmsched_report::{ModalitySummary, RunSummary};
use mmsched_runtime::sched::SchedulerKind;
use mmsched_runtime::sched::virtual_time::VirtualClock;
use mmsched_scenario::Scenario;

use mmsched_runtime::platform::procfs::{MachineCpu, SchedStat};
use mmsched_runtime::platform::signals::{CpuSnapshot, SignalSource};

use super::{Quiet, RunParts, run_with};
use crate::config::{Mechanisms, RunConfig};
use crate::inputs::DEVICE_EPOCH_NANOS;
use crate::models::fake::{Costs, FakeModels, OCR_BROKEN, QUICK, virtual_mmsched};

const MS: Nanos = 1_000_000;

/// The OCR, voice-activity and speech models of the virtual scenarios.
const VISION_AND_SPEECH_MODELS: &str = r#"[[models]]
name = "ocr"
kind = "vision"
file = "models/ppocr-v4/det.onnx"

[[models]]
name = "vad"
kind = "vad"
file = "models/silero-vad/silero_vad.onnx"

[[models]]
name = "asr"
kind = "asr"
file = "models/whisper-tiny.en/model.safetensors"
"#;

/// A scenario of `duration_s` with a camera, a microphone and text requests (`tokens`
/// per answer), all generated.
fn scenario(duration_s: u32, camera_fps: u32, requests_per_min: u32, tokens: u32) -> Scenario {
    scenario_on(1, duration_s, camera_fps, requests_per_min, tokens)
}

/// [`scenario`] on `workers` general lanes.
fn scenario_on(
    workers: u32,
    duration_s: u32,
    camera_fps: u32,
    requests_per_min: u32,
    tokens: u32,
) -> Scenario {
    let toml = format!(
        r#"
version = 1
name = "virtual"
duration_s = {duration_s}
seed = 7

[device]
workers = {workers}

{VISION_AND_SPEECH_MODELS}
[[models]]
name = "llm"
kind = "llm"
file = "models/gemma3-270m/gemma-3-270m-q4_k_m.gguf"

[[streams]]
name = "camera"
kind = "camera"
models = ["ocr"]
fps = {camera_fps}
sla_ms = 200
importance = 0.8

[[streams]]
name = "mic"
kind = "audio"
models = ["vad", "asr"]
packet_ms = 20
sla_ms = 60
importance = 0.9

[[streams]]
name = "prompts"
kind = "text"
models = ["llm"]
requests_per_min = {requests_per_min}
tokens_per_request = {tokens}
sla_ms = 30000
importance = 0.3
"#
    );
    Scenario::from_toml(&toml, "virtual.toml").expect("scenario")
}

/// Runs `scenario` under mmsched in virtual time with `costs` and `mechanisms`.
fn run_virtual(scenario: Scenario, costs: Costs, mechanisms: Mechanisms) -> RunSummary {
    run_virtual_steps(scenario, costs, mechanisms, 1)
}

/// [`run_virtual`] with transcriptions in `asr_steps` steps of `costs.asr` each.
fn run_virtual_steps(
    scenario: Scenario,
    costs: Costs,
    mechanisms: Mechanisms,
    asr_steps: u32,
) -> RunSummary {
    run_virtual_with(scenario, costs, mechanisms, |m| m.with_asr_steps(asr_steps))
}

/// [`run_virtual`] with the fake models as `fakes` makes them.
fn run_virtual_with(
    scenario: Scenario,
    costs: Costs,
    mechanisms: Mechanisms,
    fakes: impl FnOnce(FakeModels) -> FakeModels,
) -> RunSummary {
    run_virtual_under(Policy::default(), scenario, costs, mechanisms, fakes, None)
}

/// [`run_virtual_with`] with the platform's signals from `signals`.
fn run_virtual_beside(
    scenario: Scenario,
    costs: Costs,
    mechanisms: Mechanisms,
    fakes: impl FnOnce(FakeModels) -> FakeModels,
    signals: Option<Box<dyn SignalSource>>,
) -> RunSummary {
    run_virtual_under(
        Policy::default(),
        scenario,
        costs,
        mechanisms,
        fakes,
        signals,
    )
}

/// [`run_virtual_with`] under `policy`, with the platform's signals from `signals`.
fn run_virtual_under(
    policy: Policy,
    scenario: Scenario,
    costs: Costs,
    mechanisms: Mechanisms,
    fakes: impl FnOnce(FakeModels) -> FakeModels,
    signals: Option<Box<dyn SignalSource>>,
) -> RunSummary {
    // The device profile the costs are predicted from until measured: a step of each
    // kind as the lanes will take it (the shipped reference has a whole transcription).
    let profile = profile_of(costs, None);
    run_virtual_profiled(policy, scenario, costs, profile, mechanisms, fakes, signals)
}

/// [`run_virtual_under`] with the costs predicted from `profile` until measured.
fn run_virtual_profiled(
    policy: Policy,
    scenario: Scenario,
    costs: Costs,
    profile: tempfile::NamedTempFile,
    mechanisms: Mechanisms,
    fakes: impl FnOnce(FakeModels) -> FakeModels,
    signals: Option<Box<dyn SignalSource>>,
) -> RunSummary {
    let mut config = RunConfig::new(scenario, policy.clone(), SchedulerKind::Mmsched);
    config.profile = Some(profile.path().to_path_buf());
    config.platform = false;
    config.fixed_prompts = true;
    config.mechanisms = mechanisms;
    let workers = config.scenario.device().workers.unwrap_or(2) as usize;
    let clock = VirtualClock::new(DEVICE_EPOCH_NANOS);
    let (exec, models) = virtual_mmsched(
        &config.policy,
        workers,
        !mechanisms.admission,
        &clock,
        costs,
    );
    let parts = RunParts {
        clock,
        exec,
        models: std::sync::Arc::new(fakes(models)),
        notes: Vec::new(),
        signals,
    };
    run_with(config, parts, &mut Quiet).expect("run").summary
}

/// A device profile whose per-job costs are one step of `costs` (written to a temporary
/// file, kept while the returned handle lives), but a transcription's `asr_prior` where
/// given.
fn profile_of(costs: Costs, asr_prior: Option<Nanos>) -> tempfile::NamedTempFile {
    let reference = include_str!("../../../../profiles/reference-2core.json");
    let mut doc: serde_json::Value =
        serde_json::from_str(reference).expect("the reference profile");
    for (kind, nanos) in [
        ("vision", costs.vision),
        ("vad", costs.vad),
        ("asr", asr_prior.unwrap_or(costs.asr)),
        ("llm", costs.llm_token),
    ] {
        for q in ["p50_nanos", "p95_nanos", "p99_nanos"] {
            doc["jobs"][kind][q] = serde_json::json!(nanos);
        }
    }
    let file = tempfile::NamedTempFile::new().expect("a temporary file");
    std::fs::write(file.path(), doc.to_string()).expect("the profile is written");
    file
}

/// Every input of a modality ends in exactly one of the accounted outcomes.
fn assert_accounted(name: &str, m: &ModalitySummary) {
    let sum = m.on_time + m.late + m.shed + m.skipped + m.dropped + m.unfinished + m.failed;
    assert_eq!(m.offered, sum, "{name}: {m:?}");
}

fn assert_all_accounted(s: &RunSummary) {
    assert_accounted("vision", &s.vision);
    assert_accounted("vad", &s.vad);
    assert_accounted("asr", &s.asr);
    assert_accounted("llm", &s.llm.modality);
}

#[test]
fn token_steps_let_frames_through_a_long_answer_and_whole_answers_block_them() {
    // One general lane; answers of 150 tokens at 30 ms a token (4.5 s each).
    let s = || scenario(20, 5, 12, 150);
    let with = run_virtual(s(), QUICK, Mechanisms::default());
    let without = run_virtual(
        s(),
        QUICK,
        Mechanisms {
            token_preemption: false,
            ..Mechanisms::default()
        },
    );
    for r in [&with, &without] {
        assert_all_accounted(r);
        assert!(r.vision.offered >= 90, "{:?}", r.vision);
        assert!(r.llm.tokens >= 150, "{:?}", r.llm);
    }
    // With token steps a frame waits at most one token: every frame run is on time.
    assert_eq!(with.vision.late, 0, "{:?}", with.vision);
    assert_eq!(with.vision.shed, 0, "{:?}", with.vision);
    assert!(with.vision.on_time >= 90, "{:?}", with.vision);
    // A whole answer holds the lane for 4.5 s: the frames behind it miss or are shed.
    assert!(
        without.vision.late + without.vision.shed >= 10,
        "{:?}",
        without.vision
    );
    assert!(without.vision.on_time < with.vision.on_time);
}

#[test]
fn an_overload_is_shed_and_every_input_is_accounted_for() {
    // Frames cost 500 ms against a 200 ms SLA at 5 fps on one lane: none can be on time.
    let slow = Costs {
        vision: 500 * MS,
        ..QUICK
    };
    let r = run_virtual(
        scenario(15, 5, 6, 20),
        slow,
        Mechanisms {
            health_actions: false,
            ..Mechanisms::default()
        },
    );
    assert_all_accounted(&r);
    assert!(r.vision.shed > 0, "{:?}", r.vision);
    // Shedding the hopeless frames keeps the lane for the rest: speech and text go on.
    assert!(r.vad.on_time > 0, "{:?}", r.vad);
    assert!(r.llm.modality.on_time > 0, "{:?}", r.llm);
    let without_shedding = run_virtual(
        scenario(15, 5, 6, 20),
        slow,
        Mechanisms {
            health_actions: false,
            admission: false,
            ..Mechanisms::default()
        },
    );
    assert_all_accounted(&without_shedding);
    assert_eq!(
        without_shedding.vision.shed, 0,
        "{:?}",
        without_shedding.vision
    );
    assert!(
        without_shedding.vision.late > 0,
        "{:?}",
        without_shedding.vision
    );
}

#[test]
fn slow_frames_bring_a_health_action_that_halves_the_camera_rate() {
    // Frames take 260 ms against a 200 ms SLA; admission off, so they run late and the
    // latency term of the LDTI rises.
    let slow = Costs {
        vision: 260 * MS,
        ..QUICK
    };
    let r = run_virtual(
        scenario(20, 5, 1, 20),
        slow,
        Mechanisms {
            admission: false,
            ..Mechanisms::default()
        },
    );
    assert_all_accounted(&r);
    assert!(
        r.health.actions.iter().any(|a| a.action.contains("camera")),
        "{:?}",
        r.health.actions
    );
    assert!(
        r.vision
            .dropped_by
            .get("camera_rate_halved")
            .copied()
            .unwrap_or(0)
            > 0,
        "{:?}",
        r.vision
    );
    assert!(r.health.camera_scaled_seconds > 0.0, "{:?}", r.health);
    // With the actions ablated the same LDTI is measured but nothing acts on it.
    let off = run_virtual(
        scenario(20, 5, 1, 20),
        slow,
        Mechanisms {
            admission: false,
            health_actions: false,
            ..Mechanisms::default()
        },
    );
    assert!(off.health.actions.is_empty(), "{:?}", off.health.actions);
    assert_eq!(off.vision.dropped, 0, "{:?}", off.vision);
}

#[test]
fn inputs_dropped_by_the_camera_rate_action_are_counted_as_dropped() {
    // A 30 fps camera whose frames take 120 ms each on the one lane: they arrive four times
    // faster than the worker answers them, whatever machine runs the test, so the branch
    // is behind and the action, on from the start, drops every other frame.
    let mut spec = mmsched_core::policy::PolicySpec::default();
    spec.ldti.degraded_at = Some(0.0);
    spec.ldti.adaptive.enabled = Some(false);
    let policy = Policy::try_from(spec).expect("a valid policy");
    let slow = Costs {
        vision: 120 * MS,
        ..QUICK
    };
    let s = run_virtual_under(
        policy,
        scenario(4, 30, 1, 20),
        slow,
        Mechanisms::default(),
        |m| m,
        None,
    );
    assert_all_accounted(&s);
    assert!(s.vision.offered >= 110, "{:?}", s.vision);
    let halved = s
        .vision
        .dropped_by
        .get("camera_rate_halved")
        .copied()
        .unwrap_or(0);
    assert!(halved >= 5, "{:?}", s.vision);
    assert_eq!(
        s.vision.dropped_by.values().sum::<u64>(),
        s.vision.dropped,
        "{:?}",
        s.vision
    );
}

#[test]
fn the_same_seed_gives_the_same_run() {
    let a = run_virtual(scenario(10, 5, 12, 40), QUICK, Mechanisms::default());
    let b = run_virtual(scenario(10, 5, 12, 40), QUICK, Mechanisms::default());
    for (x, y) in [
        (&a.vision, &b.vision),
        (&a.vad, &b.vad),
        (&a.asr, &b.asr),
        (&a.llm.modality, &b.llm.modality),
    ] {
        assert_eq!(
            (x.offered, x.on_time, x.late, x.shed, x.skipped, x.dropped),
            (y.offered, y.on_time, y.late, y.shed, y.skipped, y.dropped)
        );
    }
    assert_eq!(a.llm.tokens, b.llm.tokens);
    assert!(a.asr.offered > 0, "speech was heard: {:?}", a.asr);
}

#[test]
fn an_answer_under_way_when_the_inputs_stop_finishes_in_the_drain() {
    // One request at 2 s (the next would come at 22 s) of 600 tokens at 30 ms: 18 s of
    // tokens plus the frames between them, so it is still answering when the inputs stop
    // at 20 s, well before its deadline at 32 s.
    let r = run_virtual(scenario(20, 5, 3, 600), QUICK, Mechanisms::default());
    assert_all_accounted(&r);
    assert_eq!(r.llm.modality.offered, 1, "{:?}", r.llm);
    assert_eq!(r.llm.modality.unfinished, 0, "{:?}", r.llm);
    assert_eq!(r.llm.modality.on_time, 1, "{:?}", r.llm);
    assert_eq!(r.llm.tokens, 600, "{:?}", r.llm);
}

#[test]
fn on_one_worker_a_transcription_in_steps_runs_between_the_frames() {
    // One general lane, a 5 fps camera with its standing reservation (a frame every 200 ms,
    // 40 ms each). A 1.2 s transcription in one step finds no free stretch that long before
    // its deadline and is shed; in 40 steps of 30 ms it runs between the frames.
    let s = || scenario(30, 5, 1, 5);
    let whole = run_virtual_steps(
        s(),
        Costs {
            asr: 1_200 * MS,
            ..QUICK
        },
        Mechanisms::default(),
        1,
    );
    let steps = run_virtual_steps(
        s(),
        Costs {
            asr: 30 * MS,
            ..QUICK
        },
        Mechanisms::default(),
        40,
    );
    for r in [&whole, &steps] {
        assert_all_accounted(r);
        assert!(r.asr.offered >= 2, "speech was heard: {:?}", r.asr);
    }
    assert_eq!(whole.asr.on_time, 0, "{:?}", whole.asr);
    assert_eq!(steps.asr.on_time, steps.asr.offered, "{:?}", steps.asr);
    // The frames keep their deadlines either way.
    assert_eq!(steps.vision.late, 0, "{:?}", steps.vision);
}

#[test]
fn results_are_scored_against_what_the_generated_frames_show() {
    // The fake OCR reads "STOP" on every frame; no generated sign says that, so every
    // frame read is scored wrong, and a frame on time is not a right result on time.
    let s = run_virtual(scenario(10, 4, 1, 8), QUICK, Mechanisms::default());
    assert_all_accounted(&s);
    let v = &s.vision;
    assert!(v.completed > 20, "{v:?}");
    assert_eq!(v.scored, v.completed, "every generated frame has a truth");
    assert_eq!((v.correct, v.correct_on_time), (0, 0));
    assert_eq!(v.accuracy, 0.0);
    assert!(
        s.utility > s.utility_correct,
        "{} {}",
        s.utility,
        s.utility_correct
    );
    // Speech: the shipped recording's words where it is cached (the fake transcript is
    // wrong), else generated talk spurts that have no truth and count as right.
    let a = &s.asr;
    assert!(a.completed > 0, "{a:?}");
    if a.scored == 0 {
        assert_eq!(a.correct, a.completed);
    } else {
        assert_eq!(a.correct, a.completed - a.scored);
        assert!(a.accuracy < 0.5, "{a:?}");
    }
}

/// The fault suite's failing engine: OCR breaks after 10 frames. Every later frame is
/// `failed` with the engine's error as its reason, and the run goes on: speech and text
/// keep being served to the end, and every input is accounted for.
#[test]
fn an_engine_that_fails_mid_run_fails_its_jobs_and_the_run_goes_on() {
    let s = run_virtual_with(scenario(20, 5, 12, 20), QUICK, Mechanisms::default(), |m| {
        m.with_ocr_breaking_after(10)
    });
    assert_all_accounted(&s);
    let v = &s.vision;
    assert!(
        v.on_time + v.late <= 10,
        "only the first ten frames read: {v:?}"
    );
    assert!(
        v.failed >= 50,
        "about 100 frames, most after the break: {v:?}"
    );
    let reasons: Vec<(&String, &u64)> = v.failures.iter().collect();
    assert_eq!(reasons.len(), 1, "{reasons:?}");
    assert!(reasons[0].0.contains(OCR_BROKEN), "{reasons:?}");
    assert_eq!(*reasons[0].1, v.failed);
    assert!(
        s.duration >= 19.9,
        "the run went on to its end: {}",
        s.duration
    );
    assert!(
        s.vad.on_time > 500,
        "the microphone was served: {:?}",
        s.vad
    );
    assert!(
        s.llm.modality.on_time >= 2,
        "text was served: {:?}",
        s.llm.modality
    );
}

/// What a run hands over as it goes: each report so far, and the most points its series
/// held.
#[derive(Default)]
struct Reports(Vec<RunSummary>, usize);

impl super::Observer for Reports {
    fn report(&mut self, summary: &RunSummary, series: &mmsched_report::RunSeries) {
        self.0.push(summary.clone());
        self.1 = self.1.max(series.points());
    }
}

/// A run of `minutes` under mmsched in virtual time, handing over its report every minute,
/// with a window of five minutes and, if `records`, every job's record kept.
fn run_reporting(minutes: u32, records: bool) -> (super::RunOutcome, Reports) {
    let mut config = RunConfig::new(
        scenario(minutes * 60, 2, 2, 4),
        Policy::default(),
        SchedulerKind::Mmsched,
    );
    let profile = profile_of(QUICK, None);
    config.profile = Some(profile.path().to_path_buf());
    config.platform = false;
    config.fixed_prompts = true;
    config.report_every_nanos = Some(60_000 * MS);
    config.window_nanos = 300_000 * MS;
    config.job_records = records;
    let clock = VirtualClock::new(DEVICE_EPOCH_NANOS);
    let (exec, models) = virtual_mmsched(&config.policy, 1, false, &clock, QUICK);
    let parts = RunParts {
        clock,
        exec,
        models: std::sync::Arc::new(models),
        notes: Vec::new(),
        signals: None,
    };
    let mut reports = Reports::default();
    let outcome = run_with(config, parts, &mut reports).expect("run");
    (outcome, reports)
}

#[test]
fn a_long_run_reports_as_it_goes_and_keeps_nothing_per_job() {
    use mmsched_report::thin::{LATENCY_CAP, LDTI_CAP};
    let (outcome, reports) = run_reporting(10, false);
    let s = &outcome.summary;
    assert_all_accounted(s);
    // Past the exact samples: the percentiles come from the histogram.
    assert!(
        s.vad.completed > crate::latency::EXACT_SAMPLES as u64,
        "{:?}",
        s.vad
    );
    assert!(
        s.vad.p99_ms.is_finite() && s.vad.p50_ms <= s.vad.p99_ms,
        "{:?}",
        s.vad
    );
    // Nothing kept per job, and the series within their caps.
    assert!(outcome.jobs.is_empty());
    assert!(outcome.series.latencies_ms["vad"].len() <= 2 * LATENCY_CAP);
    assert!(outcome.series.ldti.len() <= 2 * LDTI_CAP);
    assert!(reports.1 <= 4 * 2 * LATENCY_CAP + 2 * LDTI_CAP + 4 * 2 * 4_000);
    // A report every minute, each counting on from the one before; the window is the last
    // five minutes (and a step at most) once the run is that long.
    let r = &reports.0;
    assert!((9..=11).contains(&r.len()), "{}", r.len());
    assert!(r.windows(2).all(|w| w[1].vad.offered > w[0].vad.offered));
    let last = &s.window;
    assert!(last.seconds >= 300.0 && last.seconds <= 330.0, "{last:?}");
    assert_eq!(last.minutes, 5.0);
    let share = s.vad.offered as f64 / last.vad.offered as f64;
    assert!(share > 1.7 && share < 2.3, "{share}: {last:?}");
    assert!(last.vad.on_time_share > 0.9, "{last:?}");
    assert!(r[0].window.seconds <= 61.0, "{:?}", r[0].window);
}

#[test]
fn job_records_are_kept_only_when_asked() {
    let (outcome, _) = run_reporting(1, true);
    let s = &outcome.summary;
    let ended = s.vision.on_time + s.vision.late + s.vision.shed + s.vision.failed;
    let vision = outcome
        .jobs
        .iter()
        .filter(|j| j.kind == crate::stats::Kind::Vision)
        .count() as u64;
    assert!(
        vision > 0 && vision + s.vision.unfinished >= ended,
        "{vision} of {ended}"
    );
}

/// A machine where a neighbour takes half of every core's time and mmsched's one thread
/// waits on a run queue for 40 % of the time it is runnable (running 0.6 s a second).
struct BusyNeighbour;

impl SignalSource for BusyNeighbour {
    fn snapshot(&mut self, now_nanos: Nanos) -> CpuSnapshot {
        let ms = now_nanos / MS;
        // Two cores: 200 ticks of 10 ms a second; busy 0.3 (own) + 0.5 (neighbour).
        let total = ms / 5;
        CpuSnapshot {
            at_nanos: now_nanos,
            threads: Some(vec![(
                1,
                SchedStat {
                    on_cpu_nanos: ms * 600_000,
                    wait_nanos: ms * 400_000,
                    timeslices: ms,
                },
            )]),
            machine: Some(MachineCpu {
                busy_ticks: total * 8 / 10,
                total_ticks: total,
            }),
            pressure: None,
            group_pressure: None,
        }
    }
}

#[test]
fn a_neighbours_slowdown_drops_no_frame_while_the_runs_own_overload_still_does() {
    // A neighbour stretches every frame to 260 ms against a 200 ms SLA (admission off, so
    // they run late rather than being shed, and the index degrades). On two lanes the
    // camera's 5 frames a second take 1.3 s of their 2 s: the lanes have room, and
    // dropping every second frame would not make the others faster.
    let slow = Costs {
        vision: 260 * MS,
        ..QUICK
    };
    let no_admission = Mechanisms {
        admission: false,
        ..Mechanisms::default()
    };
    let beside = |mechanisms| {
        run_virtual_beside(
            scenario_on(2, 20, 5, 1, 20),
            slow,
            mechanisms,
            |m| m,
            Some(Box::new(BusyNeighbour)),
        )
    };
    let r = beside(no_admission);
    assert_all_accounted(&r);
    assert!(
        r.vision.late > 0,
        "the neighbour made frames late: {:?}",
        r.vision
    );
    assert_eq!(r.vision.dropped, 0, "{:?} {:?}", r.vision, r.health.actions);
    assert!(r.ldti.max > 0.0);
    let p = &r.platform_signals;
    assert!(p.windows >= 15, "{p:?}");
    let near = |v: Option<f64>, want: f64| v.is_some_and(|v| (v - want).abs() < 0.02);
    assert!(near(p.neighbour_cpu_share.mean, 0.5), "{p:?}");
    assert!(near(p.own_runqueue_wait_share.max, 0.4), "{p:?}");
    assert!(near(p.own_cpu_share.mean, 0.3), "{p:?}");
    assert_eq!(
        p.machine_pressure_some_avg10.mean, None,
        "unknown, not zero"
    );
    assert!(p.own_overload_share.is_some_and(|s| s < 0.05), "{p:?}");
    // Acting on the index alone, the same run drops frames the lanes had room for.
    let index_only = beside(Mechanisms {
        own_overload: false,
        ..no_admission
    });
    assert!(index_only.vision.dropped > 0, "{:?}", index_only.vision);
    assert_eq!(index_only.platform_signals.own_overload_share, None);
    // On one lane the same frames are more than the lane can serve: the run's own
    // overload, and the camera's rate is halved.
    let own = run_virtual_beside(
        scenario_on(1, 20, 5, 1, 20),
        slow,
        no_admission,
        |m| m,
        Some(Box::new(BusyNeighbour)),
    );
    assert!(
        own.vision
            .dropped_by
            .get("camera_rate_halved")
            .copied()
            .unwrap_or(0)
            > 0,
        "{:?} {:?}",
        own.vision,
        own.health.actions
    );
    // Seen while the frames queue; halving the rate then relieves the lane for a while.
    assert!(
        own.platform_signals
            .own_overload_share
            .is_some_and(|s| s > 0.0),
        "{:?}",
        own.platform_signals
    );
}

#[test]
fn a_prior_far_too_dear_gives_way_to_a_measurement_when_the_device_has_room() {
    // Two general lanes, a 5 fps camera of 40 ms frames; a transcription takes 300 ms, but
    // the device profile says 20 s: by the prior alone none fits its deadline.
    let run = |exploration| {
        let mechanisms = Mechanisms {
            exploration,
            ..Mechanisms::default()
        };
        let profile = profile_of(QUICK, Some(20_000 * MS));
        run_virtual_profiled(
            Policy::default(),
            scenario_on(2, 40, 5, 1, 5),
            QUICK,
            profile,
            mechanisms,
            |m| m,
            None,
        )
    };
    let without = run(false);
    let with = run(true);
    for r in [&without, &with] {
        assert_all_accounted(r);
        assert!(r.asr.offered >= 4, "speech was heard: {:?}", r.asr);
    }
    // The prior's verdict stands: every transcription is shed.
    assert_eq!(without.asr.on_time, 0, "{:?}", without.asr);
    assert_eq!(without.decisions.explored, 0);
    // One is run to be measured; from then on the measurement decides.
    assert!(with.decisions.explored >= 1, "{:?}", with.decisions);
    assert!(
        with.asr.on_time * 10 >= with.asr.offered * 9,
        "at least nine in ten on time: {:?} {:?}",
        with.asr,
        with.decisions
    );
    assert_eq!(with.vision.late, 0, "{:?}", with.vision);
}

#[test]
fn predicted_chances_of_ending_in_time_are_set_against_what_happened() {
    let s = run_virtual(scenario(20, 5, 6, 20), QUICK, Mechanisms::default());
    assert_all_accounted(&s);
    let d = &s.decisions;
    assert!(d.decided > 0, "{d:?}");
    let decisions: u64 = d
        .calibration
        .iter()
        .flat_map(|r| &r.bins)
        .map(|b| b.decisions)
        .sum();
    // Every frame and transcription that finished was admitted with a prediction, and is
    // in a bin (as is one shed after admission; one unfinished at the end is not).
    let finished = s.vision.completed + s.asr.completed;
    let admitted = finished + s.vision.shed + s.asr.shed - d.shed_at_admission;
    assert!(
        (finished..=admitted).contains(&decisions),
        "{decisions} {finished} {admitted} {d:?}"
    );
    // Fixed step costs on virtual lanes: what was predicted likely to end in time did.
    assert!(
        d.calibration_max_gap.is_nan() || d.calibration_max_gap <= 0.1,
        "{d:?}"
    );
    // The rungs are reported with where their chance to be right comes from.
    assert!(
        d.rungs.iter().any(|r| r.source == "reference"),
        "{:?}",
        d.rungs
    );
}

#[test]
fn the_baselines_predict_nothing() {
    let policy = Policy::default();
    let mut config = RunConfig::new(
        scenario(5, 5, 6, 20),
        policy.clone(),
        SchedulerKind::Mmsched,
    );
    config.rung_mode = Some(crate::book::RungMode::Richest);
    let profile = profile_of(QUICK, None);
    config.profile = Some(profile.path().to_path_buf());
    config.platform = false;
    config.fixed_prompts = true;
    let clock = VirtualClock::new(DEVICE_EPOCH_NANOS);
    let (exec, models) = virtual_mmsched(&config.policy, 1, false, &clock, QUICK);
    let parts = RunParts {
        clock,
        exec,
        models: std::sync::Arc::new(models),
        notes: Vec::new(),
        signals: None,
    };
    let s = run_with(config, parts, &mut Quiet).expect("run").summary;
    assert_eq!(s.decisions.decided, 0);
    assert!(s.decisions.calibration.is_empty() && s.decisions.rungs.is_empty());
}

/// One general worker with room: a 3 fps camera due in 300 ms and a microphone, no text.
fn one_worker_with_room(duration_s: u32) -> Scenario {
    let toml = format!(
        r#"
version = 1
name = "one-worker-with-room"
duration_s = {duration_s}
seed = 23

[device]
workers = 1

{VISION_AND_SPEECH_MODELS}
[[streams]]
name = "camera"
kind = "camera"
models = ["ocr"]
fps = 3
sla_ms = 300
importance = 0.7

[[streams]]
name = "mic"
kind = "audio"
models = ["vad", "asr"]
packet_ms = 20
sla_ms = 60
importance = 0.9
"#
    );
    Scenario::from_toml(&toml, "one-worker-with-room.toml").expect("scenario")
}

#[test]
fn on_one_worker_with_room_frames_and_transcriptions_both_keep_their_deadlines() {
    // Frames of 90 ms every 333 ms leave 243 ms gaps; a transcription takes five steps
    // of 170 ms, each fitting a gap, 850 ms in all within its deadline of 2 s or more.
    // The profile knows a transcription as a whole, as the reference one does: a kind of
    // step not measured yet is priced as its share of the whole, at every step (priced as
    // the whole, the first transcription's second step waited for a gap as long as the
    // whole job until its deadline forced it over the frames: one late, frames shed).
    let costs = Costs {
        vision: 90 * MS,
        asr: 170 * MS,
        ..QUICK
    };
    let profile = profile_of(costs, Some(850 * MS));
    let s = run_virtual_profiled(
        Policy::default(),
        one_worker_with_room(60),
        costs,
        profile,
        Mechanisms::default(),
        |m| m.with_asr_steps(5),
        None,
    );
    assert_all_accounted(&s);
    assert!(s.asr.offered >= 4, "speech was heard: {:?}", s.asr);
    assert_eq!(s.asr.on_time, s.asr.offered, "{:?}", s.asr);
    assert_eq!(s.vision.on_time, s.vision.offered, "{:?}", s.vision);
}

#[test]
fn a_frame_behind_a_running_step_is_predicted_as_waiting_and_kept_where_likely_on_time() {
    // One worker: frames of 90 ms (every fourth 200 ms: their P95 is 200 ms) every 333 ms,
    // due in 300 ms; transcriptions of 300 ms that the profile prices at 100 ms until
    // measured, so one overruns the gap it was booked into and a frame arrives behind it.
    // The core's admission sheds that frame when the step ends (its P95 no longer fits
    // the time left); where it is still more likely on time than not, the book keeps it.
    let costs = Costs {
        vision: 90 * MS,
        vision_slow: 200 * MS,
        asr: 300 * MS,
        ..QUICK
    };
    let run = |mechanisms| {
        let profile = profile_of(costs, Some(100 * MS));
        run_virtual_profiled(
            Policy::default(),
            one_worker_with_room(60),
            costs,
            profile,
            mechanisms,
            |m| m,
            None,
        )
    };
    let with = run(Mechanisms::default());
    let without = run(Mechanisms {
        running_steps: false,
        ..Mechanisms::default()
    });
    for s in [&with, &without] {
        assert_all_accounted(s);
    }
    // The frames admitted with a chance above 0.9: as many on time as predicted when the
    // step running counts, fewer without (those behind it were predicted as if the worker
    // were free).
    let top = |s: &RunSummary| {
        let row = s
            .decisions
            .calibration
            .iter()
            .rfind(|r| r.class == "vision" && r.rung == "det320")
            .expect("frames were decided at det320");
        let bin = row.bins.iter().find(|b| b.lo >= 0.9).expect("a top bin");
        (bin.predicted, bin.on_time, bin.decisions)
    };
    let (predicted, realised, n) = top(&with);
    assert!(
        n >= 100 && (predicted - realised).abs() < 0.03,
        "with: {:?}",
        with.decisions
    );
    let (predicted, realised, _) = top(&without);
    assert!(
        realised < predicted - 0.05,
        "without: {:?}",
        without.decisions
    );
    // Frames the core shed behind the step, still more likely on time than not, ran.
    assert!(with.decisions.kept_over_core >= 1, "{:?}", with.decisions);
    assert_eq!(without.decisions.kept_over_core, 0);
    assert!(
        with.vision.on_time >= without.vision.on_time,
        "{:?} {:?}",
        with.vision,
        without.vision
    );
    assert_eq!(with.asr.on_time, with.asr.offered, "{:?}", with.asr);
}

#[test]
fn a_camera_that_outruns_its_worker_at_the_richest_rung_reads_cheaper_as_the_frames_to_come_count()
{
    // One worker; a 15 fps camera (a frame every 67 ms, due in 200 ms) whose frames take
    // 80 ms at the richest rung and 30 ms at the cheaper ones, which the shadow
    // comparisons find as right; transcriptions of 300 ms and a few prompts on the same
    // worker. One frame alone fits at the richest rung, but the camera outruns the worker
    // there: the richest rung's extra 50 ms is paid by the frames that arrive meanwhile,
    // which the work already admitted does not show.
    let costs = Costs {
        vision: 80 * MS,
        vision_cheaper: 30 * MS,
        ..QUICK
    };
    let run = |inputs_to_come| {
        let mechanisms = Mechanisms {
            inputs_to_come,
            ..Mechanisms::default()
        };
        run_virtual(scenario_on(1, 40, 15, 2, 5), costs, mechanisms)
    };
    let with = run(true);
    let without = run(false);
    for s in [&with, &without] {
        assert_all_accounted(s);
        assert!(s.vision.offered >= 550, "{:?}", s.vision);
    }
    let cheaper = |s: &RunSummary| {
        let richest = s.vision.rung_counts.get("det320").copied().unwrap_or(0);
        s.vision.rung_counts.values().sum::<u64>() - richest
    };
    // Counting the frames to come, a share of the frames is read cheaper and the camera
    // is kept up with; without, every frame is read at the richest rung and the frames
    // behind are shed.
    assert!(
        cheaper(&with) * 10 >= with.vision.offered,
        "{:?}",
        with.vision
    );
    assert_eq!(cheaper(&without), 0, "{:?}", without.vision);
    assert!(
        with.vision.on_time * 100 >= with.vision.offered * 98,
        "{:?}",
        with.vision
    );
    assert!(
        with.vision.on_time >= without.vision.on_time + without.vision.offered / 10,
        "{} vs {}",
        with.vision.on_time,
        without.vision.on_time
    );
}
