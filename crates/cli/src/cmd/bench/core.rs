//! `mmsched bench core`: the scheduling-core figures of issue 2.
//!
//! Every figure is measured after a warm-up, over many iterations, with exact
//! percentiles from an HDR histogram. Time is read through the core's `MonotonicClock`.

use std::hint::black_box;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use hdrhistogram::Histogram;
use mmsched_core::Modality;
use mmsched_core::arbiter::sim::{PeriodicTask, simulate_one_worker};
use mmsched_core::arbiter::{
    Arbiter, Assessment, ClassId, DispatchRule, Job, JobId, ReadyQueue, UrgencyBounds,
};
use mmsched_core::ldti::{self, LdtiInputs, LdtiWeights};
use mmsched_core::policy::Policy;
use mmsched_core::scheduler::{Decision, SchedEvent, Scheduler, StreamBooking};
use mmsched_core::slots::{SlotTable, SlotTableConfig};
use mmsched_core::time::{Clock, MonotonicClock, NANOS_PER_MILLI, Nanos};

#[derive(Debug, Args)]
pub struct CoreArgs {
    /// Print the figures as one JSON object; each key names its unit (_ns nanoseconds,
    /// _us microseconds, _ops_per_s operations per second): step_p99_ns_10,
    /// step_p99_ns_100, step_p99_ns_1k, step_p99_ns_10k (one Scheduler::step with N
    /// queued), arbitrate_p99_ns_1k and _10k (the same step), step_growth_1k_to_10k,
    /// queue_p99_ns_1k and _10k (score + push + pop alone), reevaluate_10k_us, reserve_ops_per_s_1e3,
    /// reserve_ops_per_s_1e6, ldti_ns, plus the _score, _p99 and dispatch-comparison
    /// counts (edf_missed_jobs, score_missed_jobs, …).
    #[arg(long)]
    json: bool,
    /// Run about 20× fewer iterations: a smoke test, with noisier figures.
    #[arg(long)]
    quick: bool,
}

/// A small deterministic generator (xorshift64*): the bench inputs are the same each run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

struct Figure {
    key: &'static str,
    label: &'static str,
    value: f64,
    unit: &'static str,
    goal: Option<Goal>,
}

enum Goal {
    AtMost(f64),
    AtLeast(f64),
}

impl Figure {
    fn verdict(&self) -> &'static str {
        match self.goal {
            Some(Goal::AtMost(g)) if self.value <= g => "ok",
            Some(Goal::AtLeast(g)) if self.value >= g => "ok",
            Some(_) => "MISSED",
            None => "",
        }
    }
    fn goal_text(&self) -> String {
        match self.goal {
            Some(Goal::AtMost(g)) => format!("≤ {g}"),
            Some(Goal::AtLeast(g)) => format!("≥ {g}"),
            None => String::new(),
        }
    }
}

fn histogram() -> Result<Histogram<u64>> {
    Histogram::new_with_bounds(1, 60_000_000_000, 3).context("cannot build a histogram")
}

fn progress(json: bool, what: &str) {
    if !json {
        eprintln!("  measuring {what} …");
    }
}

