//! Starting and stopping the server: on its own thread, or as a task on a runtime the
//! embedding program already has (`mmsched run --serve ADDR`).

use std::net::SocketAddr;
use std::sync::Arc;

use mmsched_core::policy::Policy;
use tokio::sync::watch;

use crate::auth::ApiToken;
use crate::host::HostCheck;
use crate::listen::{ConnectionLimits, serve_router};
use crate::metrics::Metrics;
use crate::status::StatusBoard;
use crate::store::{PolicyStore, SharedClock};

/// Default listen address: loopback only, so nothing is exposed unless asked for.
pub const DEFAULT_ADDR: &str = "127.0.0.1:9100";
/// Default request body limit (a policy document is a few KiB).
pub const DEFAULT_BODY_LIMIT_BYTES: usize = 64 * 1024;
/// Default and maximum `?wait=` of a long-poll, in seconds.
pub const DEFAULT_MAX_WAIT_SECS: u64 = 60;
/// Default longest pause within a request body, in milliseconds.
pub const DEFAULT_BODY_TIMEOUT_MILLIS: u64 = 10_000;

/// Looks up an embedded viewer asset by path relative to the site root (`index.html`,
/// `assets/app.js`): its MIME type and bytes.
pub type AssetFn = fn(&str) -> Option<(&'static str, &'static [u8])>;

/// Produces the recorded trace as NDJSON bytes, on request.
pub type TraceSource = Arc<dyn Fn() -> Vec<u8> + Send + Sync>;

/// How the server is set up.
#[derive(Clone)]
pub struct ServerConfig {
    /// Address to listen on (port 0 picks a free port; see [`ServerHandle::local_addr`]).
    pub addr: SocketAddr,
    /// The bearer token for writes; `None` refuses every write with 403.
    pub token: Option<ApiToken>,
    /// Viewer assets served at `/` and `/assets/…`.
    pub assets: Option<AssetFn>,
    /// The trace served at `/api/v1/trace`.
    pub trace: Option<TraceSource>,
    /// Largest accepted request body, in bytes (larger → 413).
    pub body_limit_bytes: usize,
    /// Longest allowed `?wait=`, in seconds (longer → 400).
    pub max_wait_secs: u64,
    /// Longest pause while receiving a request body before the request is dropped, in
    /// milliseconds: a client that stalls mid-body cannot hold a connection.
    pub body_timeout_millis: u64,
    /// Timeouts, the connection cap and the shutdown deadline.
    pub limits: ConnectionLimits,
    /// Which `Host` headers are answered (others get 421): by default the bound address.
    pub hosts: HostCheck,
    /// More routes served next to the built-in ones (e.g. the OpenAI-compatible model
    /// endpoints of `mmsched serve --models`), behind the same `Host` check and connection
    /// limits; they set their own body limits.
    pub extra: Option<axum::Router>,
}

impl std::fmt::Debug for ServerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerConfig")
            .field("addr", &self.addr)
            .field("token", &self.token)
            .field("assets", &self.assets.is_some())
            .field("trace", &self.trace.is_some())
            .field("body_limit_bytes", &self.body_limit_bytes)
            .field("max_wait_secs", &self.max_wait_secs)
            .field("body_timeout_millis", &self.body_timeout_millis)
            .field("limits", &self.limits)
            .field("hosts", &self.hosts)
            .field("extra", &self.extra.is_some())
            .finish()
    }
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            addr: SocketAddr::from(([127, 0, 0, 1], 9100)),
            token: None,
            assets: None,
            trace: None,
            body_limit_bytes: DEFAULT_BODY_LIMIT_BYTES,
            max_wait_secs: DEFAULT_MAX_WAIT_SECS,
            body_timeout_millis: DEFAULT_BODY_TIMEOUT_MILLIS,
            limits: ConnectionLimits::default(),
            hosts: HostCheck::default(),
            extra: None,
        }
    }
}

/// The state the server shares with the scheduler: keep clones of these `Arc`s in the
/// runtime to read the policy and to feed metrics and status.
#[derive(Debug, Clone)]
pub struct Shared {
    /// The live policy.
    pub store: Arc<PolicyStore>,
    /// Metric families.
    pub metrics: Arc<Metrics>,
    /// Status document.
    pub status: Arc<StatusBoard>,
}

