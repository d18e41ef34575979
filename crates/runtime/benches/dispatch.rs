//! Cost of one scheduling decision: `cargo bench -p mmsched-runtime --bench dispatch`.
//!
//! A steady mixed load on 2 lanes — audio every 20 ms (standing reservation), camera at
//! 30 fps, one LLM generation at a time, 64 tokens, yielding after every 4 ms decode step — replayed in virtual
//! time (the decisions are real; only the work is left out) while the wall time of every
//! `submit` / `decide` / `complete` call is measured. Prints the mean and the P99 per
//! decision and the overhead as a share of one core at the replayed rate.

use mmsched_core::Modality;
use mmsched_core::policy::Policy;
use mmsched_core::time::{Clock, MonotonicClock, NANOS_PER_MILLI, NANOS_PER_SEC};
use mmsched_runtime::sched::{Dispatcher, StepOutcome};

fn main() {
    let wall = MonotonicClock::new();
    let mut d = Dispatcher::new(&Policy::default(), 2, 0).expect("default policy builds");
    let audio = d.class("audio", 3 * NANOS_PER_MILLI);
    let vision = d.class("vision", 12 * NANOS_PER_MILLI);
    let llm = d.class("llm", 4 * NANOS_PER_MILLI);
    d.reserve_stream(
        0,
        audio,
        Modality::Audio,
        20 * NANOS_PER_MILLI,
        20 * NANOS_PER_MILLI,
    )
    .expect("books");
    let seconds = 60;
    let end = seconds * NANOS_PER_SEC;
    let mut costs: Vec<u64> = Vec::new();
    let mut running: [Option<(u64, mmsched_core::arbiter::ClassId)>; 2] = [None, None];
    let mut next_audio = 20 * NANOS_PER_MILLI;
    let mut next_frame = 0;
    let mut llm_live = false;
    let mut tokens = 0u32;
    let mut now = 0;
    while now < end {
        let t0 = wall.now_nanos();
        if now >= next_audio {
            d.submit(audio, Modality::Audio, next_audio + 20 * NANOS_PER_MILLI);
            next_audio += 20 * NANOS_PER_MILLI;
        }
        if now >= next_frame {
            d.submit(vision, Modality::Image, next_frame + 33 * NANOS_PER_MILLI);
            next_frame += NANOS_PER_SEC / 30;
        }
        if !llm_live {
            d.submit(llm, Modality::Text, now + 10 * NANOS_PER_SEC);
            llm_live = true;
        }
        for (lane, slot) in running.iter_mut().enumerate() {
            if let Some((done_at, class)) = *slot
                && done_at <= now
            {
                let outcome = if class == llm {
                    tokens += 1;
                    if tokens.is_multiple_of(64) {
                        llm_live = false;
                        StepOutcome::Finished
                    } else {
                        StepOutcome::Yield
                    }
                } else {
                    StepOutcome::Finished
                };
                d.complete(lane, now, outcome).expect("lane was running");
                *slot = None;
            }
        }
        let decision = d.decide(now);
        costs.push(wall.now_nanos() - t0);
        for job in decision.shed.iter().chain(&decision.pruned) {
            if job.class == llm {
                llm_live = false;
            }
        }
        for x in decision.dispatched {
            let cost = match x.job.class {
                c if c == audio => 3 * NANOS_PER_MILLI,
                c if c == vision => 12 * NANOS_PER_MILLI,
                _ => 4 * NANOS_PER_MILLI,
            };
            running[x.lane] = Some((now + cost, x.job.class));
        }
        now += NANOS_PER_MILLI;
    }
    costs.sort_unstable();
    let total: u64 = costs.iter().sum();
    let mean = total / costs.len() as u64;
    let p99 = costs[costs.len() * 99 / 100];
    let max = costs[costs.len() - 1];
    let stats = d.stats();
    println!(
        "decisions: {} over {seconds} s of replayed time (one per ms)",
        costs.len()
    );
    let p50 = costs[costs.len() / 2];
    let slow = costs.iter().filter(|&&c| c > 100_000).count();
    println!("per decision: mean {mean} ns, p50 {p50} ns, p99 {p99} ns, max {max} ns");
    println!("decisions over 100 µs: {slow} (the thread preempted by other load shows here)");
    println!(
        "scheduler overhead at this rate: {:.3} % of one core",
        total as f64 / end as f64 * 100.0
    );
    for (class, s) in stats {
        println!(
            "  {:<7} jobs {:>5} completed {:>5} missed {:>3} shed {:>3} steps {:>6}",
            d.class_name(*class).unwrap_or("?"),
            s.jobs,
            s.completed,
            s.deadline_misses,
            s.shed,
            s.steps
        );
    }
}
