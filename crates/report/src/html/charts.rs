//! The plots of `report.html`, each an inline `<svg>` built from the summary and series.

use crate::series::{Reduce, RunSeries, downsample};
use crate::summary::RunSummary;
use crate::svg::axis::Axis;
use crate::svg::bars::{BarSeries, bar_chart};
use crate::svg::color;
use crate::svg::plot::Plot;

/// Modality names in report order; series under other names are plotted after these.
const MODALITIES: [&str; 4] = ["vision", "vad", "asr", "llm"];

/// Colour of the *degraded* LDTI band.
const DEGRADED_FILL: &str = "#E69F00";
/// Colour of the *critical* LDTI band.
const CRITICAL_FILL: &str = "#D55E00";

/// Colour of the lines marking health actions on the LDTI plot.
const ACTION_LINE: &str = "#777777";
/// Most health actions marked on the LDTI plot (more would hide the curve).
const MAX_ACTION_LINES: usize = 100;

/// Modality names of `series` in report order: the four known ones, then any others.
fn modality_order<'a>(names: impl Iterator<Item = &'a String>) -> Vec<String> {
    let mut order: Vec<String> = MODALITIES.iter().map(|m| m.to_string()).collect();
    for name in names {
        if !order.contains(name) {
            order.push(name.clone());
        }
    }
    order
}

/// The SLA of a modality from the summary, when it is one of the four, positive, and the
/// same for every job (a per-job rule, like speech recognition's, has no single line).
fn sla_ms(summary: &RunSummary, modality: &str) -> Option<f64> {
    summary
        .modalities()
        .into_iter()
        .find(|(name, _)| *name == modality)
        .filter(|(_, m)| m.sla_rule.is_none())
        .map(|(_, m)| m.sla_ms)
        .filter(|sla| sla.is_finite() && *sla > 0.0)
}

/// The end of the time axis: the run's duration or the last sample, whichever is later;
/// one second when neither is a positive time.
fn time_end(summary: &RunSummary, last_sample_s: impl Iterator<Item = f64>) -> f64 {
    let end = last_sample_s
        .filter(|t| t.is_finite())
        .fold(summary.duration, f64::max);
    if end.is_finite() && end > 0.0 {
        end
    } else {
        1.0
    }
}

/// Latency CDF per modality on a log axis (ms), each SLA a dashed line in its colour.
pub fn latency_cdf(summary: &RunSummary, series: &RunSeries) -> String {
    let order = modality_order(series.latencies_ms.keys());
    let positive = |v: &&f64| v.is_finite() && **v > 0.0;
    let mut lo = f64::INFINITY;
    let mut hi = f64::NEG_INFINITY;
    let mut any = false;
    for name in &order {
        for v in series
            .latencies_ms
            .get(name)
            .into_iter()
            .flatten()
            .filter(positive)
        {
            (lo, hi, any) = (lo.min(*v), hi.max(*v), true);
        }
        if let Some(sla) = sla_ms(summary, name) {
            (lo, hi) = (lo.min(sla), hi.max(sla));
        }
    }
    let mut plot = Plot::new(
        "Latency CDF per modality (dashed: SLA)",
        Axis::log(lo, hi),
        "latency, ms (log scale)",
        Axis::linear(0.0, 1.0),
        "fraction of jobs ≤ latency",
    );
    for (i, name) in order.iter().enumerate() {
        let values = series
            .latencies_ms
            .get(name)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let count = values.iter().filter(positive).count();
        if count == 0 && !MODALITIES.contains(&name.as_str()) {
            continue;
        }
        plot.step_cdf(values, color(i), &format!("{name} (n={count})"));
        if let Some(sla) = sla_ms(summary, name) {
            plot.vline(sla, color(i), None);
        }
    }
    if !any {
        plot.note("no completed jobs");
    }
    plot.finish()
}

/// Every deadline miss as a point (completion time, latency on a log axis), coloured by
/// modality, with each modality's SLA as a dashed line: where in the run the misses were.
/// Per modality at most one point per pixel column is kept (the latest-finishing miss).
pub fn misses_over_time(summary: &RunSummary, series: &RunSeries) -> String {
    let order = modality_order(
        series
            .misses
            .iter()
            .map(|m| &m.modality)
            .collect::<Vec<_>>()
            .into_iter(),
    );
    let latencies = series
        .misses
        .iter()
        .map(|m| m.latency_ms)
        .filter(|v| v.is_finite() && *v > 0.0);
    let (lo, hi) = latencies.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    let slas: Vec<f64> = order
        .iter()
        .filter_map(|name| sla_ms(summary, name))
        .collect();
    let lo = slas.iter().copied().fold(lo, f64::min);
    let hi = slas.iter().copied().fold(hi, f64::max);
    let end = time_end(summary, series.misses.iter().map(|m| m.t_s));
    let mut plot = Plot::new(
        "Deadline misses over time (dashed: SLA)",
        Axis::linear_exact(0.0, end),
        "completion time, s",
        Axis::log(lo, hi),
        "latency, ms (log scale)",
    );
    let width = plot.plot_width_px();
    for (i, name) in order.iter().enumerate() {
        let points: Vec<(f64, f64)> = series
            .misses
            .iter()
            .filter(|m| &m.modality == name)
            .map(|m| (m.t_s, m.latency_ms))
            .collect();
        if points.is_empty() {
            continue;
        }
        if let Some(sla) = sla_ms(summary, name) {
            plot.hline(sla, color(i));
        }
        let label = format!("{name} ({})", points.len());
        plot.markers(&downsample(&points, width, Reduce::Max), color(i), &label);
    }
    if series.misses.is_empty() {
        plot.note("no deadline misses recorded");
    }
    plot.finish()
}

