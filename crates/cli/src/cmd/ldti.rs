//! `mmsched ldti`: the health index from measurements given on the command line.

use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::Args;
use mmsched_core::ldti::{self, LdtiInputs};

#[derive(Debug, Args)]
pub struct LdtiArgs {
    /// Measured P99 latency, in milliseconds.
    #[arg(long, value_name = "MS")]
    latency_p99_ms: f64,
    /// Reference latency L₀, in milliseconds (> 0).
    #[arg(long, value_name = "MS")]
    latency_ref_ms: f64,
    /// Clock drift rate, in parts per million (sign ignored).
    #[arg(long, value_name = "PPM", allow_hyphen_values = true)]
    drift_ppm: f64,
    /// Measured throughput (any unit, e.g. jobs/s).
    #[arg(long, value_name = "RATE")]
    throughput: f64,
    /// Maximum throughput, in the same unit (> 0).
    #[arg(long, value_name = "RATE")]
    throughput_max: f64,
    /// Take the weights and thresholds from this policy file instead of the defaults.
    #[arg(long, value_name = "FILE")]
    policy: Option<std::path::PathBuf>,
    /// Print {"ldti": …, "level": "stable|degraded|critical", …} as JSON.
    #[arg(long)]
    json: bool,
}

fn ms_to_nanos(name: &str, ms: f64) -> Result<u64> {
    if !ms.is_finite() || ms < 0.0 {
        bail!("--{name} must be a non-negative number of milliseconds, got {ms}");
    }
    Ok((ms * 1e6).round() as u64)
}

pub fn run(a: LdtiArgs) -> Result<ExitCode> {
    let policy = crate::policy_file::load_or_default(a.policy.as_deref())?;
    if !(a.latency_ref_ms.is_finite() && a.latency_ref_ms > 0.0) {
        bail!(
            "--latency-ref-ms must be greater than 0 (it is the reference latency L₀), got {}",
            a.latency_ref_ms
        );
    }
    if !(a.throughput_max.is_finite() && a.throughput_max > 0.0) {
        bail!(
            "--throughput-max must be greater than 0, got {}",
            a.throughput_max
        );
    }
    if !(a.throughput.is_finite() && a.throughput >= 0.0) {
        bail!(
            "--throughput must be a non-negative number, got {}",
            a.throughput
        );
    }
    if !a.drift_ppm.is_finite() {
        bail!(
            "--drift-ppm must be a finite number of parts per million, got {}",
            a.drift_ppm
        );
    }
    let inputs = LdtiInputs {
        latency_p99_nanos: ms_to_nanos("latency-p99-ms", a.latency_p99_ms)?,
        latency_ref_nanos: ms_to_nanos("latency-ref-ms", a.latency_ref_ms)?,
        drift_ppm: a.drift_ppm,
        throughput: a.throughput,
        throughput_max: a.throughput_max,
    };
    let l = policy.ldti();
    let b = ldti::evaluate(&l.weights, &inputs);
    let level = l.thresholds.classify(b.value);
    let action = l.actions.action_for(level);
    if a.json {
        let out = serde_json::json!({
            "ldti": b.value,
            "level": level.as_str(),
            "terms": {"latency": b.latency, "drift": b.drift, "throughput": b.throughput},
            "action": action,
        });
        outln!("{out}");
    } else {
        outln!("LDTI {:.4}  level {}", b.value, level.as_str());
        outln!(
            "  latency term {:.4}  drift term {:.4}  throughput term {:.4}",
            b.latency,
            b.drift,
            b.throughput
        );
        outln!("  action: {}", describe(&action));
    }
    Ok(ExitCode::SUCCESS)
}

fn describe(action: &mmsched_core::ldti::HealthAction) -> String {
    use mmsched_core::ldti::HealthAction::*;
    match action {
        Stable => "none".into(),
        Degraded {
            scale_frequency,
            retransmit,
        } => format!(
            "dynamic frequency scaling {} + retransmission {}",
            on_off(*scale_frequency),
            on_off(*retransmit)
        ),
        Critical {
            circuit_break,
            use_cache,
        } => format!(
            "circuit-break {} + degrade to local cache {}",
            on_off(*circuit_break),
            on_off(*use_cache)
        ),
    }
}

fn on_off(b: bool) -> &'static str {
    if b { "on" } else { "off" }
}
