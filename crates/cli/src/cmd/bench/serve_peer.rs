//! `mmsched bench serve --peer`: mmsched's text serving side by side with llama.cpp's own
//! `llama-server`, on the same GGUF, the same prompts, the same token counts and the same
//! threads, through the same client code.
//!
//! For each `--requests` count N: `serve --models` with its defaults (its text cap raised to
//! N, so that no request is turned away) in this process, and `llama-server --parallel N` as
//! a child process; then `--repeat` rounds on each, interleaved (mmsched then the peer, the
//! peer then mmsched on the next repetition, so that neither always runs on a machine the
//! other just warmed or heated). A round sends the first N prompts at once as streamed greedy
//! completions (`temperature` 0, `top_k` 1, `cache_prompt` off: mmsched keeps no prompt
//! cache, so neither side may answer a repeated prompt from one).
//!
//! Figures per side and N, each the median (min–max) over the repetitions: aggregate
//! completion tokens/s (all answers' tokens ÷ first send to last answer); time to first
//! token (send to the first text chunk), P50 and P99 over the round's requests; time per
//! output token ((last chunk − first chunk) ÷ (tokens − 1) per request), P50 and P99. With
//! N requests a round has N samples, so a P99 is their largest.
//!
//! The peer is the one `scripts/build-llama-server.sh` builds (its versions file is printed
//! with the figures), a `llama-server` given by path, or any OpenAI-compatible server
//! already running (`--peer-url`, measured as it was started).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::{Args, Parser};
use mmsched_core::policy::Policy;
use mmsched_core::time::MonotonicClock;
use mmsched_models::Artifact;
use mmsched_server::{ServerConfig, Shared};
use serde::Serialize;
use serde_json::{Value, json};

use super::serve::{PROMPTS, Spread, load_average};
use crate::cmd::serve::ModelArgs;

/// The peer's options of `bench serve`.
#[derive(Debug, Args)]
pub struct PeerArgs {
    /// Measure llama.cpp's own llama-server beside mmsched, started as `llama-server
    /// --parallel N` for each --requests N. Without a value, the one
    /// scripts/build-llama-server.sh builds ($MMSCHED_PEER_DIR/bin/llama-server, default
    /// ~/.cache/mmsched/peer/bin/llama-server).
    #[arg(long, value_name = "LLAMA_SERVER", num_args = 0..=1, conflicts_with = "peer_url")]
    pub peer: Option<Option<PathBuf>>,
    /// Measure an OpenAI-compatible server already running at this URL (e.g.
    /// http://127.0.0.1:8080) as the peer, as it was started.
    #[arg(long, value_name = "URL")]
    pub peer_url: Option<String>,
    /// Threads of llama-server (`--threads` and `--threads-batch`). Default: the most threads
    /// mmsched grants one step (MMSCHED_THREAD_GRANT, else every core).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=256))]
    pub peer_threads: Option<u32>,
    /// One more argument for llama-server, after the benchmark's own (repeatable; e.g.
    /// --peer-arg=--flash-attn --peer-arg=on).
    #[arg(long = "peer-arg", value_name = "ARG", allow_hyphen_values = true)]
    pub peer_args: Vec<String>,
    /// One more argument for mmsched's `serve --models` with --peer (repeatable; e.g.
    /// --serve-arg=--text-batch). Without, its defaults.
    #[arg(long = "serve-arg", value_name = "ARG", allow_hyphen_values = true)]
    pub serve_args: Vec<String>,
}

impl PeerArgs {
    /// Whether a peer is to be measured.
    pub fn wanted(&self) -> bool {
        self.peer.is_some() || self.peer_url.is_some()
    }
}

/// What one round of the same benchmark asks for.
#[derive(Debug, Clone, Copy)]
pub struct Workload<'a> {
    /// Requests at once, one measurement each.
    pub requests: &'a [u32],
    /// `max_tokens` of each completion.
    pub tokens: u32,
    /// Rounds per side and request count.
    pub repeat: u32,
}

/// Context of each sequence, as mmsched's text model has (llama-server's `--ctx-size` is
/// this times `--parallel`, so that each slot has as much).
const SEQ_CONTEXT: u32 = mmsched_backends::llm::model::DEFAULT_MAX_SEQ_LEN as u32;

/// How long a llama-server may take to load the model and answer /health.
const START_TIMEOUT: Duration = Duration::from_secs(180);

