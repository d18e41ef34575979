//! `mmsched sim`: the *simulated* mmsched — jitter, clock drift and long-run soaks in
//! virtual time. Inference is modelled here, never run; every output says "simulated".

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use mmsched_sim::drift::{self, DriftConfig};
use mmsched_sim::speech::{self, JitterRow, SpeechConfig};
use mmsched_world::emodel::Codec;
use mmsched_world::jitter;
use serde_json::json;

#[derive(Debug, Subcommand)]
pub enum SimCommand {
    /// Speech jitter (S6): frame loss, added delay and MOS of fixed 20 / 40 / 60 ms buffers
    /// and the adaptive buffer, with the best constant delay in hindsight and the ceiling,
    /// on stationary Gamma jitter (none, P99 28 ms, 42 ms), the shipped scenarios'
    /// non-stationary links (bursts, Wi-Fi switching), a synthetic hand-over (simulated),
    /// and the shipped traces recorded on real links (replayed); the goal per row.
    Jitter(JitterArgs),
    /// Clock drift (S5): P(|Δt| > 50 ms) for vision–IMU and audio–vision placing events at
    /// their arrival time, at arrival minus the known latency, and after online alignment
    /// (stamp and arrival fused), with the residual P99, the stamp-noise floor, the goal per
    /// pair and the source that placed each stream; stream figures from a scenario, noisy
    /// source stamps (simulated).
    Drift(DriftArgs),
    /// Long-run soak (S10): N simulated hours of a scenario in seconds, in three arms (no
    /// health loop, a naive periodic restart, mmsched's health loop); stressors act through
    /// named mechanisms, wear only as an explicit assumption. Writes the curves (CSV, SVG).
    Soak(SoakArgs),
    /// Predict a `mmsched run`: the real run loop (book of jobs, cost model, rungs, health
    /// loop) in virtual time, on simulated models whose step costs are drawn from the
    /// device profile per model, rung and step; prints `run`'s table, or with --json its
    /// summary.json with `simulated: true` (simulated).
    Run(SimRunArgs),
}

/// Options every `sim` subcommand shares.
#[derive(Debug, Args)]
pub struct Common {
    /// Seed of the simulation: the same seed gives the same numbers.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print the result as JSON on stdout instead of a table.
    #[arg(long)]
    json: bool,
    /// Write the result files (JSON and CSV; for soak also the SVG plot) into this
    /// directory. `sim soak` always writes them, by default into mmsched-soak/<scenario>/.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct JitterArgs {
    #[command(flatten)]
    common: Common,
    /// Replay this packet-arrival trace instead of the table (repeat for several, one row
    /// each). CSV with the header `seq,send_ms,arrival_ms` (empty arrival = lost) or NDJSON
    /// `{"seq":0,"send_ms":0.0,"arrival_ms":31.2}`; times in milliseconds, 20 ms packets —
    /// what `mmsched run --record-rtp FILE` writes.
    #[arg(long, value_name = "FILE")]
    trace: Vec<PathBuf>,
    /// Mark the `--trace` rows as recorded on a real link (else they count as simulated).
    #[arg(long, requires = "trace")]
    real: bool,
    /// Independent calls simulated per row.
    #[arg(long, default_value_t = 20, value_name = "N")]
    calls: u32,
    /// 20 ms frames per call (15000 = 5 minutes).
    #[arg(long, default_value_t = 15_000, value_name = "N")]
    frames: u32,
    /// Constant one-way network delay, in milliseconds.
    #[arg(long, default_value_t = 30.0, value_name = "MS")]
    base_delay_ms: f64,
    /// Random network packet loss on top of late packets, in percent.
    #[arg(long, default_value_t = 0.0, value_name = "PCT")]
    network_loss_pct: f64,
}

#[derive(Debug, Args)]
pub struct DriftArgs {
    #[command(flatten)]
    common: Common,
    /// Simulated duration, in seconds.
    #[arg(long, default_value_t = 600, value_name = "SECS")]
    secs: u64,
    /// Warm-up before the figures count, in seconds.
    #[arg(long, default_value_t = 60, value_name = "SECS")]
    warmup_secs: u64,
    /// Scenario whose streams (rates, latencies, jitter, stamp noise, clock offsets and
    /// drifts) are simulated: a shipped name, a scenario file, or `all` for every shipped
    /// scenario.
    #[arg(long, default_value = mmsched_scenario::DEFAULT_SCENARIO, value_name = "NAME|FILE|all")]
    scenario: String,
}

