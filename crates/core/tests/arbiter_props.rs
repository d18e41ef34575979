//! Property tests of the arbiter: the score equals the S2 formula, is monotone in each
//! input, preemptive EDF on one worker meets every deadline while utilisation ≤ 1, and
//! admission keeps committed jobs while every window it can make fit fits, and sheds no
//! job that fits.
#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

use mmsched_core::Modality;
use mmsched_core::arbiter::sim::{PeriodicTask, simulate_one_worker};
use mmsched_core::arbiter::{Admission, Arbiter, ClassId, DispatchRule, Job, JobId, Verdict};
use mmsched_core::policy::{Policy, PolicySpec};
use proptest::prelude::*;

const MS: u64 = 1_000_000;

/// (deadline offset from now in µs — may be negative, cost µs, γ, heavy class?)
fn job_inputs() -> impl Strategy<Value = (i64, u64, f64, bool)> {
    (
        -5_000i64..200_000,
        0u64..50_000,
        0.0f64..=1.0,
        any::<bool>(),
    )
}

fn policy() -> impl Strategy<Value = Policy> {
    (
        0.0f64..1.0,
        0.0f64..1.0,
        0.0f64..=1.0,
        0.0f64..=1.0,
        0.0f64..=1.0,
    )
        .prop_map(|(a, b, saver, risk, boost)| {
            // Three weights summing to 1.
            let (lo, hi) = if a < b { (a, b) } else { (b, a) };
            let json = format!(
                r#"{{"arbiter":{{"weight_deadline":{},"weight_importance":{},"weight_battery":{},
                "battery_saver_below":{saver},"risk_boost_above":{risk},
                "risk_boost_deadline_weight":{boost}}}}}"#,
                lo,
                hi - lo,
                1.0 - hi
            );
            let spec: PolicySpec = serde_json::from_str(&json).unwrap();
            Policy::try_from(spec).unwrap()
        })
}

fn build(a: &mut Arbiter, now: u64, inputs: &[(i64, u64, f64, bool)]) -> Vec<Job> {
    let llm = a.class("llm");
    let vision = a.class("vision");
    inputs
        .iter()
        .enumerate()
        .map(|(i, &(d, cost, g, heavy))| Job {
            id: JobId(i as u64),
            class: if heavy { llm } else { vision },
            modality: Modality::ALL[i % 5],
            deadline_nanos: now.saturating_add_signed(d * 1000),
            predicted_cost_nanos: cost * 1000,
            importance: g,
            committed: false,
        })
        .collect()
}

/// The S2 formula written out independently, in milliseconds as the spec states it.
fn expected(p: &Policy, jobs: &[Job], now: u64, battery: f64) -> Vec<f64> {
    let ap = p.arbiter();
    let inv_delta = |j: &Job| {
        let delta_ms = (j.deadline_nanos as f64 - now as f64) / 1e6;
        1.0 / delta_ms.max(0.001)
    };
    let lo = jobs.iter().map(inv_delta).fold(f64::INFINITY, f64::min);
    let hi = jobs.iter().map(inv_delta).fold(f64::NEG_INFINITY, f64::max);
    jobs.iter()
        .map(|j| {
            let pruned = battery < ap.battery_saver_below
                && ap.heavy_classes.iter().any(|c| c == "llm")
                && j.class == ClassId(0);
            if pruned {
                return 0.0;
            }
            let u = if hi > lo {
                (inv_delta(j) - lo) / (hi - lo)
            } else {
                1.0
            };
            let slack_ms = (j.deadline_nanos as f64 - now as f64) / 1e6;
            let risk = if slack_ms <= 0.0 {
                1.0
            } else {
                (j.predicted_cost_nanos as f64 / 1e6 / slack_ms).min(1.0)
            };
            let plain = ap.weight_deadline * u
                + ap.weight_importance * j.importance
                + ap.weight_battery * battery;
            if risk > ap.risk_boost_above {
                let rest = ap.weight_importance + ap.weight_battery;
                let left = 1.0 - ap.risk_boost_deadline_weight;
                let (wi, wb) = if rest > 0.0 {
                    (
                        left * ap.weight_importance / rest,
                        left * ap.weight_battery / rest,
                    )
                } else {
                    (left / 2.0, left / 2.0)
                };
                plain.max(ap.risk_boost_deadline_weight * u + wi * j.importance + wb * battery)
            } else {
                plain
            }
        })
        .collect()
}

