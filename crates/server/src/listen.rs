//! The accept loop and the life of each connection, with the limits that keep a slow or
//! silent client from holding the server: a deadline for the request head (which is also
//! how long a kept-alive connection may wait for its next request), an idle deadline for a
//! connection that moves no byte while no request is being handled (a client that stops
//! reading its answer), a cap on open connections, and a deadline for shutdown.
//!
//! At the cap, the oldest connection that is not handling a request is closed to make room
//! (thousands of silent sockets cannot lock out a real request); only when every open
//! connection is busy is a new one refused with `503` and `Retry-After`.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, watch};
use tokio::task::JoinSet;
use tokio::time::Instant;

/// Default deadline for a complete request head, in milliseconds.
pub const DEFAULT_HEADER_TIMEOUT_MILLIS: u64 = 5_000;
/// Default idle deadline (no byte moved, no request being handled), in milliseconds.
pub const DEFAULT_IDLE_TIMEOUT_MILLIS: u64 = 30_000;
/// Default cap on open connections.
pub const DEFAULT_MAX_CONNECTIONS: usize = 256;
/// Default time open requests get to finish once the server is asked to stop, in
/// milliseconds.
pub const DEFAULT_SHUTDOWN_GRACE_MILLIS: u64 = 3_000;

/// The connection limits of a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// Deadline for a complete request head, counted from when the server starts waiting
    /// for it (so it also bounds how long a kept-alive connection may sit between requests).
    pub header_timeout: Duration,
    /// A connection that moves no byte for this long while no request is being handled is
    /// closed.
    pub idle_timeout: Duration,
    /// Open connections at most (at least 1).
    pub max_connections: usize,
    /// Once stopping, how long open requests get before their connections are dropped.
    pub shutdown_grace: Duration,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self {
            header_timeout: Duration::from_millis(DEFAULT_HEADER_TIMEOUT_MILLIS),
            idle_timeout: Duration::from_millis(DEFAULT_IDLE_TIMEOUT_MILLIS),
            max_connections: DEFAULT_MAX_CONNECTIONS,
            shutdown_grace: Duration::from_millis(DEFAULT_SHUTDOWN_GRACE_MILLIS),
        }
    }
}

/// The answer to a connection over the cap while every open one is busy.
fn refusal() -> Vec<u8> {
    let body =
        "{\"error\":\"too many open connections, each handling a request; retry in a second\"}\n";
    format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// What the accept loop knows of one open connection.
struct Slot {
    /// Requests being handled on it.
    in_flight: Arc<AtomicUsize>,
    /// Closes it when notified.
    evict: Arc<Notify>,
}

/// Open connections by the order they were accepted (oldest first).
#[derive(Default)]
struct Table(Mutex<BTreeMap<u64, Slot>>);

impl Table {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Slot>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Makes room for one more connection: `true` if there is room (possibly by closing
    /// the oldest connection that handles no request), `false` if every one is busy.
    fn make_room(&self, cap: usize) -> bool {
        let mut t = self.lock();
        if t.len() < cap.max(1) {
            return true;
        }
        let idle = t
            .iter()
            .find(|(_, s)| s.in_flight.load(Ordering::SeqCst) == 0)
            .map(|(id, _)| *id);
        match idle.and_then(|id| t.remove(&id)) {
            Some(slot) => {
                slot.evict.notify_one();
                true
            }
            None => false,
        }
    }
}

/// Serves `app` on `listener` until `stop` turns `true`, then gives open requests
/// `limits.shutdown_grace` to finish and drops what is left.
pub async fn serve_router(
    listener: TcpListener,
    app: Router,
    limits: ConnectionLimits,
    mut stop: watch::Receiver<bool>,
) {
    let table = Arc::new(Table::default());
    let (draining_tx, draining) = watch::channel(false);
    let mut tasks = JoinSet::new();
    let mut next_id: u64 = 0;
    loop {
        tokio::select! {
            // The watch guard is not `Send`: drop it inside the branch's own future.
            () = async { let _ = stop.wait_for(|s| *s).await; } => break,
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    if !table.make_room(limits.max_connections) {
                        tasks.spawn(refuse(stream));
                        continue;
                    }
                    let id = next_id;
                    next_id += 1;
                    let slot = Slot {
                        in_flight: Arc::new(AtomicUsize::new(0)),
                        evict: Arc::new(Notify::new()),
                    };
                    let conn = Connection {
                        in_flight: Arc::clone(&slot.in_flight),
                        evict: Arc::clone(&slot.evict),
                        draining: draining.clone(),
                        limits,
                    };
                    table.lock().insert(id, slot);
                    let table = Arc::clone(&table);
                    let app = app.clone();
                    tasks.spawn(async move {
                        conn.run(stream, peer, app).await;
                        table.lock().remove(&id);
                    });
                }
                // Out of descriptors or a connection reset before it was accepted: the
                // listener itself is fine; wait a moment so a full table cannot spin.
                Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            },
        }
    }
    drop(listener);
    let _ = draining_tx.send(true);
    let all_done = async { while tasks.join_next().await.is_some() {} };
    if tokio::time::timeout(limits.shutdown_grace, all_done)
        .await
        .is_err()
    {
        tasks.abort_all();
        while tasks.join_next().await.is_some() {}
    }
}

