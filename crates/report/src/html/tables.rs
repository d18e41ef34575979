//! The summary as HTML tables.

use std::fmt::Write as _;

use crate::escape::escape;
use crate::num::{fixed, ms};
use crate::summary::RunSummary;

/// Most health actions listed; a long run may have thousands of level changes.
const MAX_ACTIONS: usize = 200;

/// Per-modality table: every input accounted for (offered, on time, late, shed, skipped,
/// dropped with the health actions that dropped them, unfinished, failed), on-time results
/// per second, then P50, P99, mean and SLA.
pub fn modality_table(summary: &RunSummary) -> String {
    let mut out = format!(
        "<p>utility <strong>{}</strong> (importance-weighted share of inputs answered in time)</p>\
         <table><thead><tr><th>modality</th><th>offered</th><th>on time</th><th>late</th>\
         <th>shed</th><th>skipped</th><th>dropped</th><th>unfinished</th><th>failed</th>\
         <th>on time /s</th><th>P50 ms</th><th>P99 ms</th><th>mean ms</th><th>SLA ms</th>\
         </tr></thead><tbody>",
        escape(&fixed(summary.utility, 3))
    );
    for (name, m) in summary.modalities() {
        let bad = |n: u64| if n > 0 { " class=\"bad\"" } else { "" };
        // Under a per-job rule the misses column is the truth, not P99 against `sla_ms`.
        let over = if m.sla_rule.is_none()
            && m.p99_ms.is_finite()
            && m.sla_ms > 0.0
            && m.p99_ms > m.sla_ms
        {
            " class=\"bad\""
        } else {
            ""
        };
        let dropped_by: Vec<String> = m
            .dropped_by
            .iter()
            .map(|(action, n)| format!("{n} by {action}"))
            .collect();
        let _ = write!(
            out,
            "<tr><th>{name}</th><td>{}</td><td>{}</td><td{}>{}</td><td{}>{}</td><td>{}</td>\
             <td{} title=\"{}\">{}</td><td{}>{}</td><td{}>{}</td><td>{}</td>\
             <td>{}</td><td{over}>{}</td><td>{}</td><td>{}</td></tr>",
            m.offered,
            m.on_time,
            bad(m.late),
            m.late,
            bad(m.shed),
            m.shed,
            m.skipped,
            bad(m.dropped),
            escape(&dropped_by.join(", ")),
            m.dropped,
            bad(m.unfinished),
            m.unfinished,
            bad(m.failed),
            m.failed,
            escape(&fixed(m.on_time_per_s, 2)),
            escape(&ms(m.p50_ms)),
            escape(&ms(m.p99_ms)),
            escape(&ms(m.mean_ms)),
            escape(&m.sla_rule.clone().unwrap_or_else(|| ms(m.sla_ms))),
        );
    }
    out.push_str("</tbody></table>");
    let dropped: Vec<String> = summary
        .modalities()
        .iter()
        .flat_map(|(name, m)| {
            m.dropped_by
                .iter()
                .map(move |(action, n)| format!("{name}: {n} by {action}"))
        })
        .collect();
    if !dropped.is_empty() {
        let _ = write!(
            out,
            "<p>Dropped by health actions: {}.</p>",
            escape(&dropped.join("; "))
        );
    }
    out
}