pub fn run(args: CoreArgs) -> Result<ExitCode> {
    let clock = MonotonicClock::new();
    let scale = if args.quick { 20 } else { 1 };
    let policy = Policy::default();
    let mut figures = Vec::new();

    progress(args.json, "decision steps (Scheduler::step)");
    figures.extend(step_figures(&clock, &policy, scale)?);

    progress(args.json, "ready-queue operations");
    for (n, key, key_score) in [
        (1_000, "queue_p99_ns_1k", "queue_p99_ns_1k_score"),
        (10_000, "queue_p99_ns_10k", "queue_p99_ns_10k_score"),
    ] {
        for (rule, key) in [(DispatchRule::Edf, key), (DispatchRule::Score, key_score)] {
            let p99 = arbitration_p99_ns(&clock, &policy, rule, n, 200_000 / scale)?;
            figures.push(Figure {
                key,
                label: if rule == DispatchRule::Edf {
                    "score + push + pop alone, P99 (EDF queue)"
                } else {
                    "score + push + pop alone, P99 (score queue)"
                },
                value: p99 as f64,
                unit: if n == 1_000 {
                    "ns, 1k jobs"
                } else {
                    "ns, 10k jobs"
                },
                goal: None,
            });
        }
    }

    progress(args.json, "full re-evaluation of 10k jobs");
    let (p50, p99) = reevaluate_us(&clock, &policy, 10_000, 2_000 / scale)?;
    figures.push(Figure {
        key: "reevaluate_10k_us",
        label: "full re-evaluation, median",
        value: p50,
        unit: "µs, 10k jobs",
        goal: Some(Goal::AtMost(100.0)),
    });
    figures.push(Figure {
        key: "reevaluate_10k_p99_us",
        label: "full re-evaluation, P99",
        value: p99,
        unit: "µs, 10k jobs",
        goal: None,
    });

    progress(args.json, "slot reservations");
    let ops = 4_000_000 / scale as u64;
    let r3 = reserve_ops_per_s(&clock, 1_000, 256, ops)?;
    let r6 = reserve_ops_per_s(&clock, 1_000_000, 256, ops)?;
    let r6_spread = reserve_ops_per_s(&clock, 1_000_000, 250_000, ops)?;
    figures.push(Figure {
        key: "reserve_ops_per_s_1e3",
        label: "reservations, horizon 1e3",
        value: r3.round(),
        unit: "ops/s",
        goal: Some(Goal::AtLeast(5e6)),
    });
    figures.push(Figure {
        key: "reserve_ops_per_s_1e6",
        label: "reservations, horizon 1e6",
        value: r6.round(),
        unit: "ops/s",
        goal: Some(Goal::AtLeast(5e6_f64.max(r3 / 2.0).round())),
    });
    figures.push(Figure {
        key: "reserve_ops_per_s_1e6_spread",
        label: "reservations, horizon 1e6, starts spread over 250k slots",
        value: r6_spread.round(),
        unit: "ops/s",
        goal: None,
    });

    progress(args.json, "LDTI evaluation");
    figures.push(Figure {
        key: "ldti_ns",
        label: "one LDTI evaluation",
        value: ldti_ns(&clock, 20_000_000 / scale as u64),
        unit: "ns",
        goal: Some(Goal::AtMost(50.0)),
    });

    progress(args.json, "EDF against score dispatch");
    figures.extend(dispatch_figures(&policy, scale));

    print_figures(&figures, args.json);
    Ok(ExitCode::SUCCESS)
}

/// The decision step's P99 at 10 to 10k queued jobs, and how it grows.
fn step_figures(clock: &MonotonicClock, policy: &Policy, scale: usize) -> Result<Vec<Figure>> {
    let mut figures = Vec::new();
    let mut step = Vec::new();
    for (n, key, unit) in [
        (10, "step_p99_ns_10", "ns, 10 queued"),
        (100, "step_p99_ns_100", "ns, 100 queued"),
        (1_000, "step_p99_ns_1k", "ns, 1k queued"),
        (10_000, "step_p99_ns_10k", "ns, 10k queued"),
    ] {
        let iterations = (2_000_000 / n).clamp(2_000, 100_000) / scale;
        let p99 = step_p99_ns(clock, policy, n, iterations.max(100))?;
        step.push(p99 as f64);
        figures.push(Figure {
            key,
            label: "decision step, P99 (1 arrival + 1 finish)",
            value: p99 as f64,
            unit,
            goal: (n == 1_000).then_some(Goal::AtMost(2_000.0)),
        });
    }
    figures.push(Figure {
        key: "arbitrate_p99_ns_1k",
        label: "arbitration decision (= decision step), P99",
        value: step[2],
        unit: "ns, 1k queued",
        goal: Some(Goal::AtMost(2_000.0)),
    });
    figures.push(Figure {
        key: "arbitrate_p99_ns_10k",
        label: "arbitration decision (= decision step), P99",
        value: step[3],
        unit: "ns, 10k queued",
        goal: None,
    });
    figures.push(Figure {
        key: "step_growth_1k_to_10k",
        label: "decision step P99, 10k queued over 1k queued",
        value: (step[3] / step[2].max(1.0) * 100.0).round() / 100.0,
        unit: "×",
        goal: Some(Goal::AtMost(3.0)),
    });
    Ok(figures)
}