#[derive(Debug, Args)]
pub struct SoakArgs {
    #[command(flatten)]
    common: Common,
    /// Scenario: a shipped name (car, ar-glasses, inspection) or a scenario file.
    #[arg(long, default_value = mmsched_scenario::DEFAULT_SCENARIO, value_name = "NAME|FILE")]
    scenario: String,
    /// Simulated hours.
    #[arg(long, default_value_t = 72.0, value_name = "HOURS")]
    hours: f64,
    /// Health-evaluation window, in simulated seconds.
    #[arg(long, default_value_t = 120.0, value_name = "SECS")]
    window_secs: f64,
    /// Simulated seconds of each window run through the real run loop in virtual time (an
    /// arm's samples run back to back, one after the other, in one simulated run).
    #[arg(long, default_value_t = 6.0, value_name = "SECS")]
    sample_secs: f64,
    /// Device latency profile (the format `mmsched profile` writes). Default: the
    /// scenario's `[device] profile`, else $MMSCHED_HOME/profile.json if present, else the
    /// shipped reference profile profiles/reference-2core.json.
    #[arg(long, value_name = "FILE")]
    profile: Option<PathBuf>,
    /// Scheduling policy file (TOML or JSON); default: the built-in default policy.
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
    /// Assume wear: job cost grows this many percent per hour of uptime (reset by a
    /// restart). Not a simulated mechanism: listed under `assumptions`. Default: the
    /// scenario's `[device] wear_pct_per_hour`, else 0.
    #[arg(long, value_name = "PCT")]
    assume_wear_pct_per_hour: Option<f64>,
    /// The naive arm restarts the service every this many hours.
    #[arg(long, default_value_t = 6.0, value_name = "HOURS")]
    naive_restart_hours: f64,
    /// Input lost per restart of the naive arm, in seconds.
    #[arg(long, default_value_t = 30.0, value_name = "SECS")]
    naive_downtime_secs: f64,
}

#[derive(Debug, Args)]
pub struct SimRunArgs {
    #[command(flatten)]
    common: Common,
    /// Scenario: a shipped name (car, ar-glasses, inspection) or a scenario file.
    #[arg(long, default_value = mmsched_scenario::DEFAULT_SCENARIO, value_name = "NAME|FILE")]
    scenario: String,
    /// Simulated seconds of input (default: the scenario's `duration_s`).
    #[arg(long, value_name = "SECS")]
    duration: Option<f64>,
    /// Device latency profile (the format `mmsched profile` writes). Default: the
    /// scenario's `[device] profile`, else $MMSCHED_HOME/profile.json if present, else the
    /// shipped reference profile.
    #[arg(long, value_name = "FILE")]
    profile: Option<PathBuf>,
    /// Scheduling policy file (TOML or JSON); default: the built-in default policy.
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
    /// The scheduler: mmsched, or a shared-queue baseline on the same lanes (`fifo`,
    /// `static-priority`); `os-threads` is not simulated (the OS's time slicing is not
    /// modelled): measure it with `run` or `bench e2e`.
    #[arg(long, value_enum, default_value = "mmsched")]
    scheduler: crate::cmd::run::SchedulerArg,
    /// Turn one of mmsched's mechanisms off, by its `bench e2e --ablate` name without the
    /// `mmsched-` prefix (`no-shadows`, `no-inputs-to-come`, …): what it is worth, in
    /// virtual time. Repeatable.
    #[arg(long, value_name = "NAME")]
    ablate: Vec<String>,
}

pub fn run(cmd: SimCommand) -> Result<ExitCode> {
    match cmd {
        SimCommand::Run(a) => run_sim_run(a),
        SimCommand::Jitter(a) => run_jitter(a),
        SimCommand::Drift(a) => run_drift(a),
        SimCommand::Soak(a) => run_soak(a),
    }
}

fn arm_json(a: &mmsched_sim::soak::SoakArm) -> serde_json::Value {
    let s = &a.summary;
    json!({
        "on_time_pct": s.on_time_pct,
        "on_time_pct_first_hour": s.on_time_pct_first_hour,
        "on_time_pct_last_hour": s.on_time_pct_last_hour,
        "drops_pct": s.drops_pct,
        "ldti_mean": s.ldti_mean,
        "ldti_max": s.ldti_max,
        "windows_acted": s.windows_acted,
        "restarts": s.restarts,
        "windows_by_level": {"stable": s.windows_by_level[0], "degraded": s.windows_by_level[1],
                             "critical": s.windows_by_level[2]},
        "hourly": hourly(a),
    })
}

