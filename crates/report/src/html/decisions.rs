//! The report's decisions section: what mmsched decided of rungs and admission, which
//! decisions were wrong in hindsight, the reliability of its predicted chances of ending
//! in time (a table and a plot per class and rung), and each rung's estimated chance to be
//! right.

use std::fmt::Write as _;

use crate::decisions::{CALIBRATION_TOLERANCE, DecisionsSummary};
use crate::escape::escape;
use crate::num::fixed;
use crate::svg::axis::Axis;
use crate::svg::color;
use crate::svg::plot::Plot;

/// The section, or an empty string when no decision was predicted (a baseline's run).
pub fn section(d: &DecisionsSummary) -> String {
    if d.decided == 0 && d.rungs.is_empty() {
        return String::new();
    }
    let mut out = String::from("\n<h2>Decisions</h2>\n");
    let _ = write!(
        out,
        "<table><tbody>\
         <tr><th>decided by expected correct results</th><td>{}</td></tr>\
         <tr><th>shed at admission</th><td>{}</td></tr>\
         <tr><th>explored (cost not measured yet, device had room)</th><td>{}</td></tr>\
         <tr><th>wrong in hindsight: admitted but late</th><td>{}</td></tr>\
         <tr><th>wrong in hindsight: degraded, the richest rung would have fit</th><td>{}</td></tr>\
         <tr><th>wrong in hindsight: shed, the device then stood idle long enough</th><td>{}</td></tr>\
         <tr><th>OCR lines decided after detection: all read / cut short</th><td>{} / {}</td></tr>\
         <tr><th>shadow comparisons (of which while the device was busy)</th><td>{} ({})</td></tr>\
         <tr><th>kept though the core's high-percentile admission shed them</th><td>{}</td></tr>\
         </tbody></table>",
        d.decided,
        d.shed_at_admission,
        d.explored,
        d.admitted_late,
        d.degraded_richer_fit,
        d.shed_device_idle,
        d.lines_all_read,
        d.lines_cut,
        d.shadows,
        d.shadows_busy,
        d.kept_over_core
    );
    out.push_str(&rungs_table(d));
    out.push_str(&calibration_table(d));
    let _ = write!(
        out,
        "<figure>{}<figcaption>{}</figcaption></figure>",
        reliability_plot(d),
        escape(&format!(
            "Reliability: for the decisions in each tenth of predicted chance of ending in \
             time, the share that did (a point on the diagonal is calibrated). Bins with \
             decisions enough to read within {CALIBRATION_TOLERANCE} are drawn (about 100 \
             near one half, 35 near 0.9, at least 20)."
        ))
    );
    out
}

fn rungs_table(d: &DecisionsSummary) -> String {
    if d.rungs.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "<table><thead><tr><th>class</th><th>rung</th><th>P(right)</th><th>from</th>\
         <th>shadows agreed</th><th>mean cost ms</th><th>dominated</th></tr></thead><tbody>",
    );
    for r in &d.rungs {
        let _ = write!(
            out,
            "<tr><th>{}</th><td>{}</td><td>{}</td><td>{}</td><td>{} / {}</td><td>{}</td><td>{}</td></tr>",
            escape(&r.class),
            escape(&r.rung),
            escape(&fixed(r.p_right, 3)),
            escape(&r.source),
            r.shadow_agreed,
            r.shadow_runs,
            escape(&fixed(r.mean_cost_ms, 1)),
            if r.dominated {
                "yes: never chosen"
            } else {
                "no"
            }
        );
    }
    out.push_str("</tbody></table>");
    out
}

fn calibration_table(d: &DecisionsSummary) -> String {
    if d.calibration.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "<table><thead><tr><th>class</th><th>rung</th><th>predicted</th><th>decisions</th>\
         <th>mean predicted</th><th>on time</th></tr></thead><tbody>",
    );
    for row in &d.calibration {
        for b in &row.bins {
            let gap = (b.predicted - b.on_time).abs();
            let class = if b.populated() && gap > CALIBRATION_TOLERANCE {
                " class=\"bad\""
            } else {
                ""
            };
            let _ = write!(
                out,
                "<tr><th>{}</th><td>{}</td><td>{}–{}</td><td>{}</td><td>{}</td><td{class}>{}</td></tr>",
                escape(&row.class),
                escape(&row.rung),
                escape(&fixed(b.lo, 1)),
                escape(&fixed(b.hi, 1)),
                b.decisions,
                escape(&fixed(b.predicted, 3)),
                escape(&fixed(b.on_time, 3))
            );
        }
    }
    out.push_str("</tbody></table>");
    out
}

fn reliability_plot(d: &DecisionsSummary) -> String {
    let mut plot = Plot::new(
        "Predicted chance of ending in time against the share that did",
        Axis::linear_exact(0.0, 1.0),
        "predicted",
        Axis::linear_exact(0.0, 1.0),
        "on time",
    );
    plot.line(&[(0.0, 0.0), (1.0, 1.0)], "#999999", "calibrated");
    let mut drawn = 0;
    for (i, row) in d.calibration.iter().enumerate() {
        let points: Vec<(f64, f64)> = row
            .bins
            .iter()
            .filter(|b| b.populated())
            .map(|b| (b.predicted, b.on_time))
            .filter(|(x, y)| x.is_finite() && y.is_finite())
            .collect();
        if !points.is_empty() {
            drawn += 1;
            plot.markers(&points, color(i), &format!("{} {}", row.class, row.rung));
        }
    }
    if drawn == 0 {
        plot.note("no bin holds enough decisions to read");
    }
    plot.finish()
}
