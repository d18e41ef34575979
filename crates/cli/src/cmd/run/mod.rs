//! `mmsched run`: the main job — a field scenario's sensors into real models under a
//! scheduler, with a live progress line, a summary table and a report directory.

pub(crate) mod hangup;
pub(crate) mod interrupt;
pub(crate) mod long_run;
mod observe;
mod results_out;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::mpsc::{Sender, channel};

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use mmsched_core::policy::Policy;
use mmsched_core::time::MonotonicClock;
use mmsched_models::{Artifact, FetchOptions, ModelPaths, fetch};
use mmsched_pipeline::{PolicyUpdate, RunConfig, RunOutcome};
use mmsched_report::{render_table, write_report};
use mmsched_runtime::sched::SchedulerKind;
use mmsched_scenario::Scenario;

pub use interrupt::interrupted;
use observe::Console;
pub use observe::ServerFeed;
use results_out::{ResultsEnd, ResultsOut};

/// The scheduler to run the jobs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SchedulerArg {
    /// mmsched's unified scheduler: admission by score, EDF into reserved slots, a
    /// real-time audio worker, LLM preemption at token boundaries.
    Mmsched,
    /// One thread per model; the OS decides (what most applications do today).
    OsThreads,
    /// One shared first-come queue.
    Fifo,
    /// One shared queue by a fixed priority per modality (audio, vision, text).
    StaticPriority,
}

impl From<SchedulerArg> for SchedulerKind {
    fn from(a: SchedulerArg) -> Self {
        match a {
            SchedulerArg::Mmsched => SchedulerKind::Mmsched,
            SchedulerArg::OsThreads => SchedulerKind::OsThreads,
            SchedulerArg::Fifo => SchedulerKind::Fifo,
            SchedulerArg::StaticPriority => SchedulerKind::StaticPriority,
        }
    }
}

/// Arguments shared by `run` and `bench e2e`.
#[derive(Debug, Args, Clone)]
pub struct ScenarioArgs {
    /// Scenario: a built-in name (`ar-glasses`, `car`, `inspection`) or a scenario file
    /// (see docs/scenario-format.md).
    #[arg(long, value_name = "NAME|FILE", default_value = "ar-glasses")]
    pub scenario: String,
    /// How long the sensors run, in seconds (default: the scenario's `duration_s`).
    #[arg(long, value_name = "SECS", value_parser = parse_duration, allow_negative_numbers = true)]
    pub duration: Option<f64>,
    /// Seed of the network jitter and loss (default: the scenario's `seed`).
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Policy file (TOML or JSON); the built-in defaults when omitted.
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// Do not ask the OS for resource groups, real-time priority or CPU pinning.
    #[arg(long)]
    pub no_platform: bool,
    /// Device latency profile for the cost priors (the format `mmsched profile` writes).
    /// Default: the scenario's `[device] profile`, else $MMSCHED_HOME/profile.json if
    /// measured, else the shipped reference profiles/reference-2core.json.
    #[arg(long, value_name = "FILE")]
    pub profile: Option<PathBuf>,
}

fn parse_duration(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .parse()
        .map_err(|_| format!("`{s}` is not a number of seconds"))?;
    if !(v.is_finite() && v > 0.0 && v <= 7.0 * 86_400.0) {
        return Err(format!(
            "{s} s is out of range: give 0 < SECS ≤ 604800 (a week)"
        ));
    }
    Ok(v)
}

