//! `mmsched bench serve`: concurrent text requests over HTTP, as a client of `serve
//! --models` sees them. In this process: the models and the runtime of `serve --models`
//! (the mmsched scheduler, its standard worker layout, no streams) behind the OpenAI
//! endpoints on 127.0.0.1, then for each repetition the same `--requests` greedy
//! completions of `--tokens` tokens first one after another (each alone on the device),
//! then all at once from as many client threads.
//!
//! Figures: aggregate completion tokens/s at once (tokens of all answers ÷ the time from
//! the first send to the last answer) against one after another (the same tokens ÷ the
//! sum of the lone requests' times), their ratio per repetition, median (min–max) over
//! repetitions; and whether every answer at once was identical to the same prompt's lone
//! answer. With `--compare-sessions` the same again on a second server whose text requests
//! each get a session of their own (`serve --models` without `--text-batch`, the default).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::Args;
use mmsched_core::policy::Policy;
use mmsched_core::time::{Clock, MonotonicClock, Nanos};
use mmsched_server::{ServerConfig, ServerHandle, Shared};
use serde::Serialize;
use serde_json::{Value, json};

use crate::cmd::serve::ModelArgs;
use crate::cmd::serve_models::Served;

/// The prompts, one per concurrent request (the first `--requests`).
pub(super) const PROMPTS: [&str; 8] = [
    "The three primary colours of light are",
    "Once upon a time, in a small village by the sea,",
    "To make a cup of tea, first boil the water, then",
    "The capital of France is",
    "List of prime numbers: 2, 3, 5, 7,",
    "The weather today is sunny with",
    "In 1969, the first humans to walk on the Moon were",
    "A good way to learn a new language is",
];

/// Arguments of `bench serve`.
#[derive(Debug, Args)]
pub struct ServeBenchArgs {
    /// Requests sent at once (each a different prompt; 1 to 8). With --peer a list, each
    /// count measured in turn (e.g. 1,2,4,8).
    #[arg(long, value_name = "N", default_value = "4", value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..=8))]
    requests: Vec<u32>,
    /// Tokens each greedy completion asks for (`max_tokens`; a prompt may stop earlier at
    /// the end-of-text token: the figures count the tokens answered).
    #[arg(long, value_name = "N", default_value_t = 24, value_parser = clap::value_parser!(u32).range(1..=512))]
    tokens: u32,
    /// Repetitions (each: the requests one after another, then at once).
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
    repeat: u32,
    /// Also measure a server whose text requests each get a session of their own (no
    /// batching), as `serve --models` runs by default.
    #[arg(long)]
    compare_sessions: bool,
    /// Print the figures as JSON: per server (`batched`, and `sessions` with
    /// --compare-sessions) `alone_tok_s`, `together_tok_s`, `speedup` (each {median, min,
    /// max}), `together_seconds`, `answers_identical`; and `load_average` (1-minute, before
    /// and after).
    #[arg(long)]
    json: bool,
    /// Instead: run `serve --models --scenario SCENARIO` (a shipped name or a file) for
    /// --duration seconds without clients and with --requests clients chatting back to
    /// back, --repeat rounds, and compare the scenario's own camera and voice-activity
    /// on-time shares (`origin.streams`) between the two.
    #[arg(long, value_name = "NAME|FILE")]
    beside: Option<String>,
    /// Seconds each run of --beside lasts.
    #[arg(long, value_name = "SECS", default_value_t = 20, value_parser = clap::value_parser!(u64).range(5..=3600))]
    duration: u64,
    #[command(flatten)]
    peer: super::serve_peer::PeerArgs,
}

/// A figure over repetitions.
#[derive(Debug, Clone, Copy, Serialize)]
pub(super) struct Spread {
    pub(super) median: f64,
    pub(super) min: f64,
    pub(super) max: f64,
}

impl Spread {
    pub(super) fn of(mut v: Vec<f64>) -> Self {
        v.sort_by(f64::total_cmp);
        Self {
            median: v.get(v.len() / 2).copied().unwrap_or(0.0),
            min: v.first().copied().unwrap_or(0.0),
            max: v.last().copied().unwrap_or(0.0),
        }
    }
}

/// One server's figures.
#[derive(Debug, Serialize)]
struct ServerFigures {
    /// Completion tokens/s of the requests one after another.
    alone_tok_s: Spread,
    /// Aggregate completion tokens/s of the requests at once.
    together_tok_s: Spread,
    /// Together ÷ alone, per repetition.
    speedup: Spread,
    /// Wall time of the requests at once, seconds.
    together_seconds: Spread,
    /// Wall time of one request alone (mean of the prompts), seconds.
    alone_seconds: Spread,
    /// Whether every answer at once equalled the same prompt's answer alone.
    answers_identical: bool,
    /// The lone answers, by prompt.
    answers: Vec<String>,
}

