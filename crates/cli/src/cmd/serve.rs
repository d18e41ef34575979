//! `mmsched serve`: the policy API, status, metrics and viewer, without a running scheduler.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Result, bail};
use clap::Args;
use mmsched_core::policy::Policy;
use mmsched_core::time::MonotonicClock;
use mmsched_server::{ApiToken, ConnectionLimits, HostCheck, ServerConfig, Shared};

use crate::policy_file;

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on. Loopback by default; port 0 picks a free port (the bound
    /// address is printed).
    #[arg(long, value_name = "IP:PORT", default_value = mmsched_server::DEFAULT_ADDR)]
    addr: SocketAddr,
    /// Initial policy (TOML, or JSON by extension); the built-in defaults when omitted.
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
    /// File whose first line is the bearer token that `PUT /api/v1/policy` requires.
    /// Without it the token is read from MMSCHED_API_TOKEN; with neither, writes are refused.
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// Largest accepted request body, in KiB.
    #[arg(long, value_name = "KIB", default_value_t = 64)]
    body_limit_kib: usize,
    /// Print the startup line as JSON: {"addr", "url", "etag", "revision", "writes"}.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    exposure: ExposureArgs,
    #[command(flatten)]
    models: ModelArgs,
}

/// `serve --models`: the OpenAI-compatible model endpoints, scheduled with deadlines.
#[derive(Debug, Args, Clone)]
pub struct ModelArgs {
    /// Load the models from the cache (Gemma-3, Whisper tiny.en, PP-OCRv4) and serve
    /// POST /v1/chat/completions, /v1/completions, /v1/audio/transcriptions, /api/v1/ocr
    /// and GET /v1/models, and the Open Inference Protocol (KServe v2): GET /v2,
    /// /v2/health/{live,ready}, /v2/models/{name}[/ready], POST /v2/models/{name}/infer:
    /// every request a scheduled job with a deadline.
    #[arg(long)]
    pub models: bool,
    /// The scheduler the requests share the device under.
    #[arg(long, value_enum, default_value_t = crate::cmd::run::SchedulerArg::Mmsched, requires = "models")]
    pub scheduler: crate::cmd::run::SchedulerArg,
    /// Default deadline per class when a request has no X-Deadline-Ms header, as
    /// CLASS=MS (classes: llm — `text` is accepted too — asr, vision); defaults:
    /// llm=30000, asr=10000, vision=2000; repeatable.
    #[arg(
        long,
        value_name = "CLASS=MS",
        value_delimiter = ',',
        requires = "models"
    )]
    pub deadline_ms: Vec<String>,
    /// Requests per class at once (running or waiting for the model), as CLASS=N; more
    /// get 503 with Retry-After (and count as shed in the report). Defaults: llm=4, asr=2,
    /// vision=4; the text cap is also how many text requests hold a KV cache at once.
    #[arg(
        long,
        value_name = "CLASS=N",
        value_delimiter = ',',
        requires = "models"
    )]
    pub max_concurrent: Vec<String>,
    /// Largest upload (audio file, image), in MiB.
    #[arg(long, value_name = "MIB", default_value_t = 25, requires = "models")]
    pub upload_limit_mib: usize,
    /// Memory for decoding uploads at once, in MiB: an image's pixels and a recording's
    /// samples, sized from their headers before decoding. An upload needing more than all
    /// of it gets 413; one needing more than is left while others decode gets 503 with
    /// Retry-After.
    #[arg(long, value_name = "MIB", default_value_t = 256, requires = "models")]
    pub decode_budget_mib: usize,
    /// API keys, one KEY=IMPORTANCE per line (importance 0 to 1): the model endpoints then
    /// want `Authorization: Bearer KEY` (401 without a listed key), and each key's requests
    /// are scheduled with its importance. Without, the endpoints are open and each class
    /// has the policy's importance.
    #[arg(long, value_name = "FILE", requires = "models")]
    pub api_keys: Option<std::path::PathBuf>,
    /// Also run this scenario's streams (a built-in name or a file, e.g. a folder of frames
    /// and a WAV microphone) until Ctrl-C, on the same runtime and scheduler as the
    /// requests (on the served models).
    #[arg(long, value_name = "NAME|FILE", requires = "models")]
    pub scenario: Option<String>,
    /// Where the report of everything served goes (summary.json with the requests as
    /// `origin.api` and the streams as `origin.streams`, report.html, trace.mmtrace):
    /// every `--report-every` seconds, on SIGHUP and when the server stops.
    #[arg(
        long,
        value_name = "DIR",
        default_value = "mmsched-report/serve",
        requires = "models"
    )]
    pub report: std::path::PathBuf,
    /// Decode the text requests in flight together: one llama.cpp context holds them all
    /// (a sequence each), and one call per token step decodes the next token of the ready
    /// ones, as many as fit the time due frames and audio leave; each greedy answer is
    /// exactly the one its prompt gets alone. Without it each request has a session of its
    /// own, decoded one request per call. Experimental: on a loaded 2-core machine it was
    /// slower than sessions (see docs/runtime.md).
    #[arg(long, requires = "models")]
    pub text_batch: bool,
    /// Also serve a model of your own, as NAME=FILE (repeatable). An `.onnx` file is served
    /// over the v2 protocol: its inputs and outputs are read from the graph, and a model
    /// whose one input is a 3-channel image of fixed size also takes images (stretched,
    /// RGB, values 0–1); NAME is its class in the policy, the flags and the report. A
    /// `.gguf` file (one) is the text model in place of the default, on llama.cpp, under
    /// the OpenAI endpoints as model NAME: any architecture and vocabulary llama.cpp reads,
    /// chats written with the file's chat template. A Hugging Face Whisper directory
    /// (model.safetensors, config.json, tokenizer.json; or its model.safetensors) is the
    /// speech model in place of tiny.en, under /v1/audio/transcriptions and the v2
    /// protocol as model NAME (q8_0 weights made from it once, kept in the model cache).
    #[arg(long, value_name = "NAME=FILE", requires = "models")]
    pub model: Vec<String>,
    /// Models of your own declared in a TOML file: `[[models]]` entries with `name`,
    /// `file`, and optional `[models.image]` pre-processing (size, resize = "stretch" |
    /// "center-crop", short_side, layout = "nchw" | "nhwc", channels = "rgb" | "bgr",
    /// scale, mean, std), `[models.classes]` (output, top_k, labels, labels_key),
    /// `[models.detections]` and `[[models.rungs]]` (name, file, size: quality rungs the
    /// scheduler picks from per request); see docs/own-models.md.
    #[arg(long, value_name = "FILE", requires = "models")]
    pub model_config: Vec<std::path::PathBuf>,
    #[command(flatten)]
    pub long_run: crate::cmd::run::long_run::LongRunArgs,
}