/// Deadline misses of EDF and of score dispatch on random task sets.
fn dispatch_figures(policy: &Policy, scale: usize) -> Vec<Figure> {
    let mut figures = Vec::new();
    let d = dispatch_comparison(policy, 1_000 / scale as u64);
    for (key, label, value) in [
        (
            "dispatch_task_sets",
            "task sets: 3–6 tasks, U 0.70–1.00, γ rising with period",
            d.sets,
        ),
        ("dispatch_jobs", "jobs released in them", d.jobs),
        ("edf_missed_jobs", "deadline misses, EDF", d.edf_missed),
        (
            "score_missed_jobs",
            "deadline misses, score dispatch",
            d.score_missed,
        ),
        (
            "score_sets_with_misses",
            "task sets where score dispatch misses",
            d.score_sets_missing,
        ),
    ] {
        figures.push(Figure {
            key,
            label,
            value: value as f64,
            unit: "",
            goal: (key == "edf_missed_jobs").then_some(Goal::AtMost(0.0)),
        });
    }
    figures
}

/// The figures as one JSON object, or as a table with what each measures.
fn print_figures(figures: &[Figure], json: bool) {
    if json {
        let mut obj = serde_json::Map::new();
        for f in figures {
            let v = if f.value.fract() == 0.0 && f.value.abs() < 9e15 {
                serde_json::json!(f.value as i64)
            } else {
                serde_json::json!((f.value * 1000.0).round() / 1000.0)
            };
            obj.insert(f.key.to_string(), v);
        }
        outln!("{}", serde_json::Value::Object(obj));
    } else {
        outln!(
            "{:<58} {:>14} {:<13} {:>12}",
            "figure",
            "value",
            "unit",
            "goal"
        );
        for f in figures {
            let value = if f.value.fract() == 0.0 {
                format!("{}", f.value as i64)
            } else {
                format!("{:.2}", f.value)
            };
            outln!(
                "{:<58} {:>14} {:<13} {:>12} {}",
                f.label,
                value,
                f.unit,
                f.goal_text(),
                f.verdict()
            );
        }
        outln!();
        outln!(
            "decision step: Scheduler::step with one arrival and one finish on 3 workers (one \
             for VAD only), the camera's standing reservation booked, N jobs queued: \
             admission (scoring, demand test), dispatch into slots (the queue stays at N)."
        );
        outln!(
            "score + push + pop alone: score one arriving job against fixed urgency bounds, \
             queue it, pop the next (no admission, no slots)."
        );
        outln!(
            "reservations: reserve n = 1..8 slots at the first fit after a start in the next \
             256 slots, 32 live, the oldest released or activated + completed, the horizon \
             rolling one slot every 4 operations."
        );
    }
}

fn random_job(rng: &mut Rng, id: u64, now: Nanos, classes: &[ClassId]) -> Job {
    Job {
        id: JobId(id),
        class: classes[rng.below(classes.len() as u64) as usize],
        modality: Modality::ALL[(id % 5) as usize],
        deadline_nanos: now + 1_000 + rng.below(200 * NANOS_PER_MILLI),
        predicted_cost_nanos: rng.below(20 * NANOS_PER_MILLI),
        importance: rng.unit(),
        committed: false,
    }
}

