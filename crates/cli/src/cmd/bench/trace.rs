//! `mmsched bench trace`: what tracing costs a worker, and whether the recorder keeps up.
//!
//! Phase 1 (overhead): `--threads` workers record events as fast as they can while the
//! drain thread discards them; each worker times batches of 64 events on the monotonic
//! clock, and the per-event cost of every batch whose 64 events were all accepted goes into a
//! histogram (timing single events would mostly measure the clock read; batches that hit a
//! full ring are left out because dropping is cheaper than recording). Unpaced workers
//! outrun any consumer, so this phase drops; its drops are reported but are not the goal.
//! Phase 2 (sustained): the workers together record `--rate` events/s for `--seconds`,
//! paced in 1 ms bursts, while the drain thread turns them into mmtrace NDJSON every 10 ms
//! (written to a sink); drops must be zero at the default ring size.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::Args;
use hdrhistogram::Histogram;
use indicatif::{ProgressBar, ProgressStyle};
use mmsched_core::Modality;
use mmsched_core::time::{Clock, MonotonicClock};
use mmsched_trace::recorder::{DEFAULT_CAPACITY, DrainThread, Recorder, recorder};
use mmsched_trace::{Event, Header, IdGen, RecordKind, Writer};
use serde_json::json;

/// Arguments of `mmsched bench trace`.
#[derive(Debug, Args)]
pub struct TraceBenchArgs {
    /// Worker threads recording events at once.
    #[arg(long, default_value_t = 4)]
    threads: usize,
    /// Events each worker records in the overhead phase.
    #[arg(long, value_name = "N", default_value_t = 1_000_000)]
    events: u64,
    /// Ring capacity in events (rounded up to a power of two).
    #[arg(long, value_name = "EVENTS", default_value_t = DEFAULT_CAPACITY)]
    capacity: usize,
    /// Total event rate of the sustained phase, events per second.
    #[arg(long, value_name = "EVENTS_PER_SEC", default_value_t = 100_000)]
    rate: u64,
    /// Length of the sustained phase, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 3)]
    seconds: u64,
    /// Print the results as one JSON object instead of a table.
    #[arg(long)]
    json: bool,
}

const BATCH: u64 = 64;

fn event_template(rec: &Recorder, ids: &IdGen) -> Result<Event> {
    Ok(Event {
        kind: RecordKind::Span,
        trace_id: ids.trace_id(),
        span_id: ids.span_id(),
        parent_span_id: Some(ids.span_id()),
        job: Some(1),
        modality: Some(Modality::Image),
        model: Some(rec.sym("ppocr-v4")?),
        track: rec.sym("worker-vision")?,
        name: rec.sym("exec")?,
        clock: rec.sym("device")?,
        ts_ns: 0,
        dur_ns: 12_000_000,
        sync_offset_ms: 35,
        value: 0.0,
        caused_by: None,
        arg: None,
    })
}

fn progress(len: u64, quiet: bool, msg: &'static str) -> ProgressBar {
    if quiet {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::new(len);
    pb.set_style(
        ProgressStyle::with_template("{msg:>10} [{bar:30}] {pos}/{len} {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    pb.set_message(msg);
    pb
}

/// Phase 1's figures: the worker-side cost of recording an event.
struct Overhead {
    /// Nanoseconds per event, of the batches whose events all went into the ring.
    hist: Histogram<u64>,
    /// Events the consumer drained.
    drained: u64,
    /// Events dropped on a full ring.
    dropped: u64,
    /// Events the workers tried to record.
    attempted: u64,
}

/// Phase 1: worker-side overhead under contention, a consumer draining as fast as it can.
fn overhead(a: &TraceBenchArgs, clock: &Arc<MonotonicClock>, ids: &Arc<IdGen>) -> Result<Overhead> {
    let (rec, mut drain) = recorder(a.capacity);
    let template = event_template(&rec, ids)?;
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let consumer = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Acquire) {
                n += drain.discard() as u64;
                std::thread::yield_now();
            }
            n + drain.discard() as u64
        })
    };
    let pb = progress(a.events * a.threads as u64, a.json, "overhead");
    let events = a.events;
    let workers: Vec<_> = (0..a.threads)
        .map(|w| {
            let rec = rec.clone();
            let clock = clock.clone();
            let pb = pb.clone();
            std::thread::spawn(move || -> Histogram<u64> {
                let mut hist = Histogram::<u64>::new_with_bounds(1, 10_000_000, 3)
                    .expect("static histogram bounds are valid");
                let mut ev = template;
                ev.job = Some(w as u64);
                let mut done = 0;
                while done < events {
                    let t0 = clock.now_nanos();
                    let mut all_accepted = true;
                    for i in 0..BATCH {
                        ev.ts_ns = done + i;
                        all_accepted &= rec.record(std::hint::black_box(&ev));
                    }
                    let per_event = (clock.now_nanos() - t0).div_ceil(BATCH);
                    // Only batches whose events all went into the ring are timed: a full
                    // ring's drop path is cheaper and would flatter the figure.
                    if all_accepted {
                        hist.saturating_record(per_event.max(1));
                    }
                    done += BATCH;
                    if done % (BATCH * 1024) == 0 {
                        pb.inc(BATCH * 1024);
                    }
                }
                hist
            })
        })
        .collect();
    let mut hist = Histogram::<u64>::new_with_bounds(1, 10_000_000, 3).context("histogram")?;
    for w in workers {
        let h = w
            .join()
            .map_err(|_| anyhow::anyhow!("a benchmark worker panicked"))?;
        hist.add(&h).context("merging histograms")?;
    }
    pb.finish_and_clear();
    stop.store(true, std::sync::atomic::Ordering::Release);
    let drained = consumer
        .join()
        .map_err(|_| anyhow::anyhow!("the benchmark consumer panicked"))?;
    let overhead_dropped = rec.dropped();
    let attempted = (a.events / BATCH) * BATCH * a.threads as u64;
    Ok(Overhead {
        hist,
        drained,
        dropped: overhead_dropped,
        attempted,
    })
}

