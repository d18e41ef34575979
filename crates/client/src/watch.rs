//! The background watcher: poll (or long-poll) the policy, call back on change, back off
//! on errors.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::{JoinHandle, ThreadId};
use std::time::{Duration, Instant};

use mmsched_core::policy::Policy;

use crate::backoff::Backoff;
use crate::error::ClientError;
use crate::http::{Conditional, PolicyClient};

/// Default time between two polls (S12: every 5 s).
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_secs(5);
/// Default first retry delay after an error.
pub const DEFAULT_BACKOFF_INITIAL: Duration = Duration::from_millis(500);
/// Default longest retry delay.
pub const DEFAULT_BACKOFF_MAX: Duration = Duration::from_secs(30);
/// Default per-request timeout (beyond a long-poll wait).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest long-poll wait the server accepts, in seconds.
pub const MAX_LONG_POLL_SECS: u64 = 60;

type UpdateFn = Box<dyn FnMut(Policy, &str) + Send>;
type ErrorFn = Box<dyn FnMut(&ClientError) + Send>;

/// Configures a [`Watcher`]; obtain it from [`PolicyClient::builder`].
pub struct WatchBuilder {
    url: String,
    poll_interval: Duration,
    long_poll_secs: Option<u64>,
    backoff_initial: Duration,
    backoff_max: Duration,
    timeout: Duration,
    known_etag: Option<String>,
    on_update: Option<UpdateFn>,
    on_error: Option<ErrorFn>,
}

impl std::fmt::Debug for WatchBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WatchBuilder")
            .field("url", &self.url)
            .field("poll_interval", &self.poll_interval)
            .field("long_poll_secs", &self.long_poll_secs)
            .finish_non_exhaustive()
    }
}

impl PolicyClient {
    /// A watcher for the policy at `url` (a bare `http://host:port` means its
    /// `/api/v1/policy`), polling every 5 s by default.
    pub fn builder(url: &str) -> WatchBuilder {
        WatchBuilder {
            url: url.to_string(),
            poll_interval: DEFAULT_POLL_INTERVAL,
            long_poll_secs: None,
            backoff_initial: DEFAULT_BACKOFF_INITIAL,
            backoff_max: DEFAULT_BACKOFF_MAX,
            timeout: DEFAULT_TIMEOUT,
            known_etag: None,
            on_update: None,
            on_error: None,
        }
    }
}

impl WatchBuilder {
    /// Time between two polls when not long-polling (default 5 s).
    pub fn poll_interval(mut self, interval: Duration) -> Self {
        self.poll_interval = interval;
        self
    }

    /// Long-poll: each request waits on the server up to `secs` seconds (clamped to 1..=60)
    /// for a change, so a change arrives as soon as it is made. `None` polls.
    pub fn long_poll(mut self, secs: Option<u64>) -> Self {
        self.long_poll_secs = secs.map(|s| s.clamp(1, MAX_LONG_POLL_SECS));
        self
    }

    /// Retry delays after errors: `initial`, doubling up to `max`, with jitter.
    pub fn backoff(mut self, initial: Duration, max: Duration) -> Self {
        self.backoff_initial = initial;
        self.backoff_max = max;
        self
    }

    /// Per-request timeout beyond the long-poll wait (default 10 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The ETag of the policy the caller already runs: it is not delivered again.
    pub fn known_etag(mut self, etag: &str) -> Self {
        self.known_etag = Some(etag.to_string());
        self
    }

    /// Called on the watcher's thread with each new valid policy and its ETag (the first
    /// one too, unless it is the `known_etag`). Never called twice for the same ETag in a row.
    pub fn on_update(mut self, f: impl FnMut(Policy, &str) + Send + 'static) -> Self {
        self.on_update = Some(Box::new(f));
        self
    }

    /// Called on the watcher's thread with problems: each invalid document once, and the
    /// first error of each streak of failed requests (not every retry).
    pub fn on_error(mut self, f: impl FnMut(&ClientError) + Send + 'static) -> Self {
        self.on_error = Some(Box::new(f));
        self
    }

    /// Starts the watcher thread.
    pub fn spawn(self) -> Result<Watcher, ClientError> {
        let client = PolicyClient::new(&self.url, self.timeout)?;
        let (wake, sleeper) = mpsc::channel::<()>();
        let shared = Arc::new(WatchShared {
            stopped: AtomicBool::new(false),
            callback_lock: Mutex::new(()),
            consecutive_errors: AtomicU32::new(0),
            etag: Mutex::new(self.known_etag.clone()),
        });
        let worker = Worker {
            client,
            poll_interval: self.poll_interval,
            long_poll: self.long_poll_secs.map(Duration::from_secs),
            backoff: Backoff::new(
                self.backoff_initial,
                self.backoff_max,
                Backoff::random_seed(),
            ),
            good_etag: self.known_etag,
            rejected_etag: None,
            on_update: self.on_update,
            on_error: self.on_error,
            shared: Arc::clone(&shared),
            sleeper,
            last_reported: None,
        };
        let thread = std::thread::Builder::new()
            .name("mmsched-policy-watch".into())
            .spawn(move || worker.run())
            .map_err(|e| ClientError::Transport {
                url: self.url.clone(),
                message: format!("cannot start the watcher thread: {e}"),
            })?;
        Ok(Watcher {
            shared,
            wake: Some(wake),
            worker_id: thread.thread().id(),
            thread: Some(thread),
        })
    }
}

