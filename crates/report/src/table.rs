//! The summary table printed at the end of `mmsched run`.

use std::fmt::Write as _;

use crate::escape::printable;
use crate::num::{fixed, ms};
use crate::summary::RunSummary;

/// The summary of a run as a fixed-width table for a terminal: the utility, one row per
/// modality accounting for every input (offered, on time, late, shed, skipped, dropped,
/// unfinished, failed, on-time results per second, P50, P99 and SLA in ms), what each
/// health action dropped, then one line each for the LLM, the LDTI, alignment, audio,
/// routing, health and the scheduler overhead.
pub fn render_table(summary: &RunSummary) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "mmsched run: scenario {} · scheduler {} · {} s · seed {}",
        printable(&summary.scenario),
        printable(&summary.scheduler),
        fixed(summary.duration, 1),
        summary.seed
    );
    let _ = writeln!(
        out,
        "utility {} (importance-weighted share of inputs answered in time), {} counting \
         only right answers",
        fixed(summary.utility, 3),
        fixed(summary.utility_correct, 3)
    );
    modality_rows(&mut out, summary);
    modality_notes(&mut out, summary);
    run_lines(&mut out, summary);
    for note in &summary.platform {
        let _ = writeln!(out, "platform   {}", printable(note));
    }
    out
}

/// The header and one row per modality, accounting for every input.
fn modality_rows(out: &mut String, summary: &RunSummary) {
    let _ = writeln!(
        out,
        "{:<9}{:>8}{:>8}{:>6}{:>6}{:>8}{:>8}{:>7}{:>7}{:>10}{:>9}{:>9}{:>8}",
        "modality",
        "offered",
        "on time",
        "late",
        "shed",
        "skipped",
        "dropped",
        "unfin.",
        "failed",
        "on-time/s",
        "P50 ms",
        "P99 ms",
        "SLA ms"
    );
    let own = summary.models.iter().map(|(n, m)| (n.as_str(), m));
    for (name, m) in summary.modalities().into_iter().chain(own) {
        let _ = writeln!(
            out,
            "{:<9}{:>8}{:>8}{:>6}{:>6}{:>8}{:>8}{:>7}{:>7}{:>10}{:>9}{:>9}{:>8}",
            printable(name),
            m.offered,
            m.on_time,
            m.late,
            m.shed,
            m.skipped,
            m.dropped,
            m.unfinished,
            m.failed,
            fixed(m.on_time_per_s, 2),
            ms(m.p50_ms),
            ms(m.p99_ms),
            match &m.sla_rule {
                // The deadline grows with the utterance: the fixed part, "+len".
                Some(_) => format!("{}+len", m.sla_ms.round()),
                None => ms(m.sla_ms),
            }
        );
    }
}

/// Per modality: what each health action dropped, its deadline rule, its commonest failures.
fn modality_notes(out: &mut String, summary: &RunSummary) {
    let own = summary.models.iter().map(|(n, m)| (n.as_str(), m));
    for (name, m) in summary.modalities().into_iter().chain(own) {
        if !m.dropped_by.is_empty() {
            let by: Vec<String> = m
                .dropped_by
                .iter()
                .map(|(action, n)| format!("{n} by {}", printable(action)))
                .collect();
            let _ = writeln!(out, "{name:<9}dropped {}", by.join(", "));
        }
        if let Some(rule) = &m.sla_rule {
            let _ = writeln!(out, "{name} deadline: {}", printable(rule));
        }
        // Most frequent first, so the likely cause leads.
        let mut failures: Vec<(&String, &u64)> = m.failures.iter().collect();
        failures.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        for (reason, n) in failures.iter().take(3) {
            let _ = writeln!(
                out,
                "{name:<9}failed {n}: {}",
                at_most(&printable(reason), 160)
            );
        }
        if failures.len() > 3 {
            let _ = writeln!(
                out,
                "{name:<9}failed for {} other reason(s): see summary.json",
                failures.len() - 3
            );
        }
    }
}

/// One line each for the LLM, the LDTI, alignment, audio, routing, health and the
/// scheduler overhead.
fn run_lines(out: &mut String, summary: &RunSummary) {
    let llm = &summary.llm;
    let _ = writeln!(
        out,
        "LLM        {} of {} requests answered in time; {} tokens/s of run time ({} tokens; {} tokens/s of request time); TTFT P50 {} / P99 {} ms; TPOT P50 {} / P99 {} ms",
        llm.requests_on_time,
        llm.requests,
        fixed(llm.tokens_per_wall_s, 2),
        llm.tokens,
        fixed(llm.tokens_per_s, 1),
        ms(llm.ttft_ms_p50),
        ms(llm.ttft_ms_p99),
        ms(llm.tpot_ms_p50),
        ms(llm.tpot_ms_p99)
    );
    let ldti = &summary.ldti;
    let levels = &ldti.seconds_by_level;
    let _ = writeln!(
        out,
        "LDTI       mean {}, max {}; stable {} s, degraded {} s, critical {} s",
        fixed(ldti.mean, 3),
        fixed(ldti.max, 3),
        fixed(levels.stable, 2),
        fixed(levels.degraded, 2),
        fixed(levels.critical, 2)
    );
    let _ = writeln!(
        out,
        "alignment  residual P99 {} ms (worst of {} streams)",
        ms(summary.alignment.residual_p99_ms),
        summary.alignment.streams.len()
    );
    let audio = &summary.audio;
    let _ = writeln!(
        out,
        "audio      frame loss {} % ({} of {} frames concealed); playout delay P50 {} ms, P99 {} ms; {} retransmit requests, {} recovered",
        fixed(audio.frame_loss_pct, 2),
        audio.concealed,
        audio.frames,
        ms(audio.playout_delay_ms_p50),
        ms(audio.playout_delay_ms_p99),
        audio.retransmit_requests,
        audio.recovered_packets
    );
    let routing = &summary.routing;
    let _ = writeln!(
        out,
        "routing    vision skipped {} dark + {} blurred of {} frames; speech skipped {} silent of {} packets",
        routing.vision_skipped_dark,
        routing.vision_skipped_blurred,
        routing.vision_seen,
        routing.audio_skipped_silence,
        routing.audio_packets_seen
    );
    let health = &summary.health;
    let _ = writeln!(
        out,
        "health     {} evaluations at {} Hz; {} actions; camera scaled {} s; breaker opened {}×; {} stale answers",
        health.evaluations,
        fixed(health.evaluate_hz, 0),
        health.actions.len(),
        fixed(health.camera_scaled_seconds, 1),
        health.breaker_opened,
        health.stale_answers
    );
    let _ = writeln!(
        out,
        "scheduler  overhead {} % of CPU",
        fixed(summary.scheduler_overhead_pct, 2)
    );
    let _ = writeln!(out, "{}", signals_line(&summary.platform_signals));
}

