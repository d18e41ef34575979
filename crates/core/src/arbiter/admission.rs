//! Admission and shedding under overload: the score decides who goes when the predicted
//! demand exceeds what the workers can do before the deadlines.

use alloc::collections::BinaryHeap;
use alloc::vec::Vec;
use core::cmp::Ordering;

use super::job::Job;
use super::score::Assessment;
use crate::time::Nanos;

/// What admission decided for one job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Admitted: queue it for dispatch.
    Admit,
    /// Battery saver disabled its class: take the lighter path.
    Pruned,
    /// Shed to relieve an overload (it had one of the lowest scores).
    Shed,
}

/// A job seen so far in deadline order, ordered so the heap top is the next to shed:
/// lowest score, then the later deadline, then the higher index.
#[derive(Debug, Clone, Copy)]
struct Candidate {
    score: f64,
    deadline_nanos: Nanos,
    index: usize,
}

impl PartialEq for Candidate {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Candidate {}
impl PartialOrd for Candidate {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Candidate {
    fn cmp(&self, other: &Self) -> Ordering {
        // Max-heap: "greater" means "shed first".
        other
            .score
            .total_cmp(&self.score)
            .then(self.deadline_nanos.cmp(&other.deadline_nanos))
            .then(self.index.cmp(&other.index))
    }
}

/// Admission control with its working memory kept between calls.
///
/// The overload test is the processor-demand criterion: for every deadline `d` in the
/// set, the predicted cost of the jobs due by `d` must fit in `workers · (d − now)`.
/// Jobs are walked in deadline order; whenever a window overflows, the lowest-scoring
/// job seen so far is shed until it fits again. Shedding stops at the first job that
/// makes the window fit, so a cheap job shed before a costly one may not have been
/// needed: afterwards every shed job that fits in every window it joins is admitted
/// again, highest score first (a 1 ms classifier is not shed beside the 60 ms frame
/// whose shedding alone made room). On one preemptive worker this is exact:
/// the admitted set is then schedulable by EDF (all jobs being ready now). With more
/// workers the test is necessary but not sufficient.
///
/// A committed job ([`Job::committed`]: a later step of work under way) is never shed.
/// When the committed jobs alone overflow a window, every uncommitted job due by then is
/// shed and the committed ones stay admitted (some of them will be late).
#[derive(Debug, Clone, Default)]
pub struct Admission {
    order: Vec<usize>,
    heap: BinaryHeap<Candidate>,
    verdicts: Vec<Verdict>,
    /// One group's jobs in deadline order (indices into the job set).
    members: Vec<usize>,
    /// Capacity left in the window of each of `members`, after shedding.
    slack: Vec<i128>,
    /// The group's shed jobs, in the order they are offered readmission.
    shed: Vec<usize>,
}

impl Admission {
    /// Admission control with room for `capacity` jobs (more grows the buffers).
    pub fn with_capacity(capacity: usize) -> Self {
        Admission {
            order: Vec::with_capacity(capacity),
            heap: BinaryHeap::with_capacity(capacity),
            verdicts: Vec::with_capacity(capacity),
            members: Vec::with_capacity(capacity),
            slack: Vec::with_capacity(capacity),
            shed: Vec::with_capacity(capacity),
        }
    }

    /// Decides every job of the set: pruned jobs are refused, then the lowest scores are
    /// shed until the predicted demand fits before every deadline. `assessments[i]`
    /// (from [`super::Arbiter::reevaluate`]) belongs to `jobs[i]`, and so does the i-th
    /// verdict returned. O(n log n).
    ///
    /// A job already at or past its deadline has a window of zero: it is shed unless its
    /// predicted cost is zero (it cannot make its deadline anyway).
    pub fn decide(
        &mut self,
        jobs: &[Job],
        assessments: &[Assessment],
        now_nanos: Nanos,
        workers: u32,
    ) -> &[Verdict] {
        self.decide_grouped(jobs, assessments, now_nanos, &[workers], |_| 0)
    }

