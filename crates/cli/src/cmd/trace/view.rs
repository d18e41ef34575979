//! `mmsched trace view`: the mmTracer viewer on one trace file, over local HTTP.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use axum::Router;
use axum::body::Bytes;
use axum::http::{StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use clap::Args;
use mmsched_trace::viewer;

/// Arguments of `mmsched trace view`.
#[derive(Debug, Args)]
pub struct ViewArgs {
    /// The mmtrace NDJSON file to show.
    file: PathBuf,
    /// Address to listen on; port 0 picks a free port. Keep it on 127.0.0.1 unless others
    /// should see the trace (another address needs --allow-remote).
    #[arg(long, value_name = "IP:PORT", default_value = "127.0.0.1:0")]
    addr: SocketAddr,
    #[command(flatten)]
    exposure: crate::cmd::serve::ExposureArgs,
    /// Also open the page in the default browser (xdg-open).
    #[arg(long)]
    open_browser: bool,
}

fn asset(uri: &Uri) -> Response {
    match viewer::asset(uri.path()) {
        Some((content_type, body)) => (
            [
                (header::CONTENT_TYPE, content_type),
                (header::CACHE_CONTROL, "no-cache"),
            ],
            body,
        )
            .into_response(),
        None => (StatusCode::NOT_FOUND, "not found\n").into_response(),
    }
}

/// Runs `mmsched trace view` until Ctrl-C.
pub fn run(a: ViewArgs) -> Result<ExitCode> {
    // Check the file up front so a bad trace is reported here with its line number, not
    // as a blank page. Line by line (each line capped), so `/dev/zero` or a binary file
    // fails at its first line; then the whole file is read for serving.
    let trace = super::read(&a.file)?;
    let bytes =
        mmsched_core::bounded::read_capped(&a.file, mmsched_trace::TRACE_FILE_CAP, "trace file")?;
    let records = trace.records.len();
    drop(trace);
    let body = Bytes::from(bytes);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let mut config = mmsched_server::ServerConfig {
        addr: a.addr,
        ..mmsched_server::ServerConfig::default()
    };
    a.exposure.apply(&mut config, false)?;
    let wait_for_ctrl_c = crate::cmd::run::interrupt::install(
        "stopping: open requests get a few seconds (Ctrl-C again to quit now)",
    )?;
    runtime.block_on(async move {
        let shared = Arc::new(body);
        let app = Router::new()
            .route(
                viewer::TRACE_API_PATH,
                get(move || {
                    let body = shared.clone();
                    async move {
                        (
                            [(header::CONTENT_TYPE, viewer::TRACE_CONTENT_TYPE)],
                            (*body).clone(),
                        )
                    }
                }),
            )
            .fallback(get(|uri: Uri| async move { asset(&uri) }));
        let listener = tokio::net::TcpListener::bind(a.addr)
            .await
            .with_context(|| {
                format!(
                    "cannot listen on {} (is the port in use? try --addr 127.0.0.1:0)",
                    a.addr
                )
            })?;
        let local = listener.local_addr().context("listener address")?;
        let app = mmsched_server::host::guard(app, config.hosts.clone(), local);
        let url = format!("http://{local}/");
        outln!(
            "mmTracer: {url}  ({records} records from {}; Ctrl-C to stop)",
            a.file.display()
        );
        use std::io::Write as _;
        std::io::stdout().flush().ok();
        if a.open_browser
            && let Err(e) = std::process::Command::new("xdg-open").arg(&url).spawn()
        {
            eprintln!("could not open a browser ({e}); open {url} yourself");
        }
        let (stop, stopped) = tokio::sync::watch::channel(false);
        std::thread::spawn(move || {
            wait_for_ctrl_c();
            let _ = stop.send(true);
        });
        mmsched_server::serve_router(listener, app, config.limits, stopped).await;
        // Whoever read the URL may be gone (a closed pipe): that is no error at exit.
        let _ = std::io::Write::write_all(&mut std::io::stdout(), b"stopped\n");
        Ok(ExitCode::SUCCESS)
    })
}
