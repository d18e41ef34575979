//! Booked requests: a frame, a chunk, an utterance or a text request, each one job cut
//! into steps as the runtime's book of jobs cuts it ([`Chain`]): its next step's deadline
//! and whether that step is committed come from the chain; a step that ends either lets
//! the next one compete at once or ends the request; a shed step of a started request (or
//! of a text request, which keeps its place) competes again every [`RETRY_NANOS`] until
//! its deadline, as in the runtime.

use mmsched_core::Modality;
use mmsched_core::arbiter::{Job, JobId};
use mmsched_core::scheduler::SchedEvent;
use mmsched_core::steps::{Chain, Deferred, RETRY_NANOS, WhenShed};
use mmsched_core::time::{NANOS_PER_MILLI, Nanos};

use super::events::{Ev, note};
use super::setup::SimRun;

/// One booked request.
#[derive(Debug, Clone, Copy)]
pub(super) struct Booked {
    /// The simulator's class.
    pub(super) class: usize,
    pub(super) modality: Modality,
    pub(super) importance: f64,
    /// When it arrived on the device (latency is counted per request).
    pub(super) release_nanos: Nanos,
    /// Its steps: the deadline, how many may follow, committed or not.
    pub(super) chain: Chain,
}

impl SimRun<'_, '_> {
    /// Books a request of class `c` arriving at `release`, its steps `chain`.
    pub(super) fn book(
        &mut self,
        c: usize,
        release: Nanos,
        chain: Chain,
        importance: f64,
        modality: Modality,
    ) {
        self.reports[c].jobs += 1;
        self.next_id += 1;
        let booked = Booked {
            class: c,
            modality,
            importance,
            release_nanos: release,
            chain,
        };
        self.booked.insert(self.next_id, booked);
        self.queue.push(release, Ev::Arrive(self.next_id));
    }

    /// Request `id` arrived on the device: it waits for a place of its class, and its
    /// first step goes to the scheduler once it has one.
    pub(super) fn on_arrive(&mut self, id: u64, now: Nanos) {
        let Some(c) = self.booked.get(&id).map(|b| b.class) else {
            return;
        };
        self.places[c].wait(id);
        self.start_waiting(c, now);
    }

    /// Hands class `c`'s waiting requests to the scheduler while it has free places.
    fn start_waiting(&mut self, c: usize, now: Nanos) {
        while let Some(id) = self.places[c].admit() {
            self.submit_step(id, now);
        }
    }

    /// Request `b` ended at `now`: its place goes to the next waiting request.
    fn ended(&mut self, b: &Booked, now: Nanos) {
        self.places[b.class].free();
        self.start_waiting(b.class, now);
    }

    /// The next step of request `id` goes to the scheduler, due as the chain spreads it.
    pub(super) fn submit_step(&mut self, id: u64, now: Nanos) {
        let Some(b) = self.booked.get(&id) else {
            return;
        };
        let predicted = self.sim.predicted_nanos(b.class, self.cond);
        let job = Job {
            id: JobId(id),
            class: self.class_ids[b.class],
            modality: b.modality,
            deadline_nanos: b.chain.next_deadline(now, predicted, true),
            predicted_cost_nanos: predicted,
            importance: b.importance,
            committed: b.chain.committed(),
        };
        note(&mut self.trace, || {
            format!(
                "{:>10} arrive job={id} class={} deadline_us={}",
                now / 1000,
                self.sim.classes[b.class].0,
                b.chain.deadline_nanos / 1000
            )
        });
        self.events.push(SchedEvent::Arrive(job));
    }

    /// Worker `worker` finished step `id`: the request's next step competes at once, or
    /// the request is done.
    pub(super) fn on_finish(&mut self, worker: u32, id: u64, now: Nanos) {
        if let Some(c) = self.computing.get_mut(worker as usize) {
            *c = false;
        }
        self.events.push(SchedEvent::Finish {
            worker,
            job: JobId(id),
        });
        let Some(mut b) = self.booked.remove(&id) else {
            return;
        };
        note(&mut self.trace, || {
            let late = now > b.chain.deadline_nanos;
            format!(
                "{:>10} finish job={id} worker={worker} late={late}",
                now / 1000
            )
        });
        if b.chain.steps_after > 0 {
            b.chain.ran(1);
            self.next_id += 1;
            self.booked.insert(self.next_id, b);
            self.queue.push(now, Ev::Step(self.next_id));
            return;
        }
        self.completed(&b, now);
        self.ended(&b, now);
    }

    /// Request `b` finished at `now`.
    fn completed(&mut self, b: &Booked, now: Nanos) {
        let c = b.class;
        let r = &mut self.reports[c];
        r.completed += 1;
        let late = now > b.chain.deadline_nanos;
        self.losses[c].record(late);
        r.deadline_misses += u64::from(late);
        let latency = now - b.release_nanos;
        self.latencies[c].push(latency as f64 / NANOS_PER_MILLI as f64);
        if let Some(h) = self.health.as_deref_mut() {
            let budget = b.chain.deadline_nanos - b.release_nanos;
            h.completed(c, now, latency, budget);
        }
    }

    /// The scheduler shed step `id` at `now`: it competes again after [`RETRY_NANOS`]
    /// where its chain says so (the inputs still arriving), else its request ends shed.
    pub(super) fn on_shed(&mut self, id: u64, now: Nanos) {
        let Some(b) = self.booked.get(&id) else {
            return;
        };
        let open = now < self.duration_nanos;
        if b.chain.when_shed(now, open) == WhenShed::Drop {
            self.end_shed(id, false, now);
            return;
        }
        let retry_at = now + RETRY_NANOS;
        let until = b.chain.deferred_until(retry_at);
        note(&mut self.trace, || {
            format!(
                "{:>10} defer  job={id} retry_us={}",
                now / 1000,
                retry_at / 1000
            )
        });
        self.queue.push(until, Ev::Retry(id, retry_at));
    }

    /// Shed step `id`, its retry due at `retry_at`, is looked at again at `now`: it
    /// competes again as a new step, or its request ends shed at its deadline.
    pub(super) fn on_retry(&mut self, id: u64, retry_at: Nanos, now: Nanos) {
        let Some(b) = self.booked.get(&id) else {
            return;
        };
        match b.chain.when_deferred(now, retry_at) {
            Deferred::Wait => {
                let until = b.chain.deferred_until(retry_at);
                self.queue.push(until, Ev::Retry(id, retry_at));
            }
            Deferred::Shed => self.end_shed(id, false, now),
            Deferred::Retry => {
                if let Some(b) = self.booked.remove(&id) {
                    self.next_id += 1;
                    self.booked.insert(self.next_id, b);
                    self.submit_step(self.next_id, now);
                }
            }
        }
    }

    /// Request `id` ends shed at `now` (or, `pruned`, pruned by the battery saver).
    pub(super) fn end_shed(&mut self, id: u64, pruned: bool, now: Nanos) {
        let Some(b) = self.booked.remove(&id) else {
            return;
        };
        let c = b.class;
        let r = &mut self.reports[c];
        r.shed += 1;
        r.pruned += u64::from(pruned);
        self.losses[c].record(true);
        if let Some(h) = self.health.as_deref_mut() {
            h.dropped(c, now);
        }
        let what = if pruned { "prune " } else { "shed  " };
        note(&mut self.trace, || {
            format!("{:>10} {what} job={id}", now / 1000)
        });
        self.ended(&b, now);
    }
}