/// Each arm's figures hour by hour: mean on-time rate, drop rate and LDTI.
fn hourly(a: &mmsched_sim::soak::SoakArm) -> Vec<serde_json::Value> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < a.points.len() {
        let hour = a.points[start].hour.floor();
        let end = a.points[start..]
            .iter()
            .position(|p| p.hour.floor() != hour)
            .map_or(a.points.len(), |n| start + n);
        let w = &a.points[start..end];
        let mean = |f: fn(&mmsched_sim::soak::SoakPoint) -> f64| {
            w.iter().map(f).sum::<f64>() / w.len() as f64
        };
        out.push(json!({
            "hour": hour,
            "on_time_pct": mean(|p| p.on_time_pct),
            "drops_pct": mean(|p| p.drops_pct),
            "ldti": mean(|p| p.ldti),
        }));
        start = end;
    }
    out
}

/// The profile a simulation reads: `--profile`, else the scenario's `[device] profile`,
/// else `$MMSCHED_HOME/profile.json`, else the shipped reference.
pub(crate) fn resolve_profile(
    explicit: Option<&Path>,
    scenario: &mmsched_scenario::Scenario,
) -> Result<mmsched_world::profile::Profile> {
    let from_scenario = scenario.device().profile.as_deref().map(PathBuf::from);
    let chosen = explicit.map(Path::to_path_buf).or(from_scenario);
    Ok(mmsched_world::profile::Profile::resolve(
        chosen.as_deref(),
        Some(&mmsched_backends::paths::mmsched_home()),
    )?)
}

fn run_soak(a: SoakArgs) -> Result<ExitCode> {
    use mmsched_sim::soak::{self, Arm, SoakConfig};
    let scenario = mmsched_scenario::Scenario::load(&a.scenario)?;
    let profile = resolve_profile(a.profile.as_deref(), &scenario)?;
    let policy = crate::policy_file::load_or_default(a.policy.as_deref())?;
    if !(a.hours.is_finite() && a.hours > 0.0) {
        anyhow::bail!(
            "--hours must be a positive number of hours, got {}",
            a.hours
        );
    }
    let wear = a
        .assume_wear_pct_per_hour
        .or(scenario.device().wear_pct_per_hour)
        .unwrap_or(0.0);
    if !(wear.is_finite() && (0.0..=100.0).contains(&wear)) {
        anyhow::bail!("--assume-wear-pct-per-hour must be between 0 and 100, got {wear}");
    }
    let cfg = SoakConfig {
        seed: a.common.seed,
        hours: a.hours,
        window_s: a.window_secs,
        sample_s: a.sample_secs,
        wear_pct_per_hour: wear,
        restart_every_h: a.naive_restart_hours,
        restart_downtime_s: a.naive_downtime_secs,
    };
    let windows = ((a.hours * 3600.0) / a.window_secs.max(1.0)).ceil() as u64;
    let bar = progress(
        3 * windows,
        &format!("simulating {} h of {}", a.hours, scenario.name()),
    );
    // Wall time is reported, never used in a decision.
    let started = std::time::Instant::now();
    let result = soak::run(&scenario, &profile, &policy, &cfg, || bar.inc(1))?;
    let wall_secs = started.elapsed().as_secs_f64();
    bar.finish_and_clear();
    let out = a
        .common
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("mmsched-soak").join(scenario.name()));
    write_out(&out, "soak.csv", &soak::to_csv(&result))?;
    write_out(&out, "soak.svg", &mmsched_sim::plot::soak_svg(&result)?)?;
    let doc = json!({
        "simulated": true,
        "scenario": result.scenario,
        "hours": result.hours,
        "seed": a.common.seed,
        "profile": profile.source,
        "policy": policy.name(),
        "window_secs": a.window_secs,
        "sample_secs": a.sample_secs,
        "wall_secs": wall_secs,
        "assumptions": result.assumptions,
        "mechanisms": result.mechanisms,
        "naive": result.naive,
        "arms": {
            "no_health": arm_json(&result.no_health),
            "naive": arm_json(&result.naive_arm),
            "mmsched": arm_json(&result.mmsched),
        },
        "files": {"csv": out.join("soak.csv").display().to_string(),
                  "svg": out.join("soak.svg").display().to_string()},
    });
    write_out(&out, "soak.json", &serde_json::to_string_pretty(&doc)?)?;
    if a.common.json {
        outln!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(ExitCode::SUCCESS);
    }
    outln!(
        "Soak of `{}` (simulated: {} h in {:.1} s wall; costs from {})",
        result.scenario,
        result.hours,
        wall_secs,
        profile.source
    );
    if result.assumptions.is_empty() {
        outln!("assumptions: none (figures move only through the mechanisms below)");
    } else {
        for x in &result.assumptions {
            outln!("ASSUMED: {x}");
        }
    }
    for m in &result.mechanisms {
        outln!("mechanism: {} — {}", m.name, m.effect);
    }
    outln!("naive arm: {}", result.naive);
    outln!(
        "{:>10} | {:>8} {:>9} {:>9} {:>8} {:>8} {:>8} {:>8}",
        "arm",
        "on time",
        "1st hour",
        "last hour",
        "drops",
        "LDTI",
        "acted",
        "restarts"
    );
    for arm in Arm::ALL {
        let r = &result.arm(arm).summary;
        outln!(
            "{:>10} | {:>6.2} % {:>7.2} % {:>7.2} % {:>6.2} % {:>8.3} {:>8} {:>8}",
            arm.as_str(),
            r.on_time_pct,
            r.on_time_pct_first_hour,
            r.on_time_pct_last_hour,
            r.drops_pct,
            r.ldti_mean,
            r.windows_acted,
            r.restarts
        );
    }
    outln!(
        "curves: {} and {}",
        out.join("soak.csv").display(),
        out.join("soak.svg").display()
    );
    Ok(ExitCode::SUCCESS)
}