/// Each request's deadline: long, so that a machine busy with other work does not make
/// the scheduler shed a request the figures need (the class default is 30 s).
const DEADLINE_MS: u64 = 300_000;

/// One completion's answer and how long it took.
pub(super) struct Answer {
    pub(super) text: String,
    pub(super) tokens: u64,
    pub(super) nanos: Nanos,
}

/// Sends one greedy completion to `addr` over a connection of its own.
pub(super) fn complete(
    addr: SocketAddr,
    prompt: &str,
    tokens: u32,
    clock: &MonotonicClock,
) -> Result<Answer> {
    let body = json!({
        "model": mmsched_openai::LLM_ID,
        "prompt": prompt,
        "max_tokens": tokens,
        "temperature": 0,
    })
    .to_string();
    let t0 = clock.now_nanos();
    let mut conn = TcpStream::connect(addr).with_context(|| format!("connecting to {addr}"))?;
    conn.set_read_timeout(Some(Duration::from_secs(300)))?;
    write!(
        conn,
        "POST /v1/completions HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nX-Deadline-Ms: {DEADLINE_MS}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    let mut response = String::new();
    conn.read_to_string(&mut response)?;
    let nanos = clock.now_nanos().saturating_sub(t0);
    let (head, body) = response
        .split_once("\r\n\r\n")
        .context("the server's response has no body")?;
    if !head.starts_with("HTTP/1.1 200") {
        bail!(
            "the completion failed: {} {}",
            head.lines().next().unwrap_or_default(),
            body.trim()
        );
    }
    let v: Value = serde_json::from_str(body).context("the completion is not JSON")?;
    Ok(Answer {
        text: v["choices"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        tokens: v["usage"]["completion_tokens"].as_u64().unwrap_or(0),
        nanos,
    })
}

/// The 1-minute load average (Linux), if readable.
pub(super) fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// `serve --models` in this process, on 127.0.0.1 at a free port: `requests` text requests
/// at once (sessions, or rows of one batch with `batched`), `scenario`'s streams if given,
/// the report written to `report` when the runtime finishes.
pub(super) fn serve_here(
    requests: u32,
    batched: bool,
    scenario: Option<&str>,
    report: &std::path::Path,
) -> Result<(ServerHandle, Served)> {
    let policy = Policy::default();
    let shared = Shared::new(policy.clone(), Arc::new(MonotonicClock::new()), "defaults");
    let models = ModelArgs {
        models: true,
        scheduler: crate::cmd::run::SchedulerArg::Mmsched,
        deadline_ms: Vec::new(),
        max_concurrent: vec![format!("llm={requests}")],
        upload_limit_mib: 25,
        decode_budget_mib: 256,
        api_keys: None,
        scenario: scenario.map(str::to_string),
        report: report.to_path_buf(),
        text_batch: batched,
        model: Vec::new(),
        model_config: Vec::new(),
        long_run: Default::default(),
    };
    let (api, served) = crate::cmd::serve_models::load(&models, &policy, &shared)?;
    let config = ServerConfig {
        addr: SocketAddr::from(([127, 0, 0, 1], 0)),
        extra: Some(mmsched_openai::router(api)),
        ..ServerConfig::default()
    };
    Ok((mmsched_server::spawn(shared, config)?, served))
}

/// Starts `serve --models` in this process (batched text or a session per request) and
/// measures it.
fn measure_server(
    a: &ServeBenchArgs,
    requests: u32,
    batched: bool,
    report: &std::path::Path,
) -> Result<ServerFigures> {
    let n = requests as usize;
    let (handle, runtime) = serve_here(requests, batched, None, report)?;
    let addr = handle.local_addr();
    let clock = MonotonicClock::new();
    let prompts = &PROMPTS[..n];
    let run = || -> Result<ServerFigures> {
        let mut lone_answers: Vec<String> = Vec::new();
        let (mut alone, mut together, mut speedup) = (Vec::new(), Vec::new(), Vec::new());
        let (mut together_s, mut alone_s) = (Vec::new(), Vec::new());
        let mut identical = true;
        // One untimed request first (the endpoints and the first graphs warm).
        complete(addr, prompts[0], 2, &clock)?;
        for _ in 0..a.repeat {
            let lone: Vec<Answer> = prompts
                .iter()
                .map(|p| complete(addr, p, a.tokens, &clock))
                .collect::<Result<_>>()?;
            let t0 = clock.now_nanos();
            let at_once: Vec<Answer> =
                all_at_once(prompts, |p| complete(addr, p, a.tokens, &clock))?;
            let wall = clock.now_nanos().saturating_sub(t0).max(1) as f64 / 1e9;
            if lone_answers.is_empty() {
                lone_answers = lone.iter().map(|l| l.text.clone()).collect();
            }
            // Every answer, alone or at once, in every repetition, is the first lone one.
            identical &= lone
                .iter()
                .chain(&at_once)
                .zip(lone_answers.iter().cycle())
                .all(|(got, want)| &got.text == want);
            let tokens: u64 = at_once.iter().map(|t| t.tokens).sum();
            let lone_tokens: u64 = lone.iter().map(|l| l.tokens).sum();
            let lone_secs: f64 = lone.iter().map(|l| l.nanos as f64 / 1e9).sum();
            let a_rate = lone_tokens as f64 / lone_secs.max(f64::MIN_POSITIVE);
            let t_rate = tokens as f64 / wall;
            alone.push(a_rate);
            together.push(t_rate);
            speedup.push(t_rate / a_rate.max(f64::MIN_POSITIVE));
            together_s.push(wall);
            alone_s.push(lone_secs / n as f64);
        }
        Ok(ServerFigures {
            alone_tok_s: Spread::of(alone),
            together_tok_s: Spread::of(together),
            speedup: Spread::of(speedup),
            together_seconds: Spread::of(together_s),
            alone_seconds: Spread::of(alone_s),
            answers_identical: identical,
            answers: lone_answers,
        })
    };
    let figures = run();
    handle.stop();
    runtime.finish()?;
    figures
}

fn print(name: &str, f: &ServerFigures, requests: u32) {
    outln!(
        "{name}: {requests} requests one after another {:.1} tokens/s ({:.2} s each), at once {:.1} tokens/s ({:.2} s for all): {:.2}x ({:.2}-{:.2}); answers at once identical to alone: {}",
        f.alone_tok_s.median,
        f.alone_seconds.median,
        f.together_tok_s.median,
        f.together_seconds.median,
        f.speedup.median,
        f.speedup.min,
        f.speedup.max,
        if f.answers_identical { "yes" } else { "NO" }
    );
}

/// Runs the benchmark.
pub fn run(a: ServeBenchArgs) -> Result<ExitCode> {
    if a.beside.is_some() && (a.peer.wanted() || a.compare_sessions) {
        bail!(
            "--beside measures the scenario's streams beside the chats on mmsched alone: run it without --peer and --compare-sessions"
        );
    }
    if a.peer.wanted() {
        let w = super::serve_peer::Workload {
            requests: &a.requests,
            tokens: a.tokens,
            repeat: a.repeat,
        };
        return super::serve_peer::run(w, &a.peer, a.json);
    }
    let &[requests] = a.requests.as_slice() else {
        bail!("a list of --requests is measured with --peer; without, give one count");
    };
    if let Some(scenario) = &a.beside {
        return super::serve_beside::run(&super::serve_beside::Beside {
            scenario,
            requests,
            tokens: a.tokens,
            repeat: a.repeat,
            duration: Duration::from_secs(a.duration),
            json: a.json,
        });
    }
    let dir = std::env::temp_dir().join(format!("mmsched-bench-serve-{}", std::process::id()));
    let load_before = load_average();
    let batched = measure_server(&a, requests, true, &dir.join("batched"))
        .context("measuring the batched server")?;
    let sessions = if a.compare_sessions {
        Some(
            measure_server(&a, requests, false, &dir.join("sessions"))
                .context("measuring the server with a session per request")?,
        )
    } else {
        None
    };
    let load_after = load_average();
    let _ = std::fs::remove_dir_all(&dir);
    let ok = batched.answers_identical && sessions.as_ref().is_none_or(|s| s.answers_identical);
    if a.json {
        let out = json!({
            "requests": requests,
            "tokens": a.tokens,
            "repeat": a.repeat,
            "batched": batched,
            "sessions": sessions,
            "load_average": {"before": load_before, "after": load_after},
        });
        outln!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        print("batched", &batched, requests);
        if let Some(s) = &sessions {
            print("a session each", s, requests);
        }
        outln!(
            "(greedy completions of {} tokens over HTTP on 127.0.0.1, median (min-max) of {}; load average {} before, {} after)",
            a.tokens,
            a.repeat,
            load_before.map_or("?".into(), |l| format!("{l:.2}")),
            load_after.map_or("?".into(), |l| format!("{l:.2}"))
        );
    }
    if !ok {
        eprintln!("error: an answer given at once differed from the same prompt's answer alone");
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// `send` for every prompt at once, a client thread each; the answers in prompt order.
pub(super) fn all_at_once<T: Send>(
    prompts: &[&str],
    send: impl Fn(&str) -> Result<T> + Sync,
) -> Result<Vec<T>> {
    std::thread::scope(|s| {
        let threads: Vec<_> = prompts
            .iter()
            .map(|p| {
                let send = &send;
                s.spawn(move || send(p))
            })
            .collect();
        threads
            .into_iter()
            .map(|t| {
                t.join()
                    .unwrap_or_else(|_| bail!("a client thread panicked"))
            })
            .collect()
    })
}