/// Who may reach a server, and its connection limits (`serve`, `run --serve`).
#[derive(Debug, Args, Clone)]
pub struct ExposureArgs {
    /// Allow an address other than loopback (e.g. 0.0.0.0:9100). The API is plain HTTP:
    /// reads (policy, status, metrics, viewer) need no token, and a write token travels
    /// unencrypted; put a TLS proxy in front to expose it beyond a trusted network.
    #[arg(long)]
    pub allow_remote: bool,
    /// Also answer requests whose Host header is NAME (or NAME:PORT), e.g. a DNS name of
    /// this device; `*` turns the Host check off. By default only the bound address (and
    /// localhost on loopback) is answered, which stops DNS-rebinding pages.
    #[arg(long, value_name = "NAME")]
    pub allow_host: Vec<String>,
    /// Open connections at most: at the cap the oldest idle one is closed, and when every
    /// one is busy a new one gets 503.
    #[arg(long, value_name = "N", default_value_t = mmsched_server::listen::DEFAULT_MAX_CONNECTIONS)]
    pub max_connections: usize,
    /// Seconds a client has to send a request head (also how long a kept-alive connection
    /// may wait for its next request).
    #[arg(long, value_name = "SECS", default_value_t = mmsched_server::listen::DEFAULT_HEADER_TIMEOUT_MILLIS / 1000)]
    pub header_timeout_secs: u64,
    /// On Ctrl-C, seconds open requests get before the server exits (a second Ctrl-C exits
    /// at once).
    #[arg(long, value_name = "SECS", default_value_t = mmsched_server::listen::DEFAULT_SHUTDOWN_GRACE_MILLIS / 1000)]
    pub shutdown_grace_secs: u64,
}