/// mmsched's mechanisms with those `names` off (each an ablation's name).
fn ablated(names: &[String]) -> Result<mmsched_pipeline::Mechanisms> {
    let ablations = mmsched_pipeline::Mechanisms::ablations();
    let mut m = mmsched_pipeline::Mechanisms::default();
    for name in names {
        let name = name.strip_prefix("mmsched-").unwrap_or(name);
        let Some((_, off)) = ablations.iter().find(|(n, _)| *n == name) else {
            let known: Vec<&str> = ablations.iter().map(|(n, _)| *n).collect();
            anyhow::bail!(
                "--ablate: no mechanism is called {name:?}; the names are {}",
                known.join(", ")
            );
        };
        m = m.and(off);
    }
    Ok(m)
}

fn run_sim_run(a: SimRunArgs) -> Result<ExitCode> {
    use mmsched_pipeline::simulate::simulate;
    let loaded = mmsched_scenario::Scenario::load(&a.scenario)?;
    let (scenario, notes) = loaded.without_live_sources();
    let profile = resolve_profile(a.profile.as_deref(), &scenario)?;
    let policy = crate::policy_file::load_or_default(a.policy.as_deref())?;
    let secs = a.duration.unwrap_or_else(|| scenario.duration_s());
    if !(secs.is_finite() && secs > 0.0 && secs <= 86_400.0) {
        anyhow::bail!("--duration must be between 0 and 86400 seconds, got {secs}");
    }
    let (_, microphone) = microphone_speech(&scenario);
    let mut config = mmsched_pipeline::RunConfig::new(scenario.clone(), policy, a.scheduler.into());
    // Every scheduler gets the same prompts (with the default, half of them would ask
    // about the latest transcript, which depends on the scheduler).
    config.fixed_prompts = true;
    config.duration_nanos = (secs * 1e9) as u64;
    config.seed = a.common.seed;
    config.profile = a.profile.clone();
    config.mechanisms = ablated(&a.ablate)?;
    if let Some(dir) = &a.common.out {
        std::fs::create_dir_all(dir).with_context(|| {
            format!(
                "cannot create the output directory {}: pass --out with a writable directory",
                dir.display()
            )
        })?;
        config.trace_path = Some(dir.join("trace.mmtrace"));
    }
    let outcome = simulate(config, &mut mmsched_pipeline::run::Quiet)?;
    let summary = &outcome.summary;
    let mut doc = serde_json::to_value(summary)?;
    doc["simulated"] = json!(true);
    doc["profile"] = json!(profile.source);
    doc["microphone"] = json!(microphone);
    doc["notes"] = json!(notes);
    let mut classes: Vec<String> = ["vision", "vad", "asr", "llm"].map(String::from).into();
    classes.extend(summary.models.keys().cloned());
    for k in &classes {
        let m = if summary.models.contains_key(k) {
            &mut doc["models"][k]
        } else {
            &mut doc[k.as_str()]
        };
        let offered = m["offered"].as_f64().unwrap_or(0.0);
        let on_time = m["on_time"].as_f64().unwrap_or(0.0);
        m["on_time_pct"] = json!(if offered > 0.0 {
            100.0 * on_time / offered
        } else {
            0.0
        });
    }
    if let Some(dir) = &a.common.out {
        mmsched_report::write_report(dir, summary, &outcome.series)?;
        write_out(dir, "sim-run.json", &serde_json::to_string_pretty(&doc)?)?;
    }
    if let Err(e) = &outcome.trace_file {
        eprintln!("the trace could not be written: {e}");
    }
    if a.common.json {
        outln!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(ExitCode::SUCCESS);
    }
    outln!(
        "Predicted run of `{}` under {} (simulated: {secs} s of the real run loop in virtual time; step costs drawn from {})",
        scenario.name(),
        summary.scheduler,
        profile.source
    );
    outln!("{}", mmsched_report::render_table(summary));
    for n in &notes {
        outln!("note: {n}");
    }
    outln!("{microphone}");
    Ok(ExitCode::SUCCESS)
}

