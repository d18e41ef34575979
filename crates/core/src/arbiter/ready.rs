//! The ready queue of admitted jobs, ordered by the policy's dispatch rule.

use alloc::collections::BinaryHeap;
use core::cmp::Ordering;

use super::job::Job;
use super::score::{Arbiter, UrgencyBounds};
use crate::policy::DispatchRule;
use crate::time::Nanos;

/// A job waiting in a [`ReadyQueue`], with the score it was queued with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QueuedJob {
    /// The job.
    pub job: Job,
    /// Its score when queued (or last re-scored); used only by [`DispatchRule::Score`].
    pub score: f64,
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    /// Smaller runs first.
    key: u64,
    /// Arrival order: breaks ties first-in first-out, so dispatch is deterministic.
    seq: u64,
    queued: QueuedJob,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        (self.key, self.seq) == (other.key, other.seq)
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        // BinaryHeap is a max-heap: reverse so the smallest (key, seq) is on top.
        (other.key, other.seq).cmp(&(self.key, self.seq))
    }
}

/// Admitted jobs in dispatch order: a binary heap, O(log n) to push and pop.
///
/// Under [`DispatchRule::Edf`] the earliest absolute deadline runs first; under
/// [`DispatchRule::Score`] the highest score (as queued, or as last set by
/// [`ReadyQueue::rescore`]). Ties go to the job queued first. Memory is reserved up front;
/// pushing beyond the reserved capacity grows the heap.
#[derive(Debug, Clone)]
pub struct ReadyQueue {
    rule: DispatchRule,
    heap: BinaryHeap<Entry>,
    /// Next sequence number of [`ReadyQueue::push`] (counts up from the middle).
    seq: u64,
    /// Lowest sequence number given out by [`ReadyQueue::push_ahead`] (counts down).
    front: u64,
}

/// Where sequence numbers start: pushes count up from here, pushes ahead count down.
const SEQ_MIDDLE: u64 = 1 << 62;

impl ReadyQueue {
    /// An empty queue ordered by `rule`, with room for `capacity` jobs.
    pub fn with_capacity(rule: DispatchRule, capacity: usize) -> Self {
        ReadyQueue {
            rule,
            heap: BinaryHeap::with_capacity(capacity),
            seq: SEQ_MIDDLE,
            front: SEQ_MIDDLE,
        }
    }

    /// The dispatch rule.
    pub fn rule(&self) -> DispatchRule {
        self.rule
    }

    fn key(rule: DispatchRule, job: &Job, score: f64) -> u64 {
        match rule {
            DispatchRule::Edf => job.deadline_nanos,
            // Non-negative floats order like their bit patterns; higher score first.
            DispatchRule::Score => {
                let s = if score.is_nan() { 0.0 } else { score.max(0.0) };
                !s.to_bits()
            }
        }
    }

    /// Queues a job with its score.
    pub fn push(&mut self, job: Job, score: f64) {
        self.seq += 1;
        self.heap.push(Entry {
            key: Self::key(self.rule, &job, score),
            seq: self.seq,
            queued: QueuedJob { job, score },
        });
    }

    /// Queues jobs ahead of every job already queued with an equal key, in the order given
    /// (as if the queue had been emptied, these pushed, and the old jobs pushed again in
    /// their order).
    pub fn push_ahead(&mut self, jobs: impl ExactSizeIterator<Item = (Job, f64)>) {
        let n = jobs.len() as u64;
        self.front -= n;
        for (i, (job, score)) in jobs.enumerate() {
            self.heap.push(Entry {
                key: Self::key(self.rule, &job, score),
                seq: self.front + i as u64,
                queued: QueuedJob { job, score },
            });
        }
    }

    /// Takes the job that runs next.
    pub fn pop(&mut self) -> Option<QueuedJob> {
        self.heap.pop().map(|e| e.queued)
    }

    /// The job that runs next, left in the queue.
    pub fn peek(&self) -> Option<&QueuedJob> {
        self.heap.peek().map(|e| &e.queued)
    }

    /// Whether the next queued job should preempt `running` under the dispatch rule
    /// (strictly before it: equal keys do not preempt).
    pub fn preempts(&self, running: &QueuedJob) -> bool {
        self.heap
            .peek()
            .is_some_and(|e| e.key < Self::key(self.rule, &running.job, running.score))
    }

    /// Queued jobs.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// Whether no job is queued.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Drops every queued job.
    pub fn clear(&mut self) {
        self.heap.clear();
    }

    /// The queued jobs, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = &QueuedJob> {
        self.heap.iter().map(|e| &e.queued)
    }

    /// Re-scores every queued job at `now_nanos` (normalising over the queue) and
    /// re-orders the queue: O(n), no allocation. Returns the queue's urgency bounds.
    pub fn rescore(
        &mut self,
        arbiter: &Arbiter,
        now_nanos: Nanos,
        battery_fraction: f64,
    ) -> UrgencyBounds {
        let bounds = arbiter.bounds(self.iter().map(|q| &q.job), now_nanos);
        let mut entries = core::mem::take(&mut self.heap).into_vec();
        for e in &mut entries {
            e.queued.score = arbiter
                .assess(&e.queued.job, now_nanos, battery_fraction, &bounds)
                .score;
            e.key = Self::key(self.rule, &e.queued.job, e.queued.score);
        }
        self.heap = BinaryHeap::from(entries);
        bounds
    }
}
