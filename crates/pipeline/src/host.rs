//! The runtime on a thread of its own, for clients other than the command line's `run`: the
//! library ([`crate::api::Runtime`]) and `serve --models`. It is the run loop itself — the
//! same book of jobs, trace, summary and health loop — over a scenario's streams, or over
//! none ([`serving_scenario`]) until it is stopped; outside clients reach it through a
//! [`Client`]. Stopping it drains the jobs in flight and returns the run's outcome (its
//! summary and report series), so a server writes a report of every request it served.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

use mmsched_core::time::Clock;
use mmsched_scenario::Scenario;

use crate::client::Client;
use crate::config::{External, RunConfig, RunError};
use crate::engines::Engines;
use crate::inputs::Device;
use crate::models::Models;
use crate::run::{Observer, RunOutcome, RunParts};

/// Device time a served runtime runs for when nothing stops it: about 30 years.
pub const FOREVER_NANOS: u64 = 1 << 60;

/// A scenario without streams, for a runtime that only serves outside clients, on
/// `workers` general workers.
pub fn serving_scenario(workers: usize) -> Result<Scenario, RunError> {
    let toml = format!(
        "name = \"serve\"\ndescription = \"requests from outside clients only\"\n\n[device]\nworkers = {}\n",
        workers.clamp(1, 64)
    );
    Scenario::from_toml(&toml, "serve").map_err(|e| RunError::Scenario {
        scenario: "serve".into(),
        reason: e.to_string(),
    })
}

/// A runtime running on its own thread.
pub struct Host {
    client: Client,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Result<RunOutcome, RunError>>>,
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host").finish_non_exhaustive()
    }
}

impl Host {
    /// Starts `config`'s run on the OS clock and worker threads with `engines` (already
    /// loaded and warmed up), telling `observer` as it goes, until [`Host::finish`].
    pub fn start(
        mut config: RunConfig,
        engines: Engines,
        mut observer: Box<dyn Observer + Send>,
    ) -> Result<Self, RunError> {
        let clock = Device::new();
        let models: Arc<dyn Models> = Arc::new(engines.clone());
        let (client, inbox) = Client::channel(Arc::new(clock), models);
        config.external = Some(External { inbox, clock });
        config.engines = Some(engines);
        let stop = config.stop.clone();
        let thread = std::thread::Builder::new()
            .name("mmsched-runtime".into())
            .spawn(move || crate::run::run(config, &mut *observer))
            .map_err(|source| RunError::Thread { source })?;
        Ok(Self {
            client,
            stop,
            thread: Some(thread),
        })
    }