/// A progress bar on stderr (indicatif hides it when stderr is not a terminal).
pub(crate) fn progress(len: u64, what: &str) -> ProgressBar {
    let bar = ProgressBar::new(len);
    if let Ok(style) = ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} {elapsed}") {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_message(what.to_string());
    bar
}

pub(crate) fn write_out(dir: &Path, name: &str, contents: &str) -> Result<()> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create output directory {}", dir.display()))?;
    let path = dir.join(name);
    std::fs::write(&path, contents).with_context(|| format!("cannot write {}", path.display()))
}

fn check_pct(name: &str, v: f64) -> Result<()> {
    if !(v.is_finite() && (0.0..=100.0).contains(&v)) {
        anyhow::bail!("--{name} must be a percentage between 0 and 100, got {v}");
    }
    Ok(())
}

fn buffer_json(b: &speech::BufferResult) -> serde_json::Value {
    json!({"loss_pct": b.loss_pct, "added_delay_ms": b.added_delay_ms, "mos": b.mos})
}

fn jitter_json(rows: &[JitterRow], extra: serde_json::Value) -> serde_json::Value {
    let rows: Vec<_> = rows
        .iter()
        .map(|r| {
            let goal = r.goal();
            json!({
                "label": r.label,
                "stationary": r.stationary,
                "real": r.real,
                "from_scenario": r.from_scenario,
                "p99_ms": r.p99_ms,
                "scale_ms": r.scale_ms,
                "fixed_20": buffer_json(&r.fixed[0]),
                "fixed_40": buffer_json(&r.fixed[1]),
                "fixed_60": buffer_json(&r.fixed[2]),
                // The 20 ms buffer under its earlier key.
                "fixed": buffer_json(&r.fixed[0]),
                "adaptive": buffer_json(&r.adaptive),
                "oracle": buffer_json(&r.oracle),
                "oracle_delay_ms": r.oracle_delay_ms,
                "ceiling": buffer_json(&r.ceiling),
                "best_fixed_ms": r.best_fixed().0,
                "adaptive_gain_mos": r.adaptive_gain_mos(),
                "headroom_mos": r.headroom_mos(),
                "goal": {"min_gain_mos": goal.min_gain_mos,
                         "max_added_delay_ms": goal.max_added_delay_ms,
                         "met": goal.met},
                "adaptive_beats_on_loss_and_delay": r.dominated(),
                "adaptive_dominates": r.adaptive_dominates(),
            })
        })
        .collect();
    json!({"simulated": rows.iter().all(|r| r["real"] == false), "rows": rows, "settings": extra})
}

/// The traces to replay: `--trace` files, named after the file.
fn load_traces(
    paths: &[PathBuf],
) -> Result<Vec<(String, Vec<mmsched_world::jitter::PacketRecord>)>> {
    paths
        .iter()
        .map(|p| {
            let name = p.file_stem().map_or_else(
                || p.display().to_string(),
                |s| s.to_string_lossy().into_owned(),
            );
            Ok((format!("trace {name}"), jitter::load_trace(p)?))
        })
        .collect()
}