/// Arguments of `run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    scenario: ScenarioArgs,
    /// Scheduler of the jobs (the others are the baselines of `bench e2e`).
    #[arg(long, value_enum, default_value = "mmsched")]
    scheduler: SchedulerArg,
    /// Directory for summary.json, series.json, report.html and trace.mmtrace.
    #[arg(long, value_name = "DIR", default_value = "mmsched-report")]
    report: PathBuf,
    /// Serve the policy API, metrics and trace viewer while running, e.g. 127.0.0.1:7070
    /// (policy writes need MMSCHED_API_TOKEN); a PUT policy applies between decisions.
    #[arg(long, value_name = "IP:PORT")]
    serve: Option<SocketAddr>,
    #[command(flatten)]
    exposure: crate::cmd::serve::ExposureArgs,
    /// Follow the policy served at this URL (another mmsched's API) and apply updates.
    #[arg(long, value_name = "URL")]
    policy_url: Option<String>,
    /// Print summary.json on stdout instead of the table (progress goes to stderr). Not
    /// with `--results -`, which has stdout to itself.
    #[arg(long)]
    json: bool,
    /// Write one NDJSON line per result while running — OCR lines, speech segments,
    /// transcripts, answers, with trace id, times, latency and on-time/stale flags — to
    /// FILE, or to stdout with `-` (the table then goes to stderr).
    #[arg(long, value_name = "FILE|-")]
    results: Option<PathBuf>,
    /// Record the RTP microphone's packet arrivals into FILE: CSV `seq,send_ms,arrival_ms`
    /// (ms; one line per packet of the stream's `packet_ms`, send = media time, arrival =
    /// device clock, empty arrival = lost), the trace `mmsched sim jitter --trace FILE`
    /// replays. Needs an audio stream with `source = { kind = "rtp", … }`.
    #[arg(long, value_name = "FILE")]
    record_rtp: Option<PathBuf>,
    #[command(flatten)]
    long_run: long_run::LongRunArgs,
}

/// Makes sure every model the runtime uses is in the cache, fetching what is missing.
pub fn ensure_models(quiet: bool) -> Result<()> {
    let paths = ModelPaths::from_env();
    // What `mmsched models fetch` fetches by default (the ONNX Runtime library included).
    let missing: Vec<Artifact> = Artifact::ALL
        .into_iter()
        .filter(|a| a.fetched_by_default() && paths.require(*a).is_err())
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    if !quiet {
        eprintln!(
            "fetching {} missing model file(s) into {} (once; `mmsched models fetch` does the same)",
            missing.len(),
            paths.root().display()
        );
    }
    let opts = FetchOptions {
        skip_ort: false,
        only: missing,
        progress: !quiet,
        keep_downloads: false,
    };
    fetch(&paths, &opts, &MonotonicClock::new())
        .context("fetching the models (or run `mmsched models fetch` and check its error)")?;
    Ok(())
}

/// Everything one run needs from the command line.
pub struct Prepared {
    /// The scenario.
    pub scenario: Scenario,
    /// The policy.
    pub policy: Policy,
}

/// Loads scenario and policy.
pub fn prepare(a: &ScenarioArgs) -> Result<Prepared> {
    let scenario = Scenario::load(&a.scenario)?;
    let policy = crate::policy_file::load_or_default(a.policy.as_deref())?;
    Ok(Prepared { scenario, policy })
}

/// Runs one scenario under `kind`, with the console observer; `adjust` sets what the
/// command line does not (e.g. `bench e2e`'s fixed prompts and ablations).
pub fn run_one(
    p: &Prepared,
    a: &ScenarioArgs,
    kind: SchedulerKind,
    report_dir: &Path,
    policy_updates: Option<std::sync::mpsc::Receiver<PolicyUpdate>>,
    server: Option<ServerFeed>,
    adjust: &dyn Fn(&mut RunConfig),
) -> Result<RunOutcome> {
    let (mut outcome, _) =
        run_one_with(p, a, kind, report_dir, policy_updates, server, adjust, None)?;
    // Callers other than `run` have no table to print first: a trace that could not be
    // written fails them here.
    outcome.trace_file = Ok(std::mem::replace(&mut outcome.trace_file, Ok(None))?);
    Ok(outcome)
}

/// [`run_one`], also writing every result to `results`; returns how that ended (a
/// results file that could not be written is reported after the run's report).
#[allow(clippy::too_many_arguments)]
fn run_one_with(
    p: &Prepared,
    a: &ScenarioArgs,
    kind: SchedulerKind,
    report_dir: &Path,
    policy_updates: Option<std::sync::mpsc::Receiver<PolicyUpdate>>,
    server: Option<ServerFeed>,
    adjust: &dyn Fn(&mut RunConfig),
    results: Option<ResultsOut>,
) -> Result<(RunOutcome, Option<Result<ResultsEnd>>)> {
    let mut config = RunConfig::new(p.scenario.clone(), p.policy.clone(), kind);
    if let Some(d) = a.duration {
        config.duration_nanos = (d * 1e9) as u64;
    }
    if let Some(s) = a.seed {
        config.seed = s;
    }
    config.platform = !a.no_platform;
    config.profile = a.profile.clone();
    std::fs::create_dir_all(report_dir).with_context(|| {
        format!(
            "cannot create the report directory {}: pass --report with a writable directory",
            report_dir.display()
        )
    })?;
    config.trace_path = Some(report_dir.join("trace.mmtrace"));
    config.policy_updates = policy_updates;
    config.stop = interrupt::stop_flag()?;
    adjust(&mut config);
    let mut console = Console::new(kind, server)
        .with_results(results)
        .with_reports(long_run::ReportWriter::new(report_dir));
    let outcome = mmsched_pipeline::run(config, &mut console);
    let results = console.finish().map(ResultsOut::finish);
    Ok((outcome?, results))
}

