//! `mmsched sim`: the *simulated* mmsched — jitter, clock drift and long-run soaks in
//! virtual time. Inference is modelled here, never run; every output says "simulated".

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use mmsched_sim::drift::{self, DriftConfig};
use mmsched_sim::emodel::Codec;
use mmsched_sim::jitter;
use mmsched_sim::speech::{self, JitterRow, SpeechConfig};
use serde_json::json;

#[derive(Debug, Subcommand)]
pub enum SimCommand {
    /// Speech jitter (S6): frame loss and MOS of a fixed 20 ms buffer and the adaptive
    /// buffer, for no jitter and Gamma jitter with P99 28 ms and 42 ms (simulated).
    Jitter(JitterArgs),
    /// Clock drift (S5): P(|Δt| > 50 ms) for vision–IMU and audio–vision with arrival-time
    /// stamping ("raw") and after online alignment, with the residual P99 (simulated).
    Drift(DriftArgs),
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
    /// Also write the result files (JSON, CSV, SVG where available) into this directory.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct JitterArgs {
    #[command(flatten)]
    common: Common,
    /// Replay this packet-arrival trace instead of generating Gamma jitter. CSV with the
    /// header `seq,send_ms,arrival_ms` (empty arrival = lost) or NDJSON
    /// `{"seq":0,"send_ms":0.0,"arrival_ms":31.2}`; times in milliseconds, 20 ms packets.
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
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
    /// Warm-up before the aligned figures count, in seconds.
    #[arg(long, default_value_t = 60, value_name = "SECS")]
    warmup_secs: u64,
}

pub fn run(cmd: SimCommand) -> Result<ExitCode> {
    match cmd {
        SimCommand::Jitter(a) => run_jitter(a),
        SimCommand::Drift(a) => run_drift(a),
    }
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

fn jitter_json(rows: &[JitterRow], extra: serde_json::Value) -> serde_json::Value {
    let rows: Vec<_> = rows
        .iter()
        .map(|r| {
            json!({
                "p99_ms": r.p99_ms,
                "scale_ms": r.scale_ms,
                "fixed": {"loss_pct": r.fixed.loss_pct, "mos": r.fixed.mos,
                          "added_delay_ms": r.fixed.added_delay_ms},
                "adaptive": {"loss_pct": r.adaptive.loss_pct, "mos": r.adaptive.mos,
                             "added_delay_ms": r.adaptive.added_delay_ms},
            })
        })
        .collect();
    json!({"simulated": true, "rows": rows, "settings": extra})
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
    let (rows, settings) = if let Some(trace) = &a.trace {
        let packets = jitter::load_trace(trace)?;
        let row = speech::replay_trace(&packets, &codec);
        (
            vec![row],
            json!({"trace": trace.display().to_string(), "packets": packets.len(), "codec": codec.name}),
        )
    } else {
        let cfg = SpeechConfig {
            seed: a.common.seed,
            calls: a.calls,
            frames_per_call: a.frames,
            base_delay_ms: a.base_delay_ms,
            network_loss_pct: a.network_loss_pct,
            codec,
        };
        let bar = progress(3, "simulating jitter rows");
        let rows = speech::run_table(&cfg, || bar.inc(1));
        bar.finish_and_clear();
        (
            rows,
            json!({"seed": a.common.seed, "calls": a.calls, "frames_per_call": a.frames,
                   "base_delay_ms": a.base_delay_ms, "network_loss_pct": a.network_loss_pct,
                   "gamma_shape": 2.0, "codec": codec.name}),
        )
    };
    let doc = jitter_json(&rows, settings);
    if let Some(dir) = &a.common.out {
        write_out(dir, "jitter.json", &serde_json::to_string_pretty(&doc)?)?;
        let mut csv = String::from(
            "p99_ms,scale_ms,fixed_loss_pct,fixed_mos,adaptive_loss_pct,adaptive_mos,adaptive_added_delay_ms\n",
        );
        for r in &rows {
            csv.push_str(&format!(
                "{:.2},{:.4},{:.4},{:.3},{:.4},{:.3},{:.2}\n",
                r.p99_ms,
                r.scale_ms,
                r.fixed.loss_pct,
                r.fixed.mos,
                r.adaptive.loss_pct,
                r.adaptive.mos,
                r.adaptive.added_delay_ms
            ));
        }
        write_out(dir, "jitter.csv", &csv)?;
    }
    if a.common.json {
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "Speech jitter (simulated; codec {}, E-model G.107)",
        codec.name
    );
    println!(
        "{:>12} | {:>13} {:>9} | {:>13} {:>9} {:>15}",
        "jitter P99", "fixed loss", "fixed MOS", "adaptive loss", "adapt MOS", "added delay"
    );
    for r in &rows {
        let label = if a.trace.is_some() {
            format!("trace {:.1} ms", r.p99_ms)
        } else if r.p99_ms == 0.0 {
            "none".to_string()
        } else {
            format!("{:.0} ms", r.p99_ms)
        };
        println!(
            "{:>12} | {:>11.2} % {:>9.2} | {:>11.2} % {:>9.2} {:>12.1} ms",
            label,
            r.fixed.loss_pct,
            r.fixed.mos,
            r.adaptive.loss_pct,
            r.adaptive.mos,
            r.adaptive.added_delay_ms
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn run_drift(a: DriftArgs) -> Result<ExitCode> {
    if a.secs < 2 || a.warmup_secs >= a.secs {
        anyhow::bail!(
            "--secs must be at least 2 and larger than --warmup-secs (got {} and {})",
            a.secs,
            a.warmup_secs
        );
    }
    let cfg = DriftConfig {
        seed: a.common.seed,
        duration_s: a.secs,
        warmup_s: a.warmup_secs,
        ..DriftConfig::default()
    };
    let bar = progress(1, "simulating clock drift");
    let pairs = drift::run(&cfg)?;
    bar.finish_and_clear();
    let doc = json!({
        "simulated": true,
        "pairs": pairs,
        "settings": {"seed": a.common.seed, "secs": a.secs, "warmup_secs": a.warmup_secs,
                     "units": "p_over_50ms in percent, times in ms"},
    });
    if let Some(dir) = &a.common.out {
        write_out(dir, "drift.json", &serde_json::to_string_pretty(&doc)?)?;
        let mut csv =
            String::from("pair,raw_p_over_50ms,raw_p99_ms,aligned_p_over_50ms,residual_p99_ms\n");
        for p in &pairs {
            csv.push_str(&format!(
                "{},{:.4},{:.3},{:.4},{:.4}\n",
                p.pair, p.raw_p_over_50ms, p.raw_p99_ms, p.aligned_p_over_50ms, p.residual_p99_ms
            ));
        }
        write_out(dir, "drift.csv", &csv)?;
    }
    if a.common.json {
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "Cross-modal alignment (simulated, {} s, aligned figures after {} s)",
        a.secs, a.warmup_secs
    );
    println!(
        "{:>14} | {:>14} {:>12} | {:>14} {:>14}",
        "pair", "raw P(>50ms)", "raw P99", "aligned P(>50)", "residual P99"
    );
    for p in &pairs {
        println!(
            "{:>14} | {:>12.2} % {:>9.1} ms | {:>12.2} % {:>11.3} ms",
            p.pair, p.raw_p_over_50ms, p.raw_p99_ms, p.aligned_p_over_50ms, p.residual_p99_ms
        );
    }
    Ok(ExitCode::SUCCESS)
}