/// Each request's deadline on mmsched (the text class's default is 30 s; a busy machine must
/// not make the scheduler shed a request the figures need).
const DEADLINE_MS: u64 = 300_000;

/// The version of the llama.cpp crate mmsched's engine is built from, read from the
/// workspace's lock file at build time (so it cannot drift from what is linked).
fn engine_crate_version() -> &'static str {
    const LOCK: &str = include_str!("../../../../../Cargo.lock");
    let mut lines = LOCK.lines();
    while let Some(line) = lines.next() {
        if line == "name = \"llama-cpp-sys-2\"" {
            return lines
                .next()
                .and_then(|l| l.strip_prefix("version = \""))
                .and_then(|l| l.strip_suffix('"'))
                .unwrap_or("?");
        }
    }
    "?"
}

// ---------------------------------------------------------------------------------------
// The client: one streamed completion, parsed as server-sent events.
// ---------------------------------------------------------------------------------------

/// What a streamed completion's events said, with the time (ns from the send) of each
/// chunk that carried text.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Streamed {
    /// The answer.
    pub text: String,
    /// When each text chunk arrived, ns after the request was sent.
    pub chunk_nanos: Vec<u64>,
    /// `usage.completion_tokens`, when a chunk carried it.
    pub usage_tokens: Option<u64>,
}

impl Streamed {
    /// Completion tokens: the usage the server reported, else one per text chunk.
    pub fn tokens(&self) -> u64 {
        self.usage_tokens.unwrap_or(self.chunk_nanos.len() as u64)
    }

    /// Time to the first token, ms.
    pub fn ttft_ms(&self) -> Option<f64> {
        self.chunk_nanos.first().map(|&n| n as f64 / 1e6)
    }

    /// Time per output token after the first, ms (none for an answer of one token).
    pub fn tpot_ms(&self) -> Option<f64> {
        let (first, last) = (self.chunk_nanos.first()?, self.chunk_nanos.last()?);
        let later = self.tokens().checked_sub(1).filter(|&t| t > 0)?;
        Some(last.saturating_sub(*first) as f64 / 1e6 / later as f64)
    }
}

/// Reads server-sent events from `r` until `data: [DONE]` or the end, stamping each text
/// chunk with `now()` (ns since the send). Takes a completion's `choices[0].text` and a
/// chat's `choices[0].delta.content`; an `error` object ends it as an error.
pub(crate) fn read_events(r: impl BufRead, mut now: impl FnMut() -> u64) -> Result<Streamed> {
    let mut out = Streamed::default();
    for line in r.lines() {
        let line = line.context("reading the event stream")?;
        let Some(data) = line.strip_prefix("data:") else {
            continue;
        };
        let data = data.trim();
        if data == "[DONE]" {
            break;
        }
        let v: Value = serde_json::from_str(data)
            .with_context(|| format!("an event is not JSON: {data:.200}"))?;
        if let Some(e) = v.get("error") {
            bail!("the server sent an error event: {e}");
        }
        let choice = &v["choices"][0];
        let text = choice["text"]
            .as_str()
            .or_else(|| choice["delta"]["content"].as_str())
            .unwrap_or_default();
        if !text.is_empty() {
            out.chunk_nanos.push(now());
            out.text.push_str(text);
        }
        if let Some(t) = v["usage"]["completion_tokens"].as_u64() {
            out.usage_tokens = Some(t);
        }
    }
    Ok(out)
}

/// The request body both sides get.
fn completion_body(prompt: &str, tokens: u32) -> String {
    json!({
        "prompt": prompt,
        "max_tokens": tokens,
        "temperature": 0,
        "top_k": 1,
        "stream": true,
        "stream_options": {"include_usage": true},
        "cache_prompt": false,
    })
    .to_string()
}

/// An HTTP client for one side.
#[derive(Debug, Clone)]
struct Side {
    /// `http://host:port`, no trailing slash.
    base: String,
    agent: ureq::Agent,
}

impl Side {
    fn new(base: &str) -> Self {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_connect(Some(Duration::from_secs(5)))
            .timeout_global(Some(Duration::from_millis(DEADLINE_MS)))
            .build()
            .into();
        Self {
            base: base.trim_end_matches('/').to_string(),
            agent,
        }
    }