/// LDTI over time with the *degraded* and *critical* bands shaded; the maximum per pixel
/// column is kept so short spikes stay visible.
pub fn ldti_over_time(summary: &RunSummary, series: &RunSeries) -> String {
    let points: Vec<(f64, f64)> = series.ldti.iter().map(|p| (p.t_s, p.value)).collect();
    let peak = points
        .iter()
        .map(|p| p.1)
        .filter(|v| v.is_finite())
        .fold(1.0, f64::max);
    let end = time_end(summary, points.iter().map(|p| p.0));
    let mut plot = Plot::new(
        "LDTI over time",
        Axis::linear_exact(0.0, end),
        "time, s",
        Axis::linear(0.0, peak),
        "LDTI",
    );
    let ldti = &summary.ldti;
    let (degraded_at, critical_at) = (ldti.degraded_at, ldti.critical_at);
    plot.band(degraded_at, critical_at, DEGRADED_FILL, "degraded");
    plot.band(
        critical_at,
        peak.max(critical_at) * 2.0,
        CRITICAL_FILL,
        "critical",
    );
    // Level changes as thin lines under the curve: did the actions follow the index?
    let actions = &summary.health.actions;
    for (i, action) in actions.iter().take(MAX_ACTION_LINES).enumerate() {
        let label = (i == 0).then_some("health action");
        plot.vline(action.t_s, ACTION_LINE, label);
    }
    let reduced = downsample(&points, plot.plot_width_px(), Reduce::Max);
    plot.line(&reduced, color(0), "LDTI (max per px)");
    if reduced.is_empty() {
        plot.note("no LDTI samples");
    }
    plot.finish()
}

/// Slot occupancy of every worker over time (percent, mean per pixel column).
pub fn slot_occupancy(summary: &RunSummary, series: &RunSeries) -> String {
    let workers = series
        .slot_occupancy
        .iter()
        .map(|p| p.per_worker_pct.len())
        .max()
        .unwrap_or(0);
    let end = time_end(summary, series.slot_occupancy.iter().map(|p| p.t_s));
    let mut plot = Plot::new(
        "Slot occupancy per worker",
        Axis::linear_exact(0.0, end),
        "time, s",
        Axis::linear(0.0, 100.0),
        "busy, % of slot time",
    );
    let width = plot.plot_width_px();
    for worker in 0..workers {
        let points: Vec<(f64, f64)> = series
            .slot_occupancy
            .iter()
            .filter_map(|p| p.per_worker_pct.get(worker).map(|v| (p.t_s, *v)))
            .collect();
        let reduced = downsample(&points, width, Reduce::Mean);
        plot.line(&reduced, color(worker), &format!("worker {worker}"));
    }
    if workers == 0 {
        plot.note("no occupancy samples");
    }
    plot.finish()
}

/// Completed jobs per second per modality over time (mean per pixel column).
pub fn rates(summary: &RunSummary, series: &RunSeries) -> String {
    let order = modality_order(series.rates.iter().flat_map(|p| p.per_modality_hz.keys()));
    let end = time_end(summary, series.rates.iter().map(|p| p.t_s));
    let peak = series
        .rates
        .iter()
        .flat_map(|p| p.per_modality_hz.values())
        .copied()
        .filter(|v| v.is_finite())
        .fold(1.0, f64::max)
        * 1.05;
    let mut plot = Plot::new(
        "Completed jobs per second",
        Axis::linear_exact(0.0, end),
        "time, s",
        Axis::linear(0.0, peak),
        "rate, Hz",
    );
    let width = plot.plot_width_px();
    let mut any = false;
    for (i, name) in order.iter().enumerate() {
        let points: Vec<(f64, f64)> = series
            .rates
            .iter()
            .filter_map(|p| p.per_modality_hz.get(name).map(|v| (p.t_s, *v)))
            .collect();
        if points.is_empty() {
            continue;
        }
        any = true;
        plot.line(&downsample(&points, width, Reduce::Mean), color(i), name);
    }
    if !any {
        plot.note("no rate samples");
    }
    plot.finish()
}