/// Answers 503 and closes, within a second. What the client sent is read and dropped
/// before closing: closing with unread data would reset the connection and could destroy
/// the answer before the client reads it.
async fn refuse(mut stream: TcpStream) {
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        let _ = stream.write_all(&refusal()).await;
        let _ = stream.shutdown().await;
        let mut sink = [0u8; 1024];
        while matches!(stream.read(&mut sink).await, Ok(n) if n > 0) {}
    })
    .await;
}

/// One accepted connection and what it is watched by.
struct Connection {
    in_flight: Arc<AtomicUsize>,
    evict: Arc<Notify>,
    draining: watch::Receiver<bool>,
    limits: ConnectionLimits,
}

impl Connection {
    async fn run(self, stream: TcpStream, peer: SocketAddr, app: Router) {
        let epoch = Instant::now();
        let last_io = Arc::new(AtomicU64::new(0));
        let io = TokioIo::new(Tracked {
            inner: stream,
            epoch,
            last_io: Arc::clone(&last_io),
        });
        let in_flight = Arc::clone(&self.in_flight);
        let service =
            hyper::service::service_fn(move |mut req: hyper::Request<hyper::body::Incoming>| {
                req.extensions_mut().insert(ConnectInfo(peer));
                let guard = InFlight::enter(&in_flight);
                let app = app.clone();
                async move {
                    let _guard = guard;
                    let req = req.map(axum::body::Body::new);
                    tower::ServiceExt::oneshot(app, req).await
                }
            });
        let mut builder = hyper::server::conn::http1::Builder::new();
        builder
            .timer(TokioTimer::new())
            .header_read_timeout(self.limits.header_timeout)
            .keep_alive(true);
        let conn = builder.serve_connection(io, service);
        tokio::pin!(conn);
        let mut draining = self.draining;
        let mut graceful = false;
        let idle = self.limits.idle_timeout;
        let quiet_for = || {
            epoch
                .elapsed()
                .saturating_sub(Duration::from_millis(last_io.load(Ordering::Relaxed)))
        };
        loop {
            // Next look: when the connection will have been quiet for `idle`, or, if it
            // already has been but a request is being handled (a long-poll), `idle` later.
            let wait = idle.saturating_sub(quiet_for());
            let next_look = Instant::now() + if wait.is_zero() { idle } else { wait };
            tokio::select! {
                _ = conn.as_mut() => return,
                _ = self.evict.notified() => return,
                () = async { let _ = draining.wait_for(|d| *d).await; }, if !graceful => {
                    graceful = true;
                    conn.as_mut().graceful_shutdown();
                }
                _ = tokio::time::sleep_until(next_look) => {
                    if quiet_for() >= idle && self.in_flight.load(Ordering::SeqCst) == 0 {
                        return;
                    }
                }
            }
        }
    }
}

/// Counts a request as being handled until dropped.
struct InFlight(Arc<AtomicUsize>);

impl InFlight {
    fn enter(n: &Arc<AtomicUsize>) -> Self {
        n.fetch_add(1, Ordering::SeqCst);
        Self(Arc::clone(n))
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A stream that notes when it last moved a byte (milliseconds since `epoch`).
struct Tracked {
    inner: TcpStream,
    epoch: Instant,
    last_io: Arc<AtomicU64>,
}

impl Tracked {
    fn touch(&self) {
        let ms = u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_io.store(ms, Ordering::Relaxed);
    }
}

impl AsyncRead for Tracked {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(r, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.touch();
        }
        r
    }
}

impl AsyncWrite for Tracked {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, data);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            self.touch();
        }
        r
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slot(in_flight: usize) -> Slot {
        Slot {
            in_flight: Arc::new(AtomicUsize::new(in_flight)),
            evict: Arc::new(Notify::new()),
        }
    }

    #[test]
    fn room_below_the_cap_closes_nothing() {
        let t = Table::default();
        t.lock().insert(0, slot(0));
        assert!(t.make_room(2));
        assert_eq!(t.lock().len(), 1);
    }

    #[test]
    fn at_the_cap_the_oldest_idle_connection_makes_room() {
        let t = Table::default();
        t.lock().insert(0, slot(1));
        t.lock().insert(1, slot(0));
        t.lock().insert(2, slot(0));
        assert!(t.make_room(3));
        let left: Vec<u64> = t.lock().keys().copied().collect();
        assert_eq!(
            left,
            vec![0, 2],
            "the busy one stays, the oldest idle one goes"
        );
    }

    #[test]
    fn at_the_cap_with_every_connection_busy_there_is_no_room() {
        let t = Table::default();
        t.lock().insert(0, slot(1));
        t.lock().insert(1, slot(2));
        assert!(!t.make_room(2));
        assert_eq!(t.lock().len(), 2);
    }

    #[test]
    fn the_refusal_is_a_well_formed_answer() {
        let bytes = refusal();
        let text = std::str::from_utf8(&bytes).unwrap_or_default();
        let (head, body) = text.split_once("\r\n\r\n").unwrap_or_default();
        let len: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length: "))
            .and_then(|v| v.parse().ok())
            .unwrap_or_default();
        assert!(head.starts_with("HTTP/1.1 503 "));
        assert_eq!(len, body.len());
        assert!(serde_json::from_str::<serde_json::Value>(body.trim()).is_ok());
    }
}