    /// One streamed greedy completion of `prompt`.
    fn complete(&self, prompt: &str, tokens: u32) -> Result<Streamed> {
        let url = format!("{}/v1/completions", self.base);
        let t0 = Instant::now();
        let mut resp = self
            .agent
            .post(&url)
            .header("Content-Type", "application/json")
            .header("X-Deadline-Ms", DEADLINE_MS.to_string())
            .send(completion_body(prompt, tokens))
            .with_context(|| format!("sending a completion to {url}"))?;
        let status = resp.status().as_u16();
        if status != 200 {
            let body = resp.body_mut().read_to_string().unwrap_or_default();
            bail!("{url} answered {status}: {}", body.trim());
        }
        let reader = BufReader::new(resp.into_body().into_reader());
        read_events(reader, || t0.elapsed().as_nanos() as u64)
    }

    /// Whether `/health` answers 200.
    fn healthy(&self) -> bool {
        self.agent
            .get(format!("{}/health", self.base))
            .call()
            .is_ok_and(|r| r.status().as_u16() == 200)
    }
}

// ---------------------------------------------------------------------------------------
// Statistics.
// ---------------------------------------------------------------------------------------

/// The nearest-rank `p`th percentile of `v` (0 for none).
pub(crate) fn percentile(v: &[f64], p: f64) -> f64 {
    let mut s: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    if s.is_empty() {
        return 0.0;
    }
    s.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * s.len() as f64).ceil() as usize;
    s[rank.clamp(1, s.len()) - 1]
}

/// One round's figures.
#[derive(Debug, Clone)]
pub(crate) struct Round {
    tok_s: f64,
    ttft_p50: f64,
    ttft_p99: f64,
    tpot_p50: f64,
    tpot_p99: f64,
    answers: Vec<(String, u64)>,
}

impl Round {
    /// The figures of `answers` sent at once, the last ending `wall_nanos` after the first
    /// send.
    pub(crate) fn of(answers: &[Streamed], wall_nanos: u64) -> Self {
        let tokens: u64 = answers.iter().map(Streamed::tokens).sum();
        let ttft: Vec<f64> = answers.iter().filter_map(Streamed::ttft_ms).collect();
        let tpot: Vec<f64> = answers.iter().filter_map(Streamed::tpot_ms).collect();
        Self {
            tok_s: tokens as f64 / (wall_nanos.max(1) as f64 / 1e9),
            ttft_p50: percentile(&ttft, 50.0),
            ttft_p99: percentile(&ttft, 99.0),
            tpot_p50: percentile(&tpot, 50.0),
            tpot_p99: percentile(&tpot, 99.0),
            answers: answers
                .iter()
                .map(|a| (a.text.clone(), a.tokens()))
                .collect(),
        }
    }
}

/// One side's figures at one request count, over the repetitions.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SideFigures {
    /// Aggregate completion tokens/s.
    tok_s: Spread,
    /// Time to first token, ms: the round's P50 and P99.
    ttft_ms_p50: Spread,
    ttft_ms_p99: Spread,
    /// Time per output token, ms: the round's P50 and P99.
    tpot_ms_p50: Spread,
    tpot_ms_p99: Spread,
    /// Completion tokens of each prompt's answer (first round).
    completion_tokens: Vec<u64>,
    /// Each prompt's answer (first round).
    answers: Vec<String>,
}

impl SideFigures {
    pub(crate) fn of(rounds: &[Round]) -> Self {
        let spread = |f: fn(&Round) -> f64| Spread::of(rounds.iter().map(f).collect());
        let first = rounds
            .first()
            .map(|r| r.answers.clone())
            .unwrap_or_default();
        Self {
            tok_s: spread(|r| r.tok_s),
            ttft_ms_p50: spread(|r| r.ttft_p50),
            ttft_ms_p99: spread(|r| r.ttft_p99),
            tpot_ms_p50: spread(|r| r.tpot_p50),
            tpot_ms_p99: spread(|r| r.tpot_p99),
            completion_tokens: first.iter().map(|a| a.1).collect(),
            answers: first.into_iter().map(|a| a.0).collect(),
        }
    }
}

/// Sends `prompts` at once to `side`; the round's figures.
fn round(side: &Side, prompts: &[&str], tokens: u32) -> Result<Round> {
    let t0 = Instant::now();
    let answers = super::serve::all_at_once(prompts, |p| side.complete(p, tokens))?;
    Ok(Round::of(&answers, t0.elapsed().as_nanos() as u64))
}

// ---------------------------------------------------------------------------------------
// The two servers.
// ---------------------------------------------------------------------------------------

/// `serve --models` as its command line sets it up, with `extra` after the benchmark's own.
#[derive(Debug, Parser)]
struct ServeLine {
    #[command(flatten)]
    models: ModelArgs,
}