/// The speech row's jitter buffer over time: the delay it added to the frames played
/// (mean per pixel column) and its controller's target (maximum per pixel column, so a
/// burst's raise stays visible), in ms.
pub fn playout_delay(summary: &RunSummary, series: &RunSeries) -> String {
    let delay: Vec<(f64, f64)> = series.playout.iter().map(|p| (p.t_s, p.delay_ms)).collect();
    let target: Vec<(f64, f64)> = series
        .playout
        .iter()
        .map(|p| (p.t_s, p.target_ms))
        .collect();
    let peak = delay
        .iter()
        .chain(&target)
        .map(|p| p.1)
        .filter(|v| v.is_finite())
        .fold(10.0, f64::max)
        * 1.05;
    let end = time_end(summary, delay.iter().map(|p| p.0));
    let mut plot = Plot::new(
        "Speech playout delay over time",
        Axis::linear_exact(0.0, end),
        "time, s",
        Axis::linear(0.0, peak),
        "delay, ms",
    );
    let width = plot.plot_width_px();
    plot.line(&downsample(&target, width, Reduce::Max), color(1), "target");
    plot.line(
        &downsample(&delay, width, Reduce::Mean),
        color(0),
        "added delay",
    );
    if delay.is_empty() {
        plot.note("no microphone in this run");
    }
    plot.finish()
}

/// Late packets and concealed frames per second over time (maximum per pixel column, so
/// a single burst stays visible).
pub fn late_and_concealed(summary: &RunSummary, series: &RunSeries) -> String {
    // Each point counts one sampling interval: per second over the interval's length.
    let mut late = Vec::with_capacity(series.playout.len());
    let mut concealed = Vec::with_capacity(series.playout.len());
    let mut previous = 0.0;
    for p in &series.playout {
        let span = p.t_s - previous;
        previous = p.t_s;
        if span > 0.0 && span.is_finite() {
            late.push((p.t_s, p.late as f64 / span));
            concealed.push((p.t_s, p.concealed as f64 / span));
        }
    }
    let peak = late
        .iter()
        .chain(&concealed)
        .map(|p| p.1)
        .filter(|v| v.is_finite())
        .fold(1.0, f64::max)
        * 1.05;
    let end = time_end(summary, late.iter().map(|p| p.0));
    let mut plot = Plot::new(
        "Late packets and concealed frames",
        Axis::linear_exact(0.0, end),
        "time, s",
        Axis::linear(0.0, peak),
        "per second",
    );
    let width = plot.plot_width_px();
    plot.line(
        &downsample(&concealed, width, Reduce::Max),
        color(2),
        "concealed",
    );
    plot.line(&downsample(&late, width, Reduce::Max), color(3), "late");
    if late.is_empty() {
        plot.note("no microphone in this run");
    }
    plot.finish()
}

/// The alignment error |Δt| of every pair of streams over time (maximum per pixel column),
/// in ms, with the 50 ms line of S5 when the axis reaches it.
pub fn alignment_error(summary: &RunSummary, series: &RunSeries) -> String {
    let mut pairs: Vec<&str> = Vec::new();
    for p in &series.alignment {
        if !pairs.contains(&p.pair.as_str()) {
            pairs.push(&p.pair);
        }
    }
    let peak = series
        .alignment
        .iter()
        .map(|p| p.error_ms.abs())
        .filter(|v| v.is_finite())
        .fold(1.0, f64::max)
        * 1.05;
    let end = time_end(summary, series.alignment.iter().map(|p| p.t_s));
    let mut plot = Plot::new(
        "Alignment error per pair over time",
        Axis::linear_exact(0.0, end),
        "time, s",
        Axis::linear(0.0, peak),
        "|Δt|, ms",
    );
    plot.hline(50.0, ACTION_LINE);
    let width = plot.plot_width_px();
    for (i, pair) in pairs.iter().enumerate() {
        let points: Vec<(f64, f64)> = series
            .alignment
            .iter()
            .filter(|p| p.pair == *pair)
            .map(|p| (p.t_s, p.error_ms.abs()))
            .collect();
        plot.line(&downsample(&points, width, Reduce::Max), color(i), pair);
    }
    if pairs.is_empty() {
        plot.note("no two streams with a known capture time");
    }
    plot.finish()
}

/// What became of the inputs that were not answered in time, per modality, as grouped
/// bars: skipped, shed, dropped by a health action, late, unfinished and failed.
pub fn skips_and_sheds(summary: &RunSummary) -> String {
    let modalities = summary.modalities();
    let categories: Vec<&str> = modalities.iter().map(|(name, _)| *name).collect();
    let bars = |label: &str, index: usize, f: fn(&crate::ModalitySummary) -> u64| BarSeries {
        label: label.to_string(),
        color: color(index).to_string(),
        values: modalities.iter().map(|(_, m)| f(m) as f64).collect(),
    };
    bar_chart(
        "Inputs not answered in time, per modality",
        "inputs",
        &categories,
        &[
            bars("skipped (router)", 0, |m| m.skipped),
            bars("shed (overload)", 1, |m| m.shed),
            bars("dropped (health action)", 2, |m| m.dropped),
            bars("late", 3, |m| m.late),
            bars("unfinished", 4, |m| m.unfinished),
            bars("failed", 5, |m| m.failed),
        ],
    )
}
