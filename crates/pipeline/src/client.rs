//! How an outside client — the OpenAI-compatible endpoints, the library, a test — hands
//! requests to a running runtime: a [`Client`] sends each [`Request`] to the loop's inbox,
//! with the sink its [`Update`]s go to; [`Ticket`] is the blocking way to read them.
//!
//! The runtime's loop ([`crate::run`]) books every request exactly as it books its own
//! streams' (the one book of jobs: [`crate::book`]), so what a client gets is what the
//! comparisons measure.

use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, Sender};

use mmsched_core::time::{Clock, Nanos};
use mmsched_runtime::sched::WorkError;

use crate::models::Models;
use crate::request::{Cancel, Request, ShedReason, Update, UpdateSink};
use crate::stats::Kind;

/// A request and where its updates go, as the loop receives it.
pub struct Submission {
    /// The request.
    pub request: Request,
    /// Its updates (called on the loop's thread: it must not block).
    pub sink: UpdateSink,
}

impl std::fmt::Debug for Submission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.request.fmt(f)
    }
}

/// What a client sends the runtime's loop.
#[derive(Debug)]
pub enum Inbound {
    /// Requests to book at one moment, in order, in one pass of the loop: all are in the
    /// book before the scheduler next picks what runs, so it chooses among them as among
    /// jobs released together.
    Submit(Vec<Submission>),
    /// A request of `kind` the client refused at its own door (a class's cap of
    /// concurrent requests): counted offered and shed, so every request a client received
    /// shows in the summary.
    Refused(Kind),
}

/// The runtime has stopped: nothing more can be submitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the runtime has stopped; restart it to submit more work")]
pub struct Stopped;

/// A handle that submits requests to a running runtime, on its device clock. Clones share
/// the runtime.
#[derive(Clone)]
pub struct Client {
    tx: Sender<Inbound>,
    clock: Arc<dyn Clock + Send + Sync>,
    models: Arc<dyn Models>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client").finish_non_exhaustive()
    }
}

impl Client {
    /// A client and the inbox its runtime drains; `clock` must be the runtime's device
    /// clock and `models` its models.
    pub fn channel(
        clock: Arc<dyn Clock + Send + Sync>,
        models: Arc<dyn Models>,
    ) -> (Self, Receiver<Inbound>) {
        let (tx, rx) = mpsc::channel();
        (Self { tx, clock, models }, rx)
    }

    /// The device time deadlines are on.
    pub fn now_nanos(&self) -> Nanos {
        self.clock.now_nanos()
    }

    /// Whether the runtime has a model for `kind`.
    pub fn has(&self, kind: Kind) -> bool {
        self.models.has(kind)
    }

    /// Tokens of `text` for the text model (`None` without one).
    pub fn count_tokens(&self, text: &str) -> Option<usize> {
        self.models.count_tokens(text)
    }

    /// A chat written with the text model's chat template (see
    /// [`Models::format_chat`]); `None` where it takes a plain transcript.
    pub fn format_chat(
        &self,
        messages: &[(String, String)],
    ) -> Option<Result<String, mmsched_backends::llm::ChatTemplateError>> {
        self.models.format_chat(messages)
    }

    /// The name the text model is served under, where the user named it.
    pub fn text_model_name(&self) -> Option<String> {
        self.models.text_model_name()
    }

    /// The name the speech model is served under, where the user named it.
    pub fn speech_model_name(&self) -> Option<String> {
        self.models.speech_model_name()
    }

    /// The text model's context (prompt and answer), tokens (`None` without one).
    pub fn context_tokens(&self) -> Option<usize> {
        self.models.context_tokens()
    }

    /// Submits `request`; its updates go to `sink` on the runtime's thread, the last one
    /// being `Finished`, `Shed` or `Failed`.
    pub fn submit_to(&self, request: Request, sink: UpdateSink) -> Result<(), Stopped> {
        self.tx
            .send(Inbound::Submit(vec![Submission { request, sink }]))
            .map_err(|_| Stopped)
    }

    /// Tells the runtime that a request of `kind` was refused before it was submitted
    /// (e.g. beyond a class's cap): it counts as offered and shed, from the API.
    pub fn refused(&self, kind: Kind) -> Result<(), Stopped> {
        self.tx.send(Inbound::Refused(kind)).map_err(|_| Stopped)
    }

    /// Submits `request`; its updates come on the returned ticket. Dropping the ticket
    /// before the end cancels the request.
    pub fn submit(&self, request: Request) -> Result<Ticket, Stopped> {
        let (submission, ticket) = ticketed(request);
        self.tx
            .send(Inbound::Submit(vec![submission]))
            .map_err(|_| Stopped)?;
        Ok(ticket)
    }

    /// Submits `requests` to be booked together, in order, in one pass of the loop (a
    /// frame and the utterance captured with it): all are in the book before the
    /// scheduler next picks what runs, so it chooses among them as among jobs released at
    /// one moment, whatever the threads were doing. Their tickets come back in the same
    /// order.
    pub fn submit_together(&self, requests: Vec<Request>) -> Result<Vec<Ticket>, Stopped> {
        let (submissions, tickets) = requests.into_iter().map(ticketed).unzip();
        self.tx
            .send(Inbound::Submit(submissions))
            .map_err(|_| Stopped)?;
        Ok(tickets)
    }
}

/// `request` with a sink that feeds the returned ticket.
fn ticketed(request: Request) -> (Submission, Ticket) {
    let (tx, rx) = mpsc::channel();
    let cancel = request.cancel.clone();
    let sink: UpdateSink = Box::new(move |u| {
        let _ = tx.send(u);
    });
    let ticket = Ticket {
        updates: rx,
        cancel,
        ended: false,
    };
    (Submission { request, sink }, ticket)
}

/// One submitted request's updates, read blocking. Dropping it before its last update
/// cancels the request (its job stops at its next step).
#[derive(Debug)]
pub struct Ticket {
    updates: Receiver<Update>,
    cancel: Cancel,
    ended: bool,
}

impl Ticket {
    /// The next update, blocking until it comes; `None` after the last one.
    pub fn next_update(&mut self) -> Option<Update> {
        if self.ended {
            return None;
        }
        let u = self
            .updates
            .recv()
            .unwrap_or(Update::Shed(ShedReason::Stopping));
        self.ended = u.is_last();
        Some(u)
    }

    /// Blocks until the request's end: its result, shed or failure (tokens are gathered
    /// into the answer).
    pub fn wait(mut self) -> Update {
        let mut last = Update::Failed(WorkError::Cancelled {
            why: "the request ended without an update",
        });
        while let Some(u) = self.next_update() {
            last = u;
        }
        last
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if !self.ended {
            self.cancel.cancel();
        }
    }
}
