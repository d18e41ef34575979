//! An upper bound on what any scheduler could have made of a run's jobs: the largest
//! expected weight of correct, on-time results over every way of choosing each job's
//! quality rung and placing its work, under a relaxation that only makes the bound looser.
//!
//! The relaxation, stated once:
//!
//! - **clairvoyant**: every job's release, deadline and cost per rung are known up front;
//! - **preemptive and migratory**: a job's work may be cut anywhere and moved between lanes
//!   of its group (but never runs on two lanes at once);
//! - **fractional**: a job may run part of a rung, or a mix of rungs, and earns that share
//!   of their value (the linear-programming relaxation of choosing one rung or none);
//! - **per-lane-group capacity**: the general lanes and the voice-activity lane are
//!   separate resources; work of a text request's steps is one job over the request's
//!   window (their order is ignored);
//! - **time in slots** of [`BoundInput::slot_nanos`], each job's window widened outward to
//!   whole slots.
//!
//! Each relaxation only adds schedules, so the optimum of the relaxed problem is at least
//! that of any real scheduler on the same jobs. It is solved exactly: the work a set of jobs
//! can get within their windows on `m` lanes is a flow (jobs → slots of their windows, at
//! most one slot's length each → the slot, at most `m` slots' length), the value of a job
//! is concave in its work (the upper hull of its rungs' (cost, value) points), and a
//! separable concave objective over the vectors a flow network can deliver (a polymatroid)
//! is maximised by serving the steepest value per unit of work first, each as far as an
//! augmenting path allows.

use std::collections::VecDeque;

/// One way to run a job: its cost and the chance its result is correct.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RungOption {
    /// Work the job needs at this rung, nanoseconds.
    pub cost_nanos: u64,
    /// The chance the result is correct at this rung, in [0, 1].
    pub p_correct: f64,
}

/// One job of a run, as the bound sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct BoundJob {
    /// When it could start, device nanoseconds.
    pub release_nanos: u64,
    /// When its result was due.
    pub deadline_nanos: u64,
    /// What a correct, on-time result of it is worth (its share of the utility).
    pub weight: f64,
    /// Whether it runs on the voice-activity lane (else on the general lanes).
    pub audio_lane: bool,
    /// Its rungs, in any order.
    pub rungs: Vec<RungOption>,
}

/// The jobs of a run and the lanes they had.
#[derive(Debug, Clone, PartialEq)]
pub struct BoundInput {
    /// General lanes.
    pub general_lanes: u32,
    /// Voice-activity lanes.
    pub audio_lanes: u32,
    /// Length of a time slot, nanoseconds (5–10 ms keeps a minute's run in a second).
    pub slot_nanos: u64,
    /// The jobs.
    pub jobs: Vec<BoundJob>,
}

/// The bound: the largest expected weight of correct, on-time results.
pub fn upper_bound(input: &BoundInput) -> f64 {
    let slot = input.slot_nanos.max(1);
    let (audio, general): (Vec<&BoundJob>, Vec<&BoundJob>) =
        input.jobs.iter().partition(|j| j.audio_lane);
    group_bound(&general, input.general_lanes, slot) + group_bound(&audio, input.audio_lanes, slot)
}

/// A stretch of a job's value curve: `work` more nanoseconds earn `slope` each.
#[derive(Debug, Clone, Copy)]
struct Segment {
    job: usize,
    work: u64,
    slope: f64,
}

/// The upper concave hull of `(0, 0)` and the rungs' `(cost, weight × p)` points, as
/// segments of falling slope.
fn segments(job: usize, j: &BoundJob) -> Vec<Segment> {
    let mut points: Vec<(u64, f64)> = j
        .rungs
        .iter()
        .filter(|r| r.cost_nanos > 0 && r.p_correct > 0.0 && j.weight > 0.0)
        .map(|r| (r.cost_nanos, j.weight * r.p_correct.min(1.0)))
        .collect();
    points.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.total_cmp(&a.1)));
    let mut hull: Vec<(u64, f64)> = vec![(0, 0.0)];
    for p in points {
        let Some(&last) = hull.last() else { break };
        if p.1 <= last.1 {
            // Costs more for no more value.
            continue;
        }
        while hull.len() >= 2 {
            let (a, b) = (hull[hull.len() - 2], hull[hull.len() - 1]);
            // Drop `b` when it lies on or under the line from `a` to `p`.
            let cross = (b.0 - a.0) as f64 * (p.1 - a.1) - (b.1 - a.1) * (p.0 - a.0) as f64;
            if cross >= 0.0 {
                hull.pop();
            } else {
                break;
            }
        }
        hull.push(p);
    }
    hull.windows(2)
        .map(|w| Segment {
            job,
            work: w[1].0 - w[0].0,
            slope: (w[1].1 - w[0].1) / (w[1].0 - w[0].0) as f64,
        })
        .collect()
}