/// Phase 2's figures: a paced rate through the real drain thread.
struct Sustained {
    /// Events the workers recorded.
    sent: u64,
    /// Events per second achieved.
    achieved: f64,
    /// What the drain thread wrote and dropped.
    stats: mmsched_trace::recorder::DrainStats,
    /// The ring's size.
    capacity: usize,
}

/// Phase 2: the sustained rate with the real drain thread writing NDJSON.
fn sustained(
    a: &TraceBenchArgs,
    clock: &Arc<MonotonicClock>,
    ids: &Arc<IdGen>,
) -> Result<Sustained> {
    let (rec, drain) = recorder(a.capacity);
    let template = event_template(&rec, ids)?;
    let writer = Writer::new(std::io::sink(), &Header::new(0)).context("writer")?;
    let drainer = DrainThread::spawn(drain, writer, Duration::from_millis(10))
        .context("cannot start the drain thread")?;
    let per_thread_per_ms = a.rate as f64 / 1000.0 / a.threads as f64;
    let total_ms = a.seconds * 1000;
    let pb = progress(total_ms, a.json, "sustained");
    let start = clock.now_nanos();
    let workers: Vec<_> = (0..a.threads)
        .map(|_| {
            let rec = rec.clone();
            let clock = clock.clone();
            let pb = pb.clone();
            std::thread::spawn(move || -> u64 {
                let mut ev = template;
                let mut sent = 0u64;
                for ms in 0..total_ms {
                    // Catch up to the schedule: events due by the end of this millisecond.
                    let due = (per_thread_per_ms * (ms + 1) as f64) as u64;
                    while sent < due {
                        ev.ts_ns = clock.now_nanos();
                        rec.record(&ev);
                        sent += 1;
                    }
                    let next = start + (ms + 1) * 1_000_000;
                    let now = clock.now_nanos();
                    if next > now {
                        std::thread::sleep(Duration::from_nanos(next - now));
                    }
                    if ms % 50 == 0 {
                        pb.set_position(ms);
                    }
                }
                sent
            })
        })
        .collect();
    let mut sent = 0;
    for w in workers {
        sent += w
            .join()
            .map_err(|_| anyhow::anyhow!("a benchmark worker panicked"))?;
    }
    let elapsed_ns = clock.now_nanos() - start;
    pb.finish_and_clear();
    let stats = drainer.stop().context("drain thread")?;
    let achieved = sent as f64 / (elapsed_ns as f64 / 1e9);
    Ok(Sustained {
        sent,
        achieved,
        stats,
        capacity: rec.capacity(),
    })
}

/// Runs the benchmark.
pub fn run(a: TraceBenchArgs) -> Result<ExitCode> {
    if a.threads == 0 || a.threads > 256 {
        bail!("--threads must be between 1 and 256, got {}", a.threads);
    }
    if a.events < BATCH {
        bail!("--events must be at least {BATCH}, got {}", a.events);
    }
    if a.rate == 0 || a.seconds == 0 {
        bail!("--rate and --seconds must be greater than 0");
    }
    let clock = Arc::new(MonotonicClock::new());

    let ids = Arc::new(IdGen::from_seed(7));
    let Overhead {
        hist,
        drained,
        dropped: overhead_dropped,
        attempted,
    } = overhead(&a, &clock, &ids)?;
    let Sustained {
        sent,
        achieved,
        stats,
        capacity,
    } = sustained(&a, &clock, &ids)?;

    let timed_events = hist.len() * BATCH;
    let p50 = hist.value_at_quantile(0.5);
    let p99 = hist.value_at_quantile(0.99);
    let goal_ns = 100;
    if a.json {
        outln!(
            "{}",
            json!({
                "threads": a.threads,
                "capacity": capacity,
                "overhead": {
                    "events": attempted,
                    "timed_events": timed_events,
                    "ns_per_event_p50": p50,
                    "ns_per_event_p99": p99,
                    "ns_per_event_max": hist.max(),
                    "drained": drained,
                    "dropped": overhead_dropped,
                    "goal_ns": goal_ns,
                },
                "sustained": {
                    "rate_target": a.rate,
                    "rate_achieved": achieved.round(),
                    "seconds": a.seconds,
                    "sent": sent,
                    "written": stats.written,
                    "dropped": stats.dropped,
                },
            })
        );
    } else {
        outln!(
            "trace recorder, ring of {} events, {} worker threads",
            capacity,
            a.threads
        );
        outln!(
            "  overhead:  {attempted} events ({timed_events} timed, all accepted), ns/event P50 {p50}  P99 {p99}  max {} (goal ≤ {goal_ns} ns); {overhead_dropped} dropped while unpaced",
            hist.max()
        );
        outln!(
            "  sustained: {:.0} events/s for {} s (target {}): {} sent, {} written, {} dropped",
            achieved,
            a.seconds,
            a.rate,
            sent,
            stats.written,
            stats.dropped
        );
    }
    Ok(ExitCode::SUCCESS)
}