fn run_jitter(a: JitterArgs) -> Result<ExitCode> {
    check_pct("network-loss-pct", a.network_loss_pct)?;
    if !(a.base_delay_ms.is_finite() && a.base_delay_ms >= 0.0) {
        anyhow::bail!("--base-delay-ms must be a non-negative number of milliseconds");
    }
    if a.calls == 0 || a.frames < 10 {
        anyhow::bail!("--calls must be at least 1 and --frames at least 10");
    }
    let codec = Codec::g711_plc();
    let (rows, settings) = if !a.trace.is_empty() {
        let traces = load_traces(&a.trace)?;
        let rows: Vec<JitterRow> = traces
            .iter()
            .map(|(label, packets)| speech::replay_trace(packets, &codec, label, a.real))
            .collect();
        let files: Vec<_> = a.trace.iter().map(|t| t.display().to_string()).collect();
        let packets: Vec<_> = traces.iter().map(|t| t.1.len()).collect();
        (
            rows,
            json!({"traces": files, "packets": packets, "real": a.real, "codec": codec.name}),
        )
    } else {
        let cfg = SpeechConfig {
            seed: a.common.seed,
            calls: a.calls,
            frames_per_call: a.frames,
            base_delay_ms: a.base_delay_ms,
            network_loss_pct: a.network_loss_pct,
            codec,
            ..SpeechConfig::default()
        };
        let bar = progress(speech::table_rows() as u64, "simulating jitter rows");
        let rows = speech::run_table(&cfg, || bar.inc(1));
        bar.finish_and_clear();
        (
            rows,
            json!({"seed": a.common.seed, "calls": a.calls, "frames_per_call": a.frames,
                   "base_delay_ms": a.base_delay_ms, "network_loss_pct": a.network_loss_pct,
                   "gamma_shape": 2.0, "codec": codec.name,
                   "real_traces": speech::REAL_TRACES.iter().map(|t| t.file).collect::<Vec<_>>()}),
        )
    };
    let doc = jitter_json(&rows, settings);
    if let Some(dir) = &a.common.out {
        write_out(dir, "jitter.json", &serde_json::to_string_pretty(&doc)?)?;
        write_out(dir, "jitter.csv", &jitter_csv(&rows))?;
    }
    if a.common.json {
        outln!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(ExitCode::SUCCESS);
    }
    print_jitter_table(&rows, &codec);
    Ok(ExitCode::SUCCESS)
}

fn jitter_csv(rows: &[JitterRow]) -> String {
    let mut csv = String::from("label,stationary,real,p99_ms,buffer,loss_pct,added_delay_ms,mos\n");
    for r in rows {
        let named = speech::FIXED_SIZES_MS
            .iter()
            .map(|ms| format!("fixed_{ms}"))
            .zip(&r.fixed)
            .chain([
                ("adaptive".to_string(), &r.adaptive),
                ("oracle".to_string(), &r.oracle),
                ("ceiling".to_string(), &r.ceiling),
            ]);
        for (name, b) in named {
            csv.push_str(&format!(
                "\"{}\",{},{},{:.2},{name},{:.4},{:.2},{:.4}\n",
                r.label, r.stationary, r.real, r.p99_ms, b.loss_pct, b.added_delay_ms, b.mos
            ));
        }
    }
    csv
}

fn print_jitter_table(rows: &[JitterRow], codec: &Codec) {
    let simulated = rows.iter().any(|r| !r.real);
    let real = rows.iter().any(|r| r.real);
    let what = match (simulated, real) {
        (true, true) => "simulated rows and replayed real traces",
        (false, true) => "replayed real traces",
        _ => "simulated",
    };
    outln!(
        "Speech jitter ({what}; codec {}, E-model G.107; loss % / added delay ms / MOS)",
        codec.name
    );
    outln!(
        "{:<58} | {:>20} | {:>20} | {:>20} | {:>20} | {:>20} | {:>20}",
        "jitter",
        "fixed 20 ms",
        "fixed 40 ms",
        "fixed 60 ms",
        "adaptive",
        "best constant",
        "ceiling"
    );
    let cell = |b: &speech::BufferResult| {
        format!("{:.2} / {:.1} / {:.3}", b.loss_pct, b.added_delay_ms, b.mos)
    };
    for r in rows {
        let kind = if r.real {
            ", real"
        } else if r.stationary {
            ""
        } else {
            ", non-stationary"
        };
        let label = format!("{}{kind} (P99 {:.1} ms)", r.label, r.p99_ms);
        outln!(
            "{:<58} | {:>20} | {:>20} | {:>20} | {:>20} | {:>20} | {:>20}",
            label,
            cell(&r.fixed[0]),
            cell(&r.fixed[1]),
            cell(&r.fixed[2]),
            cell(&r.adaptive),
            cell(&r.oracle),
            cell(&r.ceiling)
        );
    }
    outln!(
        "best constant: the best constant delay over the fastest path, chosen in hindsight; \
         ceiling: no added delay, only the network's losses (no buffer can beat it)"
    );
    for r in rows {
        let goal = r.goal();
        let (best_ms, best) = r.best_fixed();
        let mut line = format!(
            "{}: adaptive {:+.4} MOS against the best fixed size ({best_ms} ms, {:.4}); the ceiling is {:+.4}",
            r.label,
            r.adaptive_gain_mos(),
            best.mos,
            r.headroom_mos()
        );
        line.push_str(&format!(
            "; goal ≥ {:+.2}{}: {}",
            goal.min_gain_mos,
            goal.max_added_delay_ms
                .map_or(String::new(), |m| format!(" and ≤ {m} ms added delay")),
            if goal.met { "met" } else { "NOT met" }
        ));
        outln!("{line}");
    }
}