/// The flow network of one lane group: jobs → slots of their windows → sink.
struct Network {
    lanes: u64,
    slot: u64,
    /// Per job: its first slot and the work it has in each slot of its window.
    windows: Vec<(usize, Vec<u64>)>,
    /// Per slot: the work placed in it, and the jobs whose window covers it.
    load: Vec<u64>,
    covering: Vec<Vec<usize>>,
}

impl Network {
    fn new(jobs: &[&BoundJob], lanes: u32, slot: u64) -> Self {
        let t0 = jobs.iter().map(|j| j.release_nanos).min().unwrap_or(0);
        // Each window widened outward to whole slots, at least one slot long.
        let spans: Vec<(usize, usize)> = jobs
            .iter()
            .map(|j| {
                let a = ((j.release_nanos - t0) / slot) as usize;
                let end = j.deadline_nanos.saturating_sub(t0).div_ceil(slot) as usize;
                (a, end.max(a + 1))
            })
            .collect();
        let slots = spans.iter().map(|s| s.1).max().unwrap_or(0);
        let mut covering = vec![Vec::new(); slots];
        for (i, &(a, b)) in spans.iter().enumerate() {
            for c in &mut covering[a..b] {
                c.push(i);
            }
        }
        Self {
            lanes: u64::from(lanes),
            slot,
            windows: spans.iter().map(|&(a, b)| (a, vec![0; b - a])).collect(),
            load: vec![0; slots],
            covering,
        }
    }

    fn room(&self, s: usize) -> u64 {
        (self.lanes * self.slot).saturating_sub(self.load[s])
    }

    /// Places up to `want` more work of `job`; returns how much it placed.
    fn push(&mut self, job: usize, want: u64) -> u64 {
        let mut placed = 0;
        // Free room in the job's own slots first: no other job moves.
        let (a, n) = (self.windows[job].0, self.windows[job].1.len());
        for k in 0..n {
            if placed == want {
                return placed;
            }
            let s = a + k;
            let take = (self.slot - self.windows[job].1[k])
                .min(self.room(s))
                .min(want - placed);
            self.windows[job].1[k] += take;
            self.load[s] += take;
            placed += take;
        }
        // Then augmenting paths that move other jobs' work to make room.
        while placed < want {
            let Some(path) = self.augmenting_path(job) else {
                break;
            };
            placed += self.augment(&path, want - placed);
        }
        placed
    }

    /// A path job → slot → (job → slot)* → sink in the residual network, as the slots
    /// visited with the job that enters each.
    fn augmenting_path(&self, from: usize) -> Option<Vec<(usize, usize)>> {
        let slots = self.load.len();
        // Per slot: which job reached it (None: not reached).
        let mut via: Vec<Option<usize>> = vec![None; slots];
        let mut came: Vec<Option<usize>> = vec![None; self.windows.len()];
        let mut jobs = VecDeque::from([from]);
        let mut seen_job = vec![false; self.windows.len()];
        seen_job[from] = true;
        while let Some(j) = jobs.pop_front() {
            let (a, w) = (&self.windows[j].0, &self.windows[j].1);
            for (k, &f) in w.iter().enumerate() {
                let s = a + k;
                if via[s].is_some() || f >= self.slot {
                    continue;
                }
                via[s] = Some(j);
                if self.room(s) > 0 {
                    // Walk back to `from`: (slot, job entering it) pairs.
                    let mut path = vec![(s, j)];
                    let mut job = j;
                    while let Some(prev_slot) = came[job] {
                        let Some(prev_job) = via[prev_slot] else {
                            break;
                        };
                        path.push((prev_slot, prev_job));
                        job = prev_job;
                    }
                    path.reverse();
                    return Some(path);
                }
                // A full slot: a job with work there may move it elsewhere.
                for &o in &self.covering[s] {
                    let (oa, ow) = (&self.windows[o].0, &self.windows[o].1);
                    if !seen_job[o] && ow[s - oa] > 0 {
                        seen_job[o] = true;
                        came[o] = Some(s);
                        jobs.push_back(o);
                    }
                }
            }
        }
        None
    }

