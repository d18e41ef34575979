//! Booked requests: a frame, a chunk, an utterance or a text request, each one job cut
//! into steps as the runtime's book of jobs cuts it ([`Chain`]): its next step's deadline
//! and whether that step is committed come from the chain; a step that ends either lets
//! the next one compete at once or ends the request.

use mmsched_core::Modality;
use mmsched_core::arbiter::{Job, JobId};
use mmsched_core::scheduler::SchedEvent;
use mmsched_core::steps::Chain;
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
    /// Books a request of class `c` arriving at `release`, due at `deadline`, of `steps`
    /// steps.
    pub(super) fn book(
        &mut self,
        c: usize,
        release: Nanos,
        deadline: Nanos,
        steps: u32,
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
            chain: Chain::new(deadline, steps, false),
        };
        self.booked.insert(self.next_id, booked);
        self.queue.push(release, Ev::Arrive(self.next_id));
    }

    /// Request `id` arrived on the device: its first step goes to the scheduler.
    pub(super) fn on_arrive(&mut self, id: u64, now: Nanos) {
        self.submit_step(id, now);
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

    /// The scheduler shed (or, `pruned`, the battery saver pruned) step `id`: its request
    /// ends shed.
    pub(super) fn on_shed(&mut self, id: u64, pruned: bool, now: Nanos) {
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
    }
}
