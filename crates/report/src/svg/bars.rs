//! A grouped bar chart: one group per category, one bar per series, value printed on top.

use std::fmt::Write as _;

use super::axis::Axis;
use super::{Frame, LegendEntry, coord, legend, note, open, y_grid};
use crate::escape::escape;

/// One series of a bar chart: a value per category.
#[derive(Debug, Clone, PartialEq)]
pub struct BarSeries {
    /// Legend text.
    pub label: String,
    /// Bar colour.
    pub color: String,
    /// One value per category, in category order (missing ones count as 0).
    pub values: Vec<f64>,
}

/// A grouped bar chart of `series` over `categories`, titled `title`, with a linear y axis
/// from 0 titled `y_label`. Non-finite or negative values are drawn as 0.
pub fn bar_chart(title: &str, y_label: &str, categories: &[&str], series: &[BarSeries]) -> String {
    let frame = Frame::default();
    let value = |s: &BarSeries, i: usize| {
        s.values
            .get(i)
            .copied()
            .filter(|v| v.is_finite() && *v > 0.0)
            .unwrap_or(0.0)
    };
    let max = series
        .iter()
        .flat_map(|s| (0..categories.len()).map(move |i| value(s, i)))
        .fold(0.0, f64::max);
    // Headroom above the tallest bar for its value label.
    let y = Axis::linear(0.0, max.max(1.0) * 1.1);
    let mut out = String::new();
    open(&mut out, &frame, title);
    y_grid(&mut out, &frame, &y);
    let groups = categories.len().max(1) as f64;
    let group_width = frame.plot_width() / groups;
    let bar_width = group_width * 0.8 / series.len().max(1) as f64;
    for (c, category) in categories.iter().enumerate() {
        let group_left = frame.left + group_width * c as f64 + group_width * 0.1;
        for (s, bars) in series.iter().enumerate() {
            let v = value(bars, c);
            let top = frame.py(y.fraction(v).unwrap_or(0.0));
            let x = group_left + bar_width * s as f64;
            let _ = write!(
                out,
                r#"<rect x="{x}" y="{top}" width="{w}" height="{h}" fill="{fill}"><title>{tip}</title></rect><text x="{tx}" y="{ty}" text-anchor="middle" font-size="10">{v}</text>"#,
                x = coord(x),
                top = coord(top),
                w = coord((bar_width - 2.0).max(1.0)),
                h = coord(frame.py(0.0) - top),
                fill = escape(&bars.color),
                tip = escape(&format!("{category} {}: {v}", bars.label)),
                tx = coord(x + bar_width / 2.0 - 1.0),
                ty = coord(top - 3.0),
            );
        }
        let _ = write!(
            out,
            r#"<text x="{x}" y="{y}" text-anchor="middle">{label}</text>"#,
            x = coord(frame.left + group_width * (c as f64 + 0.5)),
            y = coord(frame.py(0.0) + 15.0),
            label = escape(category)
        );
    }
    let _ = write!(
        out,
        r##"<rect x="{x}" y="{y}" width="{w}" height="{h}" fill="none" stroke="#333"/>"##,
        x = coord(frame.left),
        y = coord(frame.top),
        w = coord(frame.plot_width()),
        h = coord(frame.plot_height())
    );
    let (yx, yy) = (14.0, frame.top + frame.plot_height() / 2.0);
    let _ = write!(
        out,
        r#"<text x="{x}" y="{y}" text-anchor="middle" transform="rotate(-90 {x} {y})">{label}</text>"#,
        x = coord(yx),
        y = coord(yy),
        label = escape(y_label)
    );
    let entries: Vec<LegendEntry> = series
        .iter()
        .map(|s| LegendEntry {
            label: s.label.clone(),
            color: s.color.clone(),
            dashed: false,
            filled: true,
        })
        .collect();
    legend(&mut out, &frame, &entries);
    if categories.is_empty() || max == 0.0 {
        note(&mut out, &frame, "all zero");
    }
    out.push_str("</svg>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_bar_per_category_and_series_with_its_value() {
        let series = [
            BarSeries {
                label: "skipped".into(),
                color: "#0072B2".into(),
                values: vec![15.0, 0.0],
            },
            BarSeries {
                label: "shed".into(),
                color: "#D55E00".into(),
                values: vec![3.0, f64::NAN],
            },
        ];
        let svg = bar_chart("counts", "jobs", &["vision", "asr"], &series);
        assert_eq!(svg.matches("<title>").count(), 1 + 4);
        assert!(svg.contains(">15</text>") && svg.contains(">3</text>"));
        assert!(!svg.contains("NaN"));
    }
}