/// mmsched's `serve --models` with its defaults, in this process.
struct Mmsched {
    handle: mmsched_server::ServerHandle,
    runtime: crate::cmd::serve_models::Served,
}

impl Mmsched {
    fn start(requests: u32, report: &Path, extra: &[String]) -> Result<Self> {
        let mut argv: Vec<String> = ["serve", "--models", "--max-concurrent"]
            .map(String::from)
            .to_vec();
        argv.push(format!("llm={requests}"));
        argv.push("--report".into());
        argv.push(report.display().to_string());
        argv.extend(extra.iter().cloned());
        let line = ServeLine::try_parse_from(&argv)
            .map_err(|e| anyhow::anyhow!("{}", e.render()))
            .with_context(|| format!("reading --serve-arg {extra:?}"))?;
        let policy = Policy::default();
        let shared = Shared::new(policy.clone(), Arc::new(MonotonicClock::new()), "defaults");
        let (api, runtime) = crate::cmd::serve_models::load(&line.models, &policy, &shared)?;
        let config = ServerConfig {
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            extra: Some(mmsched_openai::router(api)),
            ..ServerConfig::default()
        };
        let handle = mmsched_server::spawn(shared, config)?;
        Ok(Self { handle, runtime })
    }

    fn base(&self) -> String {
        format!("http://{}", self.handle.local_addr())
    }

    fn stop(self) -> Result<()> {
        self.handle.stop();
        self.runtime.finish()?;
        Ok(())
    }
}

/// Where scripts/build-llama-server.sh puts the binary.
fn built_peer_path() -> PathBuf {
    std::env::var_os("MMSCHED_PEER_DIR")
        .filter(|v| !v.is_empty())
        .map_or_else(|| mmsched_models::cache_dir().join("peer"), PathBuf::from)
        .join("bin")
        .join("llama-server")
}

/// The llama-server binary `--peer` names, checked.
fn peer_binary(arg: Option<&Path>) -> Result<PathBuf> {
    let path = arg.map_or_else(built_peer_path, Path::to_path_buf);
    if !path.is_file() {
        bail!(
            "llama-server not found at {}: build it with scripts/build-llama-server.sh (it prints where the binary is), or pass --peer PATH or --peer-url URL",
            path.display()
        );
    }
    Ok(path)
}

/// A `llama-server` child process, stopped when dropped.
struct PeerProcess {
    child: Child,
    side: Side,
}

impl PeerProcess {
    /// The arguments the benchmark starts llama-server with: the same GGUF, N slots of
    /// mmsched's context each in KV streams of their own (as mmsched keeps its sequences),
    /// attention without flash attention (mmsched's engine turns it off), no prompt cache in
    /// host memory, the same threads.
    fn args(gguf: &Path, port: u16, requests: u32, threads: u32, extra: &[String]) -> Vec<String> {
        let mut a: Vec<String> = vec![
            "--model".into(),
            gguf.display().to_string(),
            "--host".into(),
            "127.0.0.1".into(),
            "--port".into(),
            port.to_string(),
            "--parallel".into(),
            requests.to_string(),
            "--ctx-size".into(),
            (SEQ_CONTEXT * requests).to_string(),
            "--no-kv-unified".into(),
            "--flash-attn".into(),
            "off".into(),
            "--cache-ram".into(),
            "0".into(),
            "--threads".into(),
            threads.to_string(),
            "--threads-batch".into(),
            threads.to_string(),
            "--no-ui".into(),
        ];
        a.extend(extra.iter().cloned());
        a
    }