impl Shared {
    /// Fresh state around `policy` (recorded in the change log as coming from `source`).
    pub fn new(policy: Policy, clock: SharedClock, source: &str) -> Self {
        Self {
            store: Arc::new(PolicyStore::new(policy, Arc::clone(&clock), source)),
            metrics: Arc::new(Metrics::new()),
            status: Arc::new(StatusBoard::new(clock)),
        }
    }
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The address could not be bound.
    #[error(
        "cannot listen on {addr} (choose another address, port 0 picks a free one, or stop what is using it)"
    )]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The OS error.
        source: std::io::Error,
    },
    /// The server's own threads could not be started.
    #[error("cannot start the server's threads: {0}")]
    Runtime(std::io::Error),
}

enum Runner {
    Thread(std::thread::JoinHandle<()>),
    Task,
}

/// A running server. Stops on [`ServerHandle::stop`] or when dropped: open long-polls are
/// answered 503 at once, other open requests get [`ConnectionLimits::shutdown_grace`], then
/// their connections are dropped.
pub struct ServerHandle {
    addr: SocketAddr,
    stop: watch::Sender<bool>,
    runner: Option<Runner>,
}

impl std::fmt::Debug for ServerHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerHandle")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl ServerHandle {
    /// The address actually bound.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops the server. With [`spawn`] this returns once every connection is closed (at
    /// most the shutdown grace after the call); with [`spawn_on`] the task finishes on its
    /// runtime within the same deadline.
    pub fn stop(mut self) {
        self.stop_inner();
    }

    fn stop_inner(&mut self) {
        let _ = self.stop.send(true);
        if let Some(Runner::Thread(t)) = self.runner.take() {
            // A panic in the server thread has already been reported by the panic hook.
            let _ = t.join();
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.stop_inner();
    }
}

fn bind(addr: SocketAddr) -> Result<std::net::TcpListener, ServerError> {
    let l =
        std::net::TcpListener::bind(addr).map_err(|source| ServerError::Bind { addr, source })?;
    l.set_nonblocking(true)
        .map_err(|source| ServerError::Bind { addr, source })?;
    Ok(l)
}

async fn serve(
    listener: tokio::net::TcpListener,
    addr: SocketAddr,
    shared: Shared,
    mut config: ServerConfig,
    stop: watch::Receiver<bool>,
) {
    // The bound address (port 0 resolved) is what `Host` is checked against.
    config.addr = addr;
    let limits = config.limits;
    let app = crate::api::router(shared, config, stop.clone());
    serve_router(listener, app, limits, stop).await;
}

/// Binds `config.addr` and serves on a thread of its own (with a small runtime).
pub fn spawn(shared: Shared, config: ServerConfig) -> Result<ServerHandle, ServerError> {
    let std_listener = bind(config.addr)?;
    let addr = std_listener
        .local_addr()
        .map_err(|source| ServerError::Bind {
            addr: config.addr,
            source,
        })?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("mmsched-http")
        .enable_all()
        .build()
        .map_err(ServerError::Runtime)?;
    let listener = {
        let _guard = rt.enter();
        tokio::net::TcpListener::from_std(std_listener)
            .map_err(|source| ServerError::Bind { addr, source })?
    };
    let (stop, stop_rx) = watch::channel(false);
    let thread = std::thread::Builder::new()
        .name("mmsched-http-main".into())
        .spawn(move || {
            rt.block_on(serve(listener, addr, shared, config, stop_rx));
            // Give in-flight blocking work (a trace copy) a moment, then drop everything.
            rt.shutdown_timeout(std::time::Duration::from_secs(1));
        })
        .map_err(ServerError::Runtime)?;
    Ok(ServerHandle {
        addr,
        stop,
        runner: Some(Runner::Thread(thread)),
    })
}

/// Binds `config.addr` and serves as a task on an existing runtime.
pub fn spawn_on(
    runtime: &tokio::runtime::Handle,
    shared: Shared,
    config: ServerConfig,
) -> Result<ServerHandle, ServerError> {
    let std_listener = bind(config.addr)?;
    let addr = std_listener
        .local_addr()
        .map_err(|source| ServerError::Bind {
            addr: config.addr,
            source,
        })?;
    let listener = {
        let _guard = runtime.enter();
        tokio::net::TcpListener::from_std(std_listener)
            .map_err(|source| ServerError::Bind { addr, source })?
    };
    let (stop, stop_rx) = watch::channel(false);
    runtime.spawn(serve(listener, addr, shared, config, stop_rx));
    Ok(ServerHandle {
        addr,
        stop,
        runner: Some(Runner::Task),
    })
}
