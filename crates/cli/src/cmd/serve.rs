//! `mmsched serve`: the policy API, status, metrics and viewer, without a running scheduler.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::Args;
use mmsched_core::policy::Policy;
use mmsched_core::time::MonotonicClock;
use mmsched_server::{ApiToken, ServerConfig, Shared};

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
    let shared = Shared::new(policy, Arc::new(MonotonicClock::new()), &source);
    let config = ServerConfig {
        addr: a.addr,
        token,
        body_limit_bytes: a.body_limit_kib.saturating_mul(1024),
        assets: Some(mmsched_trace::viewer::asset),
        ..ServerConfig::default()
    };
    let handle = mmsched_server::spawn(shared.clone(), config)?;
    let addr = handle.local_addr();
    let snap = shared.store.current();
    if a.json {
        println!(
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
        println!(
            "mmsched serving on http://{addr}  (policy {} {})",
            snap.policy.name(),
            snap.etag
        );
        println!("  GET/PUT http://{addr}/api/v1/policy   GET /api/v1/status   GET /metrics");
        if !writes {
            eprintln!(
                "note: policy writes are disabled; pass --token-file FILE or set MMSCHED_API_TOKEN to allow PUT"
            );
        }
        println!("Ctrl-C stops.");
    }
    std::io::stdout().flush().ok();
    mmsched_server::block_until_shutdown_signal().context("cannot wait for Ctrl-C")?;
    handle.stop();
    if !a.json {
        eprintln!("stopped");
    }
    Ok(ExitCode::SUCCESS)
}