    fn start(bin: &Path, args: &[String], port: u16, log: &Path) -> Result<Self> {
        let out =
            std::fs::File::create(log).with_context(|| format!("creating {}", log.display()))?;
        let child = Command::new(bin)
            .args(args)
            .stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out)
            .spawn()
            .with_context(|| format!("starting {}", bin.display()))?;
        let mut p = Self {
            child,
            side: Side::new(&format!("http://127.0.0.1:{port}")),
        };
        let t0 = Instant::now();
        while !p.side.healthy() {
            if let Some(status) = p.child.try_wait()? {
                bail!(
                    "{} exited ({status}) before it served: {}",
                    bin.display(),
                    log_tail(log)
                );
            }
            if t0.elapsed() > START_TIMEOUT {
                bail!(
                    "{} did not answer /health within {} s: {}",
                    bin.display(),
                    START_TIMEOUT.as_secs(),
                    log_tail(log)
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(p)
    }
}

impl Drop for PeerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The last lines of a log, for an error message.
fn log_tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let tail = lines[lines.len().saturating_sub(8)..].join("\n");
    format!("its log ({}) ends:\n{tail}", log.display())
}

/// A port free on 127.0.0.1 now (the peer binds it a moment later).
fn free_port() -> Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// What `bin --version` says (llama-server prints it on standard error), on one line.
fn binary_version(bin: &Path) -> String {
    let out = Command::new(bin)
        .arg("--version")
        .stdin(Stdio::null())
        .output();
    match out {
        Ok(o) => {
            let mut text = String::from_utf8_lossy(&o.stderr).into_owned();
            text.push_str(&String::from_utf8_lossy(&o.stdout));
            text.lines()
                .map(str::trim)
                .filter(|l| l.starts_with("version") || l.starts_with("built with"))
                .collect::<Vec<_>>()
                .join("; ")
        }
        Err(e) => format!("? ({e})"),
    }
}

/// The `key=value` lines of the versions file beside `bin`, if any.
fn versions_file(bin: &Path) -> BTreeMap<String, String> {
    let mut path = bin.as_os_str().to_owned();
    path.push(".versions");
    std::fs::read_to_string(PathBuf::from(path))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

/// The peer's arguments without those set per run (the port, `--parallel N` and its
/// context), for the output.
fn shown_args(args: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if matches!(a.as_str(), "--port" | "--parallel" | "--ctx-size") {
            it.next();
        } else {
            out.push(a.clone());
        }
    }
    out
}

/// The peer as measured: a binary started per request count, or a running server.
enum Peer {
    Binary {
        bin: PathBuf,
        gguf: PathBuf,
        threads: u32,
        extra: Vec<String>,
    },
    Url(String),
}

/// The peer in service for one request count.
enum Running {
    Child(PeerProcess),
    Url(Side),
}

impl Running {
    fn side(&self) -> &Side {
        match self {
            Running::Child(p) => &p.side,
            Running::Url(s) => s,
        }
    }
}

impl Peer {
    fn start(&self, requests: u32, dir: &Path) -> Result<Running> {
        match self {
            Peer::Url(url) => Ok(Running::Url(Side::new(url))),
            Peer::Binary {
                bin,
                gguf,
                threads,
                extra,
            } => {
                let port = free_port()?;
                let args = PeerProcess::args(gguf, port, requests, *threads, extra);
                let log = dir.join(format!("llama-server-{requests}.log"));
                Ok(Running::Child(PeerProcess::start(bin, &args, port, &log)?))
            }
        }
    }