    /// [`Admission::decide`] with the workers split into groups that serve disjoint sets
    /// of jobs: `group_of(job)` is the index in `workers` of the group that runs the job,
    /// and each group's demand is tested against its own workers only (e.g. a worker that
    /// runs only voice-activity chunks adds no capacity for anything else). A group index
    /// out of range means the last group. O(groups · n + n log n + s · n) for s jobs shed.
    pub fn decide_grouped(
        &mut self,
        jobs: &[Job],
        assessments: &[Assessment],
        now_nanos: Nanos,
        workers: &[u32],
        group_of: impl Fn(&Job) -> usize,
    ) -> &[Verdict] {
        debug_assert_eq!(jobs.len(), assessments.len());
        let n = jobs.len().min(assessments.len());
        self.verdicts.clear();
        self.verdicts.resize(jobs.len(), Verdict::Admit);
        self.order.clear();
        for (i, a) in assessments.iter().enumerate().take(n) {
            if a.pruned {
                self.verdicts[i] = Verdict::Pruned;
            } else {
                self.order.push(i);
            }
        }
        self.order
            .sort_unstable_by_key(|&i| (jobs[i].deadline_nanos, jobs[i].id));
        let groups = workers.len().max(1);
        for group in 0..groups {
            let group_workers = workers.get(group).copied().unwrap_or(0);
            self.heap.clear();
            self.members.clear();
            let mut demand: u128 = 0;
            let mut shed_any = false;
            for &i in &self.order {
                let job = &jobs[i];
                if group_of(job).min(groups - 1) != group {
                    continue;
                }
                self.members.push(i);
                demand += u128::from(job.predicted_cost_nanos);
                // A committed job counts in the demand but is never a candidate: the
                // uncommitted jobs due by the same window make room for it.
                if !job.committed {
                    self.heap.push(Candidate {
                        score: assessments[i].score,
                        deadline_nanos: job.deadline_nanos,
                        index: i,
                    });
                }
                let window = u128::from(job.deadline_nanos.saturating_sub(now_nanos));
                let capacity = window * u128::from(group_workers);
                while demand > capacity {
                    let Some(victim) = self.heap.pop() else { break };
                    let cost = jobs[victim.index].predicted_cost_nanos;
                    // Shedding a job that costs nothing frees nothing: it stays admitted.
                    if cost > 0 {
                        demand -= u128::from(cost);
                        self.verdicts[victim.index] = Verdict::Shed;
                        shed_any = true;
                    }
                }
            }
            if shed_any {
                self.readmit(jobs, assessments, now_nanos, group_workers);
            }
        }
        &self.verdicts
    }

    /// Admits again, highest score first (then the cheaper, then the earlier deadline),
    /// every shed job of the group in `members` that fits in the slack of every window
    /// it belongs to: the windows of the jobs due no earlier than it.
    fn readmit(
        &mut self,
        jobs: &[Job],
        assessments: &[Assessment],
        now_nanos: Nanos,
        workers: u32,
    ) {
        self.shed.clear();
        self.shed.extend(
            (0..self.members.len()).filter(|&p| self.verdicts[self.members[p]] == Verdict::Shed),
        );
        self.slack.clear();
        let mut demand: i128 = 0;
        for &i in &self.members {
            if self.verdicts[i] == Verdict::Admit {
                demand += i128::from(jobs[i].predicted_cost_nanos);
            }
            let window = i128::from(jobs[i].deadline_nanos.saturating_sub(now_nanos));
            self.slack.push(window * i128::from(workers) - demand);
        }
        let (members, shed) = (&self.members, &mut self.shed);
        shed.sort_unstable_by(|&pa, &pb| {
            let (a, b) = (members[pa], members[pb]);
            assessments[b]
                .score
                .total_cmp(&assessments[a].score)
                .then(
                    jobs[a]
                        .predicted_cost_nanos
                        .cmp(&jobs[b].predicted_cost_nanos),
                )
                .then(pa.cmp(&pb))
        });
        for &p in &self.shed {
            let cost = i128::from(jobs[self.members[p]].predicted_cost_nanos);
            if self.slack[p..].iter().all(|&s| s >= cost) {
                self.slack[p..].iter_mut().for_each(|s| *s -= cost);
                self.verdicts[self.members[p]] = Verdict::Admit;
            }
        }
    }
}
