//! The scheduling core's decisions, carried out: a started step runs for a cost drawn from
//! the device profile (stretched by co-running work and the background load), a shed or
//! pruned step goes back to its request, an admission is traced.

use mmsched_core::scheduler::Decision;
use mmsched_core::time::Nanos;

use super::events::{Ev, note};
use super::setup::SimRun;

impl SimRun<'_, '_> {
    /// One decision step of the core on the events of `now`, and its decisions carried out
    /// (a request that ends frees its place: the next waiting request's step becomes an
    /// event for the next decision).
    pub(super) fn decide(&mut self, now: Nanos) {
        self.decisions.clear();
        self.sched.step(now, &self.events, &mut self.decisions);
        self.events.clear();
        self.steps += 1;
        let decisions = std::mem::take(&mut self.decisions);
        for &d in &decisions {
            match d {
                Decision::Start {
                    worker,
                    job,
                    start_slot,
                    len_slots,
                } => {
                    if self.start(worker, job.0, now) {
                        note(&mut self.trace, || {
                            format!(
                                "{:>10} start  job={} worker={worker} slots={start_slot}+{len_slots}",
                                now / 1000,
                                job.0
                            )
                        });
                    }
                }
                Decision::Shed { job } => self.on_shed(job.0, now),
                Decision::Prune { job } => self.end_shed(job.0, true, now),
                Decision::Admit { job, score } => note(&mut self.trace, || {
                    format!("{:>10} admit  job={} score={score:.4}", now / 1000, job.0)
                }),
            }
        }
        self.decisions = decisions;
    }

    /// Step `id` starts on `worker` at `now`: it finishes after its drawn cost. Returns
    /// whether it is a step of a booked request.
    fn start(&mut self, worker: u32, id: u64, now: Nanos) -> bool {
        let Some(b) = self.booked.get(&id) else {
            return false;
        };
        let latency = &self.sim.classes[b.class].1;
        let work =
            (latency.sample_nanos(&mut self.rng) as f64 * self.cond.cost_multiplier) as Nanos;
        let audio_lane = self.layout.audio_lane() as usize;
        let cost = if worker as usize == audio_lane {
            work
        } else {
            if let Some(c) = self.computing.get_mut(worker as usize) {
                *c = true;
            }
            let busy = self
                .computing
                .iter()
                .enumerate()
                .filter(|&(w, &b)| b && w != audio_lane)
                .count() as u32;
            // Beside another computing job: the measured interference.
            let work = if busy > 1 {
                (work as f64 * latency.corun_factor) as Nanos
            } else {
                work
            };
            let at = (self.cond.start_s * 1e9) as Nanos + now;
            self.sim
                .load
                .stretch(at, work, self.layout.compute_workers, busy)
        };
        self.queue.push(now + cost.max(1), Ev::Finish(worker, id));
        true
    }
}