    /// How the peer is described in the output.
    fn describe(&self) -> Value {
        match self {
            Peer::Url(url) => json!({"url": url}),
            Peer::Binary {
                bin,
                gguf,
                threads,
                extra,
            } => json!({
                "binary": bin.display().to_string(),
                "version": binary_version(bin),
                "versions": versions_file(bin),
                "threads": threads,
                "args": shown_args(&PeerProcess::args(gguf, 0, 0, *threads, extra)),
            }),
        }
    }
}

// ---------------------------------------------------------------------------------------
// The benchmark.
// ---------------------------------------------------------------------------------------

/// Both sides' figures at one request count.
#[derive(Debug, Serialize)]
struct AtCount {
    requests: u32,
    mmsched: SideFigures,
    peer: SideFigures,
    /// Whether both sides gave every prompt the same answer.
    answers_match: bool,
}

/// Measures both sides at `requests` at once.
fn measure_count(
    w: &Workload<'_>,
    requests: u32,
    peer: &Peer,
    serve_args: &[String],
    dir: &Path,
) -> Result<AtCount> {
    let prompts = &PROMPTS[..requests as usize];
    let mm = Mmsched::start(
        requests,
        &dir.join(format!("mmsched-{requests}")),
        serve_args,
    )
    .with_context(|| format!("starting mmsched's serve --models for {requests} at once"))?;
    let running = peer.start(requests, dir);
    let running = match running {
        Ok(r) => r,
        Err(e) => {
            let _ = mm.stop();
            return Err(e.context(format!("starting the peer for {requests} at once")));
        }
    };
    let mm_side = Side::new(&mm.base());
    let measured = (|| -> Result<(Vec<Round>, Vec<Round>)> {
        // One untimed request each: the endpoints and the first graphs warm.
        mm_side
            .complete(prompts[0], 2)
            .context("mmsched's warm-up")?;
        running
            .side()
            .complete(prompts[0], 2)
            .context("the peer's warm-up")?;
        let (mut ours, mut theirs) = (Vec::new(), Vec::new());
        for r in 0..w.repeat {
            if r % 2 == 0 {
                ours.push(round(&mm_side, prompts, w.tokens).context("an mmsched round")?);
                theirs.push(round(running.side(), prompts, w.tokens).context("a peer round")?);
            } else {
                theirs.push(round(running.side(), prompts, w.tokens).context("a peer round")?);
                ours.push(round(&mm_side, prompts, w.tokens).context("an mmsched round")?);
            }
        }
        Ok((ours, theirs))
    })();
    drop(running);
    mm.stop()?;
    let (ours, theirs) = measured?;
    let (mmsched, peer) = (SideFigures::of(&ours), SideFigures::of(&theirs));
    let answers_match = mmsched.answers == peer.answers;
    Ok(AtCount {
        requests,
        mmsched,
        peer,
        answers_match,
    })
}

/// The most threads mmsched grants one step: what llama-server gets by default.
fn mmsched_threads() -> u32 {
    u32::try_from(mmsched_pipeline::platform::max_thread_grant()).unwrap_or(1)
}

/// Runs the side-by-side benchmark.
pub fn run(w: Workload<'_>, p: &PeerArgs, json_out: bool) -> Result<ExitCode> {
    // The peer first: its absence is the likelier error and needs no model to tell.
    let bin = p
        .peer
        .as_ref()
        .map(|arg| peer_binary(arg.as_deref()))
        .transpose()?;
    let gguf = mmsched_models::require(Artifact::Gemma3)?;
    let threads = p.peer_threads.unwrap_or_else(mmsched_threads);
    let peer = match (bin, &p.peer_url) {
        (_, Some(url)) => Peer::Url(url.clone()),
        (Some(bin), None) => Peer::Binary {
            bin,
            gguf: gguf.clone(),
            threads,
            extra: p.peer_args.clone(),
        },
        (None, None) => bail!("--peer or --peer-url names the peer"),
    };
    let dir = std::env::temp_dir().join(format!("mmsched-bench-peer-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let load_before = load_average();
    let mut counts = Vec::new();
    for &n in w.requests {
        counts.push(measure_count(&w, n, &peer, &p.serve_args, &dir)?);
    }
    let load_after = load_average();
    let _ = std::fs::remove_dir_all(&dir);
    let out = json!({
        "tokens": w.tokens,
        "repeat": w.repeat,
        "gguf": gguf.display().to_string(),
        "mmsched": {
            "version": env!("CARGO_PKG_VERSION"),
            "engine": format!("llama.cpp vendored by llama-cpp-sys-2 {}", engine_crate_version()),
            "max_thread_grant": mmsched_threads(),
            "serve_args": p.serve_args,
        },
        "peer": peer.describe(),
        "load_average": {"before": load_before, "after": load_after},
        "results": counts,
        "goals": goals(&counts),
    });
    if json_out {
        outln!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        print_table(&out, &counts);
    }
    Ok(ExitCode::SUCCESS)
}

/// The goals at 4 at once, when measured: mmsched's aggregate against its own at 1
/// (≥ 2) and against the peer's at 4 (≥ 1).
fn goals(counts: &[AtCount]) -> Value {
    let at = |n: u32| counts.iter().find(|c| c.requests == n);
    let four = at(4);
    json!({
        "mmsched_4_vs_1": four.zip(at(1)).map(|(f, o)| f.mmsched.tok_s.median / o.mmsched.tok_s.median.max(f64::MIN_POSITIVE)),
        "mmsched_4_vs_peer_4": four.map(|f| f.mmsched.tok_s.median / f.peer.tok_s.median.max(f64::MIN_POSITIVE)),
    })
}

fn spread_text(s: &Spread, digits: usize) -> String {
    format!("{:.d$} ({:.d$}-{:.d$})", s.median, s.min, s.max, d = digits)
}

fn print_table(out: &Value, counts: &[AtCount]) {
    let peer = &out["peer"];
    outln!(
        "mmsched {} (engine: {}; serve --models defaults{}; a step gets up to {} threads)",
        out["mmsched"]["version"].as_str().unwrap_or("?"),
        out["mmsched"]["engine"].as_str().unwrap_or("?"),
        if out["mmsched"]["serve_args"]
            .as_array()
            .is_some_and(|a| !a.is_empty())
        {
            format!(" + {}", out["mmsched"]["serve_args"])
        } else {
            String::new()
        },
        out["mmsched"]["max_thread_grant"]
    );
    match peer["binary"].as_str() {
        Some(bin) => {
            outln!(
                "llama-server: {bin} ({})",
                peer["version"].as_str().unwrap_or("?")
            );
            if let Some(v) = peer["versions"].as_object() {
                for (k, val) in v {
                    outln!("  {k}: {}", val.as_str().unwrap_or("?"));
                }
            }
            outln!(
                "  started as: llama-server {} (with --parallel N --ctx-size {SEQ_CONTEXT}*N --port …)",
                peer["args"]
                    .as_array()
                    .map(|a| a
                        .iter()
                        .filter_map(Value::as_str)
                        .collect::<Vec<_>>()
                        .join(" "))
                    .unwrap_or_default()
            );
        }
        None => outln!(
            "peer: {} (as it was started)",
            peer["url"].as_str().unwrap_or("?")
        ),
    }
    outln!("GGUF: {}", out["gguf"].as_str().unwrap_or("?"));
    outln!(
        "{:>3}  {:<12} {:>22} {:>22} {:>22} {:>20} {:>20}",
        "N",
        "server",
        "tokens/s",
        "TTFT P50 ms",
        "TTFT P99 ms",
        "TPOT P50 ms",
        "TPOT P99 ms"
    );
    for c in counts {
        for (name, f) in [("mmsched", &c.mmsched), ("llama-server", &c.peer)] {
            outln!(
                "{:>3}  {:<12} {:>22} {:>22} {:>22} {:>20} {:>20}",
                c.requests,
                name,
                spread_text(&f.tok_s, 1),
                spread_text(&f.ttft_ms_p50, 1),
                spread_text(&f.ttft_ms_p99, 1),
                spread_text(&f.tpot_ms_p50, 2),
                spread_text(&f.tpot_ms_p99, 2)
            );
        }
        if !c.answers_match {
            outln!(
                "     answers differ: mmsched {:?} tokens, llama-server {:?}",
                c.mmsched.completion_tokens,
                c.peer.completion_tokens
            );
        }
    }
    let g = &out["goals"];
    if let (Some(own), Some(peer)) = (
        g["mmsched_4_vs_1"].as_f64(),
        g["mmsched_4_vs_peer_4"].as_f64(),
    ) {
        outln!(
            "4 at once: mmsched {own:.2}x its rate at 1 (goal: at least 2), {peer:.2}x llama-server's at 4 (goal: at least 1)"
        );
    }
    outln!(
        "(streamed greedy completions of {} tokens on 127.0.0.1, median (min-max) of {} rounds each, the two sides interleaved; load average {} before, {} after)",
        out["tokens"],
        out["repeat"],
        out["load_average"]["before"],
        out["load_average"]["after"]
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stream as llama-server sends it: a role-less first chunk, text chunks, a last chunk
    /// with the finish reason, one with the usage and no choices, then [DONE].
    const PEER_STREAM: &str = concat!(
        "data: {\"choices\":[{\"text\":\" Paris\",\"index\":0,\"finish_reason\":null}],\"object\":\"text_completion\"}\n\n",
        "data: {\"choices\":[{\"text\":\".\",\"index\":0,\"finish_reason\":null}]}\n\n",
        "data: {\"choices\":[{\"text\":\"\",\"index\":0,\"finish_reason\":\"length\"}]}\n\n",
        "data: {\"choices\":[],\"usage\":{\"completion_tokens\":3,\"prompt_tokens\":6}}\n\n",
        "data: [DONE]\n\n",
        "data: {\"choices\":[{\"text\":\"after the end\"}]}\n\n",
    );

    fn clock(step: u64) -> impl FnMut() -> u64 {
        let mut t = 0;
        move || {
            t += step;
            t
        }
    }

    #[test]
    fn a_stream_is_read_to_its_done_with_the_reported_usage() {
        let s = read_events(PEER_STREAM.as_bytes(), clock(10_000_000)).expect("parses");
        assert_eq!(s.text, " Paris.");
        assert_eq!(s.chunk_nanos, vec![10_000_000, 20_000_000]);
        assert_eq!(s.tokens(), 3, "the usage counts, not the chunks");
        assert_eq!(s.ttft_ms(), Some(10.0));
        // 10 ms between the first and last chunk over the 2 tokens after the first.
        assert_eq!(s.tpot_ms(), Some(5.0));
    }

    #[test]
    fn chat_deltas_comments_and_no_usage_count_chunks() {
        let stream = concat!(
            ": keep-alive\n\n",
            "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"content\":\" there\"}}]}\n\n",
        );
        let s = read_events(stream.as_bytes(), clock(1_000_000)).expect("parses");
        assert_eq!(s.text, "Hi there");
        assert_eq!(s.tokens(), 2);
        assert_eq!(s.tpot_ms(), Some(1.0));
    }

    #[test]
    fn an_error_event_or_a_broken_event_fails_the_request() {
        let err = read_events(
            "data: {\"error\":{\"message\":\"busy\"}}\n".as_bytes(),
            clock(1),
        )
        .expect_err("an error event");
        assert!(err.to_string().contains("busy"), "{err}");
        assert!(read_events("data: {not json\n".as_bytes(), clock(1)).is_err());
    }

    #[test]
    fn one_token_has_a_first_token_time_but_no_time_per_token() {
        let s = read_events(
            "data: {\"choices\":[{\"text\":\"x\"}],\"usage\":{\"completion_tokens\":1}}\n"
                .as_bytes(),
            clock(7),
        )
        .expect("parses");
        assert_eq!(s.ttft_ms(), Some(7e-6));
        assert_eq!(s.tpot_ms(), None);
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let v = [4.0, 1.0, 3.0, 2.0];
        assert_eq!(percentile(&v, 50.0), 2.0);
        assert_eq!(percentile(&v, 99.0), 4.0);
        assert_eq!(percentile(&v, 0.0), 1.0);
        assert_eq!(percentile(&[], 50.0), 0.0);
        assert_eq!(percentile(&[5.0, f64::NAN], 99.0), 5.0);
    }

    #[test]
    fn a_round_adds_every_answer_over_the_wall_time() {
        let answer = |first: u64, last: u64, tokens: u64| Streamed {
            text: format!("{tokens}"),
            chunk_nanos: vec![first, last],
            usage_tokens: Some(tokens),
        };
        // 10 + 30 tokens in 2 s; TTFT 100 and 300 ms; TPOT (1000-100)/9 = 100 and
        // (1800-300)/29 ≈ 51.7 ms.
        let r = Round::of(
            &[
                answer(100_000_000, 1_000_000_000, 10),
                answer(300_000_000, 1_800_000_000, 30),
            ],
            2_000_000_000,
        );
        assert_eq!(r.tok_s, 20.0);
        assert_eq!((r.ttft_p50, r.ttft_p99), (100.0, 300.0));
        assert!((r.tpot_p50 - 1500.0 / 29.0).abs() < 1e-9, "{}", r.tpot_p50);
        assert_eq!(r.tpot_p99, 100.0);
        let f = SideFigures::of(&[
            r.clone(),
            Round {
                tok_s: 10.0,
                ..r.clone()
            },
            Round { tok_s: 30.0, ..r },
        ]);
        assert_eq!(
            (f.tok_s.median, f.tok_s.min, f.tok_s.max),
            (20.0, 10.0, 30.0)
        );
        assert_eq!(f.completion_tokens, vec![10, 30]);
    }

    #[test]
    fn the_peer_gets_the_same_model_threads_and_context_per_slot() {
        let a = PeerProcess::args(
            Path::new("/m.gguf"),
            9,
            4,
            2,
            &["--flash-attn".into(), "on".into()],
        );
        let after = |flag: &str| a.iter().position(|x| x == flag).map(|i| a[i + 1].as_str());
        assert_eq!(after("--model"), Some("/m.gguf"));
        assert_eq!(after("--parallel"), Some("4"));
        assert_eq!(
            after("--ctx-size"),
            Some((SEQ_CONTEXT * 4).to_string().as_str())
        );
        assert_eq!(
            (after("--threads"), after("--threads-batch")),
            (Some("2"), Some("2"))
        );
        // Extra arguments come last, so they win over the benchmark's.
        assert_eq!(a[a.len() - 2..], ["--flash-attn", "on"]);
    }

    #[test]
    fn a_missing_peer_names_the_build_script() {
        let err = peer_binary(Some(Path::new("/nonexistent/llama-server"))).expect_err("missing");
        assert!(
            err.to_string().contains("scripts/build-llama-server.sh"),
            "{err}"
        );
    }

    #[test]
    fn the_engine_version_comes_from_the_lock_file() {
        assert!(
            engine_crate_version().starts_with("0."),
            "{}",
            engine_crate_version()
        );
    }
}
