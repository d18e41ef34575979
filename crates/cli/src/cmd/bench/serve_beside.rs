//! `mmsched bench serve --beside SCENARIO`: do concurrent chats cost a scenario's own
//! streams their deadlines? In this process, `serve --models --scenario SCENARIO` on the
//! default server (a text session per request) runs for `--duration` seconds, once with
//! no client and once with `--requests` clients each sending greedy completions back to
//! back, alternating which goes first in each of `--repeat` rounds. After each run the
//! report's `summary.json` gives the streams' on-time shares (`origin.streams`: the
//! scenario's own inputs, not the chats) for the camera (`vision`) and the voice-activity
//! detector (`vad`), and the chats' completion tokens per second.
//!
//! A share is on time ÷ (offered − skipped by the router). The router's skips (a dark or
//! blurred frame) follow the scenario's own episodes, not the load, and the arm with chats
//! runs a little longer (its clients finish the completions they have started), which can
//! take it into an episode the other arm ends before: ar-glasses darkens its camera from
//! 20 s. Every other outcome (late, shed, dropped, unfinished) stays in the denominator, and
//! the skips of both arms are printed.
//!
//! Verdict per class: the shares with chats lie within the spread of those without when
//! the two ranges (min–max over the rounds) overlap; otherwise the chats cost the class its
//! deadlines, or (with chats ahead) the difference is noise beyond the spread — both are
//! printed as they are.

use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use mmsched_core::time::MonotonicClock;
use serde::Serialize;
use serde_json::{Value, json};

use super::serve::{PROMPTS, Spread, complete, load_average, serve_here};

/// The classes whose deadlines the chats must not cost.
const CLASSES: [&str; 2] = ["vision", "vad"];

/// What one run gave.
struct RunFigures {
    /// Per class of [`CLASSES`]: the scenario's inputs on time ÷ (offered − skipped).
    on_time: [f64; 2],
    /// Per class of [`CLASSES`]: the scenario's inputs offered.
    offered: [u64; 2],
    /// Per class of [`CLASSES`]: the scenario's inputs the router skipped.
    skipped: [u64; 2],
    /// Completion tokens answered per second of the run.
    chat_tok_s: f64,
}

/// One arm's figures over the rounds.
#[derive(Debug, Serialize)]
struct ArmFigures {
    vision_on_time: Spread,
    vad_on_time: Spread,
    vision_offered: Spread,
    vad_offered: Spread,
    vision_skipped: Spread,
    vad_skipped: Spread,
    chat_tok_s: Spread,
}

/// The settings of the comparison.
pub(super) struct Beside<'a> {
    pub scenario: &'a str,
    pub requests: u32,
    pub tokens: u32,
    pub repeat: u32,
    pub duration: Duration,
    pub json: bool,
}