impl ExposureArgs {
    /// Checks `addr` against `--allow-remote` (warning when it is given) and fills the
    /// server's host policy and limits.
    pub fn apply(&self, config: &mut ServerConfig, writes: bool) -> Result<()> {
        let addr = config.addr;
        if !addr.ip().is_loopback() {
            if !self.allow_remote {
                bail!(
                    "{addr} is reachable from other machines, and the API is plain HTTP with unauthenticated reads; pass --allow-remote to serve there anyway, or listen on 127.0.0.1"
                );
            }
            eprintln!(
                "warning: serving on {addr} over plain HTTP: any host that reaches it can read the policy, status, metrics and viewer{}; use a TLS proxy beyond a trusted network",
                if writes {
                    ", and the write token travels unencrypted"
                } else {
                    ""
                }
            );
        }
        if self.max_connections == 0 || self.header_timeout_secs == 0 {
            bail!("--max-connections and --header-timeout-secs must be at least 1");
        }
        config.hosts = HostCheck::from_allowed(&self.allow_host);
        config.limits = ConnectionLimits {
            header_timeout: Duration::from_secs(self.header_timeout_secs),
            max_connections: self.max_connections,
            shutdown_grace: Duration::from_secs(self.shutdown_grace_secs),
            ..ConnectionLimits::default()
        };
        Ok(())
    }
}

/// Resolves the write token: `--token-file`, else `MMSCHED_API_TOKEN`, else none.
pub fn token(token_file: Option<&std::path::Path>) -> Result<Option<ApiToken>> {
    Ok(match token_file {
        Some(f) => Some(ApiToken::from_file(f)?),
        None => ApiToken::from_env()?,
    })
}

pub fn run(a: ServeArgs) -> Result<ExitCode> {
    let (policy, source) = match &a.policy {
        Some(f) => (policy_file::load(f)?, format!("file {}", f.display())),
        None => (Policy::default(), "defaults".to_string()),
    };
    let token = token(a.token_file.as_deref())?;
    if a.body_limit_kib == 0 {
        anyhow::bail!("--body-limit-kib must be at least 1");
    }
    let writes = token.is_some();
    let shared = Shared::new(policy.clone(), Arc::new(MonotonicClock::new()), &source);
    let mut config = ServerConfig {
        addr: a.addr,
        token,
        body_limit_bytes: a.body_limit_kib.saturating_mul(1024),
        assets: Some(mmsched_trace::viewer::asset),
        ..ServerConfig::default()
    };
    let mut served = None;
    if a.models.models {
        let (api, runtime) = crate::cmd::serve_models::load(&a.models, &policy, &shared)?;
        config.extra = Some(mmsched_openai::router(api));
        served = Some(runtime);
    }
    a.exposure.apply(&mut config, writes)?;
    let wait_for_ctrl_c = crate::cmd::run::interrupt::install(
        "stopping: open requests get a few seconds (Ctrl-C again to quit now)",
    )?;
    let handle = mmsched_server::spawn(shared.clone(), config)?;
    let addr = handle.local_addr();
    let snap = shared.store.current();
    if a.json {
        outln!(
            "{}",
            serde_json::json!({
                "addr": addr.to_string(),
                "url": format!("http://{addr}"),
                "etag": snap.etag,
                "revision": snap.revision,
                "writes": writes,
            })
        );
    } else {
        outln!(
            "mmsched serving on http://{addr}  (policy {} {})",
            mmsched_core::text::shorten(snap.policy.name(), 80),
            snap.etag
        );
        outln!("  GET/PUT http://{addr}/api/v1/policy   GET /api/v1/status   GET /metrics");
        if a.models.models {
            outln!(
                "  POST http://{addr}/v1/chat/completions   /v1/completions   /v1/audio/transcriptions   /api/v1/ocr   GET /v1/models"
            );
            outln!(
                "  POST http://{addr}/v2/models/{{name}}/infer   GET /v2   /v2/health/ready   /v2/models/{{name}}   (KServe v2)"
            );
        }
        if !writes {
            eprintln!(
                "note: policy writes are disabled; pass --token-file FILE or set MMSCHED_API_TOKEN to allow PUT"
            );
        }
        outln!("Ctrl-C stops.");
    }
    std::io::stdout().flush().ok();
    wait_for_ctrl_c();
    handle.stop();
    if let Some(runtime) = served {
        let dir = runtime.finish()?;
        eprintln!("report: {}", dir.display());
    }
    if !a.json {
        eprintln!("stopped");
    }
    Ok(ExitCode::SUCCESS)
}