/// P99 in ns of one [`Scheduler::step`] with `n` jobs queued: each step brings one arrival
/// and the end of the job on worker 1, which then starts the next queued job, so the queue
/// stays at `n`. Worker 0 holds a long job and the camera's standing reservation, worker 2
/// runs only VAD (as in a run).
fn step_p99_ns(
    clock: &MonotonicClock,
    policy: &Policy,
    n: usize,
    iterations: usize,
) -> Result<u64> {
    let mut now: Nanos = 1_000 * NANOS_PER_MILLI;
    let mut sched = Scheduler::new(policy, 3, now).context("cannot build the scheduler")?;
    let classes = ["vision", "vad", "asr", "llm"].map(|c| sched.class(c));
    sched
        .restrict_worker(2, &[classes[1]])
        .context("worker 2 exists")?;
    // Frames due 150 ms after their occurrence starts: queued jobs due earlier may take
    // an occurrence, so the benchmark times that check too.
    let frames = StreamBooking {
        modality: Modality::Image,
        first_nanos: now,
        period_nanos: 200 * NANOS_PER_MILLI,
        len_slots: 40,
        due_after_nanos: Some(150 * NANOS_PER_MILLI),
    };
    sched
        .reserve_stream(0, classes[0], frames)
        .context("the standing reservation fits")?;
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    // Cheap jobs due in 1–100 s: admission keeps them all, so the queue holds n.
    let mut make = |id: u64, now: Nanos| Job {
        id: JobId(id),
        class: classes[[0, 2, 3][rng.below(3) as usize]],
        modality: Modality::Text,
        deadline_nanos: now + NANOS_PER_MILLI * (1_000 + rng.below(99_000)),
        predicted_cost_nanos: 1_000 + rng.below(1_000),
        importance: rng.unit(),
        committed: false,
    };
    let mut out = Vec::new();
    // Two jobs due first take the general workers; then n queue behind them.
    let mut busy = [make(0, now), make(1, now)];
    for b in &mut busy {
        b.class = classes[3];
        b.deadline_nanos = now + 500 * NANOS_PER_MILLI;
    }
    let mut events: Vec<SchedEvent> = busy.iter().map(|j| SchedEvent::Arrive(*j)).collect();
    events.extend((2..n as u64 + 2).map(|i| SchedEvent::Arrive(make(i, now))));
    sched.step(now, &events, &mut out);
    let mut running = out
        .iter()
        .find_map(|d| match d {
            Decision::Start { worker: 1, job, .. } => Some(*job),
            _ => None,
        })
        .context("worker 1 starts a job")?;
    let mut hist = histogram()?;
    let warmup = iterations / 10 + 1;
    for (i, next_id) in (0..warmup + iterations).zip(n as u64 + 2..) {
        now += 10_000;
        let events = [
            SchedEvent::Finish {
                worker: 1,
                job: running,
            },
            SchedEvent::Arrive(make(next_id, now)),
        ];
        out.clear();
        let t0 = clock.now_nanos();
        sched.step(now, black_box(&events), &mut out);
        let t1 = clock.now_nanos();
        if let Some(job) = out.iter().find_map(|d| match d {
            Decision::Start { worker: 1, job, .. } => Some(*job),
            _ => None,
        }) {
            running = job;
        }
        if i >= warmup {
            hist.record((t1 - t0).max(1))?;
        }
    }
    anyhow::ensure!(
        sched.queued() + 2 >= n,
        "the queue drained to {} of {n}: the benchmark no longer measures {n} queued jobs",
        sched.queued()
    );
    Ok(hist.value_at_quantile(0.99))
}