/// Runs the comparison and prints it.
pub(super) fn run(b: &Beside<'_>) -> Result<ExitCode> {
    let dir = std::env::temp_dir().join(format!("mmsched-bench-beside-{}", std::process::id()));
    let load_before = load_average();
    let (mut quiet, mut chats) = (Vec::new(), Vec::new());
    for round in 0..b.repeat {
        // Which arm runs first alternates: a machine that warms or tires over the rounds
        // weighs on both alike.
        for with_chats in [round % 2 == 1, round % 2 == 0] {
            let report = dir.join(format!("round{round}-{with_chats}"));
            let figures = serve_for(b, with_chats, &report).with_context(|| {
                format!(
                    "round {} {} chats",
                    round + 1,
                    if with_chats { "with" } else { "without" }
                )
            })?;
            if with_chats {
                chats.push(figures);
            } else {
                quiet.push(figures);
            }
        }
    }
    let load_after = load_average();
    let _ = std::fs::remove_dir_all(&dir);
    let arm = |runs: &[RunFigures]| ArmFigures {
        vision_on_time: Spread::of(runs.iter().map(|r| r.on_time[0]).collect()),
        vad_on_time: Spread::of(runs.iter().map(|r| r.on_time[1]).collect()),
        vision_offered: Spread::of(runs.iter().map(|r| r.offered[0] as f64).collect()),
        vad_offered: Spread::of(runs.iter().map(|r| r.offered[1] as f64).collect()),
        vision_skipped: Spread::of(runs.iter().map(|r| r.skipped[0] as f64).collect()),
        vad_skipped: Spread::of(runs.iter().map(|r| r.skipped[1] as f64).collect()),
        chat_tok_s: Spread::of(runs.iter().map(|r| r.chat_tok_s).collect()),
    };
    let (quiet, chats) = (arm(&quiet), arm(&chats));
    let overlap = |a: &Spread, b: &Spread| a.min <= b.max && b.min <= a.max;
    let within = [
        overlap(&quiet.vision_on_time, &chats.vision_on_time),
        overlap(&quiet.vad_on_time, &chats.vad_on_time),
    ];
    if b.json {
        let out = json!({
            "scenario": b.scenario,
            "requests": b.requests,
            "tokens": b.tokens,
            "repeat": b.repeat,
            "duration_s": b.duration.as_secs_f64(),
            "without_chats": quiet,
            "with_chats": chats,
            "within_spread": {"vision": within[0], "vad": within[1]},
            "load_average": {"before": load_before, "after": load_after},
        });
        outln!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(ExitCode::SUCCESS);
    }
    let cell = |s: &Spread| format!("{:.3} ({:.3}-{:.3})", s.median, s.min, s.max);
    outln!(
        "{:<8} | {:>23} | {:>23} | within the spread",
        "class",
        "on time without chats",
        format!("with {} chats", b.requests)
    );
    for (i, class) in CLASSES.iter().enumerate() {
        let (q, c) = match i {
            0 => (&quiet.vision_on_time, &chats.vision_on_time),
            _ => (&quiet.vad_on_time, &chats.vad_on_time),
        };
        outln!(
            "{class:<8} | {:>23} | {:>23} | {}",
            cell(q),
            cell(c),
            if within[i] { "yes" } else { "NO" }
        );
    }
    outln!(
        "chats: {:.1} completion tokens/s ({:.1}-{:.1}) from {} clients sending {}-token greedy completions back to back",
        chats.chat_tok_s.median,
        chats.chat_tok_s.min,
        chats.chat_tok_s.max,
        b.requests,
        b.tokens
    );
    outln!(
        "(`serve --models --scenario {}`, {:.0} s per run, the scenario's own inputs (origin.streams; median {:.0} frames and {:.0} audio chunks offered per run without chats, {:.0} and {:.0} with) on time ÷ (offered − skipped by the router as dark, blurred or silent: median {:.0} frames and {:.0} chunks without chats, {:.0} and {:.0} with), median (min-max) of {} rounds, arms alternating; load average {} before, {} after)",
        b.scenario,
        b.duration.as_secs_f64(),
        quiet.vision_offered.median,
        quiet.vad_offered.median,
        chats.vision_offered.median,
        chats.vad_offered.median,
        quiet.vision_skipped.median,
        quiet.vad_skipped.median,
        chats.vision_skipped.median,
        chats.vad_skipped.median,
        b.repeat,
        load_before.map_or("?".into(), |l| format!("{l:.2}")),
        load_after.map_or("?".into(), |l| format!("{l:.2}"))
    );
    Ok(ExitCode::SUCCESS)
}

/// Serves the scenario for the run's duration, with the chats or without, and reads its
/// report.
fn serve_for(b: &Beside<'_>, with_chats: bool, report: &Path) -> Result<RunFigures> {
    let (handle, served) = serve_here(b.requests, false, Some(b.scenario), report)?;
    let addr = handle.local_addr();
    let tokens = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    // Wall time is what this benchmark measures.
    let started = Instant::now();
    let chats = std::thread::scope(|s| {
        let clients: Vec<_> = PROMPTS
            .iter()
            .cycle()
            .take(if with_chats { b.requests as usize } else { 0 })
            .map(|prompt| {
                let (tokens, stop) = (&tokens, &stop);
                s.spawn(move || -> Result<()> {
                    let clock = MonotonicClock::new();
                    while !stop.load(Ordering::Relaxed) {
                        let answer = complete(addr, prompt, b.tokens, &clock)?;
                        tokens.fetch_add(answer.tokens, Ordering::Relaxed);
                    }
                    Ok(())
                })
            })
            .collect();
        std::thread::sleep(b.duration);
        stop.store(true, Ordering::Relaxed);
        clients
            .into_iter()
            .map(|c| {
                c.join()
                    .unwrap_or_else(|_| anyhow::bail!("a client thread panicked"))
            })
            .collect::<Result<Vec<()>>>()
    });
    let secs = started.elapsed().as_secs_f64();
    handle.stop();
    let report = served.finish()?;
    chats?;
    let path = report.join("summary.json");
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("reading the run's report {}", path.display()))?;
    let summary: Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))?;
    let count = |class: &str, key: &str| {
        summary[class]["origin"]["streams"][key]
            .as_u64()
            .unwrap_or(0)
    };
    let share = |class: &str| match count(class, "offered").saturating_sub(count(class, "skipped"))
    {
        0 => f64::NAN,
        run => count(class, "on_time") as f64 / run as f64,
    };
    Ok(RunFigures {
        on_time: CLASSES.map(share),
        offered: CLASSES.map(|c| count(c, "offered")),
        skipped: CLASSES.map(|c| count(c, "skipped")),
        chat_tok_s: tokens.load(Ordering::Relaxed) as f64 / secs.max(f64::MIN_POSITIVE),
    })
}