    /// Starts `config`'s run on `parts` (a virtual clock, an executor on virtual lanes and
    /// fake models in tests).
    pub fn with_parts<C: Clock + Clone + Send + Sync + 'static>(
        mut config: RunConfig,
        parts: RunParts<C>,
        mut observer: Box<dyn Observer + Send>,
    ) -> Result<Self, RunError> {
        let (client, inbox) = Client::channel(Arc::new(parts.clock.clone()), parts.models.clone());
        // The clock of `parts` is the run's; the device clock here is not read.
        config.external = Some(External {
            inbox,
            clock: Device::new(),
        });
        let stop = config.stop.clone();
        let thread = std::thread::Builder::new()
            .name("mmsched-runtime".into())
            .spawn(move || crate::run::run_with(config, parts, &mut *observer))
            .map_err(|source| RunError::Thread { source })?;
        Ok(Self {
            client,
            stop,
            thread: Some(thread),
        })
    }

    /// A client of this runtime.
    pub fn client(&self) -> Client {
        self.client.clone()
    }

    /// Stops the runtime: its streams stop, the jobs in flight drain (a text answer stops
    /// at its next token), and the run's outcome comes back.
    pub fn finish(mut self) -> Result<RunOutcome, RunError> {
        self.stop.store(true, Ordering::Relaxed);
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(outcome)) => outcome,
            Some(Err(_)) => Err(RunError::Panicked),
            None => Err(RunError::Stopped),
        }
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;

    use mmsched_core::policy::{Policy, PolicySpec};
    use mmsched_runtime::sched::SchedulerKind;
    use mmsched_runtime::sched::virtual_time::VirtualClock;

    use super::*;
    use crate::client::Ticket;
    use crate::config::PolicyUpdate;
    use crate::inputs::DEVICE_EPOCH_NANOS;
    use crate::models::fake::{Costs, QUICK, virtual_mmsched};
    use crate::request::{Input, Origin, Request, ShedReason, Update};

    const MS: u64 = 1_000_000;

    /// Tells the test which policy ETag was applied.
    struct Applied(mpsc::Sender<Option<String>>);
    impl Observer for Applied {
        fn policy_applied(&mut self, etag: Option<&str>) {
            let _ = self.0.send(etag.map(str::to_string));
        }
    }

    fn policy(vision: f64, asr: f64) -> Policy {
        let mut spec = PolicySpec::default();
        spec.importance.insert("vision".into(), vision);
        spec.importance.insert("asr".into(), asr);
        Policy::try_from(spec).expect("a valid policy")
    }

    /// A frame and an utterance released together, each 200 ms of work due in `due_ms`,
    /// on one worker: with 300 ms only one can be on time. Submitted together, so the
    /// runtime's thread cannot start the frame before the utterance is in the book.
    fn contest(client: &Client, due_ms: u64) -> (Update, Update) {
        let now = client.now_nanos();
        let frame = mmsched_backends::RgbFrame::new(8, 8, vec![0; 192]).expect("frame");
        let request = |input| Request::new(input, Origin::Api, "test", now, now + due_ms * MS);
        let tickets = client
            .submit_together(vec![
                request(Input::Frame(frame)),
                request(Input::Utterance(vec![0.0; 1600])),
            ])
            .expect("submitted");
        let mut updates = tickets.into_iter().map(Ticket::wait);
        let frame = updates.next().expect("the frame's ticket");
        let speech = updates.next().expect("the utterance's ticket");
        (frame, speech)
    }

    #[test]
    fn a_policy_put_changes_which_request_the_scheduler_sheds() {
        let clock = VirtualClock::new(DEVICE_EPOCH_NANOS);
        let costs = Costs {
            vision: 200 * MS,
            asr: 200 * MS,
            ..QUICK
        };
        let first = policy(0.9, 0.2);
        let (exec, models) = virtual_mmsched(&first, 1, false, &clock, costs);
        let parts = RunParts {
            clock,
            exec,
            models: Arc::new(models),
            notes: Vec::new(),
            signals: None,
        };
        let mut config = RunConfig::new(
            serving_scenario(1).expect("scenario"),
            first,
            SchedulerKind::Mmsched,
        );
        config.duration_nanos = FOREVER_NANOS;
        config.platform = false;
        // The shipped reference's priors, whatever profile this machine has measured.
        config.device_profile = Some(mmsched_world::profile::Profile::reference());
        let (updates, rx) = mpsc::channel();
        config.policy_updates = Some(rx);
        let (applied_tx, applied) = mpsc::channel();
        let host = Host::with_parts(config, parts, Box::new(Applied(applied_tx))).expect("host");
        let client = host.client();
        // With time for both, the cost model learns that each takes 200 ms.
        for _ in 0..4 {
            let (frame, speech) = contest(&client, 10_000);
            assert!(matches!(frame, Update::Finished(_)), "{frame:?}");
            assert!(matches!(speech, Update::Finished(_)), "{speech:?}");
        }
        // Frames matter more: the utterance is shed.
        let (frame, speech) = contest(&client, 300);
        assert!(matches!(frame, Update::Finished(_)), "{frame:?}");
        assert!(
            matches!(speech, Update::Shed(ShedReason::Overload)),
            "{speech:?}"
        );
        // The PUT: speech matters more now. Once applied, the frame is shed instead.
        updates
            .send(PolicyUpdate {
                policy: policy(0.2, 0.9),
                etag: Some("\"v2\"".into()),
            })
            .expect("the runtime listens");
        let etag = applied
            .recv_timeout(std::time::Duration::from_secs(5))
            .expect("applied between two decisions");
        assert_eq!(etag.as_deref(), Some("\"v2\""));
        let (frame, speech) = contest(&client, 300);
        assert!(
            matches!(frame, Update::Shed(ShedReason::Overload)),
            "{frame:?}"
        );
        assert!(matches!(speech, Update::Finished(_)), "{speech:?}");
        let summary = host.finish().expect("finished").summary;
        assert_eq!(summary.vision.origin["api"].shed, 1);
        assert_eq!(summary.asr.origin["api"].shed, 1);
        assert_eq!(summary.vision.origin["api"].on_time, 5);
    }
}