/// The line of mmsched's own signals beside the machine's (percent, mean and max).
fn signals_line(s: &crate::summary::PlatformSignals) -> String {
    let pct = |m: &crate::summary::MeanMax| match (m.mean, m.max) {
        (Some(mean), Some(max)) => format!(
            "{} % (max {} %)",
            fixed(100.0 * mean, 0),
            fixed(100.0 * max, 0)
        ),
        _ => "unknown".to_string(),
    };
    let own = s
        .own_overload_share
        .map_or("not evaluated".to_string(), |v| {
            format!("{} % of evaluations", fixed(100.0 * v, 0))
        });
    format!(
        "signals    neighbours' CPU {}; own CPU {}; own run-queue wait {}; machine pressure {}; own overload {}",
        pct(&s.neighbour_cpu_share),
        pct(&s.own_cpu_share),
        pct(&s.own_runqueue_wait_share),
        pct(&s.machine_pressure_some_avg10),
        own
    )
}

/// `text` cut to `max` characters, with `…` where it was cut.
fn at_most(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata::sample;

    #[test]
    fn every_modality_has_an_aligned_row_with_its_figures() {
        let table = render_table(&sample());
        let lines: Vec<&str> = table.lines().collect();
        assert!(lines[0].contains("ar-glasses") && lines[0].contains("60.0 s"));
        assert!(lines[1].starts_with("utility 0.900"), "{}", lines[1]);
        let header_width = lines[2].chars().count();
        for (row, name) in lines[3..7].iter().zip(["vision", "vad", "asr", "llm"]) {
            assert!(row.starts_with(name), "{row}");
            assert_eq!(row.chars().count(), header_width, "misaligned: {row}");
        }
        // vision: 609 offered, 584 on time, 6 late, 3 shed, 7 skipped, 2 dropped,
        // 4 unfinished, 3 failed, 584 / 60 s on time per second, P50 40, P99 90, SLA 100.
        let vision: Vec<&str> = lines[3].split_whitespace().collect();
        assert_eq!(
            vision,
            [
                "vision", "609", "584", "6", "3", "7", "2", "4", "3", "9.73", "40.0", "90.0", "100"
            ]
        );
        assert_eq!(lines[7], "vision   dropped 2 by camera_rate_halved");
        assert!(table.contains("12 of 31 requests answered in time"));
        assert!(table.contains("12.50 tokens/s of run time"));
        assert!(table.contains("TTFT P50 120 / P99 400 ms"), "{table}");
        assert!(table.contains("mean 0.120, max 0.410; stable 55.00 s, degraded 5.00 s"));
        assert!(table.contains("overhead 0.35 % of CPU"));
    }

    #[test]
    fn a_per_job_deadline_rule_shows_in_the_sla_column_and_below_the_rows() {
        let mut summary = sample();
        summary.asr.sla_ms = 60.0;
        summary.asr.sla_rule = Some("60 ms + the utterance's length (at least 2 s)".into());
        let table = render_table(&summary);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(
            lines[5].split_whitespace().last(),
            Some("60+len"),
            "{table}"
        );
        assert_eq!(lines[5].chars().count(), lines[2].chars().count());
        assert!(table.contains("asr deadline: 60 ms + the utterance's length (at least 2 s)"));
    }

    #[test]
    fn undefined_figures_print_as_a_dash() {
        let mut summary = sample();
        summary.vision.p99_ms = f64::NAN;
        summary.ldti.mean = f64::INFINITY;
        let table = render_table(&summary);
        assert!(!table.contains("NaN") && !table.contains("inf"));
        assert!(table.contains("mean —"));
    }

    #[test]
    fn failure_reasons_follow_the_table_most_frequent_first() {
        let mut summary = sample();
        let f = &mut summary.vision.failures;
        f.insert("frames/0003.png is gone".into(), 1);
        f.insert(
            "reading frames/0007.png did not finish within 1000 ms".into(),
            2,
        );
        for i in 0..3 {
            f.insert(format!("reason {i} {}", "x".repeat(300)), 1);
        }
        let table = render_table(&summary);
        let lines: Vec<&str> = table
            .lines()
            .filter(|l| l.starts_with("vision   failed"))
            .collect();
        assert_eq!(
            lines[0],
            "vision   failed 2: reading frames/0007.png did not finish within 1000 ms"
        );
        assert_eq!(lines[1], "vision   failed 1: frames/0003.png is gone");
        assert!(
            lines[2].ends_with('…') && lines[2].chars().count() < 200,
            "{}",
            lines[2]
        );
        assert_eq!(
            lines[3],
            "vision   failed for 2 other reason(s): see summary.json"
        );
    }
}
