//! Sets up `serve --models`: the models, the executor on the standard worker layout, the
//! service that drives it, and each class's deadline, importance, cost prior and cap.

use std::collections::BTreeMap;

use anyhow::{Context, Result, bail};
use mmsched_core::policy::Policy;
use mmsched_pipeline::engines::Engines;
use mmsched_pipeline::inputs::Device;
use mmsched_pipeline::service::{Service, Submitter};
use mmsched_pipeline::stats::Kind;
use mmsched_pipeline::{External, RunConfig, RunOutcome};
use mmsched_scenario::Scenario;

use crate::cmd::openai::{ApiClass, ClassSettings, ModelApi};
use crate::cmd::serve::ModelArgs;

/// General workers (the standard layout adds the voice-activity worker).
const WORKERS: usize = 2;

/// Class defaults: the job kind whose cost prior it takes, deadline (ms), concurrent
/// requests.
const DEFAULTS: [(ApiClass, Kind, u64, usize); 3] = [
    (ApiClass::Text, Kind::Llm, 30_000, 4),
    (ApiClass::Asr, Kind::Asr, 10_000, 2),
    (ApiClass::Vision, Kind::Vision, 2_000, 4),
];

/// Parses `CLASS=N` settings into `apply`.
fn overrides(flag: &str, items: &[String], mut apply: impl FnMut(ApiClass, u64)) -> Result<()> {
    for item in items {
        let Some((class, n)) = item.split_once('=') else {
            bail!("--{flag} {item:?}: write CLASS=N, e.g. text=20000");
        };
        let Some(class) = ApiClass::parse(class.trim()) else {
            bail!("--{flag} {item:?}: the class must be text, asr or vision");
        };
        let Some(n) = n.trim().parse::<u64>().ok().filter(|&n| n >= 1) else {
            bail!("--{flag} {item:?}: the value must be a whole number of at least 1");
        };
        apply(class, n);
    }
    Ok(())
}

/// A scenario's streams running beside the server.
pub struct StreamsRun {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<Result<RunOutcome, mmsched_pipeline::RunError>>,
    report: std::path::PathBuf,
}

impl StreamsRun {
    /// Stops the streams, waits for the run to end and writes its report; returns where.
    pub fn finish(self) -> Result<std::path::PathBuf> {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let outcome = self
            .thread
            .join()
            .map_err(|_| anyhow::anyhow!("the scenario's run stopped with a panic"))??;
        mmsched_report::write_report(&self.report, &outcome.summary, &outcome.series)?;
        Ok(self.report)
    }
}

/// Starts `scenario`'s run until stopped, taking outside jobs; returns their submitter.
fn start_streams(
    scenario: &str,
    policy: &Policy,
    a: &ModelArgs,
    feed: tokio::sync::broadcast::Sender<String>,
) -> Result<(Submitter, StreamsRun)> {
    let scenario = Scenario::load(scenario)?;
    std::fs::create_dir_all(&a.report).with_context(|| {
        format!(
            "cannot create the report directory {}: pass --report with a writable directory",
            a.report.display()
        )
    })?;
    let clock = Device::new();
    let (submitter, inbox) = Submitter::channel(std::sync::Arc::new(clock));
    let mut config = RunConfig::new(scenario, policy.clone(), a.scheduler.into());
    // Until the server stops (about 30 years of device time).
    config.duration_nanos = 1 << 60;
    config.platform = false;
    config.external = Some(External { inbox, clock });
    let stop = config.stop.clone();
    let thread = std::thread::Builder::new()
        .name("mmsched-streams".into())
        .spawn(move || {
            let mut publish = crate::cmd::openai::results::Publish(feed);
            mmsched_pipeline::run(config, &mut publish)
        })
        .context("starting the scenario's run")?;
    Ok((
        submitter,
        StreamsRun {
            stop,
            thread,
            report: a.report.clone(),
        },
    ))
}

/// Loads the models and starts the service (or the scenario's run the requests join).
pub fn load(a: &ModelArgs, policy: &Policy) -> Result<(ModelApi, Option<StreamsRun>)> {
    if a.upload_limit_mib == 0 {
        bail!("--upload-limit-mib must be at least 1");
    }
    // The model set: the shipped ar-glasses scenario uses all four models.
    let scenario = Scenario::load("ar-glasses").context("loading the model set")?;
    let profile = mmsched_sim::profile::Profile::resolve(
        None,
        Some(&mmsched_backends::paths::mmsched_home()),
    )
    .context("reading the device profile for cost priors")?;
    let priors = mmsched_pipeline::api::cost_priors(&profile);
    let mut classes = BTreeMap::new();
    for (class, kind, deadline_ms, max_concurrent) in DEFAULTS {
        let prior_cost_nanos = priors[kind.index()];
        classes.insert(
            class,
            ClassSettings {
                deadline_ms,
                max_concurrent,
                importance: policy.importance(class.as_str()),
                prior_cost_nanos,
            },
        );
    }
    overrides("deadline-ms", &a.deadline_ms, |c, n| {
        if let Some(s) = classes.get_mut(&c) {
            s.deadline_ms = n;
        }
    })?;
    overrides("max-concurrent", &a.max_concurrent, |c, n| {
        if let Some(s) = classes.get_mut(&c) {
            s.max_concurrent = usize::try_from(n).unwrap_or(usize::MAX);
        }
    })?;
    let keys = a
        .api_keys
        .as_deref()
        .map(crate::cmd::openai::keys::ApiKeys::load)
        .transpose()?;
    eprintln!("loading models (cost priors from {})", profile.source);
    let mut engines = Engines::load(&scenario, WORKERS, |name| eprintln!("  loading {name}"))?;
    engines.warm_up()?;
    let upload = a.upload_limit_mib.saturating_mul(1024 * 1024);
    let (feed, _) = tokio::sync::broadcast::channel(crate::cmd::openai::results::FEED_CAPACITY);
    if let Some(name) = &a.scenario {
        // The run loads the models its streams use for itself: a request and a stream
        // never share a model's state (the LLM's KV cache above all).
        let (submitter, run) = start_streams(name, policy, a, feed.clone())?;
        return Ok((
            ModelApi::new(submitter, None, engines, classes, upload, feed, keys),
            Some(run),
        ));
    }
    let clock = Device::new();
    let exec =
        mmsched_pipeline::platform::plain_executor(a.scheduler.into(), policy, WORKERS, clock)?;
    let service = Service::start(exec, clock).context("starting the scheduler thread")?;
    Ok((
        ModelApi::new(
            service.submitter(),
            Some(service),
            engines,
            classes,
            upload,
            feed,
            keys,
        ),
        None,
    ))
}
