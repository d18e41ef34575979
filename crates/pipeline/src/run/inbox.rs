//! Outside clients' requests (the OpenAI-compatible endpoints, the library, `serve
//! --scenario`'s HTTP clients): drained from the inbox every pass and booked like a
//! stream's, their updates going back to each client's sink.

use mmsched_core::time::Clock;
use mmsched_core::time::Nanos;

use super::Run;
use crate::book::Reply;
use crate::client::{Inbound, Submission};
use crate::request::Origin;

impl<C: Clock + Clone + Send + 'static> Run<'_, C> {
    /// Books every request waiting in the inbox.
    pub(super) fn take_inbox(&mut self, now: Nanos) {
        let Some(inbox) = &self.inbox else {
            return;
        };
        let waiting: Vec<Inbound> = inbox.try_iter().collect();
        for m in waiting {
            self.accept(now, m);
        }
    }

    /// Books one outside request (counted offered as the API's), or counts one its client
    /// refused.
    pub(super) fn accept(&mut self, now: Nanos, m: Inbound) {
        match m {
            Inbound::Submit(together) => {
                for s in together {
                    self.book_request(now, s);
                }
            }
            Inbound::Refused(kind) => {
                self.book.offer(kind, Origin::Api);
                self.book.stats.shed(kind, Origin::Api, now);
                self.observer.shed(kind.as_str());
            }
        }
    }

    fn book_request(&mut self, now: Nanos, s: Submission) {
        let Submission { request, sink } = s;
        let kind = request.kind();
        self.book.offer(kind, Origin::Api);
        if !self.models.has(kind) {
            // The client checks first; a request that slipped through fails, counted.
            let mut sink = sink;
            let e = mmsched_runtime::sched::WorkError::NoModel {
                model: kind.model_name(),
            };
            self.book.stats.failed(kind, Origin::Api, now, &e.chain());
            sink(crate::request::Update::Failed(e));
            return;
        }
        self.submit(now, request, Reply::Sink(sink));
    }
}