fn scores(a: &Arbiter, jobs: &[Job], now: u64, battery: f64) -> Vec<f64> {
    let mut out = Vec::new();
    a.reevaluate(jobs, now, battery, &mut out);
    out.iter().map(|x| x.score).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn score_equals_the_formula(
        p in policy(),
        now in 0u64..1_000_000_000_000,
        battery in 0.0f64..=1.0,
        inputs in prop::collection::vec(job_inputs(), 1..30),
    ) {
        let mut a = Arbiter::new(&p);
        let jobs = build(&mut a, now, &inputs);
        let got = scores(&a, &jobs, now, battery);
        let want = expected(&p, &jobs, now, battery);
        for (g, w) in got.iter().zip(&want) {
            prop_assert!((g - w).abs() < 1e-9, "got {:?}\nwant {:?}", got, want);
            prop_assert!((0.0..=1.0 + 1e-12).contains(g));
        }
    }

    #[test]
    fn admission_never_sheds_a_committed_job_and_makes_every_window_it_can_fit(
        now in 0u64..1_000_000_000,
        workers in 1u32..4,
        inputs in prop::collection::vec((job_inputs(), any::<bool>()), 1..40),
    ) {
        let mut a = Arbiter::new(&Policy::default());
        let plain: Vec<_> = inputs.iter().map(|(j, _)| *j).collect();
        let mut jobs = build(&mut a, now, &plain);
        for (job, (_, committed)) in jobs.iter_mut().zip(&inputs) {
            job.committed = *committed;
        }
        let mut assessed = Vec::new();
        a.reevaluate(&jobs, now, 1.0, &mut assessed);
        let mut adm = Admission::with_capacity(jobs.len());
        let verdicts = adm.decide(&jobs, &assessed, now, workers).to_vec();
        for (job, v) in jobs.iter().zip(&verdicts) {
            prop_assert!(!job.committed || *v == Verdict::Admit, "{job:?} {v:?}");
        }
        // The window of `w`: the admitted demand due by its deadline, and its capacity.
        let window = |w: &Job| {
            let admitted: u128 = jobs
                .iter()
                .zip(&verdicts)
                .filter(|(j, v)| j.deadline_nanos <= w.deadline_nanos && **v == Verdict::Admit)
                .map(|(j, _)| u128::from(j.predicted_cost_nanos))
                .sum();
            let capacity = u128::from(w.deadline_nanos.saturating_sub(now)) * u128::from(workers);
            (admitted, capacity)
        };
        // Every window holds no more admitted demand than its capacity, unless nothing
        // more in it could go: only committed and free jobs due by then are left.
        for w in &jobs {
            let (admitted, capacity) = window(w);
            let sheddable_left = jobs.iter().zip(&verdicts).any(|(j, v)| {
                j.deadline_nanos <= w.deadline_nanos
                    && *v == Verdict::Admit
                    && !j.committed
                    && j.predicted_cost_nanos > 0
            });
            prop_assert!(admitted <= capacity || !sheddable_left, "window {w:?}");
        }
        // No job was shed that fits: admitting any one of them again overflows a window
        // it joins.
        for (s, _) in jobs.iter().zip(&verdicts).filter(|(_, v)| **v == Verdict::Shed) {
            let overflows = jobs.iter().any(|w| {
                let (admitted, capacity) = window(w);
                s.deadline_nanos <= w.deadline_nanos
                    && admitted + u128::from(s.predicted_cost_nanos) > capacity
            });
            prop_assert!(overflows, "{s:?} was shed but fits");
        }
    }

    #[test]
    fn score_is_monotone_in_each_input(
        p in policy(),
        now in 0u64..1_000_000_000,
        battery in 0.0f64..=1.0,
        inputs in prop::collection::vec(job_inputs(), 1..20),
        pick in any::<prop::sample::Index>(),
        tighter_us in 1i64..100_000,
        more_gamma in 0.0f64..=1.0,
        more_battery in 0.0f64..=1.0,
    ) {
        let mut a = Arbiter::new(&p);
        let jobs = build(&mut a, now, &inputs);
        let j = pick.index(jobs.len());
        let base = scores(&a, &jobs, now, battery)[j];

        // Tighter deadline, everything else equal: not lower.
        let mut t = jobs.clone();
        t[j].deadline_nanos = t[j].deadline_nanos.saturating_sub(tighter_us as u64 * 1000);
        prop_assert!(scores(&a, &t, now, battery)[j] >= base, "deadline");

        // Higher importance: not lower.
        let mut g = jobs.clone();
        g[j].importance = (g[j].importance + more_gamma).min(1.0);
        prop_assert!(scores(&a, &g, now, battery)[j] >= base, "importance");

        // More battery: not lower.
        let b2 = (battery + more_battery).min(1.0);
        prop_assert!(scores(&a, &jobs, now, b2)[j] >= base, "battery");
    }

    #[test]
    fn preemptive_edf_meets_every_deadline_at_utilisation_up_to_one(
        tasks in prop::collection::vec((0usize..9, 1u64..20, 0u64..12, 0.0f64..=1.0), 1..7),
        slack_share in 0u64..5,
    ) {
        // Periods divide 120 units of 100 µs, so the hyperperiod is at most 12 ms.
        const PERIODS: [u64; 9] = [1, 2, 3, 4, 5, 6, 8, 10, 12];
        const UNIT: u64 = 100_000;
        let total: u64 = tasks.iter().map(|t| t.1).sum::<u64>() + slack_share;
        let set: Vec<PeriodicTask> = tasks
            .iter()
            .map(|&(pi, share, offset, gamma)| {
                let period = PERIODS[pi] * UNIT;
                PeriodicTask {
                    offset_nanos: (offset % PERIODS[pi]) * UNIT,
                    // Σ cost/period ≤ Σ share/total ≤ 1, exactly (rounded down).
                    cost_nanos: period * share / total,
                    ..PeriodicTask::implicit(period, 0, gamma)
                }
            })
            .collect();
        // Check the utilisation bound in exact integer arithmetic.
        let hyper = 120 * UNIT;
        let demand: u128 = set
            .iter()
            .map(|t| u128::from(t.cost_nanos) * u128::from(hyper / t.period_nanos))
            .sum();
        prop_assert!(demand <= u128::from(hyper));
        let a = Arbiter::new(&Policy::default());
        let r = simulate_one_worker(&set, DispatchRule::Edf, &a, 1.0, 3 * hyper);
        prop_assert!(r.released > 0);
        prop_assert_eq!(r.missed, 0, "{:?}", set);
    }
}

#[test]
fn edf_misses_once_utilisation_exceeds_one() {
    // The property above is not vacuous: just over 1, EDF must miss.
    let a = Arbiter::new(&Policy::default());
    let set = [
        PeriodicTask::implicit(2 * MS, MS, 0.5),
        PeriodicTask::implicit(3 * MS, 1_500_001, 0.5),
    ];
    let r = simulate_one_worker(&set, DispatchRule::Edf, &a, 1.0, 60 * MS);
    assert!(r.missed > 0, "{r:?}");
}