    /// Pushes up to `want` along `path` ((slot, job entering it) from the source's job to
    /// the slot with room); each later job leaves the slot before it. Returns the amount.
    fn augment(&mut self, path: &[(usize, usize)], want: u64) -> u64 {
        let Some(&(last, _)) = path.last() else {
            return 0;
        };
        let mut amount = want.min(self.room(last));
        for (i, &(s, j)) in path.iter().enumerate() {
            let k = s - self.windows[j].0;
            amount = amount.min(self.slot - self.windows[j].1[k]);
            if i + 1 < path.len() {
                // The next job gives up work in `s` to make room for `j`.
                let (_, next) = path[i + 1];
                let nk = s - self.windows[next].0;
                amount = amount.min(self.windows[next].1[nk]);
            }
        }
        for (i, &(s, j)) in path.iter().enumerate() {
            let k = s - self.windows[j].0;
            self.windows[j].1[k] += amount;
            if i + 1 < path.len() {
                let (_, next) = path[i + 1];
                let nk = s - self.windows[next].0;
                self.windows[next].1[nk] -= amount;
            } else {
                self.load[s] += amount;
            }
        }
        amount
    }
}

fn group_bound(jobs: &[&BoundJob], lanes: u32, slot: u64) -> f64 {
    if jobs.is_empty() || lanes == 0 {
        return 0.0;
    }
    let mut all: Vec<Segment> = jobs
        .iter()
        .enumerate()
        .flat_map(|(i, j)| segments(i, j))
        .collect();
    // Steepest value per unit of work first (a job's own segments keep their order: the
    // hull's slopes fall).
    all.sort_by(|a, b| b.slope.total_cmp(&a.slope));
    let mut net = Network::new(jobs, lanes, slot);
    all.iter()
        .map(|s| net.push(s.job, s.work) as f64 * s.slope)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MS: u64 = 1_000_000;

    fn job(r: u64, d: u64, w: f64, rungs: &[(u64, f64)]) -> BoundJob {
        BoundJob {
            release_nanos: r * MS,
            deadline_nanos: d * MS,
            weight: w,
            audio_lane: false,
            rungs: rungs
                .iter()
                .map(|&(c, p)| RungOption {
                    cost_nanos: c * MS,
                    p_correct: p,
                })
                .collect(),
        }
    }

    fn bound(lanes: u32, jobs: Vec<BoundJob>) -> f64 {
        upper_bound(&BoundInput {
            general_lanes: lanes,
            audio_lanes: 1,
            slot_nanos: MS,
            jobs,
        })
    }

    #[test]
    fn two_jobs_that_cannot_both_fit_give_the_better_one() {
        // One lane, both due in 10 ms, each needing 10 ms.
        let b = bound(
            1,
            vec![job(0, 10, 1.0, &[(10, 1.0)]), job(0, 10, 2.0, &[(10, 1.0)])],
        );
        assert!((b - 2.0).abs() < 1e-9, "{b}");
        // Two lanes: both.
        let b = bound(
            2,
            vec![job(0, 10, 1.0, &[(10, 1.0)]), job(0, 10, 2.0, &[(10, 1.0)])],
        );
        assert!((b - 3.0).abs() < 1e-9, "{b}");
    }

    #[test]
    fn a_cheaper_rung_lets_both_fit_at_its_accuracy() {
        // Full rung 10 ms (always right), cheap rung 5 ms (right 80 % of the time).
        let rungs = [(10, 1.0), (5, 0.8)];
        let b = bound(1, vec![job(0, 10, 1.0, &rungs), job(0, 10, 1.0, &rungs)]);
        assert!((b - 1.6).abs() < 1e-9, "{b}");
    }

    #[test]
    fn moving_an_earlier_job_makes_room_for_one_with_a_tighter_window() {
        // A: window 0-20 ms, 10 ms of work, placed first (worth more per ms); B: window
        // 0-10 ms, 10 ms of work. One lane: A must move to 10-20 for both to fit.
        let b = bound(
            1,
            vec![job(0, 20, 3.0, &[(10, 1.0)]), job(0, 10, 1.0, &[(10, 1.0)])],
        );
        assert!((b - 4.0).abs() < 1e-9, "{b}");
    }

    #[test]
    fn a_job_never_runs_on_two_lanes_at_once() {
        // 20 ms of work in a 10 ms window cannot finish even with two lanes free: half of it.
        let b = bound(2, vec![job(0, 10, 1.0, &[(20, 1.0)])]);
        assert!((b - 0.5).abs() < 1e-9, "{b}");
    }

    /// The best integral schedule of a small instance on one lane: every choice of a rung
    /// (or none) per job, kept when earliest-deadline-first meets every deadline (exact on
    /// one lane with preemption).
    fn brute_force(jobs: &[BoundJob]) -> f64 {
        let n = jobs.len();
        let choices: Vec<usize> = jobs.iter().map(|j| j.rungs.len() + 1).collect();
        let mut best: f64 = 0.0;
        let mut pick = vec![0usize; n];
        loop {
            let chosen: Vec<(u64, u64, u64, f64)> = (0..n)
                .filter(|&i| pick[i] > 0)
                .map(|i| {
                    let r = jobs[i].rungs[pick[i] - 1];
                    (
                        jobs[i].release_nanos,
                        jobs[i].deadline_nanos,
                        r.cost_nanos,
                        jobs[i].weight * r.p_correct,
                    )
                })
                .collect();
            if edf_feasible(&chosen) {
                best = best.max(chosen.iter().map(|c| c.3).sum());
            }
            let mut i = 0;
            while i < n {
                pick[i] += 1;
                if pick[i] < choices[i] {
                    break;
                }
                pick[i] = 0;
                i += 1;
            }
            if i == n {
                return best;
            }
        }
    }

    fn edf_feasible(jobs: &[(u64, u64, u64, f64)]) -> bool {
        let mut left: Vec<u64> = jobs.iter().map(|j| j.2).collect();
        let mut t = jobs.iter().map(|j| j.0).min().unwrap_or(0);
        loop {
            let ready: Vec<usize> = (0..jobs.len())
                .filter(|&i| left[i] > 0 && jobs[i].0 <= t)
                .collect();
            if left.iter().all(|&l| l == 0) {
                return true;
            }
            let Some(&i) = ready.iter().min_by_key(|&&i| jobs[i].1) else {
                t = (0..jobs.len())
                    .filter(|&i| left[i] > 0)
                    .map(|i| jobs[i].0)
                    .min()
                    .unwrap_or(t);
                continue;
            };
            let next_release = (0..jobs.len())
                .filter(|&k| left[k] > 0 && jobs[k].0 > t)
                .map(|k| jobs[k].0)
                .min()
                .unwrap_or(u64::MAX);
            let run = left[i].min(next_release - t);
            t += run;
            left[i] -= run;
            if left[i] == 0 && t > jobs[i].1 {
                return false;
            }
        }
    }

    proptest! {
        #[test]
        fn the_bound_is_never_below_the_best_schedule_nor_above_every_job_right(
            raw in proptest::collection::vec((0u64..20, 1u64..30, 1u64..20, 0u32..10, 1u64..10, 0u32..10), 1..6),
        ) {
            let jobs: Vec<BoundJob> = raw
                .iter()
                .map(|&(r, len, c1, p1, c2, p2)| {
                    let cheap = c2.min(c1);
                    job(r, r + len, 1.0, &[(c1, f64::from(p1) / 10.0), (cheap, f64::from(p2) / 10.0)])
                })
                .collect();
            let b = bound(1, jobs.clone());
            let best = brute_force(&jobs);
            prop_assert!(b + 1e-9 >= best, "bound {b} below a real schedule {best}");
            let all: f64 = jobs
                .iter()
                .map(|j| j.rungs.iter().map(|r| r.p_correct).fold(0.0, f64::max) * j.weight)
                .sum();
            prop_assert!(b <= all + 1e-9, "bound {b} above every job right {all}");
        }
    }
}
