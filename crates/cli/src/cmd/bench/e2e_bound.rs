//! `bench e2e --bound`: the jobs a run recorded, turned into the input of
//! [`mmsched_report::bound::upper_bound`], an upper bound on `utility_correct` that no
//! online scheduler can beat on the same jobs (its relaxation is stated there and in
//! `docs/runtime.md`).
//!
//! What the bound rests on, beyond the relaxation (printed with the figures):
//!
//! - **costs**: a job that ran to the end costs what it took at its rung, or the
//!   profile's median at that rung if that is less; its other rungs, and jobs that never
//!   finished, cost the profile's median for the rung (a kind without measured rungs: the
//!   median of the run's finished jobs of that kind, else the profile's figure for the
//!   kind);
//! - **rightness**: a rung is right as often as the profile measured (`accuracy.correct`);
//!   a kind without measured rungs (voice activity, text) is always right, as the summary
//!   counts it;
//! - **jobs**: the run's own jobs; inputs no scheduler turned into jobs (the router's
//!   skips) stay outside, and the bound of a round is the largest over its columns, each
//!   column's value coming from its own jobs only.

use std::collections::HashMap;

use mmsched_core::profile::RungProfile;
use mmsched_pipeline::book::{JobEnd, JobRecord};
use mmsched_pipeline::stats::Kind;
use mmsched_report::RunSummary;
use mmsched_report::bound::{BoundInput, BoundJob, RungOption, upper_bound};
use mmsched_world::profile::Profile;

/// Time slot of the bound's flow network: 5 ms keeps a minute's run in about a second.
const SLOT_NANOS: u64 = 5_000_000;

/// What is assumed, for the output.
pub const ASSUMPTIONS: &str = "bound: clairvoyant, preemptive, fractional; rung costs from \
    the device profile's medians (a finished job's own cost at its rung where lower), rung \
    rightness from the profile's accuracy (kinds without measured rungs always right); the \
    run's own jobs (router skips outside); largest over a round's columns";

/// A rung from the profile: `(name, median cost, share right)`.
type Rung = (String, u64, f64);

/// The rungs a kind's jobs could run at, from the profile.
fn profile_rungs(profile: &Profile, kind: Kind) -> Vec<Rung> {
    profile
        .doc
        .rungs
        .get(kind.as_str())
        .map(|rs| rs.iter().map(rung_option).collect())
        .unwrap_or_default()
}

fn rung_option(r: &RungProfile) -> Rung {
    (
        r.name.clone(),
        r.job.p50_nanos,
        r.accuracy.correct.clamp(0.0, 1.0),
    )
}

/// The median work of `kind`'s jobs that finished in `jobs`.
fn median_work(jobs: &[JobRecord], kind: Kind) -> Option<u64> {
    let mut w: Vec<u64> = jobs
        .iter()
        .filter(|j| j.kind == kind && finished(j))
        .map(|j| j.work_nanos)
        .collect();
    w.sort_unstable();
    w.get(w.len() / 2).copied()
}

fn finished(j: &JobRecord) -> bool {
    matches!(j.end, JobEnd::OnTime | JobEnd::Late)
}