struct WatchShared {
    stopped: AtomicBool,
    /// Held while a callback runs: once `stop` has taken it, no callback runs again.
    callback_lock: Mutex<()>,
    consecutive_errors: AtomicU32,
    etag: Mutex<Option<String>>,
}

/// A running watcher. Stops on [`Watcher::stop`] or drop; after either returns, no callback
/// runs again.
pub struct Watcher {
    shared: Arc<WatchShared>,
    wake: Option<mpsc::Sender<()>>,
    worker_id: ThreadId,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Watcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watcher")
            .field("etag", &self.etag())
            .field("consecutive_errors", &self.consecutive_errors())
            .finish_non_exhaustive()
    }
}

impl Watcher {
    /// The ETag of the last policy delivered (or the known one).
    pub fn etag(&self) -> Option<String> {
        self.shared
            .etag
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Failed requests since the last success.
    pub fn consecutive_errors(&self) -> u32 {
        self.shared.consecutive_errors.load(Ordering::Relaxed)
    }

    /// Stops the watcher (same as dropping it).
    pub fn stop(mut self) {
        self.stop_inner();
    }

    fn stop_inner(&mut self) {
        self.shared.stopped.store(true, Ordering::SeqCst);
        let on_worker = std::thread::current().id() == self.worker_id;
        if !on_worker {
            // Wait for a running callback to finish; later ones see `stopped`.
            drop(
                self.shared
                    .callback_lock
                    .lock()
                    .unwrap_or_else(|p| p.into_inner()),
            );
        }
        // Wakes a sleeping worker at once.
        self.wake.take();
        if let Some(t) = self.thread.take() {
            if on_worker {
                return;
            }
            // A request in flight (a long-poll can last a minute) cannot be interrupted:
            // give it a moment, then let the thread finish on its own. It delivers nothing
            // more either way.
            let deadline = Instant::now() + Duration::from_millis(200);
            while !t.is_finished() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
            if t.is_finished() {
                let _ = t.join();
            }
        }
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.stop_inner();
    }
}

struct Worker {
    client: PolicyClient,
    poll_interval: Duration,
    long_poll: Option<Duration>,
    backoff: Backoff,
    /// The last policy delivered.
    good_etag: Option<String>,
    /// The last document found invalid: reported once, asked about no more until it changes.
    rejected_etag: Option<String>,
    on_update: Option<UpdateFn>,
    on_error: Option<ErrorFn>,
    shared: Arc<WatchShared>,
    sleeper: mpsc::Receiver<()>,
    /// Message of the last reported request error in the current streak.
    last_reported: Option<String>,
}

impl Worker {
    fn run(mut self) {
        while !self.stopped() {
            let etags: Vec<&str> = self
                .good_etag
                .iter()
                .chain(self.rejected_etag.iter())
                .map(String::as_str)
                .collect();
            let started = Instant::now();
            let result = self.client.fetch_if_none_match(&etags, self.long_poll);
            let pause = match result {
                Ok(c) => {
                    self.backoff.reset();
                    self.last_reported = None;
                    self.shared.consecutive_errors.store(0, Ordering::Relaxed);
                    let changed = matches!(c, Conditional::Modified { .. });
                    self.handle(c);
                    match self.long_poll {
                        // The server waited for us; ask again at once. A 304 much quicker
                        // than the wait means the server does not long-poll: fall back.
                        Some(w) if changed || started.elapsed() >= w / 2 => Duration::ZERO,
                        _ => self.poll_interval,
                    }
                }
                Err(e) => {
                    self.shared
                        .consecutive_errors
                        .fetch_add(1, Ordering::Relaxed);
                    let msg = e.to_string();
                    if self.last_reported.as_deref() != Some(msg.as_str()) {
                        self.report(&e);
                        self.last_reported = Some(msg);
                    }
                    self.backoff.next_delay()
                }
            };
            if !pause.is_zero() && !self.sleep(pause) {
                break;
            }
        }
    }

    fn handle(&mut self, c: Conditional) {
        let Conditional::Modified { etag, policy } = c else {
            return;
        };
        match policy {
            Ok(policy) => {
                self.rejected_etag = None;
                if self.good_etag.as_deref() == Some(etag.as_str()) {
                    return;
                }
                self.good_etag = Some(etag.clone());
                *self.shared.etag.lock().unwrap_or_else(|p| p.into_inner()) = Some(etag.clone());
                let guard = self
                    .shared
                    .callback_lock
                    .lock()
                    .unwrap_or_else(|p| p.into_inner());
                if !self.stopped()
                    && let Some(f) = self.on_update.as_mut()
                {
                    f(policy, &etag);
                }
                drop(guard);
            }
            Err(e) => {
                if self.rejected_etag.as_deref() != Some(etag.as_str()) {
                    self.rejected_etag = Some(etag);
                    self.report(&e);
                }
            }
        }
    }

    fn report(&mut self, e: &ClientError) {
        let _guard = self
            .shared
            .callback_lock
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if !self.stopped()
            && let Some(f) = self.on_error.as_mut()
        {
            f(e);
        }
    }

    fn stopped(&self) -> bool {
        self.shared.stopped.load(Ordering::SeqCst)
    }

    /// Sleeps up to `d`; false when told to stop.
    fn sleep(&self, d: Duration) -> bool {
        match self.sleeper.recv_timeout(d) {
            Err(RecvTimeoutError::Timeout) => !self.stopped(),
            Ok(()) | Err(RecvTimeoutError::Disconnected) => false,
        }
    }
}
