//! Sets up `serve --models`: the models, the one runtime on the standard worker layout
//! (with a scenario's streams when `--scenario` asks), hot reload from the policy store,
//! the OpenAI-compatible endpoints over it (`mmsched-openai`), and on exit the runtime's
//! report of every request and stream it ran.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use mmsched_core::policy::Policy;
use mmsched_openai::keys::ApiKeys;
use mmsched_openai::results::{Publish, feed_channel};
use mmsched_openai::{ClassSettings, OpenAi};
use mmsched_pipeline::RunConfig;
use mmsched_pipeline::engines::Engines;
use mmsched_pipeline::host::{FOREVER_NANOS, Host, serving_scenario};
use mmsched_pipeline::run::{Observer, Tee};
use mmsched_pipeline::stats::Kind;
use mmsched_report::write_report;
use mmsched_scenario::{ModelKind, Scenario};

use crate::cmd::run::long_run::ReportWriter;
use crate::cmd::run::{ServerFeed, forward_store};
use crate::cmd::serve::ModelArgs;

/// General workers (the standard layout adds the voice-activity worker).
const WORKERS: usize = 2;

/// Parses `CLASS=N` settings into `apply` (classes: llm — or text, its old name — asr,
/// vision).
fn overrides(flag: &str, items: &[String], mut apply: impl FnMut(Kind, u64)) -> Result<()> {
    for item in items {
        let Some((class, n)) = item.split_once('=') else {
            bail!("--{flag} {item:?}: write CLASS=N, e.g. llm=20000");
        };
        let kind = Kind::parse(class.trim()).filter(|k| *k != Kind::Vad);
        let Some(kind) = kind else {
            bail!(
                "--{flag} {item:?}: the class must be llm (or text), asr, vision or the name of a --model"
            );
        };
        let Some(n) = n.trim().parse::<u64>().ok().filter(|&n| n >= 1) else {
            bail!("--{flag} {item:?}: the value must be a whole number of at least 1");
        };
        apply(kind, n);
    }
    Ok(())
}

/// Each class's deadline and cap, from the defaults and the flags.
fn classes(a: &ModelArgs) -> Result<BTreeMap<Kind, ClassSettings>> {
    let mut classes: BTreeMap<Kind, ClassSettings> = [Kind::Llm, Kind::Asr, Kind::Vision]
        .into_iter()
        .chain(mmsched_pipeline::classes::registered())
        .map(|k| (k, ClassSettings::default_for(k)))
        .collect();
    overrides("deadline-ms", &a.deadline_ms, |k, n| {
        if let Some(s) = classes.get_mut(&k) {
            s.deadline_ms = n;
        }
    })?;
    overrides("max-concurrent", &a.max_concurrent, |k, n| {
        if let Some(s) = classes.get_mut(&k) {
            s.max_concurrent = usize::try_from(n).unwrap_or(usize::MAX);
        }
    })?;
    Ok(classes)
}

/// The runtime behind the endpoints, and where its report goes when it stops.
pub struct Served {
    host: Host,
    report: PathBuf,
}

impl Served {
    /// Stops the runtime (its streams, the requests in flight at their next step), writes
    /// its report; returns where.
    pub fn finish(self) -> Result<PathBuf> {
        let outcome = self.host.finish()?;
        write_report(&self.report, &outcome.summary, &outcome.series)?;
        Ok(self.report)
    }
}