/// What `--serve` and `--policy-url` set up around a run.
#[derive(Default)]
struct Feeds {
    /// New policies for the run.
    updates: Option<std::sync::mpsc::Receiver<PolicyUpdate>>,
    /// The HTTP server.
    server: Option<mmsched_server::ServerHandle>,
    /// Its metrics and status, fed by the run.
    feed: Option<ServerFeed>,
    /// The policy URL watcher (stops when dropped).
    watcher: Option<mmsched_client::Watcher>,
}

/// A channel of policies fed by `--serve` and/or `--policy-url`.
fn policy_feeds(a: &RunArgs, policy: &Policy) -> Result<Feeds> {
    if a.serve.is_none() && a.policy_url.is_none() {
        return Ok(Feeds::default());
    }
    let (tx, rx) = channel::<PolicyUpdate>();
    let mut server = None;
    let mut feed = None;
    if let Some(addr) = a.serve {
        let shared = mmsched_server::Shared::new(
            policy.clone(),
            Arc::new(MonotonicClock::new()),
            "mmsched run",
        );
        let mut config = mmsched_server::ServerConfig {
            addr,
            token: crate::cmd::serve::token(None)?,
            assets: Some(mmsched_trace::viewer::asset),
            ..mmsched_server::ServerConfig::default()
        };
        let writes = config.token.is_some();
        a.exposure.apply(&mut config, writes)?;
        let handle = mmsched_server::spawn(shared.clone(), config)?;
        eprintln!(
            "serving the policy API, /metrics and the viewer on http://{}",
            handle.local_addr()
        );
        forward_store(shared.store.subscribe(), tx.clone());
        feed = Some(ServerFeed::of(&shared));
        server = Some(handle);
    }
    let mut watcher = None;
    if let Some(url) = &a.policy_url {
        let tx: Sender<PolicyUpdate> = tx.clone();
        watcher = Some(
            mmsched_client::PolicyClient::builder(url)
                .long_poll(Some(20))
                .on_update(move |p, etag| {
                    eprintln!("policy {} ({etag}) from the policy URL", p.name());
                    let _ = tx.send(PolicyUpdate {
                        policy: p,
                        etag: Some(etag.to_string()),
                    });
                })
                .spawn()
                .with_context(|| format!("cannot follow the policy at {url}"))?,
        );
    }
    Ok(Feeds {
        updates: Some(rx),
        server,
        feed,
        watcher,
    })
}