/// P99 in ns of scoring, queueing and popping one job with `n` queued (no admission).
fn arbitration_p99_ns(
    clock: &MonotonicClock,
    policy: &Policy,
    rule: DispatchRule,
    n: usize,
    iterations: usize,
) -> Result<u64> {
    let mut arbiter = Arbiter::new(policy);
    let classes = ["vision", "vad", "asr", "llm"].map(|c| arbiter.class(c));
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut queue = ReadyQueue::with_capacity(rule, n + 1);
    let now: Nanos = 1_000 * NANOS_PER_MILLI;
    let jobs: Vec<Job> = (0..n as u64)
        .map(|i| random_job(&mut rng, i, now, &classes))
        .collect();
    let mut out = Vec::with_capacity(n);
    let bounds: UrgencyBounds = arbiter.reevaluate(&jobs, now, 0.6, &mut out);
    for (j, a) in jobs.iter().zip(&out) {
        queue.push(*j, a.score);
    }
    let arrivals: Vec<Job> = (0..4096u64)
        .map(|i| random_job(&mut rng, n as u64 + i, now, &classes))
        .collect();
    let mut hist = histogram()?;
    let warmup = iterations / 10;
    for i in 0..warmup + iterations {
        let job = &arrivals[i % arrivals.len()];
        let t0 = clock.now_nanos();
        let a = arbiter.assess(job, now, 0.6, &bounds);
        queue.push(*job, a.score);
        let next = queue.pop();
        let t1 = clock.now_nanos();
        black_box(next);
        if i >= warmup {
            hist.record((t1 - t0).max(1))?;
        }
    }
    Ok(hist.value_at_quantile(0.99))
}

/// Median and P99 in µs of a full re-evaluation of `n` jobs.
fn reevaluate_us(
    clock: &MonotonicClock,
    policy: &Policy,
    n: usize,
    iterations: usize,
) -> Result<(f64, f64)> {
    let mut arbiter = Arbiter::new(policy);
    let classes = ["vision", "vad", "asr", "llm"].map(|c| arbiter.class(c));
    let mut rng = Rng(0xD1B5_4A32_D192_ED03);
    let now: Nanos = 1_000 * NANOS_PER_MILLI;
    let jobs: Vec<Job> = (0..n as u64)
        .map(|i| random_job(&mut rng, i, now, &classes))
        .collect();
    let mut out: Vec<Assessment> = Vec::with_capacity(n);
    let mut hist = histogram()?;
    let warmup = iterations / 10 + 1;
    for i in 0..warmup + iterations {
        // Time moves on between periods, as it does in the scheduler.
        let at = now + (i as u64 % 1000) * 1_000;
        let t0 = clock.now_nanos();
        let bounds = arbiter.reevaluate(black_box(&jobs), at, 0.6, &mut out);
        let t1 = clock.now_nanos();
        black_box((bounds, &out));
        if i >= warmup {
            hist.record((t1 - t0).max(1))?;
        }
    }
    Ok((
        hist.value_at_quantile(0.5) as f64 / 1_000.0,
        hist.value_at_quantile(0.99) as f64 / 1_000.0,
    ))
}

/// Successful reservations per second in a rolling loop: reserve 1–8 slots at the first
/// fit after a start drawn from the next `spread` slots, keep 32 live, end the oldest
/// (release, or activate + complete), roll the horizon one slot every 4 operations.
fn reserve_ops_per_s(clock: &MonotonicClock, horizon: u32, spread: u64, ops: u64) -> Result<f64> {
    const LIVE: usize = 32;
    let config = SlotTableConfig {
        slot_len_micros: 1_000,
        horizon_slots: horizon,
        max_reservations: 4_096,
        max_standing: 0,
    };
    let mut table = SlotTable::new(config, 0).context("cannot build the slot table")?;
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    // Pre-drawn requests so the generator is not timed.
    let requests: Vec<(u64, u32)> = (0..8192)
        .map(|_| (rng.below(spread), 1 + rng.below(8) as u32))
        .collect();
    let mut live = [None; LIVE];
    let run = |table: &mut SlotTable, live: &mut [Option<_>; LIVE], count: u64| -> u64 {
        let mut ok = 0;
        for i in 0..count {
            let (offset, len) = requests[(i % requests.len() as u64) as usize];
            let slot = (i as usize) % LIVE;
            if let Some(id) = live[slot].take() {
                if i % 2 == 0 {
                    let _ = table.release(id);
                } else if table.activate(id).is_ok() {
                    let _ = table.complete(id);
                }
            }
            let base = table.base_slot();
            if let Ok(r) = table.reserve(Modality::ALL[slot % 5], base + offset, len) {
                live[slot] = Some(r.id);
                ok += 1;
            }
            if i % 4 == 3 {
                table.advance_to(base + 1, |e| {
                    black_box(e);
                });
            }
        }
        ok
    };
    run(&mut table, &mut live, ops / 10);
    let t0 = clock.now_nanos();
    let ok = run(&mut table, &mut live, ops);
    let elapsed = clock.now_nanos() - t0;
    Ok(ok as f64 * 1e9 / elapsed.max(1) as f64)
}