/// Loads the models and starts the runtime (with `--scenario`'s streams) and the
/// endpoints; the runtime follows `shared`'s policy store and feeds its metrics and status.
pub fn load(
    a: &ModelArgs,
    policy: &Policy,
    shared: &mmsched_server::Shared,
) -> Result<(Arc<OpenAi>, Served)> {
    if a.upload_limit_mib == 0 {
        bail!("--upload-limit-mib must be at least 1");
    }
    if a.decode_budget_mib == 0 {
        bail!("--decode-budget-mib must be at least 1");
    }
    let (speech_model, items) = crate::cmd::own_models::speech_model(&a.model)?;
    let (text_model, onnx_items) = crate::cmd::own_models::text_model(&items)?;
    let specs = crate::cmd::own_models::specs(&onnx_items, &a.model_config)?;
    let long_run = a.long_run.settings(60)?;
    let keys = a.api_keys.as_deref().map(ApiKeys::load).transpose()?;
    // The scenario's streams (or none) run on the models of the shipped model set, which
    // has all four; each text request that may run at once gets a place of its own (a
    // session, or with --text-batch a sequence of the shared batch decoder).
    let scenario = match &a.scenario {
        Some(name) => Scenario::load(name)?,
        None => serving_scenario(WORKERS)?,
    };
    let mut model_set = Scenario::load("ar-glasses").context("loading the model set")?;
    if let Some(m) = &speech_model {
        // Absolute: a scenario's relative model file is read from the model cache.
        let path = std::path::absolute(&m.path)
            .with_context(|| format!("model `{}`: {}", m.name, m.path.display()))?;
        model_set = model_set
            .with_model_file(ModelKind::Asr, &path.to_string_lossy())
            .context("the model set has no speech model")?;
    }
    let sessions = classes(a)
        .map_or(ClassSettings::default_for(Kind::Llm), |c| c[&Kind::Llm])
        .max_concurrent
        .clamp(1, 16);
    eprintln!("loading models ({sessions} text place(s))");
    let on_load = |name: &str| eprintln!("  loading {name}");
    let mut engines = match &text_model {
        Some(t) => {
            let mut e = Engines::load_without_text(&model_set, WORKERS, on_load)?;
            eprintln!("  loading {} ({})", t.name, t.file.display());
            e.load_own_text_model(&t.name, &t.file, sessions)?;
            e
        }
        None => Engines::load_with(&model_set, WORKERS, sessions, on_load)?,
    };
    engines.asr_name = speech_model.map(|m| m.name);
    if a.text_batch
        && let Some(pool) = &engines.llm
    {
        let batched = pool
            .to_batched()
            .context("loading the text batch decoder")?;
        engines.memory_bytes = engines
            .memory_bytes
            .saturating_sub(pool.memory_bytes())
            .saturating_add(batched.memory_bytes());
        engines.llm = Some(batched);
    }
    let mut user_models = Vec::new();
    for spec in &specs {
        eprintln!("  loading {} ({})", spec.name, spec.file.display());
        let kind = engines.load_user_model(spec, WORKERS)?;
        if let Some(m) = engines.user_model(kind).and_then(|m| m.pool().first()) {
            let m = mmsched_pipeline::engines::lock(m);
            user_models.push(mmsched_openai::v2::UserModel {
                kind,
                inputs: m.inputs().to_vec(),
                outputs: m.outputs().to_vec(),
                takes_images: m.takes_images(),
                classifier: m.is_classifier(),
                detector: m.is_detector(),
            });
        }
    }
    // The user's classes are known once their models are loaded: the flags may name them.
    let classes = classes(a)?;
    engines.warm_up()?;
    std::fs::create_dir_all(&a.report).with_context(|| {
        format!(
            "cannot create the report directory {}: pass --report with a writable directory",
            a.report.display()
        )
    })?;
    let mut config = RunConfig::new(scenario, policy.clone(), a.scheduler.into());
    // Until the server stops.
    config.duration_nanos = FOREVER_NANOS;
    config.platform = false;
    config.trace_path = Some(a.report.join("trace.mmtrace"));
    long_run.set(&mut config);
    let (tx, rx) = std::sync::mpsc::channel();
    forward_store(shared.store.subscribe(), tx);
    config.policy_updates = Some(rx);
    let feed = feed_channel();
    let observers: Vec<Box<dyn Observer + Send>> = vec![
        Box::new(Publish(feed.clone())),
        Box::new(ServerFeed::of(shared)),
        Box::new(StatusLines),
        Box::new(ReportWriter::new(&a.report)),
    ];
    let host = Host::start(config, engines, Box::new(Tee(observers)))?;
    let upload = a.upload_limit_mib.saturating_mul(1024 * 1024);
    let api = OpenAi::new(host.client(), classes.clone(), upload, feed, keys)
        .with_decode_budget(a.decode_budget_mib.saturating_mul(1024 * 1024))
        .with_user_models(user_models, &classes);
    Ok((
        Arc::new(api),
        Served {
            host,
            report: a.report.clone(),
        },
    ))
}

/// The runtime's status lines (platform notes, policies applied) on stderr.
struct StatusLines;

impl Observer for StatusLines {
    fn status(&mut self, line: &str) {
        eprintln!("  {line}");
    }
}
