//! `report.html`: one self-contained page (inline CSS and SVG, no script, no external
//! reference) with the run's summary tables and plots.

mod charts;
mod decisions;
mod tables;

use std::fmt::Write as _;

use crate::escape::escape;
use crate::num::fixed;
use crate::series::RunSeries;
use crate::summary::RunSummary;

/// Page style: readable tables and plots that scale down on narrow screens.
const STYLE: &str = "body{font-family:sans-serif;margin:2em auto;max-width:800px;color:#222;padding:0 1em}\
h1{font-size:1.5em;margin-bottom:.2em}h2{font-size:1.15em;margin-top:1.8em}\
.meta{color:#555;margin-top:0}\
table{border-collapse:collapse;margin:.5em 0;font-size:.9em}\
th,td{border:1px solid #ccc;padding:.25em .6em;text-align:right}th{background:#f4f4f4}\
td:last-child{text-align:left}tbody th{text-align:left}\
.bad{color:#b00020;font-weight:bold}.level-degraded{color:#a65e00}.level-critical{color:#b00020}\
figure{margin:1em 0}svg{max-width:100%;height:auto;border:1px solid #eee}\
figcaption{color:#555;font-size:.85em}";

/// The report of one run as a self-contained HTML page: a title with scenario, scheduler,
/// duration and seed; the summary as tables; latency CDFs per modality (log ms axis, SLA
/// marked), LDTI over time with the degraded and critical bands, slot occupancy per worker,
/// rates per modality, the speech jitter buffer's delay and its late and concealed frames
/// over time, the alignment error per pair of streams over time, and the inputs not
/// answered in time as bars. All text from the inputs is
/// escaped; non-finite numbers are never written.
pub fn render_html(summary: &RunSummary, series: &RunSeries) -> String {
    let scenario = escape(&summary.scenario);
    let scheduler = escape(&summary.scheduler);
    let duration = escape(&fixed(summary.duration, 1));
    let mut out = String::with_capacity(64 * 1024);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>mmsched run: {scenario} · {scheduler} · {duration} s</title>\
         <style>{STYLE}</style></head><body>\n\
         <h1>mmsched run: {scenario}</h1>\
         <p class=\"meta\">scheduler <b>{scheduler}</b> · {duration} s · seed {seed}</p>\n",
        seed = summary.seed
    );
    out.push_str("<h2>Jobs per modality</h2>\n");
    out.push_str(&tables::modality_table(summary));
    out.push_str(&tables::figures_table(summary));
    let figures = [
        (
            charts::latency_cdf(summary, series),
            "Fraction of completed jobs finished within a latency; a curve left of its dashed \
             SLA line at the top means the SLA held.",
        ),
        (
            charts::misses_over_time(summary, series),
            "Each late job at its completion time and latency; clusters show when the \
             device fell behind.",
        ),
        (
            charts::ldti_over_time(summary, series),
            "Latency death-triangle index; shaded bands are the degraded and critical levels.",
        ),
        (
            charts::slot_occupancy(summary, series),
            "Share of each worker's slot time spent running jobs.",
        ),
        (
            charts::rates(summary, series),
            "Completed jobs per second per modality.",
        ),
        (
            charts::playout_delay(summary, series),
            "The speech jitter buffer: the delay it added to the frames it played (mean per \
             pixel column), and the delay its controller aimed at (raised at once by a burst \
             or a hand-over, then decaying; maximum per pixel column).",
        ),
        (
            charts::late_and_concealed(summary, series),
            "Packets that arrived after their frame had played (late), and frames played as \
             concealment because their packet was lost or late (concealed), per second; \
             maximum per pixel column.",
        ),
        (
            charts::alignment_error(summary, series),
            "How far apart two events captured at the same moment were placed, per pair of \
             streams: the difference of the streams' mean placement errors against their \
             true capture times, once a second; maximum per pixel column. A dashed line \
             marks 50 ms when the axis reaches it.",
        ),
        (
            charts::skips_and_sheds(summary),
            "Skipped: the router judged the input not worth running (dark or blurred frame). \
             Shed: admission dropped it under overload. Dropped: a health action kept it \
             from the model (camera rate halved, circuit breaker). Late: answered after its \
             deadline. Unfinished: still queued or running when the run ended. Failed: the \
             model failed.",
        ),
    ];
    out.push_str("\n<h2>Plots</h2>\n");
    for (svg, caption) in figures {
        let _ = writeln!(
            out,
            "<figure>{svg}<figcaption>{}</figcaption></figure>",
            escape(caption)
        );
    }
    out.push_str(&decisions::section(&summary.decisions));
    out.push_str("<h2>Clock alignment</h2>\n");
    out.push_str(&tables::alignment_table(summary));
    out.push_str("\n<h2>Health actions</h2>\n");
    out.push_str(&tables::actions_table(summary));
    if !summary.platform.is_empty() {
        out.push_str("\n<h2>Platform</h2>\n<ul>");
        for note in &summary.platform {
            let _ = write!(out, "<li>{}</li>", escape(note));
        }
        out.push_str("</ul>");
    }
    out.push_str("\n</body></html>\n");
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::series::{AlignmentPoint, OccupancyPoint, PlayoutPoint, RatePoint};
    use crate::testdata::sample;

    /// Every number in the geometry attributes of the page, parsed.
    fn geometry_numbers(html: &str) -> Vec<String> {
        let mut found = Vec::new();
        for attr in [
            " x=\"",
            " y=\"",
            " x1=\"",
            " x2=\"",
            " y1=\"",
            " y2=\"",
            " width=\"",
            " height=\"",
            " points=\"",
            " d=\"",
            " cx=\"",
            " cy=\"",
            " r=\"",
            " viewBox=\"",
            " transform=\"",
        ] {
            for (start, _) in html.match_indices(attr) {
                let rest = &html[start + attr.len()..];
                let value = &rest[..rest.find('"').expect("closed attribute")];
                found.extend(
                    value
                        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '.' || c == '-'))
                        .flat_map(|t| t.split(|c: char| "MHVLrotate".contains(c)))
                        .filter(|t| !t.is_empty())
                        .map(str::to_string),
                );
            }
        }
        found
    }

    fn assert_all_finite(html: &str) {
        let numbers = geometry_numbers(html);
        assert!(!numbers.is_empty());
        for n in numbers {
            let parsed: f64 = n.parse().unwrap_or_else(|_| panic!("not a number: {n:?}"));
            assert!(parsed.is_finite(), "{n}");
        }
        assert!(!html.contains("NaN"));
    }

    fn full_series() -> RunSeries {
        let mut series = RunSeries::default();
        for i in 0..2000 {
            let t = i as f64 * 0.03;
            series.record_latency("vision", 20.0 + (i % 97) as f64);
            series.record_latency("vad", 0.5 + (i % 13) as f64 * 0.1);
            series.record_ldti(t, 0.1 + if i == 1234 { 0.7 } else { 0.0 }, "stable");
            series.slot_occupancy.push(OccupancyPoint {
                t_s: t,
                per_worker_pct: vec![50.0, 20.0 + (i % 10) as f64],
            });
            if i % 400 == 0 {
                series.record_miss(t, "vision", 120.0 + i as f64 / 10.0);
            }
            series.rates.push(RatePoint {
                t_s: t,
                per_modality_hz: BTreeMap::from([("vision".to_string(), 10.0)]),
            });
            series.playout.push(PlayoutPoint {
                t_s: t,
                delay_ms: 30.0,
                target_ms: if i == 700 { 95.0 } else { 30.0 },
                late: u64::from(i == 700),
                concealed: u64::from(i == 700) * 3,
            });
            series.alignment.push(AlignmentPoint {
                t_s: t,
                pair: "camera-imu".to_string(),
                error_ms: if i == 900 { -12.0 } else { 0.5 },
            });
        }
        series
    }

    #[test]
    fn a_full_report_has_every_plot_with_finite_geometry() {
        let html = render_html(&sample(), &full_series());
        assert_eq!(html.matches("<svg").count(), 9);
        for title in [
            "Latency CDF per modality",
            "Deadline misses over time",
            "LDTI over time",
            "Slot occupancy per worker",
            "Completed jobs per second",
            "Speech playout delay over time",
            "Late packets and concealed frames",
            "Alignment error per pair over time",
            "Inputs not answered in time",
        ] {
            assert!(html.contains(title), "missing {title}");
        }
        assert!(html.contains("vision (n=2000)"));
        assert!(html.contains("worker 1"));
        assert!(html.contains("vision (5)") && html.contains("<circle"));
        assert!(
            html.contains(">health action</text>"),
            "action marked on the LDTI plot"
        );
        assert_all_finite(&html);
        // Self-contained: no script, no external reference.
        assert!(!html.contains("<script") && !html.contains("src=") && !html.contains("href="));
    }

    #[test]
    fn the_ldti_spike_survives_downsampling() {
        let html = render_html(&sample(), &full_series());
        let ldti_svg = html
            .split("<svg")
            .find(|s| s.contains("LDTI over time"))
            .expect("LDTI plot");
        // The y axis runs 0..1 over the plot height; 0.8 sits at 20 % from the top.
        let frame = crate::svg::Frame::default();
        let spike_y = crate::svg::coord(frame.py(0.8));
        assert!(
            ldti_svg.contains(&format!(",{spike_y}")),
            "no point at y={spike_y}"
        );
    }

    #[test]
    fn user_text_is_escaped() {
        let mut summary = sample();
        summary.scenario = "<script>alert(1)</script>".into();
        summary.platform = vec!["<b>note</b>".into()];
        summary.alignment.streams[0].name = "cam\"era".into();
        let html = render_html(&summary, &RunSeries::default());
        assert!(!html.contains("<script>"));
        assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(!html.contains("<b>note</b>"));
        assert!(html.contains("cam&quot;era"));
    }

    #[test]
    fn an_empty_run_renders_without_nan() {
        let summary = RunSummary {
            scenario: "empty".into(),
            scheduler: "fifo".into(),
            ..RunSummary::default()
        };
        let html = render_html(&summary, &RunSeries::default());
        assert!(html.contains("no completed jobs"));
        assert!(html.contains("no LDTI samples"));
        assert!(html.contains("no microphone in this run"));
        assert!(html.contains("no two streams with a known capture time"));
        // An empty run still gets readable time axes (0 to 1 s), not denormal labels.
        let exponent = html
            .as_bytes()
            .windows(3)
            .any(|w| w[0].is_ascii_digit() && w[1] == b'e' && (w[2] == b'-' || w[2] == b'+'));
        assert!(!exponent, "exponent label in an empty report");
        assert_all_finite(&html);
    }

    #[test]
    fn non_finite_inputs_never_reach_the_page() {
        let mut summary = sample();
        summary.duration = f64::NAN;
        summary.vision.p99_ms = f64::INFINITY;
        summary.vision.sla_ms = f64::NAN;
        summary.ldti.degraded_at = f64::NAN;
        summary.ldti.mean = f64::NEG_INFINITY;
        summary.alignment.streams[0].drift_ppm = f64::NAN;
        let mut series = full_series();
        series.record_latency("vision", f64::NAN);
        series.record_latency("asr", f64::INFINITY);
        series.record_latency("llm", -1.0);
        series.record_ldti(f64::NAN, 0.5, "degraded");
        series.record_ldti(70.0, f64::INFINITY, "critical");
        series.record_miss(f64::NAN, "vad", 30.0);
        series.record_miss(3.0, "asr", f64::INFINITY);
        series.slot_occupancy.push(OccupancyPoint {
            t_s: f64::INFINITY,
            per_worker_pct: vec![f64::NAN],
        });
        series.playout.push(PlayoutPoint {
            t_s: f64::NAN,
            delay_ms: f64::INFINITY,
            target_ms: f64::NAN,
            late: 1,
            concealed: 1,
        });
        series.alignment.push(AlignmentPoint {
            t_s: 80.0,
            pair: "camera-imu".to_string(),
            error_ms: f64::NEG_INFINITY,
        });
        let html = render_html(&summary, &series);
        assert_all_finite(&html);
        assert!(!html.contains("inf<") && !html.contains(">inf"));
    }
}