fn run_drift(a: DriftArgs) -> Result<ExitCode> {
    if a.secs < 2 || a.warmup_secs >= a.secs {
        anyhow::bail!(
            "--secs must be at least 2 and larger than --warmup-secs (got {} and {})",
            a.secs,
            a.warmup_secs
        );
    }
    let names: Vec<String> = if a.scenario == "all" {
        mmsched_scenario::BUILTIN
            .iter()
            .map(|b| b.0.to_string())
            .collect()
    } else {
        vec![a.scenario.clone()]
    };
    let mut docs = Vec::new();
    let mut csv = String::from(
        "scenario,pair,arrival_p_over_50ms,arrival_p99_ms,latency_compensated_p_over_50ms,latency_compensated_p99_ms,aligned_p_over_50ms,residual_p99_ms,noise_floor_p99_ms,goal_residual_p99_ms,goal_met\n",
    );
    let mut tables = Vec::new();
    for name in &names {
        let scenario = mmsched_scenario::Scenario::load(name)?;
        let cfg = DriftConfig {
            seed: a.common.seed,
            duration_s: a.secs,
            warmup_s: a.warmup_secs,
            ..DriftConfig::from_scenario(&scenario)
        };
        if cfg.pairs.is_empty() {
            anyhow::bail!(
                "scenario {} has no pair of camera, IMU and audio streams to align",
                scenario.name()
            );
        }
        let bar = progress(1, &format!("simulating clock drift of {}", scenario.name()));
        let result = drift::run(&cfg)?;
        bar.finish_and_clear();
        for p in &result.pairs {
            csv.push_str(&format!(
                "{},{},{:.4},{:.3},{:.4},{:.3},{:.4},{:.4},{:.3},{:.3},{}\n",
                scenario.name(),
                p.pair,
                p.arrival_p_over_50ms,
                p.arrival_p99_ms,
                p.latency_compensated_p_over_50ms,
                p.latency_compensated_p99_ms,
                p.aligned_p_over_50ms,
                p.residual_p99_ms,
                p.noise_floor_p99_ms,
                p.goal_residual_p99_ms,
                p.goal_met
            ));
        }
        docs.push(drift_json(scenario.name(), &cfg, &result, &a));
        tables.push((scenario.name().to_string(), result));
    }
    let doc = if a.scenario == "all" {
        json!({"simulated": true, "scenarios": docs})
    } else {
        docs.pop().unwrap_or_default()
    };
    if let Some(dir) = &a.common.out {
        write_out(dir, "drift.json", &serde_json::to_string_pretty(&doc)?)?;
        write_out(dir, "drift.csv", &csv)?;
    }
    if a.common.json {
        outln!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(ExitCode::SUCCESS);
    }
    for (name, result) in &tables {
        print_drift_table(name, result, &a);
    }
    Ok(ExitCode::SUCCESS)
}

fn drift_json(
    scenario: &str,
    cfg: &DriftConfig,
    result: &drift::DriftResult,
    a: &DriftArgs,
) -> serde_json::Value {
    let stamp_noise: serde_json::Map<String, serde_json::Value> = cfg
        .streams
        .iter()
        .map(|s| (s.name.clone(), json!(s.stamp_noise_ms)))
        .collect();
    let pairs_json: Vec<serde_json::Value> = result
        .pairs
        .iter()
        .map(|p| {
            let mut v = serde_json::to_value(p).unwrap_or_default();
            // The arrival figure under its earlier key.
            v["raw_p_over_50ms"] = json!(p.arrival_p_over_50ms);
            v
        })
        .collect();
    json!({
        "simulated": true,
        "scenario": scenario,
        "pairs": pairs_json,
        "streams": result.streams,
        "settings": {"seed": a.common.seed, "secs": a.secs, "warmup_secs": a.warmup_secs,
                     "stamp_noise_ms": stamp_noise,
                     "units": "p_over_50ms in percent, times in ms"},
    })
}