/// Mean ns of one LDTI evaluation over varying inputs.
fn ldti_ns(clock: &MonotonicClock, iterations: u64) -> f64 {
    let weights = LdtiWeights::default();
    let inputs: Vec<LdtiInputs> = (0..1024u64)
        .map(|i| LdtiInputs {
            latency_p99_nanos: 20_000_000 + i * 37_000,
            latency_ref_nanos: 25_000_000,
            drift_ppm: (i as f64 - 512.0) * 1.7,
            throughput: 30.0 + (i % 40) as f64,
            throughput_max: 60.0,
        })
        .collect();
    let mut sum = 0.0;
    for i in 0..iterations / 10 {
        sum += ldti::evaluate(&weights, black_box(&inputs[(i % 1024) as usize])).value;
    }
    let t0 = clock.now_nanos();
    for i in 0..iterations {
        sum += ldti::evaluate(&weights, black_box(&inputs[(i % 1024) as usize])).value;
    }
    let elapsed = clock.now_nanos() - t0;
    black_box(sum);
    elapsed as f64 / iterations as f64
}

struct DispatchCounts {
    sets: u64,
    jobs: u64,
    edf_missed: u64,
    score_missed: u64,
    score_sets_missing: u64,
}

/// Random periodic task sets with utilisation 0.70–1.00, run on one simulated worker
/// under EDF and under score dispatch.
fn dispatch_comparison(policy: &Policy, sets: u64) -> DispatchCounts {
    let arbiter = Arbiter::new(policy);
    let mut rng = Rng(0x0123_4567_89AB_CDEF);
    let mut c = DispatchCounts {
        sets,
        jobs: 0,
        edf_missed: 0,
        score_missed: 0,
        score_sets_missing: 0,
    };
    // Periods divide 24 ms, so two hyperperiods are at most 48 ms.
    const PERIODS_MS: [u64; 8] = [1, 2, 3, 4, 6, 8, 12, 24];
    for _ in 0..sets {
        let n = 3 + rng.below(4) as usize;
        let target_permille = 700 + rng.below(301);
        let shares: Vec<u64> = (0..n).map(|_| 1 + rng.below(10)).collect();
        let total: u64 = shares.iter().sum();
        let mut periods: Vec<u64> = (0..n)
            .map(|_| PERIODS_MS[rng.below(8) as usize] * NANOS_PER_MILLI)
            .collect();
        periods.sort_unstable();
        // Importance rises with the period, from 0 to 1: the urgent streams are the less
        // important ones (S2's background audio at γ 0.15 against an AR frame at 0.92),
        // the case where the score order and the deadline order disagree.
        let gammas: Vec<f64> = (0..n).map(|i| i as f64 / (n - 1) as f64).collect();
        let tasks: Vec<PeriodicTask> = shares
            .iter()
            .zip(periods.iter().zip(&gammas))
            .map(|(&s, (&period, &gamma))| {
                let cost = period * s * target_permille / (total * 1000);
                PeriodicTask::implicit(period, cost, gamma)
            })
            .collect();
        let until = 48 * NANOS_PER_MILLI;
        let edf = simulate_one_worker(&tasks, DispatchRule::Edf, &arbiter, 0.6, until);
        let score = simulate_one_worker(&tasks, DispatchRule::Score, &arbiter, 0.6, until);
        c.jobs += edf.released;
        c.edf_missed += edf.missed;
        c.score_missed += score.missed;
        c.score_sets_missing += u64::from(score.missed > 0);
    }
    c
}