/// Two-column table of the run-wide figures (LLM, LDTI, alignment, audio, routing, health,
/// overhead).
pub fn figures_table(summary: &RunSummary) -> String {
    let llm = &summary.llm;
    let ldti = &summary.ldti;
    let levels = &ldti.seconds_by_level;
    let audio = &summary.audio;
    let routing = &summary.routing;
    let health = &summary.health;
    let rows: Vec<(&str, String)> = vec![
        (
            "LLM",
            format!(
                "{} of {} requests answered in time · {} tokens/s of run time · {} tokens \
                 ({} tokens/s of request time) · TTFT P50 {} ms, P99 {} ms · TPOT P50 {} ms, \
                 P99 {} ms",
                llm.requests_on_time,
                llm.requests,
                fixed(llm.tokens_per_wall_s, 2),
                llm.tokens,
                fixed(llm.tokens_per_s, 1),
                ms(llm.ttft_ms_p50),
                ms(llm.ttft_ms_p99),
                ms(llm.tpot_ms_p50),
                ms(llm.tpot_ms_p99)
            ),
        ),
        (
            "LDTI",
            format!(
                "mean {} · max {} · stable {} s · degraded {} s · critical {} s (thresholds {} / {})",
                fixed(ldti.mean, 3),
                fixed(ldti.max, 3),
                fixed(levels.stable, 2),
                fixed(levels.degraded, 2),
                fixed(levels.critical, 2),
                fixed(ldti.degraded_at, 2),
                fixed(ldti.critical_at, 2)
            ),
        ),
        (
            "alignment",
            format!(
                "residual P99 {} ms (worst of {} streams)",
                ms(summary.alignment.residual_p99_ms),
                summary.alignment.streams.len()
            ),
        ),
        (
            "audio",
            format!(
                "frame loss {} % ({} of {} frames concealed) · {} late packets · {} retransmit \
                 requests, {} recovered · playout delay P50 {} ms, P99 {} ms",
                fixed(audio.frame_loss_pct, 2),
                audio.concealed,
                audio.frames,
                audio.late_packets,
                audio.retransmit_requests,
                audio.recovered_packets,
                ms(audio.playout_delay_ms_p50),
                ms(audio.playout_delay_ms_p99)
            ),
        ),
        (
            "routing",
            format!(
                "vision skipped {} dark + {} blurred of {} frames · speech skipped {} silent of {} packets",
                routing.vision_skipped_dark,
                routing.vision_skipped_blurred,
                routing.vision_seen,
                routing.audio_skipped_silence,
                routing.audio_packets_seen
            ),
        ),
        (
            "health",
            format!(
                "{} evaluations at {} Hz · camera scaled {} s · breaker opened {}× · {} stale answers",
                health.evaluations,
                fixed(health.evaluate_hz, 0),
                fixed(health.camera_scaled_seconds, 1),
                health.breaker_opened,
                health.stale_answers
            ),
        ),
        (
            "scheduler overhead",
            format!("{} % of CPU", fixed(summary.scheduler_overhead_pct, 2)),
        ),
    ];
    let mut out = String::from("<table>");
    for (label, value) in rows {
        let _ = write!(
            out,
            "<tr><th>{}</th><td>{}</td></tr>",
            escape(label),
            escape(&value)
        );
    }
    out.push_str("</table>");
    out
}

/// Per-stream clock alignment, or an empty string when there are no streams.
pub fn alignment_table(summary: &RunSummary) -> String {
    let streams = &summary.alignment.streams;
    if streams.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "<table><thead><tr><th>stream</th><th>offset ms</th><th>drift ppm</th>\
         <th>residual P99 ms</th><th>placed by</th></tr></thead><tbody>",
    );
    for s in streams {
        let _ = write!(
            out,
            "<tr><th>{}</th><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&s.name),
            escape(&fixed(s.offset_ms, 2)),
            escape(&fixed(s.drift_ppm, 1)),
            escape(&ms(s.residual_p99_ms)),
            escape(&s.source)
        );
    }
    out.push_str("</tbody></table>");
    out
}

/// The health actions in time order (at most [`MAX_ACTIONS`], with a count of the rest).
pub fn actions_table(summary: &RunSummary) -> String {
    let actions = &summary.health.actions;
    if actions.is_empty() {
        return "<p>No health actions: the device stayed stable.</p>".to_string();
    }
    let mut out = String::from(
        "<table><thead><tr><th>time s</th><th>level</th><th>action</th></tr></thead><tbody>",
    );
    for a in actions.iter().take(MAX_ACTIONS) {
        let _ = write!(
            out,
            "<tr><td>{}</td><td class=\"level-{lvl}\">{lvl}</td><td>{}</td></tr>",
            escape(&fixed(a.t_s, 2)),
            escape(&a.action),
            lvl = escape(&a.level)
        );
    }
    out.push_str("</tbody></table>");
    if actions.len() > MAX_ACTIONS {
        let _ = write!(
            out,
            "<p>… and {} more (all of them are in summary.json).</p>",
            actions.len() - MAX_ACTIONS
        );
    }
    out
}