fn print_drift_table(scenario: &str, result: &drift::DriftResult, a: &DriftArgs) {
    outln!(
        "Cross-modal alignment (simulated, scenario {scenario}, {} s, counted after {} s; P(|Δt| > 50 ms) and P99 |Δt|)",
        a.secs,
        a.warmup_secs
    );
    outln!(
        "{:>14} | {:>22} | {:>22} | {:>22} | {:>11} | {:>9}",
        "pair",
        "arrival",
        "arrival − latency",
        "aligned",
        "noise floor",
        "goal"
    );
    for p in &result.pairs {
        outln!(
            "{:>14} | {:>8.2} % {:>8.1} ms | {:>8.2} % {:>8.1} ms | {:>8.2} % {:>8.2} ms | {:>8.2} ms | {:>6}",
            p.pair,
            p.arrival_p_over_50ms,
            p.arrival_p99_ms,
            p.latency_compensated_p_over_50ms,
            p.latency_compensated_p99_ms,
            p.aligned_p_over_50ms,
            p.residual_p99_ms,
            p.noise_floor_p99_ms,
            if p.goal_met { "met" } else { "NOT met" }
        );
    }
    for s in &result.streams {
        outln!(
            "{}: placed by its {} (stamp noise σ {} ms; transport jitter beyond it {:.2} ms; the link {})",
            s.name,
            s.source,
            s.stamp_noise_ms,
            s.transport_jitter_ms,
            if s.link_jitters {
                "jitters"
            } else {
                "does not jitter"
            }
        );
    }
    outln!(
        "noise floor: P99 of the pair error placing both streams by their stamps with the clocks known exactly; \
         goal: residual P99 ≤ the better baseline (and ≤ 3 σ of the noisier stamps where neither link jitters), none over 50 ms"
    );
}

/// The talk spurts of the microphone `mmsched run` would play for `scenario`: its WAV
/// source, else the recorded clip (with the run's pause after it) when cached, else the
/// generated spurts; with a line saying which.
fn microphone_speech(
    scenario: &mmsched_scenario::Scenario,
) -> (mmsched_world::mic::SpeechLoop, String) {
    use mmsched_scenario::{SourceKind, StreamKind};
    use mmsched_world::mic::{RECORDING_PAUSE_NANOS, SpeechLoop};
    let source = scenario
        .streams()
        .iter()
        .find(|s| s.kind == StreamKind::Audio)
        .and_then(|s| s.source.clone());
    let (path, pause) = match &source {
        Some(src) if src.kind == SourceKind::Wav => (
            src.path.as_deref().map(PathBuf::from),
            // A WAV source loops without a pause; one that does not loop is one pass.
            if src.looped() { 0 } else { u64::MAX / 4 },
        ),
        Some(src) if src.kind != SourceKind::Generated => {
            return (
                SpeechLoop::default(),
                format!(
                    "microphone: a live {} source; talk spurts assumed as generated ones (2 s talk, 1.5 s silence)",
                    src.kind.as_str()
                ),
            );
        }
        _ => (
            mmsched_models::ModelPaths::from_env()
                .require(mmsched_models::Artifact::Beckett)
                .ok(),
            RECORDING_PAUSE_NANOS,
        ),
    };
    match path.map(|p| (mmsched_backends::audio::read_wav_16k(&p), p)) {
        Some((Ok(audio), p)) => {
            let l = SpeechLoop::from_samples(&audio.samples, pause);
            let note = format!(
                "microphone: {} ({} utterance(s) in the {:.1} s clip, found by an energy rule)",
                p.display(),
                l.spurts.len(),
                audio.samples.len() as f64 / 16_000.0
            );
            (l, note)
        }
        Some((Err(e), p)) => (
            SpeechLoop::default(),
            format!(
                "microphone: {} unreadable ({e}); talk spurts assumed as generated ones",
                p.display()
            ),
        ),
        None => (
            SpeechLoop::default(),
            "microphone: generated talk spurts (2 s talk, 1.5 s silence), as the run without the cached recording".into(),
        ),
    }
}