/// The bound on `utility_correct` of the run that recorded `jobs` and `summary`, with
/// `general_lanes` general lanes and one voice-activity lane.
pub fn run_bound(
    jobs: &[JobRecord],
    summary: &RunSummary,
    profile: &Profile,
    general_lanes: u32,
) -> f64 {
    let weights = job_weights(summary);
    let priors = mmsched_pipeline::api::cost_priors(profile);
    let mut by_kind: HashMap<Kind, (Vec<Rung>, u64)> = HashMap::new();
    for kind in Kind::all() {
        let prior = priors.get(kind.index()).copied().unwrap_or(0);
        let fallback = median_work(jobs, kind).unwrap_or(prior);
        by_kind.insert(kind, (profile_rungs(profile, kind), fallback));
    }
    let bound_jobs = jobs
        .iter()
        .map(|j| {
            let (rungs, fallback) = by_kind.get(&j.kind).cloned().unwrap_or_default();
            let (rungs, fallback) = (&rungs, &fallback);
            let own = finished(j).then_some(j.work_nanos);
            let options = if rungs.is_empty() {
                vec![RungOption {
                    cost_nanos: own.unwrap_or(*fallback).max(1),
                    p_correct: 1.0,
                }]
            } else {
                rungs
                    .iter()
                    .map(|(name, cost, right)| {
                        let ran_here = j.rung.as_deref() == Some(name.as_str());
                        let cost = match own {
                            Some(w) if ran_here => w.min(*cost),
                            _ => *cost,
                        };
                        RungOption {
                            cost_nanos: cost.max(1),
                            p_correct: *right,
                        }
                    })
                    .collect()
            };
            BoundJob {
                release_nanos: j.release_nanos,
                deadline_nanos: j.deadline_nanos,
                weight: weights.get(j.kind.index()).copied().unwrap_or(0.0),
                audio_lane: j.kind == Kind::Vad,
                rungs: options,
            }
        })
        .collect();
    upper_bound(&BoundInput {
        general_lanes: general_lanes.max(1),
        audio_lanes: 1,
        slot_nanos: SLOT_NANOS,
        jobs: bound_jobs,
    })
}

/// What one right, on-time result of each kind adds to `utility_correct`: its modality's
/// importance over the run's Σ importance, shared among the modality's offered inputs.
fn job_weights(s: &RunSummary) -> [f64; 4] {
    let modalities = s.modalities();
    let importance = |m: &mmsched_report::ModalitySummary| {
        if m.offered > 0 && m.importance.is_finite() {
            m.importance.max(0.0)
        } else {
            0.0
        }
    };
    let total: f64 = modalities.iter().map(|(_, m)| importance(m)).sum();
    std::array::from_fn(|i| {
        let m = modalities[i].1;
        if total > 0.0 && m.offered > 0 {
            importance(m) / total / m.offered as f64
        } else {
            0.0
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use mmsched_pipeline::request::Origin;

    fn job(kind: Kind, release_ms: u64, due_ms: u64, work_ms: u64, end: JobEnd) -> JobRecord {
        JobRecord {
            kind,
            origin: Origin::Streams,
            release_nanos: release_ms * 1_000_000,
            deadline_nanos: due_ms * 1_000_000,
            importance: 0.5,
            rung: None,
            steps: 1,
            work_nanos: work_ms * 1_000_000,
            tokens: 0,
            end,
            correct: None,
        }
    }

    fn summary(vision_offered: u64, vad_offered: u64) -> RunSummary {
        let mut s = RunSummary::default();
        s.vision.offered = vision_offered;
        s.vision.importance = 0.5;
        s.vad.offered = vad_offered;
        s.vad.importance = 0.5;
        s
    }

    #[test]
    fn jobs_that_fit_bound_the_utility_at_their_share_of_the_offered() {
        // Two frames of 100 ms due in 200 ms on one lane, side by side: both fit. Four
        // frames were offered (two skipped before becoming jobs): at most half the vision
        // share, and nothing of voice activity, offered but never a job.
        let jobs = [
            job(Kind::Vision, 0, 200, 100, JobEnd::OnTime),
            job(Kind::Vision, 0, 200, 100, JobEnd::Shed),
        ];
        let b = run_bound(&jobs, &summary(4, 2), &Profile::reference(), 1);
        assert!((b - 0.25).abs() < 1e-9, "{b}");
    }

    #[test]
    fn what_no_lane_can_fit_is_not_counted() {
        // Three frames of 100 ms due 150 ms after the same release on one lane: one and a
        // half fit (fractional relaxation).
        let jobs = [
            job(Kind::Vision, 0, 150, 100, JobEnd::OnTime),
            job(Kind::Vision, 0, 150, 100, JobEnd::Late),
            job(Kind::Vision, 0, 150, 100, JobEnd::Late),
        ];
        let b = run_bound(&jobs, &summary(3, 0), &Profile::reference(), 1);
        assert!((b - 0.5).abs() < 1e-9, "{b}");
    }
}