/// Forwards every policy the API accepts, with its ETag, to the runtime (checked every
/// 10 ms; the runtime applies it between two decisions). The thread ends when the runtime
/// stops listening.
pub fn forward_store(mut sub: mmsched_server::PolicySubscription, tx: Sender<PolicyUpdate>) {
    sub.latest();
    std::thread::spawn(move || {
        loop {
            if let Some(snap) = sub.poll()
                && tx
                    .send(PolicyUpdate {
                        policy: (*snap.policy).clone(),
                        etag: Some(snap.etag.clone()),
                    })
                    .is_err()
            {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    });
}

/// Whether `scenario` has an audio stream fed over RTP.
fn has_rtp_microphone(scenario: &Scenario) -> bool {
    scenario.streams().iter().any(|s| {
        s.kind == mmsched_scenario::StreamKind::Audio
            && s.source
                .as_ref()
                .is_some_and(|src| src.kind == mmsched_scenario::SourceKind::Rtp)
    })
}

/// Runs `run`.
pub fn run(a: RunArgs) -> Result<ExitCode> {
    if a.json && a.results.as_deref() == Some(Path::new("-")) {
        bail!(
            "--json and --results - both write to stdout: give --results a file, or drop --json (summary.json is also written to the report directory)"
        );
    }
    let p = prepare(&a.scenario)?;
    if a.record_rtp.is_some() && !has_rtp_microphone(&p.scenario) {
        bail!(
            "--record-rtp records an RTP microphone, and scenario {} has none: give its audio stream source = {{ kind = \"rtp\", port = … }}",
            p.scenario.name()
        );
    }
    ensure_models(a.json)?;
    let feeds = policy_feeds(&a, &p.policy)?;
    let kind: SchedulerKind = a.scheduler.into();
    eprintln!(
        "mmsched run: scenario {} ({}), scheduler {kind}, {} s",
        p.scenario.name(),
        p.scenario.description(),
        a.scenario.duration.unwrap_or(p.scenario.duration_s())
    );
    let long_run = a.long_run.settings(0)?;
    let results = a
        .results
        .as_deref()
        .map(|path| -> Result<ResultsOut> {
            let reopen = Arc::new(std::sync::atomic::AtomicBool::new(false));
            hangup::on_hangup(std::slice::from_ref(&reopen))?;
            Ok(ResultsOut::open(path, interrupt::stop_flag()?)?.reopen_on(path, reopen))
        })
        .transpose()?;
    let (mut outcome, results) = run_one_with(
        &p,
        &a.scenario,
        kind,
        &a.report,
        feeds.updates,
        feeds.feed,
        &|c: &mut RunConfig| {
            c.record_rtp.clone_from(&a.record_rtp);
            long_run.set(c);
        },
        results,
    )?;
    // The table comes first, so a report that cannot be written (a full disk) still
    // leaves the figures on the screen, with the error after them.
    let written = write_report(&a.report, &outcome.summary, &outcome.series);
    let reader_gone = matches!(results, Some(Ok(ResultsEnd::ReaderGone(_))));
    if a.json {
        outln!("{}", serde_json::to_string_pretty(&outcome.summary)?);
    } else {
        // With `--results -`, stdout carries only the results.
        let to_stdout = a.results.as_deref() != Some(Path::new("-"));
        let say = |line: String| {
            if to_stdout {
                outln!("{line}");
            } else {
                eprintln!("{line}");
            }
        };
        say(render_table(&outcome.summary));
        if let Ok(files) = &written {
            say(format!("report: {}", files.report_html.display()));
            say(format!("summary: {}", files.summary_json.display()));
        }
        if let Ok(Some(t)) = &outcome.trace_file {
            say(format!(
                "trace: {} (mmsched trace view {})",
                t.display(),
                t.display()
            ));
        }
    }
    drop(feeds.watcher);
    if let Some(s) = feeds.server {
        s.stop();
    }
    let trace = std::mem::replace(&mut outcome.trace_file, Ok(None));
    if let (Err(_), Err(e)) = (&written, &trace) {
        // Both failed, most likely for one cause; the report's error ends the command.
        eprintln!("the trace could not be written either: {e:#}");
    }
    written.with_context(|| {
        format!(
            "the run ended, but its report could not be written to {} (the table above has its figures): free space there or pass --report another directory",
            a.report.display()
        )
    })?;
    trace.with_context(|| {
        format!(
            "the run ended and its report is in {}, but its trace could not be written: free space there or pass --report another directory",
            a.report.display()
        )
    })?;
    match results {
        Some(Ok(ResultsEnd::Written(n))) => eprintln!("results: {n} record(s)"),
        Some(Ok(ResultsEnd::ReaderGone(n))) => eprintln!(
            "results: the reader of standard output went away after {n} record(s); the run stopped there"
        ),
        Some(Err(e)) => return Err(e),
        None => {}
    }
    if reader_gone {
        return Ok(ExitCode::from(crate::out::PIPE_CLOSED as u8));
    }
    if interrupted() {
        eprintln!("stopped early by Ctrl-C: the report covers the part that ran");
        return Ok(ExitCode::from(130));
    }
    if outcome.summary.vision.jobs + outcome.summary.vad.jobs == 0 {
        bail!("the run produced no jobs: check the scenario's streams and models");
    }
    Ok(ExitCode::SUCCESS)
}
